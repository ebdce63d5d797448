//! Accounts and sessions: sign up, sign in, sign out, the list of sessions, and who am I.

use axum::{
    extract::{ConnectInfo, FromRequestParts, State},
    http::{header, request::Parts, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    routing::{delete, get, post},
    Router,
};
use wire::{
    validate, AuthResponse, ChangePasswordRequest, DeleteAccountRequest, LoginRequest, RegisterRequest, SessionInfo,
    SessionList, UserProfile, MAX_EMAIL_CHARS,
};

use super::error::{ApiError, Result};
use super::extract::{AuthUser, Json, Path};
use super::rate_limit::{Quota, SignIn};
use crate::auth::{device, one_time, password, throttle};
use crate::AppState;
use store::{NewUser, Session, SignUpPass, SignUpRefusal, StoreError, User};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/auth/register", post(register))
        .route("/api/auth/login", post(login))
        .route("/api/auth/logout", post(logout))
        .route("/api/auth/logout-all", post(logout_all))
        .route("/api/auth/password", post(change_password))
        .route("/api/auth/me", get(me).delete(delete_account))
        .route("/api/auth/sessions", get(sessions))
        .route("/api/auth/sessions/{id}", delete(end_session))
}

/// Where a sign-in comes from, as the list of sessions shows it: the browser and system in a few words and the
/// network of the connection's peer (like the per-address limit, forwarding headers are not trusted).
pub struct SignInFrom {
    device: Option<String>,
    ip_prefix: Option<String>,
}

impl<S: Send + Sync> FromRequestParts<S> for SignInFrom {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let user_agent = parts.headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or_default();
        let peer = parts.extensions.get::<ConnectInfo<std::net::SocketAddr>>().map(|ConnectInfo(addr)| addr.ip());
        Ok(Self { device: device::summary(user_agent), ip_prefix: peer.map(device::ip_prefix) })
    }
}

fn profile(user: User) -> UserProfile {
    UserProfile {
        id: user.id,
        email: user.email,
        display_name: user.display_name,
        created_at: user.created_at,
        admin: user.is_admin,
        has_password: !user.password_hash.is_empty(),
    }
}

/// Checks a new password (off the async workers: it takes a few milliseconds); a refusal names `field`.
pub(super) async fn check_new_password(field: &str, password: &str, email: &str, display_name: &str) -> Result<()> {
    let (password, email, display_name) = (password.to_string(), email.to_string(), display_name.to_string());
    let checked = tokio::task::spawn_blocking(move || password::check_new(&password, &email, &display_name))
        .await
        .map_err(|e| ApiError::Internal(e.into()))?;
    checked.map_err(|weak| ApiError::invalid(field, weak.to_string()))
}

/// A new session for `user`: its token and the HttpOnly cookie that carries it.
pub(super) async fn new_session(state: &AppState, user: &User, from: SignInFrom) -> Result<(String, HeaderValue)> {
    let (token, claims) = state.jwt.issue(user.id).map_err(ApiError::Internal)?;
    let session = Session {
        device: from.device,
        ip_prefix: from.ip_prefix,
        ..Session::new(claims.jti, user.id, claims.expires_at())
    };
    state.store.create_session(&session).await?;
    let max_age = state.jwt.lifetime.num_seconds();
    let cookie = session_cookie(state, &token, max_age)?;
    Ok((token, cookie))
}

/// A new session for `user`: the JSON answer and the HttpOnly cookie that carries the same token.
async fn signed_in(state: &AppState, status: StatusCode, user: User, from: SignInFrom) -> Result<Response> {
    let (token, cookie) = new_session(state, &user, from).await?;
    let body = AuthResponse { user: profile(user), token };
    Ok((status, [(header::SET_COOKIE, cookie)], Json(body)).into_response())
}

fn session_cookie(state: &AppState, token: &str, max_age: i64) -> Result<HeaderValue> {
    let name = state.config.session_cookie_name();
    let secure = if state.config.secure_cookies() { "; Secure" } else { "" };
    HeaderValue::from_str(&format!("{name}={token}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}"))
        .map_err(|e| ApiError::Internal(e.into()))
}

