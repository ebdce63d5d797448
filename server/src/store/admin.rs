//! Operator control: who may sign up (the sign-up mode and invitations), who administers Quire, accounts that
//! are disabled, one-time password reset links, and everyone's usage as an administrator sees it. Both backends
//! implement it (`sqlite/admin.rs`, `postgres/admin.rs`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::columns::Stored;
use super::{NewUser, Result, StoreError, User};

/// Who may create an account once the first one exists (the first is always allowed and administers Quire).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
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

/// Why a sign-up was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignUpRefusal {
    /// Sign-up is closed.
    Closed,
    /// Sign-up needs an invitation and none came.
    InviteRequired,
    /// No invitation has this token, or it was revoked.
    InviteInvalid,
    /// The invitation has expired.
    InviteExpired,
    /// The invitation was used as often as it may be.
    InviteUsedUp,
}

/// Why a password reset was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetRefusal {
    /// No reset link has this token (or its account is gone).
    Invalid,
    /// The link has expired.
    Expired,
    /// The link was used already.
    Used,
}

/// The key of the sign-up mode in the shared settings.
pub const SIGN_UP_MODE_SETTING: &str = "signup_mode";

/// An invitation to sign up, as stored (its token is only known to whoever it was given to).
#[derive(Debug, Clone, PartialEq)]
pub struct Invite {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub max_uses: i64,
    pub uses: i64,
    pub revoked_at: Option<DateTime<Utc>>,
}

#[derive(sqlx::FromRow)]
pub(crate) struct InviteRow<I, T> {
    id: I,
    created_at: T,
    expires_at: T,
    max_uses: i64,
    uses: i64,
    revoked_at: Option<T>,
}

impl<I: Stored<Uuid>, T: Stored<DateTime<Utc>>> TryFrom<InviteRow<I, T>> for Invite {
    type Error = StoreError;

    fn try_from(row: InviteRow<I, T>) -> Result<Self> {
        Ok(Invite {
            id: row.id.read("id")?,
            created_at: row.created_at.read("created_at")?,
            expires_at: row.expires_at.read("expires_at")?,
            max_uses: row.max_uses,
            uses: row.uses,
            revoked_at: row.revoked_at.read("revoked_at")?,
        })
    }
}

impl Invite {
    /// Why this invitation cannot be used at `now`, if it cannot.
    pub fn refusal(&self, now: DateTime<Utc>) -> Option<SignUpRefusal> {
        if self.revoked_at.is_some() {
            Some(SignUpRefusal::InviteInvalid)
        } else if self.expires_at <= now {
            Some(SignUpRefusal::InviteExpired)
        } else if self.uses >= self.max_uses {
            Some(SignUpRefusal::InviteUsedUp)
        } else {
            None
        }
    }
}

/// An account with its usage, as the administration lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct AccountUsage {
    pub id: Uuid,
    pub email: String,
    pub display_name: String,
    pub created_at: DateTime<Utc>,
    pub is_admin: bool,
    pub disabled_at: Option<DateTime<Utc>>,
    /// The account's own daily token budget (0 = none); `None` follows the configuration.
    pub own_budget: Option<i64>,
    /// Tokens spent today (UTC), input and output.
    pub tokens_today: i64,
    /// Messages in all its conversations.
    pub messages: i64,
    /// When one of its sessions was last used, to within a minute.
    pub last_seen_at: Option<DateTime<Utc>>,
}

#[derive(sqlx::FromRow)]
pub(crate) struct AccountUsageRow<I, T> {
    id: I,
    email: String,
    display_name: String,
    created_at: T,
    is_admin: bool,
    disabled_at: Option<T>,
    daily_token_budget: Option<i64>,
    tokens_today: i64,
    messages: i64,
    last_seen_at: Option<T>,
}

impl<I: Stored<Uuid>, T: Stored<DateTime<Utc>>> TryFrom<AccountUsageRow<I, T>> for AccountUsage {
    type Error = StoreError;

    fn try_from(row: AccountUsageRow<I, T>) -> Result<Self> {
        Ok(AccountUsage {
            id: row.id.read("id")?,
            email: row.email,
            display_name: row.display_name,
            created_at: row.created_at.read("created_at")?,
            is_admin: row.is_admin,
            disabled_at: row.disabled_at.read("disabled_at")?,
            own_budget: row.daily_token_budget,
            tokens_today: row.tokens_today,
            messages: row.messages,
            last_seen_at: row.last_seen_at.read("last_seen_at")?,
        })
    }
}

/// Most accounts one listing returns.
pub const MAX_ACCOUNTS_PAGE: u32 = 500;

