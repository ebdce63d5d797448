//! The messages of a conversation on PostgreSQL.

use app::api::Message;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tracing::instrument;
use uuid::Uuid;

use super::{insert_message, rewrite_message, Postgres};
use crate::store::columns::convert;
use crate::store::messages::{MessageHeadRow, MessageRow, MESSAGE_COLUMNS, TURN_RUNNING};
use crate::store::threads::{found, listing};
use crate::store::{now, MessageHead, MessageUpdate, Messages, NewMessage, Result, StoreError};

type Row = MessageRow<Uuid, DateTime<Utc>>;

#[async_trait]
impl Messages for Postgres {
    #[instrument(skip(self, message), fields(thread = %message.thread_id))]
    async fn append_message(&self, user: Uuid, message: NewMessage) -> Result<Message> {
        let id = Uuid::now_v7();
        let created = now();
        let mut tx = self.pool.begin().await?;
        let seq = insert_message(&mut tx, user, id, &message, created, false).await?.ok_or(StoreError::NotFound)?;
        tx.commit().await?;
        Ok(message.saved(id, seq, created))
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
        let busy: bool = sqlx::query_scalar(TURN_RUNNING)
            .bind(message.thread_id)
            .bind(user)
            .bind(created - chrono::Duration::milliseconds(stale_after_ms))
            .fetch_one(&mut *tx)
            .await?;
        if busy {
            return Err(StoreError::thread_busy());
        }
        let seq = insert_message(&mut tx, user, id, &message, created, false).await?.ok_or(StoreError::NotFound)?;
        tx.commit().await?;
        Ok(message.saved(id, seq, created))
    }

    #[instrument(skip(self, update))]
    async fn update_message(&self, user: Uuid, message: Uuid, update: &MessageUpdate) -> Result<()> {
        let mut conn = self.pool.acquire().await?;
        found(rewrite_message(&mut conn, user, message, update, false).await?)
    }

    #[instrument(skip(self))]
    async fn list_messages(&self, user: Uuid, thread: Uuid) -> Result<Vec<Message>> {
        let messages = self.list_messages_from(user, thread, i64::MIN).await?;
        listing(messages, self.owns("threads", user, thread)).await
    }

    #[instrument(skip(self))]
    async fn list_message_heads(&self, user: Uuid, thread: Uuid) -> Result<Vec<MessageHead>> {
        // Answered from the `messages_heads` index (an index-only scan once the table is vacuumed).
        let rows: Vec<MessageHeadRow<Uuid>> =
            sqlx::query_as("select id, seq, role from messages where thread_id = $1 and user_id = $2 order by seq")
                .bind(thread)
                .bind(user)
                .fetch_all(&self.pool)
                .await?;
        convert(listing(rows, self.owns("threads", user, thread)).await?)
    }

    #[instrument(skip(self))]
    async fn list_messages_from(&self, user: Uuid, thread: Uuid, from_seq: i64) -> Result<Vec<Message>> {
        let sql = format!(
            "select {MESSAGE_COLUMNS} from messages where thread_id = $1 and user_id = $2 and seq >= $3 order by seq"
        );
        let rows: Vec<Row> = sqlx::query_as(&sql).bind(thread).bind(user).bind(from_seq).fetch_all(&self.pool).await?;
        convert(rows)
    }

    #[instrument(skip(self))]
    async fn get_message(&self, user: Uuid, message: Uuid) -> Result<Message> {
        let sql = format!("select {MESSAGE_COLUMNS} from messages where id = $1 and user_id = $2");
        let row: Option<Row> = sqlx::query_as(&sql).bind(message).bind(user).fetch_optional(&self.pool).await?;
        row.ok_or(StoreError::NotFound)?.try_into()
    }

    #[instrument(skip(self))]
    async fn message_context(&self, user: Uuid, message: Uuid) -> Result<Option<serde_json::Value>> {
        Ok(sqlx::query_scalar("select context from messages where id = $1 and user_id = $2")
            .bind(message)
            .bind(user)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)?)
    }

    #[instrument(skip(self))]
    async fn delete_message(&self, user: Uuid, thread: Uuid, message: Uuid) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        let deleted = sqlx::query("delete from messages where id = $1 and thread_id = $2 and user_id = $3")
            .bind(message)
            .bind(thread)
            .bind(user)
            .execute(&mut *tx)
            .await?;
        found(deleted.rows_affected() > 0)?;
        sqlx::query("update threads set message_count = message_count - 1 where id = $1")
            .bind(thread)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }
}
