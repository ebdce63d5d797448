//! Extractors whose rejections speak the API's error format, and the caller's identity.

use axum::{
    extract::{FromRequest, FromRequestParts},
    http::request::Parts,
};
use uuid::Uuid;

use super::error::ApiError;
use crate::AppState;

/// `axum::Json`, rejecting with [`ApiError`].
#[derive(Debug, FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub struct Json<T>(pub T);

impl<T: serde::Serialize> axum::response::IntoResponse for Json<T> {
    fn into_response(self) -> axum::response::Response {
        axum::Json(self.0).into_response()
    }
}

/// `axum::extract::Path`, rejecting with [`ApiError`] (a bad UUID is a 400 that says so).
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
pub struct Path<T>(pub T);

/// `axum::extract::Query`, rejecting with [`ApiError`].
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct Query<T>(pub T);

/// The person making the request. Until accounts exist every request acts as the single local user that
/// Quire creates at start-up.
#[derive(Debug, Clone, Copy)]
pub struct AuthUser {
    pub id: Uuid,
}

impl FromRequestParts<AppState> for AuthUser {
    type Rejection = ApiError;

    async fn from_request_parts(_parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        Ok(AuthUser { id: state.local_user })
    }
}
