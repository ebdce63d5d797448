//! Settings and share links on PostgreSQL. A new link locks its owner's account row before it counts, so links
//! made at once, on any instance, are counted one after the other.

use app::api::{Settings, ShareLink, UpdateSettings};
use async_trait::async_trait;
use tracing::instrument;
use uuid::Uuid;

use super::{Postgres, Shared};
use crate::store::threads::found;
use crate::store::{NewShare, Preferences, Result, Shares};

#[async_trait]
impl Preferences for Postgres {
    #[instrument(skip(self))]
    async fn settings(&self, user: Uuid) -> Result<Settings> {
        Shared::settings(&mut *self.pool.acquire().await?, user).await
    }

    #[instrument(skip(self))]
    async fn turn_settings(&self, user: Uuid, thread: Uuid) -> Result<crate::store::TurnSettings> {
        Shared::turn_settings(&mut *self.pool.acquire().await?, user, thread).await
    }

    #[instrument(skip_all, fields(user = %user))]
    async fn update_settings(&self, user: Uuid, change: &UpdateSettings) -> Result<Settings> {
        Shared::update_settings(&mut *self.pool.acquire().await?, user, change.clone()).await
    }
}

#[async_trait]
impl Shares for Postgres {
    #[instrument(skip(self, share), fields(thread = %share.thread))]
    async fn create_share(&self, user: Uuid, share: NewShare, max: u32) -> Result<ShareLink> {
        let mut tx = self.pool.begin().await?;
        let link = Shared::create_share(&mut tx, user, share, max).await?;
        tx.commit().await?;
        Ok(link)
    }

    #[instrument(skip(self))]
    async fn list_shares(&self, user: Uuid, thread: Option<Uuid>) -> Result<Vec<ShareLink>> {
        let links = Shared::list_shares(&mut *self.pool.acquire().await?, user, thread).await?;
        if let (true, Some(thread)) = (links.is_empty(), thread) {
            found(self.owns("threads", user, thread).await?)?;
        }
        Ok(links)
    }

    #[instrument(skip(self))]
    async fn delete_share(&self, user: Uuid, share: Uuid) -> Result<()> {
        self.delete("delete from shares where id = $1 and user_id = $2", &[share, user]).await
    }

    #[instrument(skip_all)]
    async fn shared_snapshot(&self, token: &str) -> Result<String> {
        Shared::shared_snapshot(&mut *self.pool.acquire().await?, token.to_owned()).await
    }
}
