//! postgres: see [`crate::store::Admin`]. Instances share the database, so a sign-up and a change of who
//! administers take one transaction-scoped advisory lock first: they are made one after the other on every
//! instance, and each sees the accounts the one before made.

use sqlx::PgConnection;

use super::*;
use crate::store::admin::{
    reset_refusal, AccountUsage, AccountUsageRow, Admin, Invite, InviteRow, ResetRefusal, SignUpMode, SignUpRefusal,
    MAX_ACCOUNTS_PAGE, MAX_INVITES_LISTED,
};
use crate::store::columns::convert;
use tracing::instrument;

/// The advisory lock sign-ups and changes of administrators take ("Qacc").
const ACCOUNTS_LOCK: i64 = 0x5161_6363;

async fn lock_accounts(conn: &mut PgConnection) -> Result<()> {
    sqlx::query("select pg_advisory_xact_lock($1)").bind(ACCOUNTS_LOCK).execute(conn).await?;
    Ok(())
}

/// Whether an enabled administrator other than `user` exists.
async fn another_admin(conn: &mut PgConnection, user: Uuid) -> Result<bool> {
    Ok(sqlx::query_scalar("select exists (select 1 from users where is_admin and disabled_at is null and id <> $1)")
        .bind(user)
        .fetch_one(conn)
        .await?)
}

/// Whether `user` exists and is an enabled administrator.
async fn is_enabled_admin(conn: &mut PgConnection, user: Uuid) -> Result<Option<bool>> {
    let row: Option<(bool, Option<DateTime<Utc>>)> =
        sqlx::query_as("select is_admin, disabled_at from users where id = $1 for update")
            .bind(user)
            .fetch_optional(conn)
            .await?;
    Ok(row.map(|(admin, disabled)| admin && disabled.is_none()))
}

#[async_trait]
impl Admin for Postgres {
    #[instrument(skip_all)]
    async fn sign_up(
        &self,
        user: NewUser,
        mode: SignUpMode,
        invite: Option<String>,
    ) -> Result<std::result::Result<User, SignUpRefusal>> {
        let mut tx = self.pool.begin().await?;
        lock_accounts(&mut tx).await?;
        let first: bool = sqlx::query_scalar("select not exists (select 1 from users)").fetch_one(&mut *tx).await?;
        if !first {
            match (mode, invite) {
                (SignUpMode::Open, _) => {}
                (SignUpMode::Closed, _) => return Ok(Err(SignUpRefusal::Closed)),
                (SignUpMode::Invite, None) => return Ok(Err(SignUpRefusal::InviteRequired)),
                (SignUpMode::Invite, Some(hash)) => {
                    // The row lock keeps the check and the count of one use together.
                    let row: Option<InviteRow<Uuid, DateTime<Utc>>> =
                        sqlx::query_as("select * from invites where token_hash = $1 for update")
                            .bind(&hash)
                            .fetch_optional(&mut *tx)
                            .await?;
                    let Some(invite) = row.map(Invite::try_from).transpose()? else {
                        return Ok(Err(SignUpRefusal::InviteInvalid));
                    };
                    if let Some(refusal) = invite.refusal(now()) {
                        return Ok(Err(refusal));
                    }
                    sqlx::query("update invites set uses = uses + 1 where id = $1")
                        .bind(invite.id)
                        .execute(&mut *tx)
                        .await?;
                }
            }
        }
        let id = Uuid::now_v7();
        let created = now();
        let insert = sqlx::query(
            "insert into users (id, email, password_hash, display_name, created_at, is_admin)
             values ($1, $2, $3, $4, $5, $6)",
        )
        .bind(id)
        .bind(&user.email)
        .bind(&user.password_hash)
        .bind(&user.display_name)
        .bind(created)
        .bind(first)
        .execute(&mut *tx)
        .await;
        match insert {
            Ok(_) => {}
            Err(e) if is_unique_violation(&e) => return Err(StoreError::Conflict("email already registered".into())),
            Err(e) => return Err(e.into()),
        }
        tx.commit().await?;
        Ok(Ok(User { is_admin: first, ..user.registered(id, created) }))
    }

    #[instrument(skip(self))]
    async fn setting(&self, key: &str) -> Result<Option<String>> {
        Ok(sqlx::query_scalar("select value from settings where key = $1").bind(key).fetch_optional(&self.pool).await?)
    }

    #[instrument(skip(self))]
    async fn set_setting(&self, key: &str, value: &str) -> Result<()> {
        sqlx::query("insert into settings (key, value) values ($1, $2) on conflict (key) do update set value = $2")
            .bind(key)
            .bind(value)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    #[instrument(skip(self))]
    async fn accounts(&self, offset: u32, limit: u32) -> Result<Vec<AccountUsage>> {
        let rows: Vec<AccountUsageRow<Uuid, DateTime<Utc>>> = sqlx::query_as(
            "select u.id, u.email, u.display_name, u.created_at, u.is_admin, u.disabled_at, u.daily_token_budget,
               (select coalesce(sum(input_tokens + output_tokens), 0)::bigint from usage_ledger l
                 where l.user_id = u.id and l.day = $1) as tokens_today,
               (select count(*) from messages m where m.user_id = u.id) as messages,
               (select max(last_seen_at) from sessions s where s.user_id = u.id) as last_seen_at
             from users u order by u.created_at, u.id limit $2 offset $3",
        )
        .bind(Utc::now().date_naive())
        .bind(i64::from(limit.min(MAX_ACCOUNTS_PAGE)))
        .bind(i64::from(offset))
        .fetch_all(&self.pool)
        .await?;
        convert(rows)
    }

    #[instrument(skip(self))]
    async fn set_admin(&self, user: Uuid, admin: bool) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        lock_accounts(&mut tx).await?;
        let Some(enabled_admin) = is_enabled_admin(&mut tx, user).await? else { return Err(StoreError::NotFound) };
        if !admin && enabled_admin && !another_admin(&mut tx, user).await? {
            return Err(StoreError::Conflict("Quire needs at least one administrator.".into()));
        }
        sqlx::query("update users set is_admin = $1 where id = $2").bind(admin).bind(user).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(())
    }

