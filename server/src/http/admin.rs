//! `/api/admin/...`: accounts, roles, reset links, invitations, the sign-up mode and budgets, for administrators
//! (a 404 to anyone else), and `POST /api/auth/reset-password`, where a reset link's token sets a new password.

use axum::{
    extract::{FromRequestParts, State},
    http::{request::Parts, StatusCode},
    routing::{delete, get, post, put},
    Router,
};
use serde::Deserialize;
use uuid::Uuid;
use wire::admin::{
    AdminAccount, AdminAccountList, BudgetRequest, CreateInviteRequest, CreatedInvite, DisableRequest, InviteInfo,
    InviteList, ResetLink, ResetPasswordRequest, RoleRequest, SignUpSettings, MAX_INVITE_HOURS, MAX_INVITE_USES,
    RESET_LINK_HOURS,
};

use super::auth::check_new_password;
use super::error::{ApiError, Result};
use super::extract::{AuthUser, Json, Path, Query};
use super::rate_limit::{Quota, SignIn};
use crate::auth::{one_time, password};
use crate::AppState;
use store::admin::{AccountUsage, SIGN_UP_MODE_SETTING};
use store::{Invite, ResetRefusal, StoreError};

/// Accounts one page of `GET /api/admin/users` lists.
const ACCOUNTS_PAGE: u32 = 200;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/admin/users", get(list_accounts))
        .route("/api/admin/projects", get(list_projects))
        .route("/api/admin/users/{id}", delete(delete_account))
        .route("/api/admin/users/{id}/role", put(set_role))
        .route("/api/admin/users/{id}/disabled", put(set_disabled))
        .route("/api/admin/users/{id}/budget", put(set_budget))
        .route("/api/admin/users/{id}/reset-link", post(reset_link))
        .route("/api/admin/users/{id}/tokens", get(list_tokens))
        .route("/api/admin/tokens/{id}", delete(revoke_token))
        .route("/api/admin/invites", get(list_invites).post(create_invite))
        .route("/api/admin/invites/{id}", delete(revoke_invite))
        .route("/api/admin/signup", get(sign_up_settings).put(set_sign_up_settings))
        .route("/api/auth/reset-password", post(reset_password))
}

/// A signed-in, enabled administrator. To anyone else (signed in or not) the request is a 404; to an API token
/// (which never administers) a 403 that says so.
#[derive(Debug, Clone, Copy)]
pub struct AdminUser(pub AuthUser);

impl FromRequestParts<AppState> for AdminUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let user = match AuthUser::from_request_parts(parts, state).await {
            Ok(user) => user,
            Err(ApiError::Internal(e)) => return Err(ApiError::Internal(e)),
            Err(refused @ ApiError::Forbidden { code: "token_scope", .. }) => return Err(refused),
            Err(_) => return Err(ApiError::NotFound),
        };
        match state.store.user_by_id(user.id).await {
            Ok(account) if account.is_admin && !account.disabled => Ok(AdminUser(user)),
            Ok(_) | Err(StoreError::NotFound) => Err(ApiError::NotFound),
            Err(e) => Err(e.into()),
        }
    }
}

fn invite_info(invite: Invite) -> InviteInfo {
    InviteInfo {
        id: invite.id,
        created_at: invite.created_at,
        expires_at: invite.expires_at,
        max_uses: invite.max_uses,
        uses: invite.uses,
        revoked: invite.revoked_at.is_some(),
    }
}

fn account(state: &AppState, usage: AccountUsage) -> AdminAccount {
    let budget = usage.own_budget.map_or(state.config.user_daily_tokens, |own| own.max(0) as u64);
    AdminAccount {
        id: usage.id,
        email: usage.email,
        display_name: usage.display_name,
        created_at: usage.created_at,
        admin: usage.is_admin,
        disabled: usage.disabled_at.is_some(),
        tokens_today: usage.tokens_today,
        own_daily_tokens: usage.own_budget,
        daily_tokens: (budget > 0).then_some(budget),
        messages: usage.messages,
        last_seen_at: usage.last_seen_at,
    }
}

