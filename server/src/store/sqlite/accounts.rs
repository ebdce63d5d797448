//! Accounts and sessions on SQLite.

use std::sync::LazyLock;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tracing::instrument;
use uuid::Uuid;

use super::{user_from_row, NewUser, Sqlite};
use crate::auth::throttle;
use crate::store::accounts::{Accounts, Session, SessionRow, User};
use crate::store::admin::{Admin, SignUpMode};
use crate::store::columns::{convert, ids, Stored};
use crate::store::{micros_to_time, now, Result, StoreError};

type Row = SessionRow<String, i64>;

#[async_trait]
impl Accounts for Sqlite {
    #[instrument(skip_all)]
    async fn create_user(&self, user: NewUser) -> Result<User> {
        let created = self.sign_up(user, SignUpMode::Open, None).await?;
        created.map_err(|_| StoreError::Conflict("sign-up refused".into()))
    }

    #[instrument(skip_all)]
    async fn user_by_email(&self, email: &str) -> Result<User> {
        let row = sqlx::query("select * from users where lower(email) = lower(?)")
            .bind(email)
            .fetch_optional(&self.reader)
            .await?
            .ok_or(StoreError::NotFound)?;
        user_from_row(&row)
    }

    #[instrument(skip(self))]
    async fn user_by_id(&self, id: Uuid) -> Result<User> {
        let row = sqlx::query("select * from users where id = ?")
            .bind(id.to_string())
            .fetch_optional(&self.reader)
            .await?
            .ok_or(StoreError::NotFound)?;
        user_from_row(&row)
    }

    #[instrument(skip_all)]
    async fn create_session(&self, session: &Session) -> Result<()> {
        let session = session.clone();
        self.write(move |tx| {
            Box::pin(async move {
                sqlx::query("delete from sessions where expires_at < ?")
                    .bind(now().timestamp_micros())
                    .execute(&mut *tx)
                    .await?;
                sqlx::query(
                    "insert into sessions (id, user_id, created_at, last_seen_at, expires_at, device, ip_prefix)
                     values (?, ?, ?, ?, ?, ?, ?)",
                )
                .bind(session.id.to_string())
                .bind(session.user.to_string())
                .bind(session.created_at.timestamp_micros())
                .bind(session.last_seen_at.timestamp_micros())
                .bind(session.expires_at.timestamp_micros())
                .bind(&session.device)
                .bind(&session.ip_prefix)
                .execute(&mut *tx)
                .await?;
                Ok(())
            })
        })
        .await
    }

    #[instrument(skip_all)]
    async fn session(&self, id: Uuid) -> Result<Option<Session>> {
        let row: Option<Row> = sqlx::query_as(
            "select s.* from sessions s join users u on u.id = s.user_id where s.id = ? and u.disabled_at is null",
        )
        .bind(id.to_string())
        .fetch_optional(&self.reader)
        .await?;
        row.map(Session::try_from).transpose()
    }

    #[instrument(skip_all)]
    async fn touch_session(&self, id: Uuid) -> Result<()> {
        let touch = sqlx::query("update sessions set last_seen_at = ? where id = ?");
        self.execute(touch.bind(now().timestamp_micros()).bind(id.to_string())).await?;
        Ok(())
    }

    #[instrument(skip_all)]
    async fn open_sessions(&self, user: Uuid) -> Result<Vec<Session>> {
        let rows: Vec<Row> = sqlx::query_as(
            "select * from sessions where user_id = ? and ended_at is null and expires_at > ?
             order by last_seen_at desc, created_at desc",
        )
        .bind(user.to_string())
        .bind(now().timestamp_micros())
        .fetch_all(&self.reader)
        .await?;
        convert(rows)
    }

    #[instrument(skip_all)]
    async fn end_session(&self, user: Uuid, id: Uuid) -> Result<bool> {
        let end = sqlx::query("update sessions set ended_at = ? where id = ? and user_id = ? and ended_at is null");
        let ended =
            self.execute(end.bind(now().timestamp_micros()).bind(id.to_string()).bind(user.to_string())).await?;
        Ok(ended.rows_affected() > 0)
    }

    #[instrument(skip_all)]
    async fn end_sessions(&self, user: Uuid, keep: Option<Uuid>) -> Result<Vec<Uuid>> {
        let rows = self
            .write(move |conn| {
                Box::pin(async move {
                    Ok(sqlx::query_scalar(
                        "update sessions set ended_at = ? where user_id = ? and id is not ? and ended_at is null
                         returning id",
                    )
                    .bind(now().timestamp_micros())
                    .bind(user.to_string())
                    .bind(keep.map(|k| k.to_string()))
                    .fetch_all(conn)
                    .await?)
                })
            })
            .await?;
        ids::<String>(rows, "id")
    }

