//! Operator control: who may sign up (the sign-up mode and invitations), who administers Quire, accounts that
//! are disabled, one-time password reset links, and everyone's usage as an administrator sees it. Both backends
//! run the statements below (`sqlite/admin.rs`, `postgres/admin.rs` only say how writes are made one after the
//! other).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;
use wire::admin::AdminProject;

use super::columns::{convert, ids, shared_sql, stored_row, Stored};
use super::threads::found;
use super::{now, NewUser, Result, StoreError, User};

pub use wire::admin::SignUpMode;

/// What lets a sign-up in besides the sign-up mode, with the SHA-256 of its token where it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignUpPass {
    /// An invitation an administrator made.
    Invite(String),
    /// A setup link printed to the log while Quire has no administrator: makes the first one, in any mode.
    Setup(String),
    /// The operator on the command line (`quire admin create`): an administrator, in any mode.
    Operator,
}

/// Why a sign-up was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignUpRefusal {
    /// Sign-up is closed.
    Closed,
    /// Quire has no administrator yet and sign-up is not open: only the setup link makes the first account.
    SetupRequired,
    /// No unused setup link has this token, or Quire has an administrator already.
    SetupInvalid,
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
    /// A newer link of the account was made, or its password changed, since this one was.
    Ended,
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

