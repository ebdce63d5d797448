//! sqlite: see [`crate::store::Admin`]. One writer makes every write one after the other, so a sign-up's
//! checks and its insert never interleave with another's.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tracing::instrument;
use uuid::Uuid;

use super::{NewUser, Shared, Sqlite};
use crate::store::admin::{AccountUsage, Admin, Invite, ResetRefusal, SignUpMode, SignUpRefusal};
use crate::store::{Result, User};

#[async_trait]
impl Admin for Sqlite {
    #[instrument(skip_all)]
    async fn sign_up(
        &self,
        user: NewUser,
        mode: SignUpMode,
        invite: Option<String>,
    ) -> Result<std::result::Result<User, SignUpRefusal>> {
        self.write(move |conn| Box::pin(Shared::sign_up(conn, user, mode, invite))).await
    }

    #[instrument(skip(self))]
    async fn setting(&self, key: &str) -> Result<Option<String>> {
        Shared::setting(&mut *self.reader.acquire().await?, key.to_owned()).await
    }

    #[instrument(skip(self))]
    async fn set_setting(&self, key: &str, value: &str) -> Result<()> {
        let (key, value) = (key.to_owned(), value.to_owned());
        self.write(move |conn| Box::pin(Shared::set_setting(conn, key, value))).await
    }

    #[instrument(skip(self))]
    async fn accounts(&self, offset: u32, limit: u32) -> Result<Vec<AccountUsage>> {
        Shared::accounts(&mut *self.reader.acquire().await?, offset, limit).await
    }

    #[instrument(skip(self))]
    async fn set_admin(&self, user: Uuid, admin: bool) -> Result<()> {
        self.write(move |conn| Box::pin(Shared::set_admin(conn, user, admin))).await
    }

    #[instrument(skip(self))]
    async fn set_disabled(&self, user: Uuid, disabled: bool) -> Result<Vec<Uuid>> {
        self.write(move |conn| Box::pin(Shared::set_disabled(conn, user, disabled))).await
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
        self.write(move |conn| Box::pin(Shared::create_invite(conn, token_hash, created_by, expires_at, max_uses)))
            .await
    }

    #[instrument(skip(self))]
    async fn invites(&self) -> Result<Vec<Invite>> {
        Shared::invites(&mut *self.reader.acquire().await?).await
    }

    #[instrument(skip(self))]
    async fn revoke_invite(&self, id: Uuid) -> Result<()> {
        self.write(move |conn| Box::pin(Shared::revoke_invite(conn, id))).await
    }

    #[instrument(skip(self, token_hash))]
    async fn create_password_reset(&self, user: Uuid, token_hash: &str, expires_at: DateTime<Utc>) -> Result<()> {
        let token_hash = token_hash.to_owned();
        self.write(move |conn| Box::pin(Shared::create_password_reset(conn, user, token_hash, expires_at))).await
    }

    #[instrument(skip_all)]
    async fn password_reset_account(&self, token_hash: &str) -> Result<Option<Uuid>> {
        Shared::password_reset_account(&mut *self.reader.acquire().await?, token_hash.to_owned()).await
    }

    #[instrument(skip_all)]
    async fn reset_password(
        &self,
        token_hash: &str,
        password_hash: &str,
    ) -> Result<std::result::Result<(Uuid, Vec<Uuid>), ResetRefusal>> {
        let (token_hash, password_hash) = (token_hash.to_owned(), password_hash.to_owned());
        self.write(move |conn| Box::pin(Shared::reset_password(conn, token_hash, password_hash))).await
    }
}
