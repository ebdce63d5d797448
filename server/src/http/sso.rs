//! Single sign-on routes: the sign-in methods the sign-in page offers, the start of a sign-in through the
//! organisation's OpenID Connect provider and the provider's way back (`auth/oidc.rs` speaks to the provider).
//!
//! The sign-in under way is kept in the database (any instance may take the browser back) under its `state`,
//! which the browser also carries in an HttpOnly cookie: a callback whose `state` is not the cookie's is refused,
//! so nobody can make another person's browser finish a sign-in they started. Every refusal sends the browser
//! back to the sign-in page with `?error=<code>`, creates nothing and says why in the log.

use axum::{
    extract::{Request, State},
    http::{header, request::Parts, HeaderMap, HeaderValue},
    middleware::Next,
    response::{IntoResponse, Redirect, Response},
    routing::get,
    Router,
};
use serde::Deserialize;
use wire::forms::FormOutcome;
use wire::{SignInMethods, SsoMethod, MAX_DISPLAY_NAME_CHARS};

use super::auth::{new_session, SignInFrom};
use super::error::{ApiError, Result};
use super::extract::{cookie, Json, Query};
use super::rate_limit::{Quota, SignIn};
use crate::auth::oidc::{Oidc, SsoError, START_PATH};
use crate::auth::setup;
use crate::AppState;
use store::{NewUser, SignUpMode, SsoAccount, SsoRefusal, StoreError, User};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/auth/methods", get(methods))
        .route(START_PATH, get(start))
        .route(crate::auth::oidc::CALLBACK_PATH, get(callback))
}

/// The cookie that ties a sign-in under way to the browser that started it.
const FLOW_COOKIE: &str = "quire_sso";
/// Its name over HTTPS (see [`crate::auth::HOST_SESSION_COOKIE`]).
const HOST_FLOW_COOKIE: &str = "__Host-quire_sso";
/// The longest `next` path kept.
const MAX_NEXT_CHARS: usize = 512;

fn flow_cookie_name(state: &AppState) -> &'static str {
    if state.config.public_url.as_ref().is_some_and(|u| u.is_https()) {
        HOST_FLOW_COOKIE
    } else {
        FLOW_COOKIE
    }
}

/// The flow cookie holding `value` for `max_age` seconds (0: removed).
fn flow_cookie(state: &AppState, value: &str, max_age: i64) -> HeaderValue {
    let secure = if state.config.secure_cookies() { "; Secure" } else { "" };
    let name = flow_cookie_name(state);
    // The provider sends the browser back with a top-level `GET`, which carries `Lax` cookies.
    HeaderValue::from_str(&format!("{name}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}"))
        .unwrap_or_else(|_| HeaderValue::from_static("quire_sso=; Path=/; Max-Age=0"))
}

/// `GET /api/auth/methods`: how people sign in here, for the sign-in page.
#[utoipa::path(get, path = "/api/auth/methods", tag = "auth", responses((status = 200, body = SignInMethods)))]
pub async fn methods(State(state): State<AppState>) -> Json<SignInMethods> {
    Json(sign_in_methods(&state))
}

/// How people sign in here.
pub fn sign_in_methods(state: &AppState) -> SignInMethods {
    SignInMethods {
        password: state.config.password_login,
        sso: state.oidc.as_ref().map(|oidc| SsoMethod { label: oidc.label.clone(), start: START_PATH.to_owned() }),
    }
}

/// `GET /api/auth/oidc/start`'s query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct StartQuery {
    /// The path of Quire's to open once signed in (another site's address is ignored).
    pub next: Option<String>,
}

/// `next` when it is a path of Quire's, else `/`.
fn local_path(next: Option<String>) -> String {
    next.filter(|next| {
        next.starts_with('/')
            && !next.starts_with("//")
            && !next.starts_with("/\\")
            && next.chars().count() <= MAX_NEXT_CHARS
            && !next.chars().any(|c| c.is_control() || c == '\\')
            && !next.starts_with("/api/")
    })
    .unwrap_or_else(|| "/".to_owned())
}

/// The sign-in page with a refusal's code.
fn refused(state: &AppState, outcome: FormOutcome) -> Response {
    let mut response = Redirect::to(&format!("/signin?{}={}", outcome.parameter(), outcome.code())).into_response();
    response.headers_mut().append(header::SET_COOKIE, flow_cookie(state, "", 0));
    response
}

fn provider(state: &AppState) -> Result<&Oidc> {
    state.oidc.as_deref().ok_or(ApiError::NotFound)
}

/// `GET /api/auth/oidc/start`: sends the browser to the identity provider to sign in (`303`), or back to the
/// sign-in page when the provider cannot be reached. Counted against the sign-in rate limit of the address.
#[utoipa::path(get, path = "/api/auth/oidc/start", tag = "auth", params(StartQuery),
    responses((status = 303, description = "To the provider's sign-in page; sets the sign-in's cookie. Back to \
            `/signin?error=sso_unavailable` when the provider cannot be reached"),
        (status = 404, body = wire::ErrorBody, description = "No identity provider is configured"),
        (status = 429, body = wire::ErrorBody)))]