stored_row! {
    InviteRow<I, T> -> Invite {
        id: I,
        created_at: T,
        expires_at: T,
        max_uses: i64,
        uses: i64,
        revoked_at: Option<T>,
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

stored_row! {
    AccountUsageRow<I, T> -> AccountUsage {
        id: I,
        email: String,
        display_name: String,
        created_at: T,
        is_admin: bool,
        disabled_at: Option<T>,
        tokens_today: i64,
        messages: i64,
        last_seen_at: Option<T>,
    } with {
        daily_token_budget: Option<i64>,
    } => {
        own_budget: daily_token_budget,
    }
}

stored_row! {
    AdminProjectRow<I, T> -> AdminProject {
        id: I,
        name: String,
        archived: bool,
        created_at: T,
    } with {
        members: i64,
        conversations: i64,
        input_tokens: i64,
        output_tokens: i64,
    } => {
        members: members.max(0) as u64,
        conversations: conversations.max(0) as u64,
        input_tokens: input_tokens.max(0) as u64,
        output_tokens: output_tokens.max(0) as u64,
    }
}

/// Most accounts one listing returns.
pub const MAX_ACCOUNTS_PAGE: u32 = 500;

/// Storage of operator control.
#[async_trait]
pub trait Admin: Send + Sync {
    /// Creates an account if `mode` or `pass` lets it in. A setup link's token (while no administrator exists)
    /// or the operator makes an administrator in any mode, and every setup link then stops working. Otherwise:
    /// anyone (`Open`; the very first account administers Quire), those with a usable invitation (`Invite`, one
    /// use counted in the same transaction), or nobody (`Closed`); in those two modes nobody is let in before an
    /// administrator exists. Sign-ups at once, on any instance, are made one after the other, so exactly one
    /// first account administers Quire and an invitation or a setup link is never used more often than it may
    /// be. `Conflict` when the e-mail is taken (nothing is used up then).
    async fn sign_up(
        &self,
        user: NewUser,
        mode: SignUpMode,
        pass: Option<SignUpPass>,
    ) -> Result<std::result::Result<User, SignUpRefusal>>;

    /// Stores a setup link whose token has the SHA-256 `token_hash` if Quire has no administrator; whether it
    /// did. Links stored before stay valid: each instance that starts prints its own, and any one of them
    /// makes the first administrator.
    async fn create_setup_token(&self, token_hash: &str) -> Result<bool>;

    /// A shared setting, if it was set.
    async fn setting(&self, key: &str) -> Result<Option<String>>;
    /// Sets a shared setting.
    async fn set_setting(&self, key: &str, value: &str) -> Result<()>;

    /// Accounts in the order they were made, from `offset`, at most `limit` of them, with their usage today.
    async fn accounts(&self, offset: u32, limit: u32) -> Result<Vec<AccountUsage>>;
    /// Every team project in the order they were made, from `offset`, at most `limit` of them, with their size
    /// and what their conversations spent.
    async fn project_usage(&self, offset: u32, limit: u32) -> Result<Vec<AdminProject>>;
    /// Makes an account an administrator or not. `NotFound` for an unknown account; `Conflict` when it would
    /// leave no enabled administrator.
    async fn set_admin(&self, user: Uuid, admin: bool) -> Result<()>;
    /// Disables an account (it cannot sign in; every session ends and is refused; its turns running are asked to
    /// stop) or enables it again; the ids of the sessions it ended. `NotFound` for an unknown account;
    /// `Conflict` when it would leave no enabled administrator.
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

    /// Stores a one-time password reset link of `user` whose token has the SHA-256 `token_hash`, and ends the
    /// account's older links, in one transaction. `NotFound` for an unknown account.
    async fn create_password_reset(&self, user: Uuid, token_hash: &str, expires_at: DateTime<Utc>) -> Result<()>;
    /// The account of the reset link whose token has the SHA-256 `token_hash`, used or not; `None` when there
    /// is none.
    async fn password_reset_account(&self, token_hash: &str) -> Result<Option<Uuid>>;
    /// Uses the reset link whose token has the SHA-256 `token_hash`: in one transaction it is marked used (if it
    /// is usable, decided in that same statement), the account's password replaced, its other links ended and
    /// every session of it ended. The account and the ids of the sessions ended.
    async fn reset_password(
        &self,
        token_hash: &str,
        password_hash: &str,
    ) -> Result<std::result::Result<(Uuid, Vec<Uuid>), ResetRefusal>>;
}

/// Most invitations one listing returns.
pub const MAX_INVITES_LISTED: u32 = 500;

/// Why the reset link with these columns cannot be used at `now`, if it cannot.
pub(crate) fn reset_refusal(
    expires_at: DateTime<Utc>,
    used: bool,
    ended: bool,
    now: DateTime<Utc>,
) -> Option<ResetRefusal> {
    if used {
        Some(ResetRefusal::Used)
    } else if ended {
        Some(ResetRefusal::Ended)
    } else if expires_at <= now {
        Some(ResetRefusal::Expired)
    } else {
        None
    }
}

const LAST_ADMIN: &str = "Quire needs at least one administrator.";

shared_sql! {
    /// Ends every reset link of `user` that is neither used nor ended, at `at`: a newer link was made, or the
    /// password changed (by whatever route), so none made before works any more.
    pub(crate) async fn end_reset_links(conn: &mut D::Connection, user: Uuid, at: DateTime<Utc>) -> Result<()> {
        sqlx::query(
            "update password_resets set ended_at = $1 where user_id = $2 and used_at is null and ended_at is null",
        )
        .bind(D::time(at))
        .bind(D::id(user))
        .execute(conn)
        .await?;
        Ok(())
    }
}

/// A reset link's expiry, time of use and end, as a backend keeps them.
type ResetRow<T> = (T, Option<T>, Option<T>);

shared_sql! {
    rows(InviteRow<D::Id, D::Time>, AccountUsageRow<D::Id, D::Time>, AdminProjectRow<D::Id, D::Time>);
    /// Whether an enabled administrator other than `user` exists.
    async fn another_admin(conn: &mut D::Connection, user: Uuid) -> Result<bool> {
        let sql = "select exists (select 1 from users where is_admin and disabled_at is null and id <> $1)";
        Ok(sqlx::query_scalar(sql).bind(D::id(user)).fetch_one(conn).await?)
    }

    /// Whether `user` exists and is an enabled administrator (its row locked where rows can be).
    async fn is_enabled_admin(conn: &mut D::Connection, user: Uuid) -> Result<Option<bool>> {
        let sql = format!("select is_admin, disabled_at from users where id = $1 {}", D::FOR_UPDATE);
        let row: Option<(bool, Option<D::Time>)> = sqlx::query_as(&sql).bind(D::id(user)).fetch_optional(conn).await?;
        Ok(row.map(|(admin, disabled)| admin && disabled.is_none()))
    }

    /// See [`Admin::sign_up`]; the caller makes sign-ups one after the other.
    pub(crate) async fn sign_up(
        conn: &mut D::Connection,
        user: NewUser,
        mode: SignUpMode,
        pass: Option<SignUpPass>,
    ) -> Result<std::result::Result<User, SignUpRefusal>> {
        let (first, has_admin): (bool, bool) = sqlx::query_as(
            "select not exists (select 1 from users), exists (select 1 from users where is_admin)",
        )
        .fetch_one(&mut *conn)
        .await?;
        let admin = match (mode, pass) {
            (_, Some(SignUpPass::Operator)) => true,
            (_, Some(SignUpPass::Setup(hash))) => {
                let used = sqlx::query("delete from setup_tokens where token_hash = $1").bind(hash).execute(&mut *conn);
                if has_admin || D::rows_affected(&used.await?) == 0 {
                    return Ok(Err(SignUpRefusal::SetupInvalid));
                }
                true
            }
            (SignUpMode::Open, _) => first,
            (SignUpMode::Closed | SignUpMode::Invite, _) if !has_admin => return Ok(Err(SignUpRefusal::SetupRequired)),
            (SignUpMode::Closed, _) => return Ok(Err(SignUpRefusal::Closed)),
            (SignUpMode::Invite, None) => return Ok(Err(SignUpRefusal::InviteRequired)),
            (SignUpMode::Invite, Some(SignUpPass::Invite(hash))) => {
                // The row lock keeps the check and the count of one use together.
                let sql = format!("select * from invites where token_hash = $1 {}", D::FOR_UPDATE);
                let row: Option<InviteRow<D::Id, D::Time>> =
                    sqlx::query_as(&sql).bind(hash).fetch_optional(&mut *conn).await?;
                let Some(invite) = row.map(Invite::try_from).transpose()? else {
                    return Ok(Err(SignUpRefusal::InviteInvalid));
                };
                if let Some(refusal) = invite.refusal(now()) {
                    return Ok(Err(refusal));
                }
                sqlx::query("update invites set uses = uses + 1 where id = $1")
                    .bind(D::id(invite.id))
                    .execute(&mut *conn)
                    .await?;
                false
            }
        };
        if admin {
            // Once an administrator exists no setup link is needed; none stays usable.
            sqlx::query("delete from setup_tokens").execute(&mut *conn).await?;
        }
        let (id, created) = (Uuid::now_v7(), now());
        let insert = sqlx::query(
            "insert into users (id, email, password_hash, display_name, created_at, is_admin)
             values ($1, $2, $3, $4, $5, $6)",
        )
        .bind(D::id(id))
        .bind(user.email.clone())
        .bind(user.password_hash.clone())
        .bind(user.display_name.clone())
        .bind(D::time(created))
        .bind(admin)
        .execute(&mut *conn)
        .await;
        match insert {
            Ok(_) => {
                // Projects that invited the address take the new account in, in the same transaction.
                Self::accept_invitations(conn, id, &user.email).await?;
                Ok(Ok(User { is_admin: admin, ..user.registered(id, created) }))
            }
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                Err(StoreError::Conflict("email already registered".into()))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// See [`Admin::create_setup_token`]; the caller makes it one of the changes of who administers.
    pub(crate) async fn create_setup_token(conn: &mut D::Connection, token_hash: String) -> Result<bool> {
        let created = sqlx::query(
            "insert into setup_tokens (token_hash, created_at)
             select $1, $2 where not exists (select 1 from users where is_admin)",
        )
        .bind(token_hash)
        .bind(D::time(now()))
        .execute(conn)
        .await?;
        Ok(D::rows_affected(&created) > 0)
    }

    pub(crate) async fn setting(conn: &mut D::Connection, key: String) -> Result<Option<String>> {
        Ok(sqlx::query_scalar("select value from settings where key = $1").bind(key).fetch_optional(conn).await?)
    }

    pub(crate) async fn set_setting(conn: &mut D::Connection, key: String, value: String) -> Result<()> {
        sqlx::query("insert into settings (key, value) values ($1, $2) on conflict (key) do update set value = $2")
            .bind(key)
            .bind(value)
            .execute(conn)
            .await?;
        Ok(())
    }

    pub(crate) async fn accounts(conn: &mut D::Connection, offset: u32, limit: u32) -> Result<Vec<AccountUsage>> {
        let rows: Vec<AccountUsageRow<D::Id, D::Time>> = sqlx::query_as(
            "select u.id, u.email, u.display_name, u.created_at, u.is_admin, u.disabled_at, u.daily_token_budget,
               (select cast(coalesce(sum(input_tokens + output_tokens), 0) as bigint) from usage_ledger l
                 where l.user_id = u.id and l.day = $1) as tokens_today,
               (select count(*) from messages m where m.user_id = u.id) as messages,
               (select max(last_seen_at) from sessions s where s.user_id = u.id) as last_seen_at
             from users u order by u.created_at, u.id limit $2 offset $3",
        )
        .bind(D::day(Utc::now().date_naive()))
        .bind(i64::from(limit.min(MAX_ACCOUNTS_PAGE)))
        .bind(i64::from(offset))
        .fetch_all(conn)
        .await?;
        convert(rows)
    }

    pub(crate) async fn project_usage(
        conn: &mut D::Connection,
        offset: u32,
        limit: u32,
    ) -> Result<Vec<AdminProject>> {
        let rows: Vec<AdminProjectRow<D::Id, D::Time>> = sqlx::query_as(
            "select p.id, p.name, p.archived, p.created_at,
               (select count(*) from project_members m where m.project_id = p.id) as members,
               (select count(*) from threads t where t.project_id = p.id) as conversations,
               (select cast(coalesce(sum(t.input_tokens), 0) as bigint) from threads t where t.project_id = p.id)
                 as input_tokens,
               (select cast(coalesce(sum(t.output_tokens), 0) as bigint) from threads t where t.project_id = p.id)
                 as output_tokens
             from projects p order by p.created_at, p.id limit $1 offset $2",
        )
        .bind(i64::from(limit.min(MAX_ACCOUNTS_PAGE)))
        .bind(i64::from(offset))
        .fetch_all(conn)
        .await?;
        convert(rows)
    }

    /// See [`Admin::set_admin`]; the caller makes changes of who administers one after the other.
    pub(crate) async fn set_admin(conn: &mut D::Connection, user: Uuid, admin: bool) -> Result<()> {
        let Some(enabled_admin) = Self::is_enabled_admin(&mut *conn, user).await? else {
            return Err(StoreError::NotFound);
        };
        if !admin && enabled_admin && !Self::another_admin(&mut *conn, user).await? {
            return Err(StoreError::Conflict(LAST_ADMIN.into()));
        }
        sqlx::query("update users set is_admin = $1 where id = $2").bind(admin).bind(D::id(user)).execute(conn).await?;
        Ok(())
    }

    /// See [`Admin::set_disabled`]; the caller makes changes of who administers one after the other.
    pub(crate) async fn set_disabled(conn: &mut D::Connection, user: Uuid, disabled: bool) -> Result<Vec<Uuid>> {
        let Some(enabled_admin) = Self::is_enabled_admin(&mut *conn, user).await? else {
            return Err(StoreError::NotFound);
        };
        if !disabled {
            sqlx::query("update users set disabled_at = null where id = $1").bind(D::id(user)).execute(conn).await?;
            return Ok(Vec::new());
        }
        if enabled_admin && !Self::another_admin(&mut *conn, user).await? {
            return Err(StoreError::Conflict(LAST_ADMIN.into()));
        }
        let at = now();
        sqlx::query("update users set disabled_at = coalesce(disabled_at, $1) where id = $2")
            .bind(D::time(at))
            .bind(D::id(user))
            .execute(&mut *conn)
            .await?;
        // What the account has being written stops too, on whichever instance runs it (at its next heartbeat).
        sqlx::query("update turns set stop_requested = $1 where user_id = $2 and status = 'running'")
            .bind(true)
            .bind(D::id(user))
            .execute(&mut *conn)
            .await?;
        Self::end_sessions(conn, user, at).await
    }

    /// Ends every open session of `user` at `at`; their ids.
    async fn end_sessions(conn: &mut D::Connection, user: Uuid, at: DateTime<Utc>) -> Result<Vec<Uuid>> {
        let ended: Vec<D::Id> = sqlx::query_scalar(
            "update sessions set ended_at = $1 where user_id = $2 and ended_at is null returning id",
        )
        .bind(D::time(at))
        .bind(D::id(user))
        .fetch_all(conn)
        .await?;
        ids(ended, "id")
    }

    pub(crate) async fn create_invite(
        conn: &mut D::Connection,
        token_hash: String,
        created_by: Uuid,
        expires_at: DateTime<Utc>,
        max_uses: u32,
    ) -> Result<Invite> {
        let invite = Invite {
            id: Uuid::now_v7(),
            created_at: now(),
            expires_at,
            max_uses: i64::from(max_uses),
            uses: 0,
            revoked_at: None,
        };
        sqlx::query(
            "insert into invites (id, token_hash, created_by, created_at, expires_at, max_uses)
             values ($1, $2, $3, $4, $5, $6)",
        )
        .bind(D::id(invite.id))
        .bind(token_hash)
        .bind(D::id(created_by))
        .bind(D::time(invite.created_at))
        .bind(D::time(expires_at))
        .bind(invite.max_uses)
        .execute(conn)
        .await?;
        Ok(invite)
    }

    pub(crate) async fn invites(conn: &mut D::Connection) -> Result<Vec<Invite>> {
        let rows: Vec<InviteRow<D::Id, D::Time>> =
            sqlx::query_as("select * from invites order by created_at desc, id desc limit $1")
                .bind(i64::from(MAX_INVITES_LISTED))
                .fetch_all(conn)
                .await?;
        convert(rows)
    }

    pub(crate) async fn revoke_invite(conn: &mut D::Connection, id: Uuid) -> Result<()> {
        let revoked = sqlx::query("update invites set revoked_at = $1 where id = $2 and revoked_at is null")
            .bind(D::time(now()))
            .bind(D::id(id))
            .execute(conn)
            .await?;
        found(D::rows_affected(&revoked) > 0)
    }

    /// See [`Admin::create_password_reset`]; the caller makes it one transaction.
    pub(crate) async fn create_password_reset(
        conn: &mut D::Connection,
        user: Uuid,
        token_hash: String,
        expires_at: DateTime<Utc>,
    ) -> Result<()> {
        let at = now();
        Self::end_reset_links(&mut *conn, user, at).await?;
        let created = sqlx::query(
            "insert into password_resets (token_hash, user_id, created_at, expires_at)
             select $1, id, $2, $3 from users where id = $4",
        )
        .bind(token_hash)
        .bind(D::time(at))
        .bind(D::time(expires_at))
        .bind(D::id(user))
        .execute(conn)
        .await?;
        found(D::rows_affected(&created) > 0)
    }

    pub(crate) async fn password_reset_account(conn: &mut D::Connection, token_hash: String) -> Result<Option<Uuid>> {
        let user: Option<D::Id> = sqlx::query_scalar("select user_id from password_resets where token_hash = $1")
            .bind(token_hash)
            .fetch_optional(conn)
            .await?;
        user.read("user_id")
    }

    /// See [`Admin::reset_password`].
    pub(crate) async fn reset_password(
        conn: &mut D::Connection,
        token_hash: String,
        password_hash: String,
    ) -> Result<std::result::Result<(Uuid, Vec<Uuid>), ResetRefusal>> {
        let at = now();
        // The statement that uses the link decides whether it may: a use at the same time, or a newer link or a
        // password change committed meanwhile, leaves it nothing to update.
        let used: Option<D::Id> = sqlx::query_scalar(
            "update password_resets set used_at = $1
             where token_hash = $2 and used_at is null and ended_at is null and expires_at > $1 returning user_id",
        )
        .bind(D::time(at))
        .bind(token_hash.clone())
        .fetch_optional(&mut *conn)
        .await?;
        let Some(user) = used else {
            let row: Option<ResetRow<D::Time>> =
                sqlx::query_as("select expires_at, used_at, ended_at from password_resets where token_hash = $1")
                    .bind(token_hash)
                    .fetch_optional(&mut *conn)
                    .await?;
            let refusal = match row {
                Some((expires_at, used_at, ended_at)) => {
                    reset_refusal(expires_at.read("expires_at")?, used_at.is_some(), ended_at.is_some(), at)
                }
                None => None,
            };
            return Ok(Err(refusal.unwrap_or(ResetRefusal::Invalid)));
        };
        let user = user.read("user_id")?;
        sqlx::query("update users set password_hash = $1 where id = $2")
            .bind(password_hash)
            .bind(D::id(user))
            .execute(&mut *conn)
            .await?;
        Self::end_reset_links(&mut *conn, user, at).await?;
        Ok(Ok((user, Self::end_sessions(conn, user, at).await?)))
    }
}

/// Implements [`Admin`] for a backend, written once for both, as
/// [`accounts_for`](super::accounts::accounts_for) does (with the same names in scope); the backend adds
/// `change_accounts`, which makes sign-ups and changes of who administers one after the other.
macro_rules! admin_for {
    ($backend:ty) => {
        const _: () = {
            use chrono::{DateTime, Utc};
            use tracing::instrument;
            use uuid::Uuid;
            use $crate::{AccountUsage, Admin, Invite, ResetRefusal, Result, SignUpMode, SignUpPass, SignUpRefusal};

            #[async_trait::async_trait]
            impl Admin for $backend {
                #[instrument(skip_all)]
                async fn sign_up(
                    &self,
                    user: NewUser,
                    mode: SignUpMode,
                    pass: Option<SignUpPass>,
                ) -> Result<std::result::Result<User, SignUpRefusal>> {
                    self.change_accounts(move |conn| Box::pin(Shared::sign_up(conn, user, mode, pass))).await
                }

                #[instrument(skip_all)]
                async fn create_setup_token(&self, token_hash: &str) -> Result<bool> {
                    let token_hash = token_hash.to_owned();
                    self.change_accounts(move |conn| Box::pin(Shared::create_setup_token(conn, token_hash))).await
                }

                #[instrument(skip(self))]
                async fn setting(&self, key: &str) -> Result<Option<String>> {
                    Shared::setting(&mut *self.read().await?, key.to_owned()).await
                }

                #[instrument(skip(self))]
                async fn set_setting(&self, key: &str, value: &str) -> Result<()> {
                    let (key, value) = (key.to_owned(), value.to_owned());
                    self.write(move |conn| Box::pin(Shared::set_setting(conn, key, value))).await
                }

                #[instrument(skip(self))]
                async fn accounts(&self, offset: u32, limit: u32) -> Result<Vec<AccountUsage>> {
                    Shared::accounts(&mut *self.read().await?, offset, limit).await
                }

                #[instrument(skip(self))]
                async fn project_usage(&self, offset: u32, limit: u32) -> Result<Vec<wire::admin::AdminProject>> {
                    Shared::project_usage(&mut *self.read().await?, offset, limit).await
                }

                #[instrument(skip(self))]
                async fn set_admin(&self, user: Uuid, admin: bool) -> Result<()> {
                    self.change_accounts(move |conn| Box::pin(Shared::set_admin(conn, user, admin))).await
                }

                #[instrument(skip(self))]
                async fn set_disabled(&self, user: Uuid, disabled: bool) -> Result<Vec<Uuid>> {
                    self.change_accounts(move |conn| Box::pin(Shared::set_disabled(conn, user, disabled))).await
                }

                #[instrument(skip(self, token_hash))]
                async fn create_invite(
                    &self,
                    token_hash: &str,
                    created_by: Uuid,
                    expires_at: DateTime<Utc>,
                    max_uses: u32,
                ) -> Result<Invite> {
                    let token_hash = token_hash.to_owned();
                    self.write(move |conn| {
                        Box::pin(Shared::create_invite(conn, token_hash, created_by, expires_at, max_uses))
                    })
                    .await
                }

                #[instrument(skip(self))]
                async fn invites(&self) -> Result<Vec<Invite>> {
                    Shared::invites(&mut *self.read().await?).await
                }

                #[instrument(skip(self))]
                async fn revoke_invite(&self, id: Uuid) -> Result<()> {
                    self.write(move |conn| Box::pin(Shared::revoke_invite(conn, id))).await
                }

                #[instrument(skip(self, token_hash))]
                async fn create_password_reset(
                    &self,
                    user: Uuid,
                    token_hash: &str,
                    expires_at: DateTime<Utc>,
                ) -> Result<()> {
                    let token_hash = token_hash.to_owned();
                    self.write_together(move |conn| {
                        Box::pin(Shared::create_password_reset(conn, user, token_hash, expires_at))
                    })
                    .await
                }

                #[instrument(skip_all)]
                async fn password_reset_account(&self, token_hash: &str) -> Result<Option<Uuid>> {
                    Shared::password_reset_account(&mut *self.read().await?, token_hash.to_owned()).await
                }

                #[instrument(skip_all)]
                async fn reset_password(
                    &self,
                    token_hash: &str,
                    password_hash: &str,
                ) -> Result<std::result::Result<(Uuid, Vec<Uuid>), ResetRefusal>> {
                    let (token_hash, password_hash) = (token_hash.to_owned(), password_hash.to_owned());
                    self.write_together(move |conn| Box::pin(Shared::reset_password(conn, token_hash, password_hash)))
                        .await
                }
            }
        };
    };
}
pub(crate) use admin_for;

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
