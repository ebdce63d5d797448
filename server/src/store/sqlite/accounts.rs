//! Accounts and sessions on SQLite.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tracing::instrument;
use uuid::Uuid;

use super::{NewUser, Shared, Sqlite};
use crate::store::accounts::{Accounts, Session, User};
use crate::store::admin::{Admin, SignUpMode};
use crate::store::{Result, StoreError};

#[async_trait]
impl Accounts for Sqlite {
    #[instrument(skip_all)]
    async fn create_user(&self, user: NewUser) -> Result<User> {
        let created = self.sign_up(user, SignUpMode::Open, None).await?;
        created.map_err(|_| StoreError::Conflict("sign-up refused".into()))
    }

    #[instrument(skip_all)]
    async fn user_by_email(&self, email: &str) -> Result<User> {
        Shared::user_by_email(&mut *self.reader.acquire().await?, email.to_owned()).await
    }

    #[instrument(skip(self))]
    async fn user_by_id(&self, id: Uuid) -> Result<User> {
        Shared::user_by_id(&mut *self.reader.acquire().await?, id).await
    }

    #[instrument(skip_all)]
    async fn create_session(&self, session: &Session) -> Result<()> {
        let session = session.clone();
        self.write(move |conn| Box::pin(Shared::create_session(conn, session))).await
    }

    #[instrument(skip_all)]
    async fn session(&self, id: Uuid) -> Result<Option<Session>> {
        Shared::session(&mut *self.reader.acquire().await?, id).await
    }

    #[instrument(skip_all)]
    async fn touch_session(&self, id: Uuid) -> Result<()> {
        self.write(move |conn| Box::pin(Shared::touch_session(conn, id))).await
    }

    #[instrument(skip_all)]
    async fn open_sessions(&self, user: Uuid) -> Result<Vec<Session>> {
        Shared::open_sessions(&mut *self.reader.acquire().await?, user).await
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
        Shared::sessions_ended_since(&mut *self.reader.acquire().await?, since).await
    }

    #[instrument(skip_all)]
    async fn set_password(&self, user: Uuid, password_hash: &str, keep: Uuid) -> Result<Vec<Uuid>> {
        let password_hash = password_hash.to_owned();
        self.write(move |conn| Box::pin(Shared::set_password(conn, user, password_hash, keep))).await
    }

    #[instrument(skip_all)]
    async fn sign_in_failures(&self, account: &str) -> Result<Option<(u32, DateTime<Utc>)>> {
        Shared::sign_in_failures(&mut *self.reader.acquire().await?, account.to_owned()).await
    }

    #[instrument(skip_all)]
    async fn count_sign_in_attempt(&self, account: &str, now: DateTime<Utc>) -> Result<Option<(u32, DateTime<Utc>)>> {
        let key = account.to_owned();
        let counted = self.write(move |conn| Box::pin(Shared::count_sign_in_attempt(conn, key, now))).await?;
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
        self.write(move |conn| Box::pin(Shared::delete_user(conn, user))).await
    }
}