pub async fn start(
    State(state): State<AppState>,
    _: Quota<SignIn>,
    Query(query): Query<StartQuery>,
) -> Result<Response> {
    let oidc = provider(&state)?;
    let (url, flow) = match oidc.start(local_path(query.next)).await {
        Ok(started) => started,
        Err(e) => {
            tracing::warn!(error = %e, "single sign-on could not start");
            return Ok(refused(&state, FormOutcome::SsoUnavailable));
        }
    };
    let cookie = flow_cookie(&state, &flow.state, store::sso::SSO_FLOW_MINUTES * 60);
    state.store.begin_sso(flow).await?;
    Ok(([(header::SET_COOKIE, cookie)], Redirect::to(url.as_str())).into_response())
}

/// The provider's answer: a code, or an error.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct CallbackQuery {
    pub code: Option<String>,
    pub state: Option<String>,
    /// The provider's error code (`access_denied` when the person cancelled).
    pub error: Option<String>,
}

/// `GET /api/auth/oidc/callback`: where the provider sends the browser back. Signs in (`303` to where the sign-in
/// started, with the session cookie) or sends the browser back to `/signin?error=<code>` having created nothing.
#[utoipa::path(get, path = "/api/auth/oidc/callback", tag = "auth", params(CallbackQuery),
    responses((status = 303, description = "Signed in (sets the session cookie), or back to the sign-in page with \
            `error`: `sso_expired` (no sign-in under way for this browser and state, or over ten minutes old), \
            `sso_cancelled`, `sso_unavailable`, `sso_refused` (the provider refused the code: used or wrong), \
            `sso_invalid` (the ID token failed a check), `sso_unverified`, `sso_no_account`, `account_disabled`"),
        (status = 404, body = wire::ErrorBody, description = "No identity provider is configured"),
        (status = 429, body = wire::ErrorBody)))]
pub async fn callback(
    State(state): State<AppState>,
    _: Quota<SignIn>,
    from: SignInFrom,
    parts: Parts,
    Query(query): Query<CallbackQuery>,
) -> Result<Response> {
    let oidc = provider(&state)?;
    let expected = cookie(&parts, flow_cookie_name(&state)).filter(|c| !c.is_empty());
    let Some(flow_state) = query.state.as_deref().filter(|s| expected == Some(*s)) else {
        tracing::warn!("single sign-on refused: the state is not this browser's sign-in");
        return Ok(refused(&state, FormOutcome::SsoExpired));
    };
    // Taken whatever follows: a sign-in under way is finished once.
    let flow = state.store.take_sso(flow_state).await?;
    let Some(flow) = flow.filter(|f| !f.is_expired(store::now())) else {
        tracing::warn!("single sign-on refused: no sign-in under way with this state, or it expired");
        return Ok(refused(&state, FormOutcome::SsoExpired));
    };
    if let Some(error) = query.error.as_deref() {
        tracing::info!(error = %error.chars().take(64).collect::<String>(), "the identity provider sent back an error");
        let outcome = if error == "access_denied" { FormOutcome::SsoCancelled } else { FormOutcome::SsoRefused };
        return Ok(refused(&state, outcome));
    }
    let Some(code) = query.code.filter(|c| !c.is_empty() && c.len() <= 4096) else {
        return Ok(refused(&state, FormOutcome::SsoRefused));
    };
    let signed_in = match oidc.finish(&flow, code).await {
        Ok(signed_in) => signed_in,
        Err(e) => {
            tracing::warn!(error = %e, "single sign-on refused");
            let outcome = match e {
                SsoError::Unavailable(_) => FormOutcome::SsoUnavailable,
                SsoError::Refused(_) => FormOutcome::SsoRefused,
                SsoError::InvalidToken(_) => FormOutcome::SsoInvalid,
            };
            return Ok(refused(&state, outcome));
        }
    };
    let user = match account(&state, oidc, &signed_in).await? {
        Ok(user) => user,
        Err(outcome) => {
            tracing::warn!(subject = %signed_in.identity.subject, code = outcome.code(), "single sign-on refused");
            return Ok(refused(&state, outcome));
        }
    };
    let user = follow_groups(&state, oidc, user, &signed_in.groups).await?;
    let (token, session_cookie) = new_session(&state, &user, from).await?;
    if let Some(claims) = state.jwt.verify(&token) {
        state.store.record_sso_session(claims.jti, &signed_in.id_token).await?;
    }
    tracing::info!(user = %user.id, "signed in through the identity provider");
    let mut response = Redirect::to(&flow.next).into_response();
    let headers: &mut HeaderMap = response.headers_mut();
    headers.append(header::SET_COOKIE, session_cookie);
    headers.append(header::SET_COOKIE, flow_cookie(&state, "", 0));
    Ok(response)
}

