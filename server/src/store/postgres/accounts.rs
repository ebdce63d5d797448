//! Accounts and sessions on PostgreSQL.

use std::sync::LazyLock;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tracing::instrument;
use uuid::Uuid;

use super::{user_from_row, NewUser, Postgres};
use crate::auth::throttle;
use crate::store::accounts::{Accounts, Session, SessionRow, User};
use crate::store::admin::{Admin, SignUpMode};
use crate::store::columns::convert;
use crate::store::{now, Result, StoreError};

type Row = SessionRow<Uuid, DateTime<Utc>>;

#[async_trait]
impl Accounts for Postgres {
    #[instrument(skip_all)]
    async fn create_user(&self, user: NewUser) -> Result<User> {
        let created = self.sign_up(user, SignUpMode::Open, None).await?;
        created.map_err(|_| StoreError::Conflict("sign-up refused".into()))
    }

    #[instrument(skip_all)]
    async fn user_by_email(&self, email: &str) -> Result<User> {
        let row = sqlx::query("select * from users where lower(email) = lower($1)")
            .bind(email)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)?;
        user_from_row(&row)
    }

    #[instrument(skip(self))]
    async fn user_by_id(&self, id: Uuid) -> Result<User> {
        let row = sqlx::query("select * from users where id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)?;
        user_from_row(&row)
    }

    #[instrument(skip_all)]
    async fn create_session(&self, session: &Session) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("delete from sessions where expires_at < $1").bind(now()).execute(&mut *tx).await?;
        sqlx::query(
            "insert into sessions (id, user_id, created_at, last_seen_at, expires_at, device, ip_prefix)
             values ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(session.id)
        .bind(session.user)
        .bind(session.created_at)
        .bind(session.last_seen_at)
        .bind(session.expires_at)
        .bind(&session.device)
        .bind(&session.ip_prefix)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    #[instrument(skip_all)]
    async fn session(&self, id: Uuid) -> Result<Option<Session>> {
        let row: Option<Row> = sqlx::query_as(
            "select s.* from sessions s join users u on u.id = s.user_id where s.id = $1 and u.disabled_at is null",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.map(Session::try_from).transpose()
    }

    #[instrument(skip_all)]
    async fn touch_session(&self, id: Uuid) -> Result<()> {
        let touch = sqlx::query("update sessions set last_seen_at = $1 where id = $2");
        touch.bind(now()).bind(id).execute(&self.pool).await?;
        Ok(())
    }

    #[instrument(skip_all)]
    async fn open_sessions(&self, user: Uuid) -> Result<Vec<Session>> {
        let rows: Vec<Row> = sqlx::query_as(
            "select * from sessions where user_id = $1 and ended_at is null and expires_at > $2
             order by last_seen_at desc, created_at desc",
        )
        .bind(user)
        .bind(now())
        .fetch_all(&self.pool)
        .await?;
        convert(rows)
    }

    #[instrument(skip_all)]
    async fn end_session(&self, user: Uuid, id: Uuid) -> Result<bool> {
        let end = sqlx::query("update sessions set ended_at = $1 where id = $2 and user_id = $3 and ended_at is null");
        let ended = end.bind(now()).bind(id).bind(user).execute(&self.pool).await?;
        Ok(ended.rows_affected() > 0)
    }

    #[instrument(skip_all)]
    async fn end_sessions(&self, user: Uuid, keep: Option<Uuid>) -> Result<Vec<Uuid>> {
        Ok(sqlx::query_scalar(
            "update sessions set ended_at = $1 where user_id = $2 and id is distinct from $3 and ended_at is null
             returning id",
        )
        .bind(now())
        .bind(user)
        .bind(keep)
        .fetch_all(&self.pool)
        .await?)
    }

    #[instrument(skip_all)]
    async fn sessions_ended_since(&self, since: DateTime<Utc>) -> Result<Vec<(Uuid, Uuid)>> {
        Ok(sqlx::query_as("select id, user_id from sessions where ended_at >= $1")
            .bind(since)
            .fetch_all(&self.pool)
            .await?)
    }

    #[instrument(skip_all)]
    async fn set_password(&self, user: Uuid, password_hash: &str, keep: Uuid) -> Result<Vec<Uuid>> {
        let mut tx = self.pool.begin().await?;
        let changed = sqlx::query("update users set password_hash = $1 where id = $2")
            .bind(password_hash)
            .bind(user)
            .execute(&mut *tx)
            .await?;
        if changed.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        let ended = sqlx::query_scalar(
            "update sessions set ended_at = $1 where user_id = $2 and id <> $3 and ended_at is null returning id",
        )
        .bind(now())
        .bind(user)
        .bind(keep)
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(ended)
    }

    #[instrument(skip_all)]
    async fn sign_in_failures(&self, account: &str) -> Result<Option<(u32, DateTime<Utc>)>> {
        let row: Option<(i64, DateTime<Utc>)> =
            sqlx::query_as("select failures, last_failed_at from sign_in_failures where account = $1")
                .bind(account)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.map(|(failures, last)| (u32::try_from(failures).unwrap_or(u32::MAX), last)))
    }

    #[instrument(skip_all)]
    async fn count_sign_in_attempt(&self, account: &str, now: DateTime<Utc>) -> Result<Option<(u32, DateTime<Utc>)>> {
        static COUNT: LazyLock<String> = LazyLock::new(|| {
            format!(
                "insert into sign_in_failures as f (account, failures, last_failed_at) values ($1, 1, $2)
                 on conflict (account) do update set
                     failures = case when f.last_failed_at < $3 then 1 else f.failures + 1 end,
                     last_failed_at = $2
                 where f.last_failed_at < $3
                    or f.last_failed_at + {} * interval '1 microsecond' <= $2
                 returning failures",
                throttle::DELAY_MICROS_SQL.replace("failures", "f.failures")
            )
        });
        let forget_before = now - chrono::Duration::hours(throttle::FORGET_AFTER_HOURS);
        let counted: Option<i64> =
            sqlx::query_scalar(&COUNT).bind(account).bind(now).bind(forget_before).fetch_optional(&self.pool).await?;
        match counted {
            Some(_) => Ok(None),
            // Refused: what it waits on (nothing, should a success have forgotten the count meanwhile).
            None => Ok(Some(self.sign_in_failures(account).await?.unwrap_or((0, now)))),
        }
    }

    #[instrument(skip_all)]
    async fn clear_sign_in_failures(&self, account: &str) -> Result<()> {
        sqlx::query("delete from sign_in_failures where account = $1").bind(account).execute(&self.pool).await?;
        Ok(())
    }

    #[instrument(skip_all)]
    async fn forget_sign_in_failures(&self, before: DateTime<Utc>) -> Result<u64> {
        let done = sqlx::query("delete from sign_in_failures where last_failed_at < $1").bind(before);
        Ok(done.execute(&self.pool).await?.rows_affected())
    }

    #[instrument(skip_all)]
    async fn delete_user(&self, user: Uuid) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        let email: Option<String> =
            sqlx::query_scalar("select email from users where id = $1").bind(user).fetch_optional(&mut *tx).await?;
        let email = email.ok_or(StoreError::NotFound)?;
        sqlx::query("delete from sign_in_failures where account = lower($1)").bind(&email).execute(&mut *tx).await?;
        sqlx::query("delete from idempotency_keys where user_id = $1").bind(user).execute(&mut *tx).await?;
        // The rest hangs off the account by foreign keys that cascade (the search columns live in the rows).
        sqlx::query("delete from users where id = $1").bind(user).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(())
    }
}