/// `POST /api/auth/register`: creates the account and signs it in. The sign-up mode decides: anyone (`open`, the
/// first account administers Quire), with an invitation's token (`invite`), or nobody (`closed`). A setup link's
/// token makes the first administrator in any mode; without an administrator, `invite` and `closed` need it.
#[utoipa::path(post, path = "/api/auth/register", tag = "auth", request_body = RegisterRequest,
    responses((status = 201, body = AuthResponse, description = "Signed up and in; sets the session cookie"),
        (status = 403, body = wire::ErrorBody,
            description = "Sign-up is closed (`signup_closed`), needs an invitation (`invite_required`) or, with no \
                administrator yet, the setup link (`setup_required`)"),
        (status = 409, body = wire::ErrorBody, description = "E-mail already registered"),
        (status = 422, body = wire::ErrorBody,
            description = "Invalid fields, an invitation that is not valid, expired or used up (`invite`), or a \
                setup link that is not valid or used (`setup`)"),
        (status = 429, body = wire::ErrorBody)))]
pub async fn register(
    State(state): State<AppState>,
    _: Quota<SignIn>,
    from: SignInFrom,
    Json(body): Json<RegisterRequest>,
) -> Result<Response> {
    let user = create_account(&state, body).await?;
    signed_in(&state, StatusCode::CREATED, user, from).await
}

/// Creates the account `body` asks for, as far as the sign-up mode allows; the new account.
pub(super) async fn create_account(state: &AppState, body: RegisterRequest) -> Result<User> {
    let email = validate::email(&body.email)?;
    validate::password(&body.password)?;
    let display_name = validate::display_name(body.display_name.as_deref().unwrap_or_default())?;
    let pass = sign_up_pass(body.invite.as_deref(), body.setup.as_deref())?;
    let mode = crate::auth::setup::sign_up_mode(&state.store, state.config.signup).await?;
    check_new_password("password", &body.password, &email, &display_name).await?;
    let display_name =
        if display_name.is_empty() { email.split('@').next().unwrap_or_default().to_string() } else { display_name };
    let password_hash = password::hash(body.password).await.map_err(ApiError::Internal)?;
    let new = NewUser { email, password_hash, display_name };
    let user = match state.store.sign_up(new, mode, pass).await {
        Ok(Ok(user)) => user,
        Ok(Err(refusal)) => return Err(refusal.into()),
        Err(StoreError::Conflict(_)) => {
            return Err(ApiError::Conflict("An account with this e-mail address already exists.".into()))
        }
        Err(e) => return Err(e.into()),
    };
    tracing::info!(user = %user.id, admin = user.is_admin, "account created");
    Ok(user)
}

/// What a sign-up carries besides the mode: a setup link's token (it wins) or an invitation's, as stored.
fn sign_up_pass(invite: Option<&str>, setup: Option<&str>) -> Result<Option<SignUpPass>> {
    let token = |sent: Option<&str>, too_long| {
        let token = sent.map(str::trim).filter(|token| !token.is_empty());
        match token {
            Some(token) if token.chars().count() > one_time::MAX_TOKEN_CHARS => Err(ApiError::from(too_long)),
            token => Ok(token.map(one_time::hash)),
        }
    };
    let (invite, setup) = (token(invite, SignUpRefusal::InviteInvalid)?, token(setup, SignUpRefusal::SetupInvalid)?);
    Ok(setup.map(SignUpPass::Setup).or(invite.map(SignUpPass::Invite)))
}

/// `POST /api/auth/login`: the same answer whether the e-mail is unknown or the password wrong. After a few
/// failures an account's attempts wait longer and longer (429 with `Retry-After`), from any address.
#[utoipa::path(post, path = "/api/auth/login", tag = "auth", request_body = LoginRequest,
    responses((status = 200, body = AuthResponse, description = "Signed in; sets the session cookie"),
        (status = 401, body = wire::ErrorBody, description = "Wrong e-mail or password"),
        (status = 403, body = wire::ErrorBody, description = "The account is disabled (`account_disabled`)"),
        (status = 429, body = wire::ErrorBody)))]
