//! Accounts and their sessions: what a session is, and the storage of sessions, passwords and account removal,
//! which both backends implement (`sqlite/accounts.rs`, `postgres/accounts.rs`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::columns::{convert, ids, shared_sql, stored_row, Stored};
use super::threads::found;
use super::{now, Result, StoreError};
use crate::throttle;

/// A registered person.
#[derive(Debug, Clone, PartialEq)]
pub struct User {
    pub id: Uuid,
    pub email: String,
    pub password_hash: String,
    pub display_name: String,
    pub created_at: DateTime<Utc>,
    /// Whether the account administers Quire.
    pub is_admin: bool,
    /// Whether the account is disabled: it cannot sign in and its sessions are refused.
    pub disabled: bool,
}

/// A new account.
#[derive(Debug, Clone)]
pub struct NewUser {
    pub email: String,
    pub password_hash: String,
    pub display_name: String,
}

impl NewUser {
    /// The account as registered under `id` at `created`.
    pub(crate) fn registered(self, id: Uuid, created: DateTime<Utc>) -> User {
        User {
            id,
            email: self.email,
            password_hash: self.password_hash,
            display_name: self.display_name,
            created_at: created,
            is_admin: false,
            disabled: false,
        }
    }
}

/// A signed-in session: one session token, from sign-in until it is ended or expires.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    /// The token's id (`jti`).
    pub id: Uuid,
    pub user: Uuid,
    pub created_at: DateTime<Utc>,
    /// When it was last used, to within [`TOUCH_EVERY_SECS`].
    pub last_seen_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
    /// The browser and system it was signed in from, in a few words (`auth::device::summary`).
    pub device: Option<String>,
    /// The network it was signed in from (`auth::device::ip_prefix`).
    pub ip_prefix: Option<String>,
}

/// How stale a session's `last_seen_at` may grow before a request writes it again.
pub const TOUCH_EVERY_SECS: i64 = 60;

impl Session {
    /// A new session of `user` under the token id `id`, lasting until `expires_at`.
    pub fn new(id: Uuid, user: Uuid, expires_at: DateTime<Utc>) -> Self {
        let now = super::now();
        Self { id, user, created_at: now, last_seen_at: now, expires_at, ended_at: None, device: None, ip_prefix: None }
    }

