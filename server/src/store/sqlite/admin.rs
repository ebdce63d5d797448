//! sqlite: see [`crate::store::Admin`]. One writer makes every write one after the other, so a sign-up's
//! checks and its insert never interleave with another's.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::SqliteConnection;
use tracing::instrument;
use uuid::Uuid;

use super::{is_unique_violation, today, NewUser, Sqlite};
use crate::store::admin::{
    reset_refusal, AccountUsage, AccountUsageRow, Admin, Invite, InviteRow, ResetRefusal, SignUpMode, SignUpRefusal,
    MAX_ACCOUNTS_PAGE, MAX_INVITES_LISTED,
};
use crate::store::columns::{convert, ids, Stored};
use crate::store::{now, Result, StoreError, User};

/// Whether an enabled administrator other than `user` exists.
async fn another_admin(conn: &mut SqliteConnection, user: Uuid) -> Result<bool> {
    Ok(sqlx::query_scalar("select exists (select 1 from users where is_admin and disabled_at is null and id <> ?)")
        .bind(user.to_string())
        .fetch_one(conn)
        .await?)
}

/// Whether `user` exists and is an enabled administrator.
async fn is_enabled_admin(conn: &mut SqliteConnection, user: Uuid) -> Result<Option<bool>> {
    let row: Option<(bool, Option<i64>)> = sqlx::query_as("select is_admin, disabled_at from users where id = ?")
        .bind(user.to_string())
        .fetch_optional(conn)
        .await?;
    Ok(row.map(|(admin, disabled)| admin && disabled.is_none()))
}

#[async_trait]
impl Admin for Sqlite {
    #[instrument(skip_all)]
    async fn sign_up(
        &self,
        user: NewUser,
        mode: SignUpMode,
        invite: Option<String>,
    ) -> Result<std::result::Result<User, SignUpRefusal>> {
        self.write(move |tx| {
            Box::pin(async move {
                let first: bool =
                    sqlx::query_scalar("select not exists (select 1 from users)").fetch_one(&mut *tx).await?;
                if !first {
                    match (mode, invite) {
                        (SignUpMode::Open, _) => {}
                        (SignUpMode::Closed, _) => return Ok(Err(SignUpRefusal::Closed)),
                        (SignUpMode::Invite, None) => return Ok(Err(SignUpRefusal::InviteRequired)),
                        (SignUpMode::Invite, Some(hash)) => {
                            let row: Option<InviteRow<String, i64>> =
                                sqlx::query_as("select * from invites where token_hash = ?")
                                    .bind(&hash)
                                    .fetch_optional(&mut *tx)
                                    .await?;
                            let Some(invite) = row.map(Invite::try_from).transpose()? else {
                                return Ok(Err(SignUpRefusal::InviteInvalid));
                            };
                            if let Some(refusal) = invite.refusal(now()) {
                                return Ok(Err(refusal));
                            }
                            sqlx::query("update invites set uses = uses + 1 where id = ?")
                                .bind(invite.id.to_string())
                                .execute(&mut *tx)
                                .await?;
                        }
                    }
                }
                let id = Uuid::now_v7();
                let created = now();
                let insert = sqlx::query(
                    "insert into users (id, email, password_hash, display_name, created_at, is_admin)
                     values (?, ?, ?, ?, ?, ?)",
                )
                .bind(id.to_string())
                .bind(&user.email)
                .bind(&user.password_hash)
                .bind(&user.display_name)
                .bind(created.timestamp_micros())
                .bind(first)
                .execute(&mut *tx)
                .await;
                match insert {
                    Ok(_) => Ok(Ok(User { is_admin: first, ..user.registered(id, created) })),
                    Err(e) if is_unique_violation(&e) => Err(StoreError::Conflict("email already registered".into())),
                    Err(e) => Err(e.into()),
                }
            })
        })
        .await
    }

    #[instrument(skip(self))]
    async fn setting(&self, key: &str) -> Result<Option<String>> {
        Ok(sqlx::query_scalar("select value from settings where key = ?")
            .bind(key)
            .fetch_optional(&self.reader)
            .await?)
    }

    #[instrument(skip(self))]
    async fn set_setting(&self, key: &str, value: &str) -> Result<()> {
        let set =
            sqlx::query("insert into settings (key, value) values (?1, ?2) on conflict (key) do update set value = ?2");
        self.execute(set.bind(key.to_owned()).bind(value.to_owned())).await?;
        Ok(())
    }

    #[instrument(skip(self))]
    async fn accounts(&self, offset: u32, limit: u32) -> Result<Vec<AccountUsage>> {
        let rows: Vec<AccountUsageRow<String, i64>> = sqlx::query_as(
            "select u.id, u.email, u.display_name, u.created_at, u.is_admin, u.disabled_at, u.daily_token_budget,
               (select coalesce(sum(input_tokens + output_tokens), 0) from usage_ledger l
                 where l.user_id = u.id and l.day = ?1) as tokens_today,
               (select count(*) from messages m where m.user_id = u.id) as messages,
               (select max(last_seen_at) from sessions s where s.user_id = u.id) as last_seen_at
             from users u order by u.created_at, u.id limit ?2 offset ?3",
        )
        .bind(today())
        .bind(limit.min(MAX_ACCOUNTS_PAGE))
        .bind(offset)
        .fetch_all(&self.reader)
        .await?;
        convert(rows)
    }

    #[instrument(skip(self))]
    async fn set_admin(&self, user: Uuid, admin: bool) -> Result<()> {
        self.write(move |tx| {
            Box::pin(async move {
                let Some(enabled_admin) = is_enabled_admin(&mut *tx, user).await? else {
                    return Err(StoreError::NotFound);
                };
                if !admin && enabled_admin && !another_admin(&mut *tx, user).await? {
                    return Err(StoreError::Conflict("Quire needs at least one administrator.".into()));
                }
                sqlx::query("update users set is_admin = ? where id = ?")
                    .bind(admin)
                    .bind(user.to_string())
                    .execute(&mut *tx)
                    .await?;
                Ok(())
            })
        })
        .await
    }

