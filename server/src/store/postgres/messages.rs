//! The messages of a conversation on PostgreSQL.

use app::api::Message;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tracing::instrument;
use uuid::Uuid;

use super::{insert_message, rewrite_message, Postgres, Shared};
use crate::store::columns::convert;
use crate::store::messages::{MessageHeadRow, MessageRow, StampRow, HEAD_COLUMNS, MESSAGE_COLUMNS, STAMP_COLUMNS};
use crate::store::threads::{found, listing};
use crate::store::{now, MessageUpdate, Messages, NewMessage, Result, StoreError, ThreadStamp, Tree};

type Row = MessageRow<Uuid, DateTime<Utc>>;

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
        found(rewrite_message(&mut conn, user, message, update, false).await?)
    }

    #[instrument(skip(self))]
    async fn list_messages(&self, user: Uuid, thread: Uuid) -> Result<Vec<Message>> {
        let messages = self.list_messages_from(user, thread, i64::MIN).await?;
        listing(messages, self.owns("threads", user, thread)).await
    }

    #[instrument(skip(self))]
    async fn message_tree_stamped(&self, user: Uuid, thread: Uuid) -> Result<(Tree, ThreadStamp)> {
        let mut conn = self.pool.acquire().await?;
        read_tree(&mut conn, user, thread, false).await?.ok_or(StoreError::NotFound)
    }

    #[instrument(skip(self))]
    async fn thread_stamp(&self, user: Uuid, thread: Uuid) -> Result<ThreadStamp> {
        Shared::stamp(&mut *self.pool.acquire().await?, user, thread).await?.ok_or(StoreError::NotFound)
    }

    #[instrument(skip(self, ids), fields(ids = ids.len()))]
    async fn messages_by_id(&self, user: Uuid, thread: Uuid, ids: &[Uuid]) -> Result<Vec<Message>> {
        let sql = format!(
            "select {MESSAGE_COLUMNS} from messages where thread_id = $1 and user_id = $2 and id = any($3) order by seq"
        );
        let rows: Vec<Row> = sqlx::query_as(&sql).bind(thread).bind(user).bind(ids).fetch_all(&self.pool).await?;
        convert(rows)
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
        let updated = sqlx::query(
            "update threads set active_id = $1 where id = $2 and user_id = $3
             and ($1::uuid is null or exists (select 1 from messages where id = $1 and thread_id = $2))",
        )
        .bind(leaf)
        .bind(thread)
        .bind(user)
        .execute(&mut *tx)
        .await?;
        found(updated.rows_affected() > 0)?;
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
        Ok(sqlx::query_scalar("select context from messages where id = $1 and user_id = $2")
            .bind(message)
            .bind(user)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)?)
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
        let (tree, _) = read_tree(&mut tx, user, thread, true).await?.ok_or(StoreError::NotFound)?;
        let (gone, active) = tree.after_deleting(message).ok_or(StoreError::NotFound)?;
        if let Some(stale_after_ms) = stale_after_ms {
            Shared::refuse_while_running(&mut tx, user, thread, stale_after_ms).await?;
        }
        let deleted = sqlx::query("delete from messages where thread_id = $1 and user_id = $2 and id = any($3)")
            .bind(thread)
            .bind(user)
            .bind(&gone)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        sqlx::query("update threads set message_count = message_count - $1, active_id = $2 where id = $3")
            .bind(deleted as i64)
            .bind(active)
            .bind(thread)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(deleted)
    }
}

/// The shape of `user`'s `thread`, its row locked when `lock`; `None` when it is missing or another user's.
async fn read_tree(
    conn: &mut sqlx::PgConnection,
    user: Uuid,
    thread: Uuid,
    lock: bool,
) -> Result<Option<(Tree, ThreadStamp)>> {
    let sql = format!(
        "select {STAMP_COLUMNS} from threads where id = $1 and user_id = $2{}",
        if lock { " for update" } else { "" }
    );
    let row: Option<StampRow<Uuid>> = sqlx::query_as(&sql).bind(thread).bind(user).fetch_optional(&mut *conn).await?;
    let Some(stamp) = row.map(ThreadStamp::try_from).transpose()? else { return Ok(None) };
    // Answered from the `messages_heads` index (an index-only scan once the table is vacuumed).
    let sql = format!("select {HEAD_COLUMNS} from messages where thread_id = $1 and user_id = $2 order by seq");
    let rows: Vec<MessageHeadRow<Uuid>> = sqlx::query_as(&sql).bind(thread).bind(user).fetch_all(&mut *conn).await?;
    Ok(Some((Tree { heads: convert(rows)?, active: stamp.active }, stamp)))
}
