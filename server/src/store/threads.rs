//! Conversations: create, list, read, change, delete. The storage interface both backends implement.

#[allow(unused_imports)]
use super::*;
use async_trait::async_trait;
use uuid::Uuid;

/// Conversations: create, list, read, change, delete.
#[async_trait]
pub trait Threads: Send + Sync {
    async fn create_thread(&self, user: Uuid, title: &str, tags: &[String]) -> Result<Thread>;
    async fn list_threads(&self, user: Uuid, query: &ThreadQuery) -> Result<ThreadPage>;
    async fn get_thread(&self, user: Uuid, thread: Uuid) -> Result<Thread>;
    async fn update_thread(&self, user: Uuid, thread: Uuid, patch: &ThreadPatch) -> Result<Thread>;
    async fn delete_thread(&self, user: Uuid, thread: Uuid) -> Result<()>;
}
