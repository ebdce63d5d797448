//! Conversation summaries on SQLite.

use app::api::Usage;
use async_trait::async_trait;
use tracing::instrument;
use uuid::Uuid;

use super::{turn_writes::add_usage, Sqlite};
use crate::store::{
    micros_to_time, now,
    summaries::{NewSummary, Summaries, ThreadSummary},
    Result, SpentTokens, StoreError,
};

const COLUMNS: &str = "content, covers_through, covered_count, model, input_tokens, output_tokens, updated_at";

#[derive(sqlx::FromRow)]
struct SummaryRow {
    content: String,
    covers_through: i64,
    covered_count: i64,
    model: String,
    input_tokens: i64,
    output_tokens: i64,
    updated_at: i64,
}

impl From<SummaryRow> for ThreadSummary {
    fn from(row: SummaryRow) -> Self {
        ThreadSummary {
            content: row.content,
            covers_through: row.covers_through,
            covered_count: row.covered_count,
            model: row.model,
            usage: Usage {
                input_tokens: row.input_tokens.max(0) as u64,
                output_tokens: row.output_tokens.max(0) as u64,
            },
            updated_at: micros_to_time(row.updated_at),
        }
    }
}

#[async_trait]
impl Summaries for Sqlite {
    #[instrument(skip(self))]
    async fn thread_summary(&self, user: Uuid, thread: Uuid) -> Result<Option<ThreadSummary>> {
        let row: Option<SummaryRow> =
            sqlx::query_as(&format!("select {COLUMNS} from thread_summaries where thread_id = ? and user_id = ?"))
                .bind(thread.to_string())
                .bind(user.to_string())
                .fetch_optional(&self.reader)
                .await?;
        Ok(row.map(ThreadSummary::from))
    }

    #[instrument(skip(self, summary))]
    async fn save_thread_summary(&self, user: Uuid, thread: Uuid, summary: &NewSummary) -> Result<ThreadSummary> {
        let summary = summary.clone();
        self.write(move |tx| {
            Box::pin(async move {
                let row: Option<SummaryRow> = sqlx::query_as(&format!(
                    "insert into thread_summaries
                         (thread_id, user_id, content, covers_through, covered_count, model, input_tokens, output_tokens,
                          updated_at)
                     select id, user_id, ?, ?, ?, ?, ?, ?, ? from threads where id = ? and user_id = ?
                     on conflict (thread_id) do update set content = excluded.content,
                         covers_through = excluded.covers_through, covered_count = excluded.covered_count,
                         model = excluded.model, input_tokens = thread_summaries.input_tokens + excluded.input_tokens,
                         output_tokens = thread_summaries.output_tokens + excluded.output_tokens,
                         updated_at = excluded.updated_at
                     returning {COLUMNS}"
                ))
                .bind(&summary.content)
                .bind(summary.covers_through)
                .bind(summary.covered_count)
                .bind(&summary.model)
                .bind(summary.usage.input_tokens as i64)
                .bind(summary.usage.output_tokens as i64)
                .bind(now().timestamp_micros())
                .bind(thread.to_string())
                .bind(user.to_string())
                .fetch_optional(&mut *tx)
                .await?;
                let saved = row.ok_or(StoreError::NotFound)?;
                let spent = SpentTokens { user, thread, model: summary.model.clone(), usage: summary.usage };
                add_usage(tx, &spent).await?;
                Ok(saved.into())
            })
        })
        .await
    }
}
