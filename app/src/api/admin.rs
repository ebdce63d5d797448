//! Wire types of operator control: accounts with their usage, roles, disabling, invitations, password reset
//! links and the sign-up mode (`/api/admin/...`, only for administrators).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Longest an invitation may last, in hours (30 days).
pub const MAX_INVITE_HOURS: u32 = 24 * 30;
/// Most uses one invitation may have.
pub const MAX_INVITE_USES: u32 = 1000;
/// How long a password reset link lasts, in hours.
pub const RESET_LINK_HOURS: u32 = 24;

/// Who may sign up once the first account exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum SignUpMode {
    /// Anyone who reaches Quire.
    Open,
    /// Only people with an invitation.
    Invite,
    /// Nobody.
    Closed,
}

/// `GET` and `PUT /api/admin/signup`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SignUpSettings {
    pub mode: SignUpMode,
}

/// One account as an administrator sees it, with its usage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct AdminAccount {
    pub id: Uuid,
    pub email: String,
    pub display_name: String,
    #[cfg_attr(feature = "hydrate", serde(deserialize_with = "crate::api::time::rfc3339"))]
    pub created_at: DateTime<Utc>,
    /// Whether the account administers Quire.
    pub admin: bool,
    /// Whether the account is disabled (it cannot sign in; its sessions ended).
    pub disabled: bool,
    /// Tokens spent today (UTC), input and output.
    pub tokens_today: i64,
    /// The account's own daily token budget (0 = none); `None` follows the configured one.
    pub own_daily_tokens: Option<i64>,
    /// The budget in force today, own or configured; `None` when there is none.
    pub daily_tokens: Option<u64>,
    /// Messages in all its conversations.
    pub messages: i64,
    /// When it was last seen, to within a minute; `None` when never signed in (or long ago).
    #[cfg_attr(feature = "hydrate", serde(default, deserialize_with = "crate::api::time::rfc3339_or_null"))]
    pub last_seen_at: Option<DateTime<Utc>>,
}

/// `GET /api/admin/users`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct AdminAccountList {
    pub accounts: Vec<AdminAccount>,
    /// The `offset` of the next page, when there may be more.
    pub next_offset: Option<u32>,
}

/// `PUT /api/admin/users/{id}/role`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RoleRequest {
    pub admin: bool,
}

/// `PUT /api/admin/users/{id}/disabled`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct DisableRequest {
    pub disabled: bool,
}

/// `PUT /api/admin/users/{id}/budget`: the account's own daily token budget (0 = none), or `null` to follow
/// the configured one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct BudgetRequest {
    #[serde(default, deserialize_with = "super::objects::optional_whole")]
    pub daily_tokens: Option<u64>,
}

/// `POST /api/admin/invites`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateInviteRequest {
    /// How long it lasts, in hours: 1 to 720 (30 days).
    #[cfg_attr(feature = "ssr", schema(minimum = 1, maximum = 720))]
    #[serde(deserialize_with = "super::objects::whole")]
    pub expires_in_hours: u32,
    /// How many accounts may sign up with it: 1 to 1000.
    #[cfg_attr(feature = "ssr", schema(minimum = 1, maximum = 1000))]
    #[serde(deserialize_with = "super::objects::whole")]
    pub max_uses: u32,
}

/// An invitation as listed (its token is only shown once, when it is made).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct InviteInfo {
    pub id: Uuid,
    #[cfg_attr(feature = "hydrate", serde(deserialize_with = "crate::api::time::rfc3339"))]
    pub created_at: DateTime<Utc>,
    #[cfg_attr(feature = "hydrate", serde(deserialize_with = "crate::api::time::rfc3339"))]
    pub expires_at: DateTime<Utc>,
    pub max_uses: i64,
    pub uses: i64,
    pub revoked: bool,
}

/// `POST /api/admin/invites`: the new invitation, its token and the sign-up link that carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct CreatedInvite {
    pub invite: InviteInfo,
    pub token: String,
    /// The path of the sign-up page with the token (`/signup?invite=...`).
    pub link: String,
}

/// `GET /api/admin/invites`: the newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct InviteList {
    pub invites: Vec<InviteInfo>,
}