/// The account the provider's person signs in to: linked before, of their verified address, or made now when the
/// sign-up mode (or `QUIRE_OIDC_AUTO_CREATE`) allows; else the refusal to show.
async fn account(
    state: &AppState,
    oidc: &Oidc,
    signed_in: &crate::auth::oidc::SignedIn,
) -> Result<std::result::Result<User, FormOutcome>> {
    let identity = &signed_in.identity;
    // Twice at most: a first sign-in at once on another instance may make the account in between.
    for _ in 0..2 {
        match state.store.sso_account(identity).await? {
            Ok(SsoAccount::Found(user)) => return Ok(Ok(user)),
            Err(SsoRefusal::Disabled) => return Ok(Err(FormOutcome::AccountDisabled)),
            Err(SsoRefusal::Unverified) => return Ok(Err(FormOutcome::SsoUnverified)),
            Ok(SsoAccount::None) => {}
        }
        let email = identity.email.clone().unwrap_or_default();
        if email.chars().count() > wire::MAX_EMAIL_CHARS || !email.contains('@') || wire::validate::has_nul(&email) {
            return Ok(Err(FormOutcome::SsoUnverified));
        }
        let mode = if oidc.auto_create {
            SignUpMode::Open
        } else {
            setup::sign_up_mode(&state.store, state.config.signup).await?
        };
        let display_name = signed_in
            .display_name
            .as_deref()
            .map(str::trim)
            .filter(|n| !n.is_empty() && !wire::validate::has_nul(n))
            .unwrap_or_else(|| email.split('@').next().unwrap_or_default())
            .chars()
            .take(MAX_DISPLAY_NAME_CHARS)
            .collect();
        // No password: the account signs in through the provider (an administrator's reset link can add one).
        let new = NewUser { email, password_hash: String::new(), display_name };
        match state.store.sign_up(new, mode, None).await {
            Ok(Ok(user)) => {
                state.store.link_sso(user.id, identity).await?;
                tracing::info!(user = %user.id, "account made at its first sign-in through the identity provider");
                return Ok(Ok(user));
            }
            Ok(Err(_)) => return Ok(Err(FormOutcome::SsoNoAccount)),
            Err(StoreError::Conflict(_)) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(Err(FormOutcome::Failed))
}

/// The account with the role its groups give, where groups are configured to (checked at each sign-in). The
/// last enabled administrator stays one, with a warning in the log.
async fn follow_groups(state: &AppState, oidc: &Oidc, user: User, groups: &[String]) -> Result<User> {
    let Some(admin) = oidc.administers(groups).filter(|admin| *admin != user.is_admin) else { return Ok(user) };
    match state.store.set_admin(user.id, admin).await {
        Ok(()) => {
            tracing::info!(user = %user.id, admin, "role follows the identity provider's groups");
            Ok(User { is_admin: admin, ..user })
        }
        Err(StoreError::Conflict(_)) => {
            tracing::warn!(user = %user.id, "the groups no longer make this account an administrator, but it is the last one");
            Ok(user)
        }
        Err(e) => Err(e.into()),
    }
}

/// The routes that take or set a password: with `QUIRE_PASSWORD_LOGIN=false` none of them answers (404).
fn is_password_route(path: &str) -> bool {
    use wire::forms::{CHANGE_PASSWORD_ACTION, RESET_PASSWORD_ACTION, SIGN_IN_ACTION, SIGN_UP_ACTION};
    matches!(path, "/api/auth/register" | "/api/auth/login" | "/api/auth/password" | "/api/auth/reset-password")
        || [SIGN_IN_ACTION, SIGN_UP_ACTION, RESET_PASSWORD_ACTION, CHANGE_PASSWORD_ACTION].contains(&path)
        || (path.starts_with("/api/admin/users/") && path.ends_with("/reset-link"))
}

/// The layer's function: a password route answers 404 where password sign-in is turned off.
pub async fn without_passwords(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let path = request.uri().path().trim_end_matches('/');
    if !state.config.password_login && request.method() != axum::http::Method::GET && is_password_route(path) {
        return ApiError::NotFound.into_response();
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_quire_paths_are_followed_after_sign_in() {
        assert_eq!(local_path(Some("/c/123?requirement=R-1".into())), "/c/123?requirement=R-1");
        for hostile in ["https://evil.example", "//evil.example", "/\\evil.example", "/api/auth/logout", "c/1", "/a\nb"]
        {
            assert_eq!(local_path(Some(hostile.into())), "/", "{hostile}");
        }
        assert_eq!(local_path(None), "/");
    }

    #[test]
    fn password_routes_are_known() {
        for path in ["/api/auth/login", "/api/auth/register", "/signin", "/signup", "/api/admin/users/x/reset-link"] {
            assert!(is_password_route(path), "{path}");
        }
        assert!(!is_password_route("/api/auth/logout") && !is_password_route("/api/auth/oidc/start"));
    }
}