    #[instrument(skip(self))]
    async fn set_disabled(&self, user: Uuid, disabled: bool) -> Result<Vec<Uuid>> {
        self.write(move |tx| {
            Box::pin(async move {
                let Some(enabled_admin) = is_enabled_admin(&mut *tx, user).await? else {
                    return Err(StoreError::NotFound);
                };
                if !disabled {
                    sqlx::query("update users set disabled_at = null where id = ?")
                        .bind(user.to_string())
                        .execute(&mut *tx)
                        .await?;
                    return Ok(Vec::new());
                }
                if enabled_admin && !another_admin(&mut *tx, user).await? {
                    return Err(StoreError::Conflict("Quire needs at least one administrator.".into()));
                }
                let at = now().timestamp_micros();
                sqlx::query("update users set disabled_at = coalesce(disabled_at, ?) where id = ?")
                    .bind(at)
                    .bind(user.to_string())
                    .execute(&mut *tx)
                    .await?;
                let ended: Vec<String> = sqlx::query_scalar(
                    "update sessions set ended_at = ? where user_id = ? and ended_at is null returning id",
                )
                .bind(at)
                .bind(user.to_string())
                .fetch_all(&mut *tx)
                .await?;
                ids(ended, "id")
            })
        })
        .await
    }

    #[instrument(skip(self, token_hash))]
    async fn create_invite(
        &self,
        token_hash: &str,
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
        let insert = sqlx::query(
            "insert into invites (id, token_hash, created_by, created_at, expires_at, max_uses)
             values (?, ?, ?, ?, ?, ?)",
        )
        .bind(invite.id.to_string())
        .bind(token_hash.to_owned())
        .bind(created_by.to_string())
        .bind(invite.created_at.timestamp_micros())
        .bind(expires_at.timestamp_micros())
        .bind(invite.max_uses);
        self.execute(insert).await?;
        Ok(invite)
    }

    #[instrument(skip(self))]
    async fn invites(&self) -> Result<Vec<Invite>> {
        let rows: Vec<InviteRow<String, i64>> =
            sqlx::query_as("select * from invites order by created_at desc, id desc limit ?")
                .bind(MAX_INVITES_LISTED)
                .fetch_all(&self.reader)
                .await?;
        convert(rows)
    }

    #[instrument(skip(self))]
    async fn revoke_invite(&self, id: Uuid) -> Result<()> {
        let revoke = sqlx::query("update invites set revoked_at = ? where id = ? and revoked_at is null");
        let revoked = self.execute(revoke.bind(now().timestamp_micros()).bind(id.to_string())).await?;
        if revoked.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    #[instrument(skip(self, token_hash))]
    async fn create_password_reset(&self, user: Uuid, token_hash: &str, expires_at: DateTime<Utc>) -> Result<()> {
        let token_hash = token_hash.to_owned();
        self.write(move |tx| {
            Box::pin(async move {
                let created = sqlx::query(
                    "insert into password_resets (token_hash, user_id, created_at, expires_at)
                     select ?, id, ?, ? from users where id = ?",
                )
                .bind(token_hash)
                .bind(now().timestamp_micros())
                .bind(expires_at.timestamp_micros())
                .bind(user.to_string())
                .execute(&mut *tx)
                .await?;
                if created.rows_affected() == 0 {
                    return Err(StoreError::NotFound);
                }
                Ok(())
            })
        })
        .await
    }

    #[instrument(skip_all)]
    async fn password_reset_account(&self, token_hash: &str) -> Result<Option<Uuid>> {
        let user: Option<String> = sqlx::query_scalar("select user_id from password_resets where token_hash = ?")
            .bind(token_hash)
            .fetch_optional(&self.reader)
            .await?;
        user.read("user_id")
    }

    #[instrument(skip_all)]
    async fn reset_password(
        &self,
        token_hash: &str,
        password_hash: &str,
    ) -> Result<std::result::Result<(Uuid, Vec<Uuid>), ResetRefusal>> {
        let (token_hash, password_hash) = (token_hash.to_owned(), password_hash.to_owned());
        self.write(move |tx| {
            Box::pin(async move {
                let row: Option<(String, i64, Option<i64>)> =
                    sqlx::query_as("select user_id, expires_at, used_at from password_resets where token_hash = ?")
                        .bind(&token_hash)
                        .fetch_optional(&mut *tx)
                        .await?;
                let Some((user, expires_at, used_at)) = row else { return Ok(Err(ResetRefusal::Invalid)) };
                let at = now();
                if let Some(refusal) = reset_refusal(expires_at.read("expires_at")?, used_at.is_some(), at) {
                    return Ok(Err(refusal));
                }
                let at = at.timestamp_micros();
                sqlx::query("update password_resets set used_at = ? where token_hash = ?")
                    .bind(at)
                    .bind(&token_hash)
                    .execute(&mut *tx)
                    .await?;
                sqlx::query("update users set password_hash = ? where id = ?")
                    .bind(&password_hash)
                    .bind(&user)
                    .execute(&mut *tx)
                    .await?;
                let ended: Vec<String> = sqlx::query_scalar(
                    "update sessions set ended_at = ? where user_id = ? and ended_at is null returning id",
                )
                .bind(at)
                .bind(&user)
                .fetch_all(&mut *tx)
                .await?;
                Ok(Ok((user.read("user_id")?, ids(ended, "id")?)))
            })
        })
        .await
    }
}