    /// The name the session goes by in lists: derived from its id, from which it cannot be told back. The id is
    /// inside the session's token; this name is never enough to act as the session.
    pub fn public_id(&self) -> String {
        use sha2::{Digest, Sha256};
        let digest = Sha256::new().chain_update(b"quire session ").chain_update(self.id.as_bytes()).finalize();
        digest[..16].iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Whether the session still admits requests at `now`: not ended, not expired, and used within `idle`.
    pub fn is_live(&self, now: DateTime<Utc>, idle: chrono::Duration) -> bool {
        self.ended_at.is_none() && now < self.expires_at && now - self.last_seen_at < idle
    }

    /// Whether a request at `now` should record that the session was used.
    pub fn needs_touch(&self, now: DateTime<Utc>) -> bool {
        (now - self.last_seen_at).num_seconds() >= TOUCH_EVERY_SECS
    }
}

stored_row! {
    /// A session as stored, with the backend's id (`I`) and time (`T`) columns (see [`Stored`]).
    SessionRow<I, T> -> Session {
        id: I,
        created_at: T,
        last_seen_at: T,
        expires_at: T,
        ended_at: Option<T>,
        device: Option<String>,
        ip_prefix: Option<String>,
    } with {
        user_id: I,
    } => {
        user: user_id.read("user_id")?,
    }
}

stored_row! {
    /// An account as stored, with the backend's id (`I`) and time (`T`) columns (see [`Stored`]).
    UserRow<I, T> -> User {
        id: I,
        email: String,
        password_hash: String,
        display_name: String,
        created_at: T,
        is_admin: bool,
    } with {
        disabled_at: Option<T>,
    } => {
        disabled: disabled_at.is_some(),
    }
}

shared_sql! {
    rows(SessionRow<D::Id, D::Time>, UserRow<D::Id, D::Time>);

    /// The account with this email address, compared without regard to case.
    pub(crate) async fn user_by_email(conn: &mut D::Connection, email: String) -> Result<User> {
        let row: Option<UserRow<D::Id, D::Time>> =
            sqlx::query_as("select * from users where lower(email) = lower($1)").bind(email).fetch_optional(conn).await?;
        row.ok_or(StoreError::NotFound)?.try_into()
    }

    /// The account with this id.
    pub(crate) async fn user_by_id(conn: &mut D::Connection, id: Uuid) -> Result<User> {
        let row: Option<UserRow<D::Id, D::Time>> =
            sqlx::query_as("select * from users where id = $1").bind(D::id(id)).fetch_optional(conn).await?;
        row.ok_or(StoreError::NotFound)?.try_into()
    }

    /// Stores a new session, removing the expired ones first.
    pub(crate) async fn create_session(conn: &mut D::Connection, session: Session) -> Result<()> {
        sqlx::query("delete from sessions where expires_at < $1").bind(D::time(now())).execute(&mut *conn).await?;
        sqlx::query(
            "insert into sessions (id, user_id, created_at, last_seen_at, expires_at, device, ip_prefix)
             values ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(D::id(session.id))
        .bind(D::id(session.user))
        .bind(D::time(session.created_at))
        .bind(D::time(session.last_seen_at))
        .bind(D::time(session.expires_at))
        .bind(session.device)
        .bind(session.ip_prefix)
        .execute(conn)
        .await?;
        Ok(())
    }

    pub(crate) async fn session(conn: &mut D::Connection, id: Uuid) -> Result<Option<Session>> {
        let row: Option<SessionRow<D::Id, D::Time>> = sqlx::query_as(
            "select s.* from sessions s join users u on u.id = s.user_id where s.id = $1 and u.disabled_at is null",
        )
        .bind(D::id(id))
        .fetch_optional(conn)
        .await?;
        row.map(Session::try_from).transpose()
    }

    pub(crate) async fn touch_session(conn: &mut D::Connection, id: Uuid) -> Result<()> {
        let touch = sqlx::query("update sessions set last_seen_at = $1 where id = $2");
        touch.bind(D::time(now())).bind(D::id(id)).execute(conn).await?;
        Ok(())
    }

    pub(crate) async fn open_sessions(conn: &mut D::Connection, user: Uuid) -> Result<Vec<Session>> {
        let rows: Vec<SessionRow<D::Id, D::Time>> = sqlx::query_as(
            "select * from sessions where user_id = $1 and ended_at is null and expires_at > $2
             order by last_seen_at desc, created_at desc",
        )
        .bind(D::id(user))
        .bind(D::time(now()))
        .fetch_all(conn)
        .await?;
        convert(rows)
    }

    pub(crate) async fn end_session(conn: &mut D::Connection, user: Uuid, id: Uuid) -> Result<bool> {
        let end = sqlx::query("update sessions set ended_at = $1 where id = $2 and user_id = $3 and ended_at is null");
        let ended = end.bind(D::time(now())).bind(D::id(id)).bind(D::id(user)).execute(conn).await?;
        Ok(D::rows_affected(&ended) > 0)
    }

    /// Ends every open session of `user` but `keep`; their ids.
    pub(crate) async fn end_sessions_but(
        conn: &mut D::Connection,
        user: Uuid,
        keep: Option<Uuid>,
    ) -> Result<Vec<Uuid>> {
        let ended: Vec<D::Id> = sqlx::query_scalar(
            "update sessions set ended_at = $1 where user_id = $2 and id is distinct from $3 and ended_at is null
             returning id",
        )
        .bind(D::time(now()))
        .bind(D::id(user))
        .bind(keep.map(D::id))
        .fetch_all(conn)
        .await?;
        ids(ended, "id")
    }

    pub(crate) async fn sessions_ended_since(
        conn: &mut D::Connection,
        since: DateTime<Utc>,
    ) -> Result<Vec<(Uuid, Uuid)>> {
        let rows: Vec<(D::Id, D::Id)> = sqlx::query_as("select id, user_id from sessions where ended_at >= $1")
            .bind(D::time(since))
            .fetch_all(conn)
            .await?;
        rows.into_iter().map(|(id, user)| Ok((id.read("id")?, user.read("user_id")?))).collect()
    }

    /// See [`Accounts::set_password`]; the caller makes it one transaction.
    pub(crate) async fn set_password(
        conn: &mut D::Connection,
        user: Uuid,
        password_hash: String,
        keep: Uuid,
    ) -> Result<Vec<Uuid>> {
        let changed = sqlx::query("update users set password_hash = $1 where id = $2")
            .bind(password_hash)
            .bind(D::id(user))
            .execute(&mut *conn)
            .await?;
        found(D::rows_affected(&changed) > 0)?;
        // A reset link made before the change would undo it.
        Self::end_reset_links(&mut *conn, user, now()).await?;
        Self::end_sessions_but(conn, user, Some(keep)).await
    }

    pub(crate) async fn sign_in_failures(
        conn: &mut D::Connection,
        account: String,
    ) -> Result<Option<(u32, DateTime<Utc>)>> {
        let row: Option<(i64, D::Time)> =
            sqlx::query_as("select failures, last_failed_at from sign_in_failures where account = $1")
                .bind(account)
                .fetch_optional(conn)
                .await?;
        row.map(|(failures, last)| Ok((u32::try_from(failures).unwrap_or(u32::MAX), last.read("last_failed_at")?)))
            .transpose()
    }

    /// Counts a sign-in attempt of `account` at `now` unless it comes before the wait the failures so far ask
    /// for (see [`Accounts::count_sign_in_attempt`]); whether it was counted.
    pub(crate) async fn count_sign_in_attempt(
        conn: &mut D::Connection,
        account: String,
        now: DateTime<Utc>,
    ) -> Result<bool> {
        let count = format!(
            "insert into sign_in_failures as f (account, failures, last_failed_at) values ($1, 1, $2)
             on conflict (account) do update set
                 failures = case when f.last_failed_at < $3 then 1 else f.failures + 1 end,
                 last_failed_at = $2
             where f.last_failed_at < $3 or {} <= $2
             returning failures",
            D::plus_micros("f.last_failed_at", &throttle::DELAY_MICROS_SQL.replace("failures", "f.failures"))
        );
        let forget_before = now - chrono::Duration::hours(throttle::FORGET_AFTER_HOURS);
        let counted: Option<i64> = sqlx::query_scalar(&count)
            .bind(account)
            .bind(D::time(now))
            .bind(D::time(forget_before))
            .fetch_optional(conn)
            .await?;
        Ok(counted.is_some())
    }

    pub(crate) async fn clear_sign_in_failures(conn: &mut D::Connection, account: String) -> Result<()> {
        sqlx::query("delete from sign_in_failures where account = $1").bind(account).execute(conn).await?;
        Ok(())
    }

    pub(crate) async fn forget_sign_in_failures(conn: &mut D::Connection, before: DateTime<Utc>) -> Result<u64> {
        let done = sqlx::query("delete from sign_in_failures where last_failed_at < $1").bind(D::time(before));
        Ok(D::rows_affected(&done.execute(conn).await?))
    }

    /// See [`Accounts::delete_user`]; the caller makes it one transaction.
    pub(crate) async fn delete_user(conn: &mut D::Connection, user: Uuid) -> Result<()> {
        let email: Option<String> = sqlx::query_scalar("select email from users where id = $1")
            .bind(D::id(user))
            .fetch_optional(&mut *conn)
            .await?;
        let email = email.ok_or(StoreError::NotFound)?;
        sqlx::query("delete from sign_in_failures where account = lower($1)").bind(email).execute(&mut *conn).await?;
        sqlx::query("delete from idempotency_keys where user_id = $1").bind(D::id(user)).execute(&mut *conn).await?;
        // Projects keep an owner: where the account was the only one, the member with the highest role who was
        // there longest becomes one; a project with no one else goes with the account.
        sqlx::query(
            "delete from projects where id in (select project_id from project_members where user_id = $1)
             and not exists (select 1 from project_members o where o.project_id = projects.id and o.user_id <> $1)",
        )
        .bind(D::id(user))
        .execute(&mut *conn)
        .await?;
        sqlx::query(
            "update project_members set role = 'owner'
             where project_id in (select m.project_id from project_members m where m.user_id = $1 and m.role = 'owner')
             and not exists (select 1 from project_members o
                 where o.project_id = project_members.project_id and o.role = 'owner' and o.user_id <> $1)
             and user_id = (select c.user_id from project_members c
                 where c.project_id = project_members.project_id and c.user_id <> $1
                 order by case c.role when 'editor' then 0 else 1 end, c.added_at, c.user_id limit 1)",
        )
        .bind(D::id(user))
        .execute(&mut *conn)
        .await?;
        // The rest hangs off the account by foreign keys that cascade (and, on SQLite, triggers that keep the
        // search index).
        sqlx::query("delete from users where id = $1").bind(D::id(user)).execute(conn).await?;
        Ok(())
    }
}

/// Accounts and sessions, beside the rest of [`Store`](super::Store).
#[async_trait]
pub trait Accounts: Send + Sync {
    /// Creates an account as open sign-up does (the first one administers Quire): see
    /// [`Admin::sign_up`](super::Admin::sign_up).
    async fn create_user(&self, user: NewUser) -> Result<User>;
    async fn user_by_email(&self, email: &str) -> Result<User>;
    async fn user_by_id(&self, id: Uuid) -> Result<User>;

    /// Records a new session, with its device and network; sessions past their expiry are purged on the way.
    async fn create_session(&self, session: &Session) -> Result<()>;
    /// The session with this id, ended or not; `None` when there is none (or it was purged) or its account is
    /// disabled.
    async fn session(&self, id: Uuid) -> Result<Option<Session>>;
    /// Records that the session was used now.
    async fn touch_session(&self, id: Uuid) -> Result<()>;
    /// The sessions of `user` that are neither ended nor expired, the most recently used first (some may be
    /// past the idle timeout, which [`Session::is_live`] tells).
    async fn open_sessions(&self, user: Uuid) -> Result<Vec<Session>>;
    /// Ends one session of `user`; ending one that is over already (or another person's) is harmless. Whether
    /// it ended one.
    async fn end_session(&self, user: Uuid, id: Uuid) -> Result<bool>;
    /// Ends every session of `user` but `keep`; returns the ids of those it ended.
    async fn end_sessions(&self, user: Uuid, keep: Option<Uuid>) -> Result<Vec<Uuid>>;
    /// The sessions ended at or after `since`, with their owners.
    async fn sessions_ended_since(&self, since: DateTime<Utc>) -> Result<Vec<(Uuid, Uuid)>>;
    /// Replaces the password hash of `user` and ends every other session and every reset link of the account,
    /// in one transaction; returns the ids of the sessions it ended. `NotFound` when the account is gone.
    async fn set_password(&self, user: Uuid, password_hash: &str, keep: Uuid) -> Result<Vec<Uuid>>;

    /// Removes the account and everything it owns (conversations, messages, documents and their versions,
    /// attachments and their chunks, search index rows, traces, turns, usage, idempotency keys, sessions, API
    /// tokens and counted sign-in failures), in one transaction. `NotFound` when it is gone already.
    async fn delete_user(&self, user: Uuid) -> Result<()>;

    /// How many sign-ins to `account` failed, and when the last did; `None` when none is counted.
    async fn sign_in_failures(&self, account: &str) -> Result<Option<(u32, DateTime<Utc>)>>;
    /// Counts an attempt to sign in to `account` at `now` as a failure if its wait is over, deciding and
    /// counting in one statement, so that attempts at once (from any instance) cannot all pass one read of the
    /// count: `None` when it was counted (its password may be checked; forget the failure if it was right), else
    /// the count and the time of the last failure the attempt has to wait on. A count whose last failure was
    /// before `now` less [`throttle::FORGET_AFTER_HOURS`](crate::throttle::FORGET_AFTER_HOURS) starts
    /// again from one.
    async fn count_sign_in_attempt(&self, account: &str, now: DateTime<Utc>) -> Result<Option<(u32, DateTime<Utc>)>>;
    /// Forgets the failures of `account` (it was signed in to).
    async fn clear_sign_in_failures(&self, account: &str) -> Result<()>;
    /// Deletes the counts whose last failure was before `before`; how many it deleted.
    async fn forget_sign_in_failures(&self, before: DateTime<Utc>) -> Result<u64>;
}

/// Implements [`Accounts`] for a backend, written once for both. The module it is used in has the backend's
/// `Shared` (its [`Sql`](super::columns::Sql)), [`NewUser`] and [`User`] in scope, and the backend has `read` (a
/// connection for reads), `write` (statements that stand alone) and `write_together` (statements that must
/// agree, in one transaction).
macro_rules! accounts_for {
    ($backend:ty) => {
        const _: () = {
            use chrono::{DateTime, Utc};
            use tracing::instrument;
            use uuid::Uuid;
            use $crate::{Accounts, Admin, Result, Session, SignUpMode, StoreError};

            #[async_trait::async_trait]
            impl Accounts for $backend {
                #[instrument(skip_all)]
                async fn create_user(&self, user: NewUser) -> Result<User> {
                    let created = self.sign_up(user, SignUpMode::Open, None).await?;
                    created.map_err(|_| StoreError::Conflict("sign-up refused".into()))
                }

                #[instrument(skip_all)]
                async fn user_by_email(&self, email: &str) -> Result<User> {
                    Shared::user_by_email(&mut *self.read().await?, email.to_owned()).await
                }

                #[instrument(skip(self))]
                async fn user_by_id(&self, id: Uuid) -> Result<User> {
                    Shared::user_by_id(&mut *self.read().await?, id).await
                }

                #[instrument(skip_all)]
                async fn create_session(&self, session: &Session) -> Result<()> {
                    let session = session.clone();
                    self.write_together(move |conn| Box::pin(Shared::create_session(conn, session))).await
                }

                #[instrument(skip_all)]
                async fn session(&self, id: Uuid) -> Result<Option<Session>> {
                    Shared::session(&mut *self.read().await?, id).await
                }

                #[instrument(skip_all)]
                async fn touch_session(&self, id: Uuid) -> Result<()> {
                    self.write(move |conn| Box::pin(Shared::touch_session(conn, id))).await
                }

                #[instrument(skip_all)]
                async fn open_sessions(&self, user: Uuid) -> Result<Vec<Session>> {
                    Shared::open_sessions(&mut *self.read().await?, user).await
                }

                #[instrument(skip_all)]
                async fn end_session(&self, user: Uuid, id: Uuid) -> Result<bool> {
                    self.write(move |conn| Box::pin(Shared::end_session(conn, user, id))).await
                }

                #[instrument(skip_all)]
                async fn end_sessions(&self, user: Uuid, keep: Option<Uuid>) -> Result<Vec<Uuid>> {
                    self.write(move |conn| Box::pin(Shared::end_sessions_but(conn, user, keep))).await
                }

                #[instrument(skip_all)]
                async fn sessions_ended_since(&self, since: DateTime<Utc>) -> Result<Vec<(Uuid, Uuid)>> {
                    Shared::sessions_ended_since(&mut *self.read().await?, since).await
                }

                #[instrument(skip_all)]
                async fn set_password(&self, user: Uuid, password_hash: &str, keep: Uuid) -> Result<Vec<Uuid>> {
                    let password_hash = password_hash.to_owned();
                    self.write_together(move |conn| Box::pin(Shared::set_password(conn, user, password_hash, keep)))
                        .await
                }

                #[instrument(skip_all)]
                async fn sign_in_failures(&self, account: &str) -> Result<Option<(u32, DateTime<Utc>)>> {
                    Shared::sign_in_failures(&mut *self.read().await?, account.to_owned()).await
                }

                #[instrument(skip_all)]
                async fn count_sign_in_attempt(
                    &self,
                    account: &str,
                    now: DateTime<Utc>,
                ) -> Result<Option<(u32, DateTime<Utc>)>> {
                    let key = account.to_owned();
                    let counted =
                        self.write(move |conn| Box::pin(Shared::count_sign_in_attempt(conn, key, now))).await?;
                    if counted {
                        return Ok(None);
                    }
                    // Refused: what it waits on (nothing, should a success have forgotten the count meanwhile).
                    Ok(Some(self.sign_in_failures(account).await?.unwrap_or((0, now))))
                }

                #[instrument(skip_all)]
                async fn clear_sign_in_failures(&self, account: &str) -> Result<()> {
                    let account = account.to_owned();
                    self.write(move |conn| Box::pin(Shared::clear_sign_in_failures(conn, account))).await
                }

                #[instrument(skip_all)]
                async fn forget_sign_in_failures(&self, before: DateTime<Utc>) -> Result<u64> {
                    self.write(move |conn| Box::pin(Shared::forget_sign_in_failures(conn, before))).await
                }

                #[instrument(skip_all)]
                async fn delete_user(&self, user: Uuid) -> Result<()> {
                    self.write_together(move |conn| Box::pin(Shared::delete_user(conn, user))).await
                }
            }
        };
    };
}
pub(crate) use accounts_for;
