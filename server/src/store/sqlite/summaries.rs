//! Conversation summaries on SQLite.

use async_trait::async_trait;
use tracing::instrument;
use uuid::Uuid;

use super::{turn_writes::add_usage, Sqlite};
use crate::store::summaries::{NewSummary, Summaries, SummaryRow, ThreadSummary, READ_SUMMARY, SAVE_SUMMARY};
use crate::store::{now, Result, SpentTokens, StoreError};

type Row = SummaryRow<i64>;

#[async_trait]
impl Summaries for Sqlite {
    #[instrument(skip(self))]
    async fn thread_summary(&self, user: Uuid, thread: Uuid) -> Result<Option<ThreadSummary>> {
        let row: Option<Row> = sqlx::query_as(READ_SUMMARY)
            .bind(thread.to_string())
            .bind(user.to_string())
            .fetch_optional(&self.reader)
            .await?;
        row.map(ThreadSummary::try_from).transpose()
    }

    #[instrument(skip(self, summary))]
    async fn save_thread_summary(&self, user: Uuid, thread: Uuid, summary: &NewSummary) -> Result<ThreadSummary> {
        let summary = summary.clone();
        self.write(move |tx| {
            Box::pin(async move {
                let row: Option<Row> = sqlx::query_as(SAVE_SUMMARY)
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
                saved.try_into()
            })
        })
        .await
    }
}
