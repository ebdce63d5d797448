//! Settings and share links on SQLite. The one writer makes every link, so a count made in the insert's own
//! write sees every link made before it.

use app::api::{Settings, ShareLink, UpdateSettings};
use async_trait::async_trait;
use tracing::instrument;
use uuid::Uuid;

use super::{Shared, Sqlite};
use crate::store::threads::found;
use crate::store::{NewShare, Preferences, Result, Shares};

#[async_trait]
impl Preferences for Sqlite {
    #[instrument(skip(self))]
    async fn settings(&self, user: Uuid) -> Result<Settings> {
        Shared::settings(&mut *self.reader.acquire().await?, user).await
    }

    #[instrument(skip(self))]
    async fn turn_settings(&self, user: Uuid, thread: Uuid) -> Result<crate::store::TurnSettings> {
        Shared::turn_settings(&mut *self.reader.acquire().await?, user, thread).await
    }

    #[instrument(skip_all, fields(user = %user))]
    async fn update_settings(&self, user: Uuid, change: &UpdateSettings) -> Result<Settings> {
        let change = change.clone();
        self.write(move |conn| Box::pin(Shared::update_settings(conn, user, change))).await
    }
}

#[async_trait]
impl Shares for Sqlite {
    #[instrument(skip(self, share), fields(thread = %share.thread))]
    async fn create_share(&self, user: Uuid, share: NewShare, max: u32) -> Result<ShareLink> {
        self.write(move |conn| Box::pin(Shared::create_share(conn, user, share, max))).await
    }

    #[instrument(skip(self))]
    async fn list_shares(&self, user: Uuid, thread: Option<Uuid>) -> Result<Vec<ShareLink>> {
        let links = Shared::list_shares(&mut *self.reader.acquire().await?, user, thread).await?;
        if let (true, Some(thread)) = (links.is_empty(), thread) {
            found(self.owns("threads", user, thread).await?)?;
        }
        Ok(links)
    }

    #[instrument(skip(self))]
    async fn delete_share(&self, user: Uuid, share: Uuid) -> Result<()> {
        self.delete("delete from shares where id = ? and user_id = ?", &[share, user]).await
    }

    #[instrument(skip_all)]
    async fn shared_snapshot(&self, token: &str) -> Result<String> {
        Shared::shared_snapshot(&mut *self.reader.acquire().await?, token.to_owned()).await
    }
}