/// Storage of operator control.
#[async_trait]
pub trait Admin: Send + Sync {
    /// Creates an account if `mode` lets it in: the first account always (it becomes the administrator), then
    /// anyone (`Open`), those with a usable invitation whose token has the SHA-256 `invite` (`Invite`, one use
    /// counted in the same transaction), or nobody (`Closed`). Sign-ups at once, on any instance, are made one
    /// after the other, so exactly one first account administers Quire and an invitation is never used more
    /// often than it may be. `Conflict` when the e-mail is taken (the invitation's use is not counted then).
    async fn sign_up(
        &self,
        user: NewUser,
        mode: SignUpMode,
        invite: Option<String>,
    ) -> Result<std::result::Result<User, SignUpRefusal>>;

    /// A shared setting, if it was set.
    async fn setting(&self, key: &str) -> Result<Option<String>>;
    /// Sets a shared setting.
    async fn set_setting(&self, key: &str, value: &str) -> Result<()>;

    /// Accounts in the order they were made, from `offset`, at most `limit` of them, with their usage today.
    async fn accounts(&self, offset: u32, limit: u32) -> Result<Vec<AccountUsage>>;
    /// Makes an account an administrator or not. `NotFound` for an unknown account; `Conflict` when it would
    /// leave no enabled administrator.
    async fn set_admin(&self, user: Uuid, admin: bool) -> Result<()>;
    /// Disables an account (it cannot sign in; every session ends and is refused) or enables it again; the ids
    /// of the sessions it ended. `NotFound` for an unknown account; `Conflict` when it would leave no enabled
    /// administrator.
    async fn set_disabled(&self, user: Uuid, disabled: bool) -> Result<Vec<Uuid>>;

    /// Stores a new invitation whose token has the SHA-256 `token_hash`.
    async fn create_invite(
        &self,
        token_hash: &str,
        created_by: Uuid,
        expires_at: DateTime<Utc>,
        max_uses: u32,
    ) -> Result<Invite>;
    /// The invitations, the newest first, at most [`MAX_INVITES_LISTED`].
    async fn invites(&self) -> Result<Vec<Invite>>;
    /// Revokes an invitation; `NotFound` when there is none with this id or it is revoked already.
    async fn revoke_invite(&self, id: Uuid) -> Result<()>;

    /// Stores a one-time password reset link of `user` whose token has the SHA-256 `token_hash`. `NotFound`
    /// for an unknown account.
    async fn create_password_reset(&self, user: Uuid, token_hash: &str, expires_at: DateTime<Utc>) -> Result<()>;
    /// The account of the reset link whose token has the SHA-256 `token_hash`, used or not; `None` when there
    /// is none.
    async fn password_reset_account(&self, token_hash: &str) -> Result<Option<Uuid>>;
    /// Uses the reset link whose token has the SHA-256 `token_hash`: in one transaction it is marked used, the
    /// account's password replaced and every session of it ended. The account and the ids of the sessions
    /// ended.
    async fn reset_password(
        &self,
        token_hash: &str,
        password_hash: &str,
    ) -> Result<std::result::Result<(Uuid, Vec<Uuid>), ResetRefusal>>;
}

/// Most invitations one listing returns.
pub const MAX_INVITES_LISTED: u32 = 500;

/// Why the reset link with these columns cannot be used at `now`, if it cannot.
pub(crate) fn reset_refusal(expires_at: DateTime<Utc>, used: bool, now: DateTime<Utc>) -> Option<ResetRefusal> {
    if used {
        Some(ResetRefusal::Used)
    } else if expires_at <= now {
        Some(ResetRefusal::Expired)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_round_trip_their_names() {
        for mode in [SignUpMode::Open, SignUpMode::Invite, SignUpMode::Closed] {
            assert_eq!(SignUpMode::parse(mode.as_str()), Some(mode));
        }
        assert_eq!(SignUpMode::parse("Open"), None);
        assert_eq!(SignUpMode::default(), SignUpMode::Invite);
    }

    #[test]
    fn an_invite_is_refused_once_revoked_expired_or_used_up() {
        let now = Utc::now();
        let invite = Invite {
            id: Uuid::nil(),
            created_at: now,
            expires_at: now + chrono::Duration::hours(1),
            max_uses: 2,
            uses: 1,
            revoked_at: None,
        };
        assert_eq!(invite.refusal(now), None);
        assert_eq!(Invite { uses: 2, ..invite.clone() }.refusal(now), Some(SignUpRefusal::InviteUsedUp));
        assert_eq!(Invite { expires_at: now, ..invite.clone() }.refusal(now), Some(SignUpRefusal::InviteExpired));
        assert_eq!(Invite { revoked_at: Some(now), ..invite }.refusal(now), Some(SignUpRefusal::InviteInvalid));
    }
}
