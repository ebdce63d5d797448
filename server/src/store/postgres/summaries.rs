//! Conversation summaries on PostgreSQL.

use async_trait::async_trait;
use tracing::instrument;
use uuid::Uuid;

use super::{add_usage, Postgres, Shared};
use crate::store::summaries::{NewSummary, Summaries, ThreadSummary};
use crate::store::{Result, SpentTokens};

#[async_trait]
impl Summaries for Postgres {
    #[instrument(skip(self))]
    async fn thread_summary(&self, user: Uuid, thread: Uuid) -> Result<Option<ThreadSummary>> {
        Shared::thread_summary(&mut *self.pool.acquire().await?, user, thread).await
    }

    #[instrument(skip(self, summary))]
    async fn save_thread_summary(&self, user: Uuid, thread: Uuid, summary: &NewSummary) -> Result<ThreadSummary> {
        let mut tx = self.pool.begin().await?;
        let saved = Shared::save_summary(&mut tx, user, thread, summary.clone()).await?;
        let spent = SpentTokens { user, thread, model: summary.model.clone(), usage: summary.usage };
        add_usage(&mut tx, &spent).await?;
        tx.commit().await?;
        Ok(saved)
    }
}