/// An administrator may not act on their own account here (they use their account page), so that nobody
/// locks themselves out by a click.
fn not_self(admin: &AdminUser, id: Uuid) -> Result<()> {
    if admin.0.id == id {
        return Err(ApiError::Conflict("An administrator cannot do this to their own account.".into()));
    }
    Ok(())
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct AccountsQuery {
    /// How many accounts to skip (from `next_offset`).
    #[serde(default)]
    // Described as a 64-bit integer: every `u32` is accepted, and `int32` (the default for `u32`) would tell
    // clients that half of them are invalid.
    #[param(value_type = i64, minimum = 0, maximum = 4294967295.0)]
    offset: u32,
}

/// `GET /api/admin/users`: every account in the order they were made, with its usage, a page at a time.
#[utoipa::path(get, path = "/api/admin/users", tag = "admin", security(("session" = []), ("bearer" = [])),
    params(AccountsQuery),
    responses((status = 200, body = AdminAccountList),
        (status = 404, body = wire::ErrorBody, description = "Not an administrator")))]
pub async fn list_accounts(
    State(state): State<AppState>,
    _: AdminUser,
    Query(query): Query<AccountsQuery>,
) -> Result<Json<AdminAccountList>> {
    let rows = state.store.accounts(query.offset, ACCOUNTS_PAGE + 1).await?;
    let more = rows.len() > ACCOUNTS_PAGE as usize;
    let accounts: Vec<_> = rows.into_iter().take(ACCOUNTS_PAGE as usize).map(|u| account(&state, u)).collect();
    let next_offset = more.then(|| query.offset.saturating_add(ACCOUNTS_PAGE));
    Ok(Json(AdminAccountList { accounts, next_offset }))
}

/// `GET /api/admin/projects`: every team project in the order they were made, with its members, conversations and
/// the tokens they spent, a page at a time.
#[utoipa::path(get, path = "/api/admin/projects", tag = "admin", security(("session" = []), ("bearer" = [])),
    params(AccountsQuery),
    responses((status = 200, body = wire::admin::AdminProjectList),
        (status = 404, body = wire::ErrorBody, description = "Not an administrator")))]
pub async fn list_projects(
    State(state): State<AppState>,
    _: AdminUser,
    Query(query): Query<AccountsQuery>,
) -> Result<Json<wire::admin::AdminProjectList>> {
    let mut projects = state.store.project_usage(query.offset, ACCOUNTS_PAGE + 1).await?;
    let more = projects.len() > ACCOUNTS_PAGE as usize;
    projects.truncate(ACCOUNTS_PAGE as usize);
    let next_offset = more.then(|| query.offset.saturating_add(ACCOUNTS_PAGE));
    Ok(Json(wire::admin::AdminProjectList { projects, next_offset }))
}

/// `PUT /api/admin/users/{id}/role`: makes an account an administrator, or no longer one (never the last).
#[utoipa::path(put, path = "/api/admin/users/{id}/role", tag = "admin", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "The account")), request_body = RoleRequest,
    responses((status = 204, description = "Changed"),
        (status = 404, body = wire::ErrorBody, description = "Not an administrator, or no such account"),
        (status = 409, body = wire::ErrorBody, description = "It would leave no administrator")))]
pub async fn set_role(
    State(state): State<AppState>,
    admin: AdminUser,
    Path(id): Path<Uuid>,
    Json(body): Json<RoleRequest>,
) -> Result<StatusCode> {
    state.store.set_admin(id, body.admin).await?;
    tracing::info!(admin = %admin.0.id, account = %id, is_admin = body.admin, "role changed");
    Ok(StatusCode::NO_CONTENT)
}

/// `PUT /api/admin/users/{id}/disabled`: disables an account (it cannot sign in; its sessions end at once, on
/// every instance, with their open streams) or enables it again.
#[utoipa::path(put, path = "/api/admin/users/{id}/disabled", tag = "admin", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "The account")), request_body = DisableRequest,
    responses((status = 204, description = "Changed"),
        (status = 404, body = wire::ErrorBody, description = "Not an administrator, or no such account"),
        (status = 409, body = wire::ErrorBody, description = "One's own account, or the last administrator")))]