pub async fn login(
    State(state): State<AppState>,
    _: Quota<SignIn>,
    from: SignInFrom,
    Json(body): Json<LoginRequest>,
) -> Result<Response> {
    let user = authenticate(&state, body).await?;
    signed_in(&state, StatusCode::OK, user, from).await
}

/// The enabled account `body` names, when its password matches; the same refusal whether the e-mail is unknown
/// or the password wrong, throttled per account.
pub(super) async fn authenticate(state: &AppState, body: LoginRequest) -> Result<User> {
    let email = body.email.trim();
    // No account has an address that long or with a NUL in it (nor could the database compare one).
    let possible = email.chars().count() <= MAX_EMAIL_CHARS && !validate::has_nul(email);
    let found = if possible { state.store.user_by_email(email).await } else { Err(StoreError::NotFound) };
    let user = match found {
        Ok(user) => Some(user),
        Err(StoreError::NotFound) => None,
        Err(e) => return Err(e.into()),
    };
    let hash = user.as_ref().map(|u| u.password_hash.clone()).filter(|h| !h.is_empty());
    let matches = verify_throttled(state, &body.email, body.password, hash).await?;
    match user {
        Some(user) if matches && user.disabled => Err(ApiError::Forbidden {
            code: "account_disabled",
            message: "This account is disabled. Ask the administrator.".into(),
        }),
        Some(user) if matches => Ok(user),
        _ => Err(ApiError::InvalidCredentials),
    }
}

/// Checks a password of the account `email` (`hash`: `None` for an unknown one), throttled per account so many
/// addresses cannot share out the guessing (see [`throttle`]): an attempt before its wait is over is a 429.
async fn verify_throttled(state: &AppState, email: &str, password: String, hash: Option<String>) -> Result<bool> {
    let account = throttle::account_key(email);
    let now = store::now();
    if let Some((failures, last)) = state.store.count_sign_in_attempt(&account, now).await? {
        // The count may have moved on since it refused: wait at least a second.
        let wait = throttle::wait(failures, last, now).unwrap_or_default();
        let retry_after_secs = u64::try_from((wait.num_milliseconds() + 999) / 1000).unwrap_or(1).max(1);
        return Err(ApiError::TooManyRequests { retry_after_secs });
    }
    let matches = password::verify(password, hash).await.map_err(ApiError::Internal)?;
    if matches {
        state.store.clear_sign_in_failures(&account).await?;
    }
    Ok(matches)
}

/// The signed-in person's account, once `password` shows it is theirs (throttled as a sign-in is); a wrong one is
/// refused as invalid `field`, saying `wrong`.
async fn own_account(state: &AppState, user: &AuthUser, password: String, field: &str, wrong: &str) -> Result<User> {
    let account = state.store.user_by_id(user.id).await?;
    if !verify_throttled(state, &account.email, password, Some(account.password_hash.clone())).await? {
        return Err(ApiError::invalid(field, wrong));
    }
    Ok(account)
}

/// `POST /api/auth/logout`: the session ends at once, on every instance, with its open event streams. A session
/// signed in through the identity provider is told where to end the provider's session too, when the provider
/// says where.
#[utoipa::path(post, path = "/api/auth/logout", tag = "auth", security(("session" = []), ("bearer" = [])),
    responses((status = 204, description = "Signed out; clears the session cookie"),
        (status = 200, body = wire::SignedOut,
            description = "Signed out of a session signed in through the identity provider; clears the session \
                cookie, and names the provider's end-session address to go to"),
        (status = 401, body = wire::ErrorBody), (status = 403, body = wire::ErrorBody)))]
