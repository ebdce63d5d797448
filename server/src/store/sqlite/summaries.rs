//! Conversation summaries on SQLite.

use async_trait::async_trait;
use tracing::instrument;
use uuid::Uuid;

use super::{turn_writes::add_usage, Shared, Sqlite};
use crate::store::summaries::{NewSummary, Summaries, ThreadSummary};
use crate::store::{Result, SpentTokens};

#[async_trait]
impl Summaries for Sqlite {
    #[instrument(skip(self))]
    async fn thread_summary(&self, user: Uuid, thread: Uuid) -> Result<Option<ThreadSummary>> {
        Shared::thread_summary(&mut *self.reader.acquire().await?, user, thread).await
    }

    #[instrument(skip(self, summary))]
    async fn save_thread_summary(&self, user: Uuid, thread: Uuid, summary: &NewSummary) -> Result<ThreadSummary> {
        let summary = summary.clone();
        self.write(move |tx| {
            Box::pin(async move {
                let saved = Shared::save_summary(&mut *tx, user, thread, summary.clone()).await?;
                let spent = SpentTokens { user, thread, model: summary.model, usage: summary.usage };
                add_usage(tx, &spent).await?;
                Ok(saved)
            })
        })
        .await
    }
}
