//! Full-text search over a person's messages, conversation titles and documents. The storage interface both backends implement.

#[allow(unused_imports)]
use super::*;
use async_trait::async_trait;
use uuid::Uuid;

/// Full-text search over a person's messages, conversation titles and documents.
#[async_trait]
pub trait Search: Send + Sync {
    /// The user's messages, thread titles and documents matching the query (see [`search_query`]), best first.
    async fn search(&self, user: Uuid, query: &str, limit: u32, offset: u32) -> Result<SearchPage>;
}