pub async fn set_disabled(
    State(state): State<AppState>,
    admin: AdminUser,
    Path(id): Path<Uuid>,
    Json(body): Json<DisableRequest>,
) -> Result<StatusCode> {
    not_self(&admin, id)?;
    let ended = state.store.set_disabled(id, body.disabled).await?;
    if body.disabled {
        state.sessions.end(&ended);
        state.sessions.end_user(id);
    }
    tracing::info!(admin = %admin.0.id, account = %id, disabled = body.disabled, sessions_ended = ended.len(),
        "account disabled or enabled");
    Ok(StatusCode::NO_CONTENT)
}

/// `PUT /api/admin/users/{id}/budget`: the account's own daily token budget (0 = none; `null` follows
/// `QUIRE_USER_DAILY_TOKENS`).
#[utoipa::path(put, path = "/api/admin/users/{id}/budget", tag = "admin", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "The account")), request_body = BudgetRequest,
    responses((status = 204, description = "Changed"),
        (status = 404, body = wire::ErrorBody, description = "Not an administrator, or no such account"),
        (status = 422, body = wire::ErrorBody, description = "Larger than a budget can be")))]
pub async fn set_budget(
    State(state): State<AppState>,
    _: AdminUser,
    Path(id): Path<Uuid>,
    Json(body): Json<BudgetRequest>,
) -> Result<StatusCode> {
    if body.daily_tokens.is_some_and(|tokens| i64::try_from(tokens).is_err()) {
        return Err(ApiError::invalid("daily_tokens", "The budget is larger than a budget can be."));
    }
    state.store.set_daily_token_budget(id, body.daily_tokens).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `DELETE /api/admin/users/{id}`: removes the account and everything it owns, as deleting one's own account
/// does; its sessions end. An administrator loses the role first.
#[utoipa::path(delete, path = "/api/admin/users/{id}", tag = "admin", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "The account")),
    responses((status = 204, description = "The account and all its data are gone"),
        (status = 404, body = wire::ErrorBody, description = "Not an administrator, or no such account"),
        (status = 409, body = wire::ErrorBody, description = "One's own account, or an administrator")))]
pub async fn delete_account(
    State(state): State<AppState>,
    admin: AdminUser,
    Path(id): Path<Uuid>,
) -> Result<StatusCode> {
    not_self(&admin, id)?;
    if state.store.user_by_id(id).await?.is_admin {
        return Err(ApiError::Conflict("Remove the administrator role from this account first.".into()));
    }
    // Ended before the rows go, so that other instances close the account's open streams too.
    let ended = state.store.end_sessions(id, None).await?;
    state.store.delete_user(id).await?;
    state.sessions.end(&ended);
    state.sessions.end_user(id);
    tracing::info!(admin = %admin.0.id, account = %id, "account deleted by an administrator");
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /api/admin/users/{id}/reset-link`: a one-time link, valid for a day, that sets a new password for the
/// account and ends its sessions. Shown once; Quire sends no e-mail: the administrator passes it on.
#[utoipa::path(post, path = "/api/admin/users/{id}/reset-link", tag = "admin", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "The account")),
    responses((status = 201, body = ResetLink),
        (status = 404, body = wire::ErrorBody, description = "Not an administrator, or no such account")))]
pub async fn reset_link(
    State(state): State<AppState>,
    admin: AdminUser,
    Path(id): Path<Uuid>,
) -> Result<(StatusCode, Json<ResetLink>)> {
    let (token, hash) = one_time::issue();
    let expires_at = store::now() + chrono::Duration::hours(i64::from(RESET_LINK_HOURS));
    state.store.create_password_reset(id, &hash, expires_at).await?;
    tracing::info!(admin = %admin.0.id, account = %id, "password reset link made");
    let link = format!("/reset-password?token={token}");
    Ok((StatusCode::CREATED, Json(ResetLink { token, link, expires_at })))
}

/// `GET /api/admin/users/{id}/tokens`: the account's API tokens that are neither revoked nor expired, the newest
/// first (never their secrets).
#[utoipa::path(get, path = "/api/admin/users/{id}/tokens", tag = "admin", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "The account")),
    responses((status = 200, body = wire::ApiTokenList),
        (status = 403, body = wire::ErrorBody, description = "Made with an API token (`token_scope`)"),
        (status = 404, body = wire::ErrorBody, description = "Not an administrator, or no such account")))]
pub async fn list_tokens(
    State(state): State<AppState>,
    _: AdminUser,
    Path(id): Path<Uuid>,
) -> Result<Json<wire::ApiTokenList>> {
    state.store.user_by_id(id).await?;
    let tokens = state.store.api_tokens(id).await?.into_iter().map(super::tokens::token_info).collect();
    Ok(Json(wire::ApiTokenList { tokens }))
}

/// `DELETE /api/admin/tokens/{id}`: revokes any account's API token; it is refused from now on, and the event
/// streams opened with it end, on every instance.
#[utoipa::path(delete, path = "/api/admin/tokens/{id}", tag = "admin", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "The token")),
    responses((status = 204, description = "Revoked"),
        (status = 403, body = wire::ErrorBody, description = "Made with an API token (`token_scope`)"),
        (status = 404, body = wire::ErrorBody,
            description = "Not an administrator, or no token with this id that is neither revoked nor expired")))]
pub async fn revoke_token(State(state): State<AppState>, admin: AdminUser, Path(id): Path<Uuid>) -> Result<StatusCode> {
    let owner = state.store.revoke_any_api_token(id).await?;
    state.sessions.end(&[id]);
    tracing::info!(admin = %admin.0.id, account = %owner, token = %id, "API token revoked by an administrator");
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /api/admin/invites`: the invitations, the newest first.
#[utoipa::path(get, path = "/api/admin/invites", tag = "admin", security(("session" = []), ("bearer" = [])),
    responses((status = 200, body = InviteList),
        (status = 404, body = wire::ErrorBody, description = "Not an administrator")))]
