//! Conversation summaries on PostgreSQL.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tracing::instrument;
use uuid::Uuid;

use super::{add_usage, Postgres};
use crate::store::summaries::{NewSummary, Summaries, SummaryRow, ThreadSummary, READ_SUMMARY, SAVE_SUMMARY};
use crate::store::{now, Result, SpentTokens, StoreError};

type Row = SummaryRow<DateTime<Utc>>;

#[async_trait]
impl Summaries for Postgres {
    #[instrument(skip(self))]
    async fn thread_summary(&self, user: Uuid, thread: Uuid) -> Result<Option<ThreadSummary>> {
        let row: Option<Row> = sqlx::query_as(READ_SUMMARY).bind(thread).bind(user).fetch_optional(&self.pool).await?;
        row.map(ThreadSummary::try_from).transpose()
    }

    #[instrument(skip(self, summary))]
    async fn save_thread_summary(&self, user: Uuid, thread: Uuid, summary: &NewSummary) -> Result<ThreadSummary> {
        let mut tx = self.pool.begin().await?;
        let row: Option<Row> = sqlx::query_as(SAVE_SUMMARY)
            .bind(&summary.content)
            .bind(summary.covers_through)
            .bind(summary.covered_count)
            .bind(&summary.model)
            .bind(summary.usage.input_tokens as i64)
            .bind(summary.usage.output_tokens as i64)
            .bind(now())
            .bind(thread)
            .bind(user)
            .fetch_optional(&mut *tx)
            .await?;
        let saved = row.ok_or(StoreError::NotFound)?;
        let spent = SpentTokens { user, thread, model: summary.model.clone(), usage: summary.usage };
        add_usage(&mut tx, &spent).await?;
        tx.commit().await?;
        saved.try_into()
    }
}
