//! Wire types of accounts and sessions.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Shortest accepted password, in characters.
pub const MIN_PASSWORD_CHARS: usize = 12;
/// Longest accepted password, in characters.
pub const MAX_PASSWORD_CHARS: usize = 1024;
/// Longest accepted e-mail address, in characters.
pub const MAX_EMAIL_CHARS: usize = 254;
/// Longest accepted display name, in characters.
pub const MAX_DISPLAY_NAME_CHARS: usize = 100;

/// `POST /api/auth/register`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RegisterRequest {
    #[cfg_attr(feature = "openapi", schema(value_type = super::schema::Email, inline))]
    pub email: String,
    /// At least 12 characters, not in a list of breached passwords, and not a common or easily guessed one.
    #[cfg_attr(feature = "openapi", schema(value_type = super::schema::NewPassword, inline))]
    pub password: String,
    /// The part of the address before `@` when left out or blank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<super::schema::DisplayName>, inline))]
    pub display_name: Option<String>,
    /// The token of an invitation, when sign-up is by invitation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(max_length = 64))]
    pub invite: Option<String>,
    /// The token of the setup link the server logs while it has no administrator: the account administers Quire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(max_length = 64))]
    pub setup: Option<String>,
}

/// `POST /api/auth/login`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct LoginRequest {
    /// Longer than any address an account can have: answered like a wrong password.
    #[cfg_attr(feature = "openapi", schema(max_length = 254))]
    pub email: String,
    /// Longer than any password an account can have: answered like a wrong password.
    #[cfg_attr(feature = "openapi", schema(max_length = 1024))]
    pub password: String,
}

/// A signed-in person as the API shows them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UserProfile {
    pub id: Uuid,
    pub email: String,
    pub display_name: String,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub created_at: DateTime<Utc>,
    /// Whether the account administers Quire.
    #[serde(default)]
    pub admin: bool,
    /// Whether the account has a password; one made at a sign-in through the identity provider has none (and
    /// confirms its deletion with its e-mail address instead).
    #[serde(default)]
    pub has_password: bool,
}

/// The answer to sign-up and sign-in: the account and its new session token (also set as an HttpOnly cookie).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuthResponse {
    pub user: UserProfile,
    pub token: String,
}

/// `GET /api/auth/methods`: how people sign in here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SignInMethods {
    /// Whether e-mail and password sign in (and up); `false` when single sign-on is the only way.
    pub password: bool,
    /// The organisation's identity provider, when one is configured.
    pub sso: Option<SsoMethod>,
}

/// Single sign-on as the sign-in page offers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SsoMethod {
    /// The button says "Sign in with <label>".
    pub label: String,
    /// Where the browser goes to start (`GET`, a link).
    pub start: String,
}

/// `POST /api/auth/logout` of a session signed in through the identity provider: Quire's session has ended;
/// the browser goes on to the provider to end its session there too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SignedOut {
    /// The provider's end-session address, with the session's ID token as a hint.
    pub end_session_url: String,
}

/// `POST /api/auth/password`: a new password in place of the current one; every other session ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ChangePasswordRequest {
    pub current_password: String,
    /// At least 12 characters, not in a list of breached passwords, and not a common or easily guessed one.
    pub new_password: String,
}

/// `DELETE /api/auth/me`: removes the account and everything it owns, once its password is given again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct DeleteAccountRequest {
    pub password: String,
}

/// One signed-in session of the account, as `GET /api/auth/sessions` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SessionInfo {
    /// Names the session for `DELETE /api/auth/sessions/{id}`; not its token, nor enough to act as it.
    pub id: String,
    /// When it signed in.
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub created_at: DateTime<Utc>,
    /// When it was last used, to within a minute.
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub last_seen_at: DateTime<Utc>,
    /// The browser and system it signed in from, in a few words ("Firefox on Linux"), when known.
    pub device: Option<String>,
    /// The network it signed in from ("203.0.113.0/24"), when known: as Quire saw it, so behind a reverse
    /// proxy the proxy's.
    pub ip_prefix: Option<String>,
    /// Whether it is the session making this request.
    pub current: bool,
}

/// `GET /api/auth/sessions`: the account's sessions that can still be used, the most recently used first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SessionList {
    pub sessions: Vec<SessionInfo>,
}
