//! Usage, statistics, export and import on PostgreSQL: see [`crate::History`].

use std::collections::HashMap;

use async_trait::async_trait;
use tracing::instrument;
use uuid::Uuid;
use wire::Thread;

use super::{
    add_usage, thread_from_row, write_import_part, AttachmentMeta, History, HistoryStats, ImportThread, NaiveDate,
    Postgres, Shared, IMPORT_STATEMENTS, THREAD_COLUMNS,
};
use crate::history::{import_groups, Prepared};
use crate::{Result, SpentTokens};

#[async_trait]
impl History for Postgres {
    #[instrument(skip(self))]
    async fn record_spent(&self, spent: &SpentTokens) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        add_usage(&mut tx, spent).await?;
        tx.commit().await?;
        Ok(())
    }

    #[instrument(skip(self))]
    async fn history_stats(&self, user: Uuid, scope: crate::Scope, today: NaiveDate) -> Result<HistoryStats> {
        Shared::history_stats(&mut *self.read().await?, user, scope, today).await
    }

    #[instrument(skip(self))]
    async fn all_thread_ids(&self, user: Uuid) -> Result<Vec<Uuid>> {
        Ok(sqlx::query_scalar("select id from threads where user_id = $1 order by created_at, id")
            .bind(user)
            .fetch_all(&self.pool)
            .await?)
    }

    #[instrument(skip(self))]
    async fn list_user_attachments(&self, user: Uuid) -> Result<Vec<AttachmentMeta>> {
        Shared::user_attachments(&mut *self.read().await?, user).await
    }

    #[instrument(skip_all, fields(count = threads.len()))]
    async fn import_threads(&self, user: Uuid, threads: Vec<ImportThread>) -> Result<Vec<Thread>> {
        // One transaction: other writers are not held up by it (it locks only rows of its own), and a failure
        // leaves nothing. Rows go in many per statement.
        let prepared = Prepared::all(&threads);
        let mut tx = self.pool.begin().await?;
        for group in import_groups(&prepared, IMPORT_STATEMENTS) {
            for part in &group {
                write_import_part(&mut tx, user, &prepared, part).await?;
            }
        }
        let ids: Vec<Uuid> = prepared.iter().map(|p| p.id).collect();
        let sql = format!("select {THREAD_COLUMNS} from threads t where t.id = any($1)");
        let rows = sqlx::query(&sql).bind(&ids).fetch_all(&mut *tx).await?;
        tx.commit().await?;
        self.saved_documents(prepared.iter().flat_map(|p| p.artifact_ids.iter().copied()));
        let mut found =
            rows.iter().map(|row| thread_from_row(row).map(|t| (t.id, t))).collect::<Result<HashMap<_, _>>>()?;
        Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
    }
}
