//! Extractors whose rejections speak the API's error format, and the caller's identity.

use std::any::TypeId;

use axum::{
    body::Bytes,
    extract::{FromRequest, FromRequestParts, MatchedPath, Request},
    http::{header, request::Parts, HeaderMap},
};
use uuid::Uuid;
use wire::TokenScope;

use super::error::ApiError;
use crate::auth::api_token::{self, Refusal};
use crate::auth::{HOST_SESSION_COOKIE, SESSION_COOKIE};
use crate::AppState;

/// `axum::Json`, rejecting with [`ApiError`]. Bodies must be objects (serde would also read a struct from an
/// array of its values, which the API does not document); `Json<serde_json::Value>` takes any JSON.
#[derive(Debug)]
pub struct Json<T>(pub T);

impl<T, S> FromRequest<S> for Json<T>
where
    T: serde::de::DeserializeOwned + 'static,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let JsonBytes(bytes) = JsonBytes::from_request(request, state).await?;
        let any_json = TypeId::of::<T>() == TypeId::of::<serde_json::Value>();
        let starts_object = bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
        if !any_json && !starts_object && serde_json::from_slice::<serde_json::Value>(&bytes).is_ok() {
            return Err(ApiError::unprocessable("invalid_body", "The body must be a JSON object.", None));
        }
        axum::Json::<T>::from_bytes(&bytes).map(|axum::Json(value)| Json(value)).map_err(ApiError::from)
    }
}

/// The raw body of a request declared as JSON (`415` otherwise), within the route's body limit (`413`
/// beyond it), for a handler that parses it itself: off the async workers, when its size is up to the client.
#[derive(Debug)]
pub struct JsonBytes(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for JsonBytes {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !is_json(request.headers()) {
            return Err(ApiError::not_json());
        }
        Bytes::from_request(request, state).await.map(JsonBytes).map_err(|_| ApiError::PayloadTooLarge)
    }
}

/// `Content-Type: application/json` or another `application/*+json` type.
fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()) else { return false };
    let essence = value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    essence == "application/json" || (essence.starts_with("application/") && essence.ends_with("+json"))
}

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

/// The signed-in person: a valid session token (cookie or `Authorization: Bearer`) of a live session, or a live
/// personal API token (`Authorization: Bearer quire_pat_…`) whose scope allows the request, else a 401 (a 403 with
/// the code `token_scope` when the token's scope does not allow it). Also counts the request against the person's
/// general rate limit, whichever way it is signed in.
#[derive(Debug, Clone, Copy)]
pub struct AuthUser {
    pub id: Uuid,
    /// How the request is signed in.
    pub access: Access,
}

/// How a request is signed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// A session: its token's id (`jti`), for signing out.
    Session { jti: Uuid },
    /// A personal API token, and what it may do.
    Token { id: Uuid, scope: TokenScope },
}

impl AuthUser {
    /// The session the request is signed in with; a 403 for an API token, which has no session (to end, or to
    /// keep when the password changes).
    pub fn session(&self) -> Result<Uuid, ApiError> {
        match self.access {
            Access::Session { jti } => Ok(jti),
            Access::Token { .. } => Err(token_refused(Refusal::SignInRequired)),
        }
    }

    /// The session or API token the request came with: the event streams it opens end when that ends (see
    /// [`LiveSessions`](crate::auth::sessions::LiveSessions)).
    pub fn credential(&self) -> Uuid {
        match self.access {
            Access::Session { jti } => jti,
            Access::Token { id, .. } => id,
        }
    }
}

/// The refusal of a request an API token's scope does not allow.
pub fn token_refused(refusal: Refusal) -> ApiError {
    ApiError::Forbidden { code: "token_scope", message: refusal.message().into() }
}

/// The `Authorization` header's text, if the request carries one.
fn authorization(parts: &Parts) -> Option<&str> {
    parts.headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok())
}

/// The value of the `Authorization: Bearer` header, if the request carries one.
fn bearer(parts: &Parts) -> Option<&str> {
    let (scheme, token) = authorization(parts)?.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// The session token a request carries, if any: the `Authorization: Bearer` header first, then the cookie
/// named `cookie_name`.
pub fn session_token<'a>(parts: &'a Parts, cookie_name: &str) -> Option<&'a str> {
    if authorization(parts).is_some() {
        return bearer(parts);
    }
    cookie(parts, cookie_name)
}

