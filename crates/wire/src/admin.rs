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

/// Who may create an account. In `open` mode the first account administers Quire; in the others the first
/// administrator needs a setup link (or the operator's `quire admin create`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum SignUpMode {
    /// Anyone who reaches Quire.
    Open,
    /// Only people with an invitation an administrator made.
    #[default]
    Invite,
    /// Nobody.
    Closed,
}

impl SignUpMode {
    /// The name the mode has in settings, the environment and the API.
    pub fn as_str(self) -> &'static str {
        match self {
            SignUpMode::Open => "open",
            SignUpMode::Invite => "invite",
            SignUpMode::Closed => "closed",
        }
    }

    /// Every mode's name.
    pub const NAMES: [&'static str; 3] = ["open", "invite", "closed"];

    /// The mode named `name`, if any.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "open" => Some(SignUpMode::Open),
            "invite" => Some(SignUpMode::Invite),
            "closed" => Some(SignUpMode::Closed),
            _ => None,
        }
    }
}

/// `GET` and `PUT /api/admin/signup`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SignUpSettings {
    pub mode: SignUpMode,
}

/// One account as an administrator sees it, with its usage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AdminAccount {
    pub id: Uuid,
    pub email: String,
    pub display_name: String,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
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
    #[cfg_attr(feature = "browser", serde(default, deserialize_with = "crate::time::rfc3339_or_null"))]
    pub last_seen_at: Option<DateTime<Utc>>,
}

/// `GET /api/admin/users`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AdminAccountList {
    pub accounts: Vec<AdminAccount>,
    /// The `offset` of the next page, when there may be more.
    pub next_offset: Option<u32>,
}

/// A team project as an administrator sees it: its size, and the tokens its conversations spent (whoever sent
/// them; each person's share is on their own ledger).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AdminProject {
    pub id: Uuid,
    pub name: String,
    pub archived: bool,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub created_at: DateTime<Utc>,
    pub members: u64,
    pub conversations: u64,
    /// Tokens sent to and received from models in the conversations now in the project, all time.
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// `GET /api/admin/projects`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AdminProjectList {
    pub projects: Vec<AdminProject>,
    /// The `offset` of the next page, when there may be more.
    pub next_offset: Option<u32>,
}

/// `PUT /api/admin/users/{id}/role`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RoleRequest {
    pub admin: bool,
}

/// `PUT /api/admin/users/{id}/disabled`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct DisableRequest {
    pub disabled: bool,
}

/// `PUT /api/admin/users/{id}/budget`: the account's own daily token budget (0 = none), or `null` to follow
/// the configured one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct BudgetRequest {
    #[serde(default, deserialize_with = "super::objects::optional_whole")]
    pub daily_tokens: Option<u64>,
}

/// `POST /api/admin/invites`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateInviteRequest {
    /// How long it lasts, in hours: 1 to 720 (30 days).
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 720))]
    #[serde(deserialize_with = "super::objects::whole")]
    pub expires_in_hours: u32,
    /// How many accounts may sign up with it: 1 to 1000.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 1000))]
    #[serde(deserialize_with = "super::objects::whole")]
    pub max_uses: u32,
}

/// An invitation as listed (its token is only shown once, when it is made).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InviteInfo {
    pub id: Uuid,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub created_at: DateTime<Utc>,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub expires_at: DateTime<Utc>,
    pub max_uses: i64,
    pub uses: i64,
    pub revoked: bool,
}

/// `POST /api/admin/invites`: the new invitation, its token and the sign-up link that carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CreatedInvite {
    pub invite: InviteInfo,
    pub token: String,
    /// The path of the sign-up page with the token (`/signup?invite=...`).
    pub link: String,
}

/// `GET /api/admin/invites`: the newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InviteList {
    pub invites: Vec<InviteInfo>,
}

/// `POST /api/admin/users/{id}/reset-link`: a one-time link to set a new password.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ResetLink {
    pub token: String,
    /// The path of the page that sets the new password (`/reset-password?token=...`).
    pub link: String,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub expires_at: DateTime<Utc>,
}

/// `POST /api/auth/reset-password`: sets a new password with a reset link's token; every session ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ResetPasswordRequest {
    pub token: String,
    /// At least 12 characters, not in a list of breached passwords, and not a common or easily guessed one.
    pub new_password: String,
}