    #[instrument(skip(self))]
    async fn set_disabled(&self, user: Uuid, disabled: bool) -> Result<Vec<Uuid>> {
        let mut tx = self.pool.begin().await?;
        lock_accounts(&mut tx).await?;
        let Some(enabled_admin) = is_enabled_admin(&mut tx, user).await? else { return Err(StoreError::NotFound) };
        if !disabled {
            sqlx::query("update users set disabled_at = null where id = $1").bind(user).execute(&mut *tx).await?;
            tx.commit().await?;
            return Ok(Vec::new());
        }
        if enabled_admin && !another_admin(&mut tx, user).await? {
            return Err(StoreError::Conflict("Quire needs at least one administrator.".into()));
        }
        let at = now();
        sqlx::query("update users set disabled_at = coalesce(disabled_at, $1) where id = $2")
            .bind(at)
            .bind(user)
            .execute(&mut *tx)
            .await?;
        let ended = sqlx::query_scalar(
            "update sessions set ended_at = $1 where user_id = $2 and ended_at is null returning id",
        )
        .bind(at)
        .bind(user)
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(ended)
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
        sqlx::query(
            "insert into invites (id, token_hash, created_by, created_at, expires_at, max_uses)
             values ($1, $2, $3, $4, $5, $6)",
        )
        .bind(invite.id)
        .bind(token_hash)
        .bind(created_by)
        .bind(invite.created_at)
        .bind(expires_at)
        .bind(invite.max_uses)
        .execute(&self.pool)
        .await?;
        Ok(invite)
    }

    #[instrument(skip(self))]
    async fn invites(&self) -> Result<Vec<Invite>> {
        let rows: Vec<InviteRow<Uuid, DateTime<Utc>>> =
            sqlx::query_as("select * from invites order by created_at desc, id desc limit $1")
                .bind(i64::from(MAX_INVITES_LISTED))
                .fetch_all(&self.pool)
                .await?;
        convert(rows)
    }

    #[instrument(skip(self))]
    async fn revoke_invite(&self, id: Uuid) -> Result<()> {
        let revoked = sqlx::query("update invites set revoked_at = $1 where id = $2 and revoked_at is null")
            .bind(now())
            .bind(id)
            .execute(&self.pool)
            .await?;
        if revoked.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    #[instrument(skip(self, token_hash))]
    async fn create_password_reset(&self, user: Uuid, token_hash: &str, expires_at: DateTime<Utc>) -> Result<()> {
        let created = sqlx::query(
            "insert into password_resets (token_hash, user_id, created_at, expires_at)
             select $1, id, $2, $3 from users where id = $4",
        )
        .bind(token_hash)
        .bind(now())
        .bind(expires_at)
        .bind(user)
        .execute(&self.pool)
        .await?;
        if created.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    #[instrument(skip_all)]
    async fn password_reset_account(&self, token_hash: &str) -> Result<Option<Uuid>> {
        Ok(sqlx::query_scalar("select user_id from password_resets where token_hash = $1")
            .bind(token_hash)
            .fetch_optional(&self.pool)
            .await?)
    }

    #[instrument(skip_all)]
    async fn reset_password(
        &self,
        token_hash: &str,
        password_hash: &str,
    ) -> Result<std::result::Result<(Uuid, Vec<Uuid>), ResetRefusal>> {
        let mut tx = self.pool.begin().await?;
        // The row lock makes a second use wait for the first and then see it used.
        let row: Option<(Uuid, DateTime<Utc>, Option<DateTime<Utc>>)> =
            sqlx::query_as("select user_id, expires_at, used_at from password_resets where token_hash = $1 for update")
                .bind(token_hash)
                .fetch_optional(&mut *tx)
                .await?;
        let Some((user, expires_at, used_at)) = row else { return Ok(Err(ResetRefusal::Invalid)) };
        let at = now();
        if let Some(refusal) = reset_refusal(expires_at, used_at.is_some(), at) {
            return Ok(Err(refusal));
        }
        sqlx::query("update password_resets set used_at = $1 where token_hash = $2")
            .bind(at)
            .bind(token_hash)
            .execute(&mut *tx)
            .await?;
        sqlx::query("update users set password_hash = $1 where id = $2")
            .bind(password_hash)
            .bind(user)
            .execute(&mut *tx)
            .await?;
        let ended = sqlx::query_scalar(
            "update sessions set ended_at = $1 where user_id = $2 and ended_at is null returning id",
        )
        .bind(at)
        .bind(user)
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Ok((user, ended)))
    }
}
