//! Wire types of personal API tokens: secrets a person makes in their settings for scripts and other programs,
//! sent as `Authorization: Bearer quire_pat_…`, each with a scope and an expiry.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// What every API token's secret starts with, so that it is told from a session token at a glance (and by secret
/// scanners).
pub const TOKEN_PREFIX: &str = "quire_pat_";
/// Longest accepted token name, in characters.
pub const MAX_TOKEN_NAME_CHARS: usize = 100;
/// Longest an API token may last, in days: every token expires.
pub const MAX_TOKEN_DAYS: u32 = 365;
/// Most tokens a person may have that are neither revoked nor expired.
pub const MAX_LIVE_TOKENS: u32 = 50;

/// What an API token may do. Neither scope manages the account, its sessions or tokens, nor Quire itself: that
/// takes signing in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum TokenScope {
    /// Reads what the person reads (`GET` only).
    Read,
    /// Reads, and writes in the person's conversations: new conversations, messages, answers, documents,
    /// requirements and attached files.
    Chat,
}

impl TokenScope {
    /// The scope's name, as the API and the database spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenScope::Read => "read",
            TokenScope::Chat => "chat",
        }
    }

    /// The scope named `name`, if any.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "read" => Some(TokenScope::Read),
            "chat" => Some(TokenScope::Chat),
            _ => None,
        }
    }
}

/// `POST /api/tokens`: a new token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateTokenRequest {
    /// What the token is for, to tell it from the others in the list.
    #[cfg_attr(feature = "openapi", schema(value_type = super::schema::TokenName, inline))]
    pub name: String,
    pub scope: TokenScope,
    /// How long it lasts, in days: 1 to 365. No token lasts for ever.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 365))]
    #[serde(deserialize_with = "super::objects::whole")]
    pub expires_in_days: u32,
}

/// An API token as listed: never its secret, which is shown once, when it is made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApiTokenInfo {
    pub id: Uuid,
    pub name: String,
    pub scope: TokenScope,
    /// The secret's first characters after `quire_pat_`, to recognise it by; not enough to use it.
    pub prefix: String,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub created_at: DateTime<Utc>,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub expires_at: DateTime<Utc>,
    /// When a request last came with it, to within a minute; `null` when never.
    #[cfg_attr(feature = "browser", serde(default, deserialize_with = "crate::time::rfc3339_or_null"))]
    pub last_used_at: Option<DateTime<Utc>>,
}

/// The answer to `POST /api/tokens`: the new token and its secret, shown this once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CreatedToken {
    #[serde(flatten)]
    pub info: ApiTokenInfo,
    /// The secret (`quire_pat_…`), to send as `Authorization: Bearer <token>`. Quire keeps only its hash: it
    /// cannot show it again.
    pub token: String,
}

/// `GET /api/tokens` (and an administrator's `GET /api/admin/users/{id}/tokens`): the tokens that are neither
/// revoked nor expired, the newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApiTokenList {
    pub tokens: Vec<ApiTokenInfo>,
}
