//! The summary of a long conversation's earlier turns, which stands in for them once they no longer fit the
//! model's token budget; both backends implement its storage (`sqlite/summaries.rs`, `postgres/summaries.rs`).

use app::api::Usage;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::Result;

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
