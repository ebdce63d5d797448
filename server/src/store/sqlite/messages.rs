//! The messages of a conversation on SQLite.

use app::api::Message;
use async_trait::async_trait;
use tracing::instrument;
use uuid::Uuid;

use super::{turn_writes, Shared, Sqlite};
use crate::store::threads::{found, listing};
use crate::store::{now, MessageUpdate, Messages, NewMessage, Result, StoreError, ThreadStamp, Tree};

#[async_trait]
impl Messages for Sqlite {
    #[instrument(skip(self, message), fields(thread = %message.thread_id))]
    async fn append_message(&self, user: Uuid, message: NewMessage) -> Result<Message> {
        let id = Uuid::now_v7();
        let created = now();
        self.write(move |tx| {
            Box::pin(async move {
                let place =
                    turn_writes::insert_message(tx, user, id, &message, created).await?.ok_or(StoreError::NotFound)?;
                Ok(message.saved(id, place, created))
            })
        })
        .await
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
        // The one writer serialises this with every turn's start.
        self.write(move |tx| {
            Box::pin(async move {
                Shared::refuse_while_running(&mut *tx, user, message.thread_id, stale_after_ms).await?;
                let place =
                    turn_writes::insert_message(tx, user, id, &message, created).await?.ok_or(StoreError::NotFound)?;
                Ok(message.saved(id, place, created))
            })
        })
        .await
    }

    #[instrument(skip(self, update))]
    async fn update_message(&self, user: Uuid, message: Uuid, update: &MessageUpdate) -> Result<()> {
        let update = update.clone();
        self.write(move |conn| {
            Box::pin(async move { found(Shared::rewrite_message(conn, user, message, &update, false).await?) })
        })
        .await
    }

    #[instrument(skip(self))]
    async fn list_messages(&self, user: Uuid, thread: Uuid) -> Result<Vec<Message>> {
        let messages = self.list_messages_from(user, thread, i64::MIN).await?;
        listing(messages, self.owns("threads", user, thread)).await
    }

    #[instrument(skip(self))]
    async fn message_tree_stamped(&self, user: Uuid, thread: Uuid) -> Result<(Tree, ThreadStamp)> {
        Shared::tree(&mut *self.reader.acquire().await?, user, thread, false).await?.ok_or(StoreError::NotFound)
    }

    #[instrument(skip(self))]
    async fn thread_stamp(&self, user: Uuid, thread: Uuid) -> Result<ThreadStamp> {
        let mut conn = self.reader.acquire().await?;
        Shared::stamp(&mut conn, user, thread).await?.ok_or(StoreError::NotFound)
    }

    #[instrument(skip(self, ids), fields(ids = ids.len()))]
    async fn messages_by_id(&self, user: Uuid, thread: Uuid, ids: &[Uuid]) -> Result<Vec<Message>> {
        Shared::messages_by_id(&mut *self.reader.acquire().await?, user, thread, ids).await
    }

    #[instrument(skip(self))]
    async fn set_active(
        &self,
        user: Uuid,
        thread: Uuid,
        leaf: Option<Uuid>,
        stale_after_ms: Option<i64>,
    ) -> Result<()> {
        // The one writer serialises this with every turn's start.
        self.write(move |tx| {
            Box::pin(async move {
                if let Some(stale_after_ms) = stale_after_ms {
                    Shared::refuse_while_running(&mut *tx, user, thread, stale_after_ms).await?;
                }
                Shared::set_active(tx, user, thread, leaf).await
            })
        })
        .await
    }

    #[instrument(skip(self))]
    async fn list_messages_from(&self, user: Uuid, thread: Uuid, from_seq: i64) -> Result<Vec<Message>> {
        Shared::messages_from(&mut *self.reader.acquire().await?, user, thread, from_seq).await
    }

    #[instrument(skip(self))]
    async fn get_message(&self, user: Uuid, message: Uuid) -> Result<Message> {
        Shared::message(&mut *self.reader.acquire().await?, user, message).await
    }

    #[instrument(skip(self))]
    async fn message_context(&self, user: Uuid, message: Uuid) -> Result<Option<serde_json::Value>> {
        Shared::message_context(&mut *self.reader.acquire().await?, user, message).await
    }

    #[instrument(skip(self))]
    async fn delete_message(
        &self,
        user: Uuid,
        thread: Uuid,
        message: Uuid,
        stale_after_ms: Option<i64>,
    ) -> Result<u64> {
        // The one writer serialises this with every turn's start.
        self.write(move |tx| {
            Box::pin(async move {
                let (tree, _) = Shared::tree(&mut *tx, user, thread, false).await?.ok_or(StoreError::NotFound)?;
                let (gone, active) = tree.after_deleting(message).ok_or(StoreError::NotFound)?;
                if let Some(stale_after_ms) = stale_after_ms {
                    Shared::refuse_while_running(&mut *tx, user, thread, stale_after_ms).await?;
                }
                Shared::delete_messages(tx, user, thread, &gone, active).await
            })
        })
        .await
    }
}