pub async fn list_invites(State(state): State<AppState>, _: AdminUser) -> Result<Json<InviteList>> {
    let invites = state.store.invites().await?.into_iter().map(invite_info).collect();
    Ok(Json(InviteList { invites }))
}

/// `POST /api/admin/invites`: a new invitation; its token (in the sign-up link) is shown only now.
#[utoipa::path(post, path = "/api/admin/invites", tag = "admin", security(("session" = []), ("bearer" = [])),
    request_body = CreateInviteRequest,
    responses((status = 201, body = CreatedInvite),
        (status = 404, body = wire::ErrorBody, description = "Not an administrator"),
        (status = 422, body = wire::ErrorBody, description = "Expiry or uses out of range")))]
pub async fn create_invite(
    State(state): State<AppState>,
    admin: AdminUser,
    Json(body): Json<CreateInviteRequest>,
) -> Result<(StatusCode, Json<CreatedInvite>)> {
    if !(1..=MAX_INVITE_HOURS).contains(&body.expires_in_hours) {
        let message = format!("An invitation lasts 1 to {MAX_INVITE_HOURS} hours.");
        return Err(ApiError::invalid("expires_in_hours", message));
    }
    if !(1..=MAX_INVITE_USES).contains(&body.max_uses) {
        return Err(ApiError::invalid("max_uses", format!("An invitation has 1 to {MAX_INVITE_USES} uses.")));
    }
    let (token, hash) = one_time::issue();
    let expires_at = store::now() + chrono::Duration::hours(i64::from(body.expires_in_hours));
    let invite = state.store.create_invite(&hash, admin.0.id, expires_at, body.max_uses).await?;
    tracing::info!(admin = %admin.0.id, invite = %invite.id, "invitation made");
    let link = format!("/signup?invite={token}");
    Ok((StatusCode::CREATED, Json(CreatedInvite { invite: invite_info(invite), token, link })))
}

/// `DELETE /api/admin/invites/{id}`: revokes an invitation; signing up with it is refused from now on.
#[utoipa::path(delete, path = "/api/admin/invites/{id}", tag = "admin", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "The invitation")),
    responses((status = 204, description = "Revoked"),
        (status = 404, body = wire::ErrorBody, description = "Not an administrator, or no such open invitation")))]
