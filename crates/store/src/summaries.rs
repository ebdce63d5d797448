//! The summary of a long conversation's earlier turns, which stands in for them once they no longer fit the
//! model's token budget; both backends implement its storage (`sqlite/summaries.rs`, `postgres/summaries.rs`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;
use wire::Usage;

use super::columns::{shared_sql, stored_row};
use super::{now, Result, StoreError};

/// A conversation's summary as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadSummary {
    pub content: String,
    /// The number (`seq`) of the newest message it covers; it covers every earlier one too.
    pub covers_through: i64,
    /// How many messages were numbered up to `covers_through` when it was written: fewer now means one of them
    /// was deleted since, and the summary may still tell of it.
    pub covered_count: i64,
    /// The model that wrote it last.
    pub model: String,
    /// Tokens every summary of the conversation has cost, in all.
    pub usage: Usage,
    pub updated_at: DateTime<Utc>,
}

/// A summary to store in place of the conversation's last one, with what writing it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSummary {
    pub content: String,
    pub covers_through: i64,
    pub covered_count: i64,
    pub model: String,
    /// The tokens this summary cost (added to the running total).
    pub usage: Usage,
    /// Whose ledger they go on: who sent the turn that needed it.
    pub payer: Uuid,
}

/// Reads a conversation's summary (as a [`SummaryRow`]); binds the conversation and its owner. Both backends
/// take the same text (SQLite numbers parameters as PostgreSQL does).
const READ_SUMMARY: &str = "select content, covers_through, covered_count, model, input_tokens, output_tokens,
    updated_at from thread_summaries where thread_id = $1 and user_id = $2";

/// Replaces a conversation's summary, adding its tokens to the ones before, and returns it (as a [`SummaryRow`]);
/// nothing when the conversation is missing or another user's. Binds the text, the numbers it covers through and
/// counted, the model, the input and output tokens, the time, the conversation and its owner.
const SAVE_SUMMARY: &str = "insert into thread_summaries
        (thread_id, user_id, content, covers_through, covered_count, model, input_tokens, output_tokens, updated_at)
    select id, user_id, $1, $2, $3, $4, $5, $6, $7 from threads where id = $8 and user_id = $9
    on conflict (thread_id) do update set content = excluded.content, covers_through = excluded.covers_through,
        covered_count = excluded.covered_count, model = excluded.model,
        input_tokens = thread_summaries.input_tokens + excluded.input_tokens,
        output_tokens = thread_summaries.output_tokens + excluded.output_tokens, updated_at = excluded.updated_at
    returning content, covers_through, covered_count, model, input_tokens, output_tokens, updated_at";

stored_row! {
    /// A summary as stored, with the backend's time column (`T`, see [`Stored`]).
    SummaryRow<T> -> ThreadSummary {
        content: String,
        covers_through: i64,
        covered_count: i64,
        model: String,
        updated_at: T,
    } with {
        input_tokens: i64,
        output_tokens: i64,
    } => {
        usage: Usage { input_tokens: input_tokens.max(0) as u64, output_tokens: output_tokens.max(0) as u64 },
    }
}

shared_sql! {
    rows(SummaryRow<D::Time>);

    /// The conversation's summary; `None` when it has none, or is missing or another user's.
    pub(crate) async fn thread_summary(
        conn: &mut D::Connection,
        user: Uuid,
        thread: Uuid,
    ) -> Result<Option<ThreadSummary>> {
        Self::owned_row::<SummaryRow<D::Time>, _>(conn, READ_SUMMARY, thread, user).await
    }

    /// Replaces the conversation's summary (see [`SAVE_SUMMARY`]) and returns it; its tokens in the owner's
    /// ledger are the caller's. `NotFound` when the conversation is missing or another user's.
    pub(crate) async fn save_summary(
        conn: &mut D::Connection,
        user: Uuid,
        thread: Uuid,
        summary: NewSummary,
    ) -> Result<ThreadSummary> {
        let row: Option<SummaryRow<D::Time>> = sqlx::query_as(SAVE_SUMMARY)
            .bind(summary.content)
            .bind(summary.covers_through)
            .bind(summary.covered_count)
            .bind(summary.model)
            .bind(summary.usage.input_tokens as i64)
            .bind(summary.usage.output_tokens as i64)
            .bind(D::time(now()))
            .bind(D::id(thread))
            .bind(D::id(user))
            .fetch_optional(conn)
            .await?;
        row.ok_or(StoreError::NotFound)?.try_into()
    }
}

/// Storage of conversation summaries.
#[async_trait]
pub trait Summaries {
    /// The conversation's summary; `None` when it has none, or is missing or another user's.
    async fn thread_summary(&self, user: Uuid, thread: Uuid) -> Result<Option<ThreadSummary>>;
    /// Replaces the conversation's summary and adds its tokens to the conversation's totals and its owner's
    /// ledger for today and the model, in one transaction. `NotFound` when the conversation is missing or
    /// another user's.
    async fn save_thread_summary(&self, user: Uuid, thread: Uuid, summary: &NewSummary) -> Result<ThreadSummary>;
}

/// Implements [`Summaries`] for a backend, written once for both, as
/// [`accounts_for`](super::accounts::accounts_for) does; the module it is used in has the backend's `add_usage`.
macro_rules! summaries_for {
    ($backend:ty) => {
        const _: () = {
            use tracing::instrument;
            use uuid::Uuid;
            use $crate::summaries::{NewSummary, Summaries, ThreadSummary};
            use $crate::{Result, SpentTokens};

            #[async_trait::async_trait]
            impl Summaries for $backend {
                #[instrument(skip(self))]
                async fn thread_summary(&self, user: Uuid, thread: Uuid) -> Result<Option<ThreadSummary>> {
                    Shared::thread_summary(&mut *self.read().await?, user, thread).await
                }

                #[instrument(skip(self, summary))]
                async fn save_thread_summary(
                    &self,
                    user: Uuid,
                    thread: Uuid,
                    summary: &NewSummary,
                ) -> Result<ThreadSummary> {
                    let summary = summary.clone();
                    self.write_together(move |tx| {
                        Box::pin(async move {
                            let saved = Shared::save_summary(&mut *tx, user, thread, summary.clone()).await?;
                            let spent = SpentTokens {
                                user,
                                payer: summary.payer,
                                thread,
                                model: summary.model,
                                usage: summary.usage,
                                counted_tokens: 0,
                            };
                            add_usage(tx, &spent).await?;
                            Ok(saved)
                        })
                    })
                    .await
                }
            }
        };
    };
}
pub(crate) use summaries_for;
