//! Usage, statistics, export and import on PostgreSQL: see [`crate::store::History`].

use std::collections::HashMap;

use app::api::Thread;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tracing::instrument;
use uuid::Uuid;

use super::{
    add_usage, thread_from_row, write_import_part, AttachmentMeta, History, HistoryStats, ImportThread, NaiveDate,
    Postgres, Usage, IMPORT_STATEMENTS, THREAD_COLUMNS,
};
use crate::store::columns::convert;
use crate::store::history::{
    import_groups, stats_window_bounds, stats_window_start, AttachmentMetaRow, Prepared, StatsRows, TOP_TAGS,
};
use crate::store::{Result, SpentTokens};

#[async_trait]
impl History for Postgres {
    #[instrument(skip(self))]
    async fn record_usage(&self, user: Uuid, thread: Uuid, model: &str, usage: Usage) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        add_usage(&mut tx, &SpentTokens { user, thread, model: model.to_string(), usage }).await?;
        tx.commit().await?;
        Ok(())
    }

    #[instrument(skip(self))]
    async fn history_stats(&self, user: Uuid, today: NaiveDate) -> Result<HistoryStats> {
        let (from, until) = stats_window_bounds(today);
        let rows: StatsRows<DateTime<Utc>, NaiveDate> = StatsRows {
            totals: sqlx::query_as(
                "select count(*) as threads, coalesce(sum(message_count), 0)::bigint as messages,
                 min(created_at) as first, max(updated_at) as last from threads where user_id = $1",
            )
            .bind(user)
            .fetch_one(&self.pool)
            .await?,
            // Tags compare byte-wise, as SQLite's BINARY does, so ties break alike on both backends.
            tags: sqlx::query_as(
                "select tag, count(*) as n from thread_tags where user_id = $1
                 group by tag order by n desc, tag collate \"C\" limit $2",
            )
            .bind(user)
            .bind(TOP_TAGS)
            .fetch_all(&self.pool)
            .await?,
            tokens: sqlx::query_as(
                "select coalesce(sum(input_tokens), 0)::bigint as input,
                 coalesce(sum(output_tokens), 0)::bigint as output from usage_ledger where user_id = $1",
            )
            .bind(user)
            .fetch_one(&self.pool)
            .await?,
            used: sqlx::query_as(
                "select day, sum(input_tokens)::bigint as input, sum(output_tokens)::bigint as output from usage_ledger
                 where user_id = $1 and day >= $2 and day <= $3 group by day",
            )
            .bind(user)
            .bind(stats_window_start(today))
            .bind(today)
            .fetch_all(&self.pool)
            .await?,
            written: sqlx::query_as(
                "select (created_at at time zone 'UTC')::date as day, count(*) as n from messages
                 where user_id = $1 and created_at >= $2 and created_at < $3 group by day",
            )
            .bind(user)
            .bind(from)
            .bind(until)
            .fetch_all(&self.pool)
            .await?,
            artifacts: sqlx::query_as(
                "select artifact_type, count(*) as n from artifacts where user_id = $1
                 group by artifact_type order by n desc, artifact_type collate \"C\"",
            )
            .bind(user)
            .fetch_all(&self.pool)
            .await?,
        };
        rows.stats(today)
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
        let rows: Vec<AttachmentMetaRow<Uuid, DateTime<Utc>>> = sqlx::query_as(
            "select id, thread_id, filename, content_type, size, created_at from attachments where user_id = $1
             order by created_at, id",
        )
        .bind(user)
        .fetch_all(&self.pool)
        .await?;
        convert(rows)
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
        let mut found =
            rows.iter().map(|row| thread_from_row(row).map(|t| (t.id, t))).collect::<Result<HashMap<_, _>>>()?;
        Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
    }
}
