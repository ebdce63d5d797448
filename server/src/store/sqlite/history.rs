//! Usage, statistics, export and import on SQLite: see [`crate::store::History`].

use app::api::Thread;
use async_trait::async_trait;
use tracing::instrument;
use uuid::Uuid;

use super::{import, turn_writes, AttachmentMeta, History, HistoryStats, ImportThread, NaiveDate, Sqlite, Usage};
use crate::store::columns::{convert, ids};
use crate::store::history::{stats_window_bounds, stats_window_start, AttachmentMetaRow, StatsRows, TOP_TAGS};
use crate::store::{Result, SpentTokens};

#[async_trait]
impl History for Sqlite {
    #[instrument(skip(self))]
    async fn record_usage(&self, user: Uuid, thread: Uuid, model: &str, usage: Usage) -> Result<()> {
        let model = model.to_owned();
        self.write(move |tx| {
            Box::pin(async move { turn_writes::add_usage(tx, &SpentTokens { user, thread, model, usage }).await })
        })
        .await
    }

    #[instrument(skip(self))]
    async fn history_stats(&self, user: Uuid, today: NaiveDate) -> Result<HistoryStats> {
        let user_id = user.to_string();
        let day = |day: NaiveDate| day.format("%Y-%m-%d").to_string();
        let (from, until) = stats_window_bounds(today);
        let rows: StatsRows<i64, String> = StatsRows {
            totals: sqlx::query_as(
                "select count(*) as threads, coalesce(sum(message_count), 0) as messages, min(created_at) as first,
                 max(updated_at) as last from threads where user_id = ?",
            )
            .bind(&user_id)
            .fetch_one(&self.reader)
            .await?,
            tags: sqlx::query_as(
                "select tag, count(*) as n from thread_tags where user_id = ? group by tag order by n desc, tag limit ?",
            )
            .bind(&user_id)
            .bind(TOP_TAGS)
            .fetch_all(&self.reader)
            .await?,
            tokens: sqlx::query_as(
                "select coalesce(sum(input_tokens), 0) as input, coalesce(sum(output_tokens), 0) as output
                 from usage_ledger where user_id = ?",
            )
            .bind(&user_id)
            .fetch_one(&self.reader)
            .await?,
            used: sqlx::query_as(
                "select day, sum(input_tokens) as input, sum(output_tokens) as output from usage_ledger
                 where user_id = ? and day >= ? and day <= ? group by day",
            )
            .bind(&user_id)
            .bind(day(stats_window_start(today)))
            .bind(day(today))
            .fetch_all(&self.reader)
            .await?,
            written: sqlx::query_as(
                "select date(created_at / 1000000, 'unixepoch') as day, count(*) as n from messages
                 where user_id = ? and created_at >= ? and created_at < ? group by day",
            )
            .bind(&user_id)
            .bind(from.timestamp_micros())
            .bind(until.timestamp_micros())
            .fetch_all(&self.reader)
            .await?,
            artifacts: sqlx::query_as(
                "select artifact_type, count(*) as n from artifacts where user_id = ?
                 group by artifact_type order by n desc, artifact_type",
            )
            .bind(&user_id)
            .fetch_all(&self.reader)
            .await?,
        };
        rows.stats(today)
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
        let rows: Vec<AttachmentMetaRow<String, i64>> = sqlx::query_as(
            "select id, thread_id, filename, content_type, size, created_at from attachments where user_id = ?
             order by created_at, id",
        )
        .bind(user.to_string())
        .fetch_all(&self.reader)
        .await?;
        convert(rows)
    }

    #[instrument(skip_all, fields(count = threads.len()))]
    async fn import_threads(&self, user: Uuid, threads: Vec<ImportThread>) -> Result<Vec<Thread>> {
        import::import_threads(self, user, threads).await
    }
}
