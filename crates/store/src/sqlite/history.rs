//! Usage, statistics, export and import on SQLite: see [`crate::History`].

use async_trait::async_trait;
use tracing::instrument;
use uuid::Uuid;
use wire::Thread;

use super::{import, turn_writes, AttachmentMeta, History, HistoryStats, ImportThread, NaiveDate, Shared, Sqlite};
use crate::columns::ids;
use crate::{Result, SpentTokens};

#[async_trait]
impl History for Sqlite {
    #[instrument(skip(self))]
    async fn record_spent(&self, spent: &SpentTokens) -> Result<()> {
        let spent = spent.clone();
        self.write(move |tx| Box::pin(async move { turn_writes::add_usage(tx, &spent).await })).await
    }

    #[instrument(skip(self))]
    async fn history_stats(&self, user: Uuid, scope: crate::Scope, today: NaiveDate) -> Result<HistoryStats> {
        Shared::history_stats(&mut *self.read().await?, user, scope, today).await
    }

    #[instrument(skip(self))]
    async fn all_thread_ids(&self, user: Uuid) -> Result<Vec<Uuid>> {
        let rows: Vec<String> = sqlx::query_scalar("select id from threads where user_id = ? order by created_at, pk")
            .bind(user.to_string())
            .fetch_all(&self.reader)
            .await?;
        ids(rows, "id")
    }

    #[instrument(skip(self))]
    async fn list_user_attachments(&self, user: Uuid) -> Result<Vec<AttachmentMeta>> {
        Shared::user_attachments(&mut *self.read().await?, user).await
    }

    #[instrument(skip_all, fields(count = threads.len()))]
    async fn import_threads(&self, user: Uuid, threads: Vec<ImportThread>) -> Result<Vec<Thread>> {
        import::import_threads(self, user, threads).await
    }
}
