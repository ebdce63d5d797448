//! postgres: see [`crate::store::Admin`]. Instances share the database, so a sign-up and a change of who
//! administers take one transaction-scoped advisory lock first: they are made one after the other on every
//! instance, and each sees the accounts the one before made.

use sqlx::PgConnection;

use super::*;
use crate::store::admin::{AccountUsage, Admin, Invite, ResetRefusal, SignUpMode, SignUpRefusal};
use tracing::instrument;

/// The advisory lock sign-ups and changes of administrators take ("Qacc").
const ACCOUNTS_LOCK: i64 = 0x5161_6363;

async fn lock_accounts(conn: &mut PgConnection) -> Result<()> {
    sqlx::query("select pg_advisory_xact_lock($1)").bind(ACCOUNTS_LOCK).execute(conn).await?;
    Ok(())
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
        let made = Shared::sign_up(&mut tx, user, mode, invite).await?;
        tx.commit().await?;
        Ok(made)
    }

    #[instrument(skip(self))]
    async fn setting(&self, key: &str) -> Result<Option<String>> {
        Shared::setting(&mut *self.pool.acquire().await?, key.to_owned()).await
    }

    #[instrument(skip(self))]
    async fn set_setting(&self, key: &str, value: &str) -> Result<()> {
        Shared::set_setting(&mut *self.pool.acquire().await?, key.to_owned(), value.to_owned()).await
    }

    #[instrument(skip(self))]
    async fn accounts(&self, offset: u32, limit: u32) -> Result<Vec<AccountUsage>> {
        Shared::accounts(&mut *self.pool.acquire().await?, offset, limit).await
    }

    #[instrument(skip(self))]
    async fn set_admin(&self, user: Uuid, admin: bool) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        lock_accounts(&mut tx).await?;
        Shared::set_admin(&mut tx, user, admin).await?;
        tx.commit().await?;
        Ok(())
    }

    #[instrument(skip(self))]
    async fn set_disabled(&self, user: Uuid, disabled: bool) -> Result<Vec<Uuid>> {
        let mut tx = self.pool.begin().await?;
        lock_accounts(&mut tx).await?;
        let ended = Shared::set_disabled(&mut tx, user, disabled).await?;
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
        let mut conn = self.pool.acquire().await?;
        Shared::create_invite(&mut conn, token_hash.to_owned(), created_by, expires_at, max_uses).await
    }

    #[instrument(skip(self))]
    async fn invites(&self) -> Result<Vec<Invite>> {
        Shared::invites(&mut *self.pool.acquire().await?).await
    }

    #[instrument(skip(self))]
    async fn revoke_invite(&self, id: Uuid) -> Result<()> {
        Shared::revoke_invite(&mut *self.pool.acquire().await?, id).await
    }

    #[instrument(skip(self, token_hash))]
    async fn create_password_reset(&self, user: Uuid, token_hash: &str, expires_at: DateTime<Utc>) -> Result<()> {
        Shared::create_password_reset(&mut *self.pool.acquire().await?, user, token_hash.to_owned(), expires_at).await
    }

    #[instrument(skip_all)]
    async fn password_reset_account(&self, token_hash: &str) -> Result<Option<Uuid>> {
        Shared::password_reset_account(&mut *self.pool.acquire().await?, token_hash.to_owned()).await
    }

    #[instrument(skip_all)]
    async fn reset_password(
        &self,
        token_hash: &str,
        password_hash: &str,
    ) -> Result<std::result::Result<(Uuid, Vec<Uuid>), ResetRefusal>> {
        let mut tx = self.pool.begin().await?;
        let reset = Shared::reset_password(&mut tx, token_hash.to_owned(), password_hash.to_owned()).await?;
        tx.commit().await?;
        Ok(reset)
    }
}