pub async fn revoke_invite(State(state): State<AppState>, _: AdminUser, Path(id): Path<Uuid>) -> Result<StatusCode> {
    state.store.revoke_invite(id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /api/admin/signup`: who may sign up now.
#[utoipa::path(get, path = "/api/admin/signup", tag = "admin", security(("session" = []), ("bearer" = [])),
    responses((status = 200, body = SignUpSettings),
        (status = 404, body = wire::ErrorBody, description = "Not an administrator")))]
pub async fn sign_up_settings(State(state): State<AppState>, _: AdminUser) -> Result<Json<SignUpSettings>> {
    Ok(Json(SignUpSettings { mode: crate::auth::setup::sign_up_mode(&state.store, state.config.signup).await? }))
}

/// `PUT /api/admin/signup`: sets who may sign up, for every instance (in place of `QUIRE_SIGNUP`).
#[utoipa::path(put, path = "/api/admin/signup", tag = "admin", security(("session" = []), ("bearer" = [])),
    request_body = SignUpSettings,
    responses((status = 200, body = SignUpSettings),
        (status = 404, body = wire::ErrorBody, description = "Not an administrator")))]
pub async fn set_sign_up_settings(
    State(state): State<AppState>,
    admin: AdminUser,
    Json(body): Json<SignUpSettings>,
) -> Result<Json<SignUpSettings>> {
    let mode = body.mode;
    state.store.set_setting(SIGN_UP_MODE_SETTING, mode.as_str()).await?;
    tracing::info!(admin = %admin.0.id, mode = mode.as_str(), "sign-up mode changed");
    Ok(Json(SignUpSettings { mode: body.mode }))
}

fn reset_refused(refusal: ResetRefusal) -> ApiError {
    let (code, message) = match refusal {
        ResetRefusal::Invalid => ("reset_invalid", "This password reset link is not valid."),
        ResetRefusal::Expired => ("reset_expired", "This password reset link has expired. Ask for a new one."),
        ResetRefusal::Used => ("reset_used", "This password reset link was used already. Ask for a new one."),
        ResetRefusal::Ended => (
            "reset_ended",
            "This password reset link no longer works: a newer one was made, or the password was changed since. \
             Ask for a new one.",
        ),
    };
    ApiError::unprocessable(code, message, Some("token"))
}

/// `POST /api/auth/reset-password`: sets a new password with the token of a reset link an administrator made;
/// the link is used up and every session of the account ends. Sign in afterwards.
#[utoipa::path(post, path = "/api/auth/reset-password", tag = "auth", request_body = ResetPasswordRequest,
    responses((status = 204, description = "The password is set; every session of the account ended"),
        (status = 422, body = wire::ErrorBody,
            description = "The link is not valid, expired, used or ended (`token`), or the password too weak (`new_password`)"),
        (status = 429, body = wire::ErrorBody)))]
pub async fn reset_password(
    State(state): State<AppState>,
    _: Quota<SignIn>,
    Json(body): Json<ResetPasswordRequest>,
) -> Result<StatusCode> {
    reset_with_link(&state, body).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Sets a new password with a reset link's token; the link is used up and every session of the account ends.
pub(super) async fn reset_with_link(state: &AppState, body: ResetPasswordRequest) -> Result<()> {
    let token = body.token.trim();
    if token.is_empty() || token.chars().count() > one_time::MAX_TOKEN_CHARS {
        return Err(reset_refused(ResetRefusal::Invalid));
    }
    let hash = one_time::hash(token);
    let Some(user) = state.store.password_reset_account(&hash).await? else {
        return Err(reset_refused(ResetRefusal::Invalid));
    };
    let account = match state.store.user_by_id(user).await {
        Ok(account) => account,
        Err(StoreError::NotFound) => return Err(reset_refused(ResetRefusal::Invalid)),
        Err(e) => return Err(e.into()),
    };
    wire::validate::password(&body.new_password)
        .map_err(|invalid| ApiError::invalid("new_password", invalid.message))?;
    check_new_password("new_password", &body.new_password, &account.email, &account.display_name).await?;
    let password_hash = password::hash(body.new_password).await.map_err(ApiError::Internal)?;
    let (user, ended) = state.store.reset_password(&hash, &password_hash).await?.map_err(reset_refused)?;
    state.sessions.end(&ended);
    state.sessions.end_user(user);
    tracing::info!(user = %user, sessions_ended = ended.len(), "password set with a reset link");
    Ok(())
}