/// The value of the cookie `name`, if the request carries it.
pub fn cookie<'a>(parts: &'a Parts, name: &str) -> Option<&'a str> {
    parts
        .headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(found, _)| *found == name)
        .map(|(_, value)| value.trim())
}

/// The session cookie under either of its names, if the request carries one.
pub fn session_cookie(parts: &Parts) -> Option<&str> {
    cookie(parts, SESSION_COOKIE).or_else(|| cookie(parts, HOST_SESSION_COOKIE))
}

impl FromRequestParts<AppState> for AuthUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        // A rate-limit extractor may have identified the caller already.
        if let Some(user) = parts.extensions.get::<AuthUser>() {
            return Ok(*user);
        }
        let user = match bearer(parts).filter(|value| api_token::is_api_token(value)) {
            Some(value) => token_user(parts, state, value).await?,
            None => session_user(parts, state).await?,
        };
        parts.extensions.insert(user);
        Ok(user)
    }
}

/// [`AuthUser`] signed in with a personal API token, never a session (cookie or bearer): else a 401. For
/// `/mcp`, which programs call on their owner's behalf, and where a browser's cookie must not carry a request.
#[derive(Debug, Clone, Copy)]
pub struct TokenUser(pub AuthUser);

impl FromRequestParts<AppState> for TokenUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        if !bearer(parts).is_some_and(api_token::is_api_token) {
            return Err(ApiError::Unauthorized);
        }
        AuthUser::from_request_parts(parts, state).await.map(TokenUser)
    }
}

/// The person whose live session the request's session token names.
async fn session_user(parts: &Parts, state: &AppState) -> Result<AuthUser, ApiError> {
    let Some(session) = live_session(parts, state).await? else { return Err(ApiError::Unauthorized) };
    let now = store::now();
    if session.needs_touch(now) {
        // The request need not wait for it: a lost touch only makes the idle timeout a minute earlier.
        let store = state.store.clone();
        tokio::spawn(async move {
            if let Err(e) = store.touch_session(session.id).await {
                tracing::warn!(error = %e, "recording a session's use failed");
            }
        });
    }
    state.limits.check_general(session.user).await?;
    Ok(AuthUser { id: session.user, access: Access::Session { jti: session.id } })
}

/// The live session the request's session token names (its id is the token's `jti`); `None` without one. Counts
/// nothing against rate limits: a page asks it before it is shown.
pub async fn live_session(parts: &Parts, state: &AppState) -> Result<Option<store::Session>, ApiError> {
    let Some(claims) = session_token(parts, state.config.session_cookie_name()).and_then(|t| state.jwt.verify(t))
    else {
        return Ok(None);
    };
    let session = state.store.session(claims.jti).await?.filter(|s| s.user == claims.sub);
    let now = store::now();
    Ok(session.filter(|s| s.is_live(now, state.config.session_idle())))
}

/// The owner of the live API token `value`, when its scope allows the request (judged by the route the router
/// matched, so that no spelling of a path gets past it).
async fn token_user(parts: &Parts, state: &AppState, value: &str) -> Result<AuthUser, ApiError> {
    let Some(hash) = api_token::lookup_hash(value) else { return Err(ApiError::Unauthorized) };
    let token = state.store.api_token_by_hash(&hash).await?.ok_or(ApiError::Unauthorized)?;
    let now = store::now();
    if token.needs_touch(now) {
        // The request need not wait for it: the time shown is to within a minute anyway.
        let store = state.store.clone();
        tokio::spawn(async move {
            if let Err(e) = store.touch_api_token(token.id).await {
                tracing::warn!(error = %e, "recording an API token's use failed");
            }
        });
    }
    // Counted before the scope is judged: refused requests cost the caller as much as any other.
    state.limits.check_general(token.user).await?;
    let route = parts.extensions.get::<MatchedPath>().map_or_else(|| parts.uri.path(), MatchedPath::as_str);
    api_token::permits(token.scope, &parts.method, route).map_err(token_refused)?;
    Ok(AuthUser { id: token.user, access: Access::Token { id: token.id, scope: token.scope } })
}
