//! The messages of a conversation on PostgreSQL.

use app::api::Message;
use async_trait::async_trait;
use tracing::instrument;
use uuid::Uuid;

use super::{insert_message, Postgres, Shared};
use crate::store::threads::{found, listing};
use crate::store::{now, MessageUpdate, Messages, NewMessage, Result, StoreError, ThreadStamp, Tree};

#[async_trait]
impl Messages for Postgres {
    #[instrument(skip(self, message), fields(thread = %message.thread_id))]
    async fn append_message(&self, user: Uuid, message: NewMessage) -> Result<Message> {
        let id = Uuid::now_v7();
        let created = now();
        let mut tx = self.pool.begin().await?;
        let place = insert_message(&mut tx, user, id, &message, created, false).await?.ok_or(StoreError::NotFound)?;
        tx.commit().await?;
        Ok(message.saved(id, place, created))
    }

    #[instrument(skip(self, message), fields(thread = %message.thread_id))]
    async fn append_message_between_turns(
        &self,
        user: Uuid,
        message: NewMessage,
        stale_after_ms: i64,
    ) -> Result<Message> {
        let id = Uuid::now_v7();
        let created = now();
        let mut tx = self.pool.begin().await?;
        // The thread's row is locked first: a turn starting with a message of its own updates that row, so it
        // either committed before (and is seen below) or waits until this message is in.
        let owned: Option<i32> = sqlx::query_scalar("select 1 from threads where id = $1 and user_id = $2 for update")
            .bind(message.thread_id)
            .bind(user)
            .fetch_optional(&mut *tx)
            .await?;
        found(owned.is_some())?;
        Shared::refuse_while_running(&mut tx, user, message.thread_id, stale_after_ms).await?;
        let place = insert_message(&mut tx, user, id, &message, created, false).await?.ok_or(StoreError::NotFound)?;
        tx.commit().await?;
        Ok(message.saved(id, place, created))
    }

    #[instrument(skip(self, update))]
    async fn update_message(&self, user: Uuid, message: Uuid, update: &MessageUpdate) -> Result<()> {
        let mut conn = self.pool.acquire().await?;
        found(Shared::rewrite_message(&mut conn, user, message, update, false).await?)
    }

    #[instrument(skip(self))]
    async fn list_messages(&self, user: Uuid, thread: Uuid) -> Result<Vec<Message>> {
        let messages = self.list_messages_from(user, thread, i64::MIN).await?;
        listing(messages, self.owns("threads", user, thread)).await
    }

    #[instrument(skip(self))]
    async fn message_tree_stamped(&self, user: Uuid, thread: Uuid) -> Result<(Tree, ThreadStamp)> {
        Shared::tree(&mut *self.pool.acquire().await?, user, thread, false).await?.ok_or(StoreError::NotFound)
    }

    #[instrument(skip(self))]
    async fn thread_stamp(&self, user: Uuid, thread: Uuid) -> Result<ThreadStamp> {
        Shared::stamp(&mut *self.pool.acquire().await?, user, thread).await?.ok_or(StoreError::NotFound)
    }

    #[instrument(skip(self, ids), fields(ids = ids.len()))]
    async fn messages_by_id(&self, user: Uuid, thread: Uuid, ids: &[Uuid]) -> Result<Vec<Message>> {
        Shared::messages_by_id(&mut *self.pool.acquire().await?, user, thread, ids).await
    }

    #[instrument(skip(self))]
    async fn set_active(
        &self,
        user: Uuid,
        thread: Uuid,
        leaf: Option<Uuid>,
        stale_after_ms: Option<i64>,
    ) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        // The thread's row is locked first: a turn starting with a message of its own updates that row, so it
        // either committed before (and is seen below) or waits until this change is in.
        let owned: Option<i32> = sqlx::query_scalar("select 1 from threads where id = $1 and user_id = $2 for update")
            .bind(thread)
            .bind(user)
            .fetch_optional(&mut *tx)
            .await?;
        found(owned.is_some())?;
        if let Some(stale_after_ms) = stale_after_ms {
            Shared::refuse_while_running(&mut tx, user, thread, stale_after_ms).await?;
        }
        Shared::set_active(&mut tx, user, thread, leaf).await?;
        tx.commit().await?;
        Ok(())
    }

    #[instrument(skip(self))]
    async fn list_messages_from(&self, user: Uuid, thread: Uuid, from_seq: i64) -> Result<Vec<Message>> {
        Shared::messages_from(&mut *self.pool.acquire().await?, user, thread, from_seq).await
    }

    #[instrument(skip(self))]
    async fn get_message(&self, user: Uuid, message: Uuid) -> Result<Message> {
        Shared::message(&mut *self.pool.acquire().await?, user, message).await
    }

    #[instrument(skip(self))]
    async fn message_context(&self, user: Uuid, message: Uuid) -> Result<Option<serde_json::Value>> {
        Shared::message_context(&mut *self.pool.acquire().await?, user, message).await
    }

    #[instrument(skip(self))]
    async fn delete_message(
        &self,
        user: Uuid,
        thread: Uuid,
        message: Uuid,
        stale_after_ms: Option<i64>,
    ) -> Result<u64> {
        let mut tx = self.pool.begin().await?;
        // Read with the thread's row locked, so no message joins the subtree meanwhile.
        let (tree, _) = Shared::tree(&mut tx, user, thread, true).await?.ok_or(StoreError::NotFound)?;
        let (gone, active) = tree.after_deleting(message).ok_or(StoreError::NotFound)?;
        if let Some(stale_after_ms) = stale_after_ms {
            Shared::refuse_while_running(&mut tx, user, thread, stale_after_ms).await?;
        }
        let deleted = Shared::delete_messages(&mut tx, user, thread, &gone, active).await?;
        tx.commit().await?;
        Ok(deleted)
    }
}