pub async fn logout(State(state): State<AppState>, user: AuthUser) -> Result<Response> {
    let session = user.session()?;
    let id_token = match &state.oidc {
        Some(_) => state.store.sso_id_token(session).await?,
        None => None,
    };
    state.store.end_session(user.id, session).await?;
    state.sessions.end(&[session]);
    let end_session_url = match (&state.oidc, id_token) {
        (Some(oidc), Some(id_token)) => oidc.end_session_url(&id_token).await,
        _ => None,
    };
    match end_session_url {
        Some(end_session_url) => Ok((
            StatusCode::OK,
            [(header::SET_COOKIE, expired_cookie(&state)?)],
            Json(wire::SignedOut { end_session_url }),
        )
            .into_response()),
        None => signed_out(&state),
    }
}

/// `POST /api/auth/logout-all`: every session of the account ends, this one too (on a lost or shared device).
#[utoipa::path(post, path = "/api/auth/logout-all", tag = "auth", security(("session" = []), ("bearer" = [])),
    responses((status = 204, description = "Every session ended; clears the session cookie"),
        (status = 401, body = wire::ErrorBody), (status = 403, body = wire::ErrorBody)))]
pub async fn logout_all(State(state): State<AppState>, user: AuthUser) -> Result<Response> {
    user.session()?;
    let ended = state.store.end_sessions(user.id, None).await?;
    state.sessions.end_user(user.id);
    tracing::info!(user = %user.id, sessions = ended.len(), "signed out everywhere");
    signed_out(&state)
}

/// `GET /api/auth/sessions`: the account's sessions that can still be used (not ended, expired or idle too
/// long), the most recently used first; the one asking is marked `current`.
#[utoipa::path(get, path = "/api/auth/sessions", tag = "auth", security(("session" = []), ("bearer" = [])),
    responses((status = 200, body = SessionList), (status = 401, body = wire::ErrorBody)))]
pub async fn sessions(State(state): State<AppState>, user: AuthUser) -> Result<Json<SessionList>> {
    let now = store::now();
    let current = user.session().ok();
    let sessions = state
        .store
        .open_sessions(user.id)
        .await?
        .into_iter()
        .filter(|session| session.is_live(now, state.config.session_idle()))
        .map(|session| SessionInfo {
            id: session.public_id(),
            created_at: session.created_at,
            last_seen_at: session.last_seen_at,
            current: Some(session.id) == current,
            device: session.device,
            ip_prefix: session.ip_prefix,
        })
        .collect();
    Ok(Json(SessionList { sessions }))
}

/// `DELETE /api/auth/sessions/{id}`: ends one session of the account (on a lost or shared device) at once, on
/// every instance, with its open event streams. Ending the current one signs out, as `POST /api/auth/logout`.
#[utoipa::path(delete, path = "/api/auth/sessions/{id}", tag = "auth", security(("session" = []), ("bearer" = [])),
    params(("id" = String, Path, description = "A session's `id` from `GET /api/auth/sessions`")),
    responses((status = 204, description = "Ended; clears the session cookie when it was the current one"),
        (status = 401, body = wire::ErrorBody), (status = 403, body = wire::ErrorBody),
        (status = 404, body = wire::ErrorBody, description = "No open session of this account has that id")))]
pub async fn end_session(State(state): State<AppState>, user: AuthUser, Path(id): Path<String>) -> Result<Response> {
    let current = user.session()?;
    let session = state.store.open_sessions(user.id).await?.into_iter().find(|session| session.public_id() == id);
    let Some(session) = session else { return Err(ApiError::NotFound) };
    if !state.store.end_session(user.id, session.id).await? {
        return Err(ApiError::NotFound);
    }
    state.sessions.end(&[session.id]);
    tracing::info!(user = %user.id, "one session ended from the list");
    if session.id == current {
        signed_out(&state)
    } else {
        Ok(StatusCode::NO_CONTENT.into_response())
    }
}

/// The answer to signing out: no content, and a cookie that replaces the session's with an expired one.
fn signed_out(state: &AppState) -> Result<Response> {
    Ok((StatusCode::NO_CONTENT, [(header::SET_COOKIE, expired_cookie(state)?)]).into_response())
}

/// A cookie that replaces the session's with an expired one.
pub(super) fn expired_cookie(state: &AppState) -> Result<HeaderValue> {
    session_cookie(state, "", 0)
}