/// `POST /api/admin/users/{id}/reset-link`: a one-time link to set a new password.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ResetLink {
    pub token: String,
    /// The path of the page that sets the new password (`/reset-password?token=...`).
    pub link: String,
    #[cfg_attr(feature = "hydrate", serde(deserialize_with = "crate::api::time::rfc3339"))]
    pub expires_at: DateTime<Utc>,
}

/// `POST /api/auth/reset-password`: sets a new password with a reset link's token; every session ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ResetPasswordRequest {
    pub token: String,
    /// At least 12 characters, not in a list of breached passwords, and not a common or easily guessed one.
    pub new_password: String,
}

/// The browser's calls to `/api/admin/...` and the password reset (used only by the admin and reset pages, which
/// are loaded on first visit).
pub mod calls {
    use gloo_net::http::Request;
    use serde::Serialize;
    use uuid::Uuid;

    use super::*;
    use crate::api::client::{expect_empty, fetch, network_error, read_json, send_json, ApiError};

    type ApiResult<T> = Result<T, ApiError>;

    async fn put(path: &str, body: &impl Serialize) -> ApiResult<()> {
        let request = Request::put(path).json(body).map_err(network_error)?;
        expect_empty(request.send().await).await
    }

    /// `GET /api/admin/users`: the page from `offset` (0 for the first, then `next_offset`).
    pub async fn accounts(offset: u32) -> ApiResult<AdminAccountList> {
        let path = format!("/api/admin/users?offset={offset}");
        fetch(Request::get(&path)).await
    }

    /// `PUT /api/admin/users/{id}/role`.
    pub async fn set_admin(id: Uuid, admin: bool) -> ApiResult<()> {
        put(&format!("/api/admin/users/{id}/role"), &RoleRequest { admin }).await
    }

    /// `PUT /api/admin/users/{id}/disabled`.
    pub async fn set_disabled(id: Uuid, disabled: bool) -> ApiResult<()> {
        put(&format!("/api/admin/users/{id}/disabled"), &DisableRequest { disabled }).await
    }

    /// `PUT /api/admin/users/{id}/budget`.
    pub async fn set_budget(id: Uuid, daily_tokens: Option<u64>) -> ApiResult<()> {
        put(&format!("/api/admin/users/{id}/budget"), &BudgetRequest { daily_tokens }).await
    }

    /// `DELETE /api/admin/users/{id}`.
    pub async fn delete_account(id: Uuid) -> ApiResult<()> {
        expect_empty(Request::delete(&format!("/api/admin/users/{id}")).send().await).await
    }

    /// `POST /api/admin/users/{id}/reset-link`.
    pub async fn reset_link(id: Uuid) -> ApiResult<ResetLink> {
        fetch(Request::post(&format!("/api/admin/users/{id}/reset-link"))).await
    }

    /// `GET /api/admin/invites`.
    pub async fn invites() -> ApiResult<InviteList> {
        fetch(Request::get("/api/admin/invites")).await
    }

    /// `POST /api/admin/invites`.
    pub async fn create_invite(body: &CreateInviteRequest) -> ApiResult<CreatedInvite> {
        read_json(send_json(Request::post("/api/admin/invites"), body).await?).await
    }

    /// `DELETE /api/admin/invites/{id}`.
    pub async fn revoke_invite(id: Uuid) -> ApiResult<()> {
        expect_empty(Request::delete(&format!("/api/admin/invites/{id}")).send().await).await
    }

    /// `GET /api/admin/signup`.
    pub async fn sign_up_settings() -> ApiResult<SignUpSettings> {
        fetch(Request::get("/api/admin/signup")).await
    }

    /// `PUT /api/admin/signup`.
    pub async fn set_sign_up_mode(mode: SignUpMode) -> ApiResult<()> {
        let response = send_json(Request::put("/api/admin/signup"), &SignUpSettings { mode }).await?;
        read_json::<SignUpSettings>(response).await.map(drop)
    }

    /// `POST /api/auth/reset-password`.
    pub async fn reset_password(body: &ResetPasswordRequest) -> ApiResult<()> {
        let request = Request::post("/api/auth/reset-password").json(body).map_err(network_error)?;
        expect_empty(request.send().await).await
    }
}
