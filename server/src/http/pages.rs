//! The pages' one rule before they render: a page for signed-in people, asked for without a live session, sends
//! the browser to the sign-in page, so that it never loads a page whose every request would be refused.

use axum::{
    extract::{Request, State},
    http::Method,
    middleware::Next,
    response::{IntoResponse, Redirect, Response},
};

use super::extract::live_session;
use crate::AppState;

/// The layer's function, around the app's page routes alone (static files and the API pass beside it).
pub async fn signed_in_pages(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let reading = matches!(*request.method(), Method::GET | Method::HEAD);
    if !reading || app::is_auth_page(request.uri().path()) {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    match live_session(&parts, &state).await {
        Ok(None) => Redirect::to("/signin").into_response(),
        // A store that cannot answer now: the page renders and asks again through the API.
        Ok(Some(_)) | Err(_) => next.run(Request::from_parts(parts, body)).await,
    }
}
