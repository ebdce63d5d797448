//! Accounts and sessions on PostgreSQL.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tracing::instrument;
use uuid::Uuid;

use super::{NewUser, Postgres, Shared};
use crate::store::accounts::{Accounts, Session, User};
use crate::store::admin::{Admin, SignUpMode};
use crate::store::{Result, StoreError};

#[async_trait]
impl Accounts for Postgres {
    #[instrument(skip_all)]
    async fn create_user(&self, user: NewUser) -> Result<User> {
        let created = self.sign_up(user, SignUpMode::Open, None).await?;
        created.map_err(|_| StoreError::Conflict("sign-up refused".into()))
    }

    #[instrument(skip_all)]
    async fn user_by_email(&self, email: &str) -> Result<User> {
        Shared::user_by_email(&mut *self.pool.acquire().await?, email.to_owned()).await
    }

    #[instrument(skip(self))]
    async fn user_by_id(&self, id: Uuid) -> Result<User> {
        Shared::user_by_id(&mut *self.pool.acquire().await?, id).await
    }

    #[instrument(skip_all)]
    async fn create_session(&self, session: &Session) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        let done = Shared::create_session(&mut tx, session.clone()).await?;
        tx.commit().await?;
        Ok(done)
    }

    #[instrument(skip_all)]
    async fn session(&self, id: Uuid) -> Result<Option<Session>> {
        Shared::session(&mut *self.pool.acquire().await?, id).await
    }

    #[instrument(skip_all)]
    async fn touch_session(&self, id: Uuid) -> Result<()> {
        Shared::touch_session(&mut *self.pool.acquire().await?, id).await
    }

    #[instrument(skip_all)]
    async fn open_sessions(&self, user: Uuid) -> Result<Vec<Session>> {
        Shared::open_sessions(&mut *self.pool.acquire().await?, user).await
    }

    #[instrument(skip_all)]
    async fn end_session(&self, user: Uuid, id: Uuid) -> Result<bool> {
        Shared::end_session(&mut *self.pool.acquire().await?, user, id).await
    }

    #[instrument(skip_all)]
    async fn end_sessions(&self, user: Uuid, keep: Option<Uuid>) -> Result<Vec<Uuid>> {
        Shared::end_sessions_but(&mut *self.pool.acquire().await?, user, keep).await
    }

    #[instrument(skip_all)]
    async fn sessions_ended_since(&self, since: DateTime<Utc>) -> Result<Vec<(Uuid, Uuid)>> {
        Shared::sessions_ended_since(&mut *self.pool.acquire().await?, since).await
    }

    #[instrument(skip_all)]
    async fn set_password(&self, user: Uuid, password_hash: &str, keep: Uuid) -> Result<Vec<Uuid>> {
        let mut tx = self.pool.begin().await?;
        let done = Shared::set_password(&mut tx, user, password_hash.to_owned(), keep).await?;
        tx.commit().await?;
        Ok(done)
    }

    #[instrument(skip_all)]
    async fn sign_in_failures(&self, account: &str) -> Result<Option<(u32, DateTime<Utc>)>> {
        Shared::sign_in_failures(&mut *self.pool.acquire().await?, account.to_owned()).await
    }

    #[instrument(skip_all)]
    async fn count_sign_in_attempt(&self, account: &str, now: DateTime<Utc>) -> Result<Option<(u32, DateTime<Utc>)>> {
        let counted = Shared::count_sign_in_attempt(&mut *self.pool.acquire().await?, account.to_owned(), now).await?;
        if counted {
            return Ok(None);
        }
        // Refused: what it waits on (nothing, should a success have forgotten the count meanwhile).
        Ok(Some(self.sign_in_failures(account).await?.unwrap_or((0, now))))
    }

    #[instrument(skip_all)]
    async fn clear_sign_in_failures(&self, account: &str) -> Result<()> {
        Shared::clear_sign_in_failures(&mut *self.pool.acquire().await?, account.to_owned()).await
    }

    #[instrument(skip_all)]
    async fn forget_sign_in_failures(&self, before: DateTime<Utc>) -> Result<u64> {
        Shared::forget_sign_in_failures(&mut *self.pool.acquire().await?, before).await
    }

    #[instrument(skip_all)]
    async fn delete_user(&self, user: Uuid) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        let done = Shared::delete_user(&mut tx, user).await?;
        tx.commit().await?;
        Ok(done)
    }
}