    #[instrument(skip_all)]
    async fn sessions_ended_since(&self, since: DateTime<Utc>) -> Result<Vec<(Uuid, Uuid)>> {
        let rows: Vec<(String, String)> = sqlx::query_as("select id, user_id from sessions where ended_at >= ?")
            .bind(since.timestamp_micros())
            .fetch_all(&self.reader)
            .await?;
        rows.into_iter().map(|(id, user)| Ok((id.read("id")?, user.read("user_id")?))).collect()
    }

    #[instrument(skip_all)]
    async fn set_password(&self, user: Uuid, password_hash: &str, keep: Uuid) -> Result<Vec<Uuid>> {
        let password_hash = password_hash.to_owned();
        self.write(move |tx| {
            Box::pin(async move {
                let changed = sqlx::query("update users set password_hash = ? where id = ?")
                    .bind(password_hash)
                    .bind(user.to_string())
                    .execute(&mut *tx)
                    .await?;
                if changed.rows_affected() == 0 {
                    return Err(StoreError::NotFound);
                }
                let rows: Vec<String> = sqlx::query_scalar(
                    "update sessions set ended_at = ? where user_id = ? and id <> ? and ended_at is null returning id",
                )
                .bind(now().timestamp_micros())
                .bind(user.to_string())
                .bind(keep.to_string())
                .fetch_all(&mut *tx)
                .await?;
                ids(rows, "id")
            })
        })
        .await
    }

    #[instrument(skip_all)]
    async fn sign_in_failures(&self, account: &str) -> Result<Option<(u32, DateTime<Utc>)>> {
        let row: Option<(i64, i64)> =
            sqlx::query_as("select failures, last_failed_at from sign_in_failures where account = ?")
                .bind(account)
                .fetch_optional(&self.reader)
                .await?;
        Ok(row.map(|(failures, last)| (u32::try_from(failures).unwrap_or(u32::MAX), micros_to_time(last))))
    }

    #[instrument(skip_all)]
    async fn count_sign_in_attempt(&self, account: &str, now: DateTime<Utc>) -> Result<Option<(u32, DateTime<Utc>)>> {
        static COUNT: LazyLock<String> = LazyLock::new(|| {
            format!(
                "insert into sign_in_failures (account, failures, last_failed_at) values (?1, 1, ?2)
                 on conflict (account) do update set
                     failures = case when last_failed_at < ?3 then 1 else failures + 1 end, last_failed_at = ?2
                 where last_failed_at < ?3 or last_failed_at + {} <= ?2
                 returning failures",
                *throttle::DELAY_MICROS_SQL
            )
        });
        let forget_before = (now - chrono::Duration::hours(throttle::FORGET_AFTER_HOURS)).timestamp_micros();
        let (account, at) = (account.to_owned(), now.timestamp_micros());
        let key = account.clone();
        let counted: Option<i64> = self
            .write(move |tx| {
                Box::pin(async move {
                    let count = sqlx::query_scalar(&COUNT).bind(&key).bind(at).bind(forget_before);
                    Ok(count.fetch_optional(&mut *tx).await?)
                })
            })
            .await?;
        match counted {
            Some(_) => Ok(None),
            // Refused: what it waits on (nothing, should a success have forgotten the count meanwhile).
            None => Ok(Some(self.sign_in_failures(&account).await?.unwrap_or((0, now)))),
        }
    }

    #[instrument(skip_all)]
    async fn clear_sign_in_failures(&self, account: &str) -> Result<()> {
        self.execute(sqlx::query("delete from sign_in_failures where account = ?").bind(account.to_owned())).await?;
        Ok(())
    }

    #[instrument(skip_all)]
    async fn forget_sign_in_failures(&self, before: DateTime<Utc>) -> Result<u64> {
        let done = sqlx::query("delete from sign_in_failures where last_failed_at < ?").bind(before.timestamp_micros());
        Ok(self.execute(done).await?.rows_affected())
    }

    #[instrument(skip_all)]
    async fn delete_user(&self, user: Uuid) -> Result<()> {
        let id = user.to_string();
        self.write(move |tx| {
            Box::pin(async move {
                let email: Option<String> = sqlx::query_scalar("select email from users where id = ?")
                    .bind(&id)
                    .fetch_optional(&mut *tx)
                    .await?;
                let email = email.ok_or(StoreError::NotFound)?;
                sqlx::query("delete from sign_in_failures where account = lower(?)")
                    .bind(&email)
                    .execute(&mut *tx)
                    .await?;
                sqlx::query("delete from idempotency_keys where user_id = ?").bind(&id).execute(&mut *tx).await?;
                // The rest hangs off the account by foreign keys that cascade; the search index follows by triggers.
                sqlx::query("delete from users where id = ?").bind(&id).execute(&mut *tx).await?;
                Ok(())
            })
        })
        .await
    }
}