/// `GET /api/auth/me`: the signed-in account.
#[utoipa::path(get, path = "/api/auth/me", tag = "auth", security(("session" = []), ("bearer" = [])),
    responses((status = 200, body = UserProfile), (status = 401, body = wire::ErrorBody)))]
pub async fn me(State(state): State<AppState>, user: AuthUser) -> Result<Json<UserProfile>> {
    match state.store.user_by_id(user.id).await {
        Ok(found) => Ok(Json(profile(found))),
        Err(StoreError::NotFound) => Err(ApiError::Unauthorized),
        Err(e) => Err(e.into()),
    }
}

/// `POST /api/auth/password`: the current password, then the new one; every other session of the account ends
/// (this one goes on).
#[utoipa::path(post, path = "/api/auth/password", tag = "auth", security(("session" = []), ("bearer" = [])),
    request_body = ChangePasswordRequest,
    responses((status = 204, description = "Changed; every other session ended"),
        (status = 401, body = wire::ErrorBody), (status = 403, body = wire::ErrorBody),
        (status = 422, body = wire::ErrorBody, description = "The current password is wrong (`current_password`) or the new one too weak (`new_password`)"),
        (status = 429, body = wire::ErrorBody)))]
pub async fn change_password(
    State(state): State<AppState>,
    user: AuthUser,
    Json(body): Json<ChangePasswordRequest>,
) -> Result<StatusCode> {
    set_new_password(&state, &user, body).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Changes the signed-in person's password, given the current one; every other session ends.
pub(super) async fn set_new_password(state: &AppState, user: &AuthUser, body: ChangePasswordRequest) -> Result<()> {
    let keep = user.session()?;
    let account =
        own_account(state, user, body.current_password, "current_password", "The current password is wrong.").await?;
    check_new_password("new_password", &body.new_password, &account.email, &account.display_name).await?;
    let hash = password::hash(body.new_password).await.map_err(ApiError::Internal)?;
    let ended = state.store.set_password(user.id, &hash, keep).await?;
    state.sessions.end(&ended);
    tracing::info!(user = %user.id, sessions_ended = ended.len(), "password changed");
    Ok(())
}

/// `DELETE /api/auth/me`: removes the account and everything it owns, given its password; its sessions and
/// their open streams end.
#[utoipa::path(delete, path = "/api/auth/me", tag = "auth", security(("session" = []), ("bearer" = [])),
    request_body = DeleteAccountRequest,
    responses((status = 204, description = "The account and all its data are gone; clears the session cookie"),
        (status = 401, body = wire::ErrorBody), (status = 403, body = wire::ErrorBody),
        (status = 409, body = wire::ErrorBody, description = "The last administrator; make another one first"),
        (status = 422, body = wire::ErrorBody, description = "The password is wrong (`password`)")))]
pub async fn delete_account(
    State(state): State<AppState>,
    user: AuthUser,
    Json(body): Json<DeleteAccountRequest>,
) -> Result<Response> {
    remove_account(&state, &user, body).await?;
    signed_out(&state)
}

/// Deletes the signed-in person's account and everything it owns, given its password; its sessions end.
pub(super) async fn remove_account(state: &AppState, user: &AuthUser, body: DeleteAccountRequest) -> Result<()> {
    user.session()?;
    let account = state.store.user_by_id(user.id).await?;
    let account = if account.password_hash.is_empty() {
        // An account without a password (made through the identity provider) confirms with its address.
        if !body.password.trim().eq_ignore_ascii_case(&account.email) {
            return Err(ApiError::invalid("password", "Type the account's e-mail address to confirm."));
        }
        account
    } else {
        own_account(state, user, body.password, "password", "The password is wrong.").await?
    };
    if account.is_admin {
        // Refused (409) for the last administrator: Quire would be left without one.
        state.store.set_admin(user.id, false).await?;
    }
    state.store.delete_user(user.id).await?;
    state.sessions.end_user(user.id);
    tracing::info!(user = %user.id, "account deleted");
    Ok(())
}
