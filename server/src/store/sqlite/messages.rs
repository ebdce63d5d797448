//! The messages of a conversation on SQLite.

use app::api::Message;
use async_trait::async_trait;
use sqlx::SqliteConnection;
use tracing::instrument;
use uuid::Uuid;

use super::{turn_writes, Shared, Sqlite};
use crate::store::columns::convert;
use crate::store::messages::{MessageHeadRow, MessageRow, HEAD_COLUMNS, MESSAGE_COLUMNS};
use crate::store::threads::{found, listing};
use crate::store::{now, MessageUpdate, Messages, NewMessage, Result, StoreError, ThreadStamp, Tree};

/// Rewrites an answer's text, status, usage, whether it is still being written, and model and context when
/// given; whether it exists.
pub(super) async fn rewrite_message(
    conn: &mut SqliteConnection,
    user: Uuid,
    message: Uuid,
    update: &MessageUpdate,
    writing: bool,
) -> Result<bool> {
    let context = update.context.as_ref().map(|c| c.to_string());
    let updated = sqlx::query(
        "update messages set content = ?, status = ?, input_tokens = ?, output_tokens = ?, writing = ?,
         model = coalesce(?, model), context = coalesce(?, context) where id = ? and user_id = ?",
    )
    .bind(&update.content)
    .bind(update.status.as_str())
    .bind(update.usage.input_tokens as i64)
    .bind(update.usage.output_tokens as i64)
    .bind(writing)
    .bind(&update.model)
    .bind(context)
    .bind(message.to_string())
    .bind(user.to_string())
    .execute(&mut *conn)
    .await?;
    Ok(updated.rows_affected() > 0)
}

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
            Box::pin(async move { found(rewrite_message(conn, user, message, &update, false).await?) })
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
        let mut conn = self.reader.acquire().await?;
        read_tree(&mut conn, user, thread).await?.ok_or(StoreError::NotFound)
    }

    #[instrument(skip(self))]
    async fn thread_stamp(&self, user: Uuid, thread: Uuid) -> Result<ThreadStamp> {
        let mut conn = self.reader.acquire().await?;
        Shared::stamp(&mut conn, user, thread).await?.ok_or(StoreError::NotFound)
    }

    #[instrument(skip(self, ids), fields(ids = ids.len()))]
    async fn messages_by_id(&self, user: Uuid, thread: Uuid, ids: &[Uuid]) -> Result<Vec<Message>> {
        let sql = format!(
            "select {MESSAGE_COLUMNS} from messages
             where thread_id = ? and user_id = ? and id in (select value from json_each(?)) order by seq"
        );
        let ids = serde_json::to_string(&ids).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let rows: Vec<MessageRow<String, i64>> = sqlx::query_as(&sql)
            .bind(thread.to_string())
            .bind(user.to_string())
            .bind(ids)
            .fetch_all(&self.reader)
            .await?;
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
        // The one writer serialises this with every turn's start.
        self.write(move |tx| {
            Box::pin(async move {
                if let Some(stale_after_ms) = stale_after_ms {
                    Shared::refuse_while_running(&mut *tx, user, thread, stale_after_ms).await?;
                }
                let updated = sqlx::query(
                    "update threads set active_id = ?1 where id = ?2 and user_id = ?3
                     and (?1 is null or exists (select 1 from messages where id = ?1 and thread_id = ?2))",
                )
                .bind(leaf.map(|id| id.to_string()))
                .bind(thread.to_string())
                .bind(user.to_string())
                .execute(&mut *tx)
                .await?;
                found(updated.rows_affected() > 0)
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
        let context: Option<String> = sqlx::query_scalar("select context from messages where id = ? and user_id = ?")
            .bind(message.to_string())
            .bind(user.to_string())
            .fetch_optional(&self.reader)
            .await?
            .ok_or(StoreError::NotFound)?;
        context.map(|c| serde_json::from_str(&c).map_err(|e| StoreError::Corrupt(format!("context: {e}")))).transpose()
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
                let (tree, _) = read_tree(tx, user, thread).await?.ok_or(StoreError::NotFound)?;
                let (gone, active) = tree.after_deleting(message).ok_or(StoreError::NotFound)?;
                if let Some(stale_after_ms) = stale_after_ms {
                    Shared::refuse_while_running(&mut *tx, user, thread, stale_after_ms).await?;
                }
                let gone = serde_json::to_string(&gone).map_err(|e| StoreError::Corrupt(e.to_string()))?;
                let deleted = sqlx::query(
                    "delete from messages where thread_id = ? and user_id = ? and id in (select value from json_each(?))",
                )
                .bind(thread.to_string())
                .bind(user.to_string())
                .bind(gone)
                .execute(&mut *tx)
                .await?
                .rows_affected();
                sqlx::query("update threads set message_count = message_count - ?, active_id = ? where id = ?")
                    .bind(deleted as i64)
                    .bind(active.map(|id| id.to_string()))
                    .bind(thread.to_string())
                    .execute(&mut *tx)
                    .await?;
                Ok(deleted)
            })
        })
        .await
    }
}

/// The shape of `user`'s `thread` and its stamp, read with its active message; `None` when it is missing or
/// another user's.
async fn read_tree(conn: &mut SqliteConnection, user: Uuid, thread: Uuid) -> Result<Option<(Tree, ThreadStamp)>> {
    let Some(stamp) = Shared::stamp(&mut *conn, user, thread).await? else { return Ok(None) };
    // Answered from the `messages_heads` index alone: the rows (and their texts) are not read.
    let sql = format!(
        "select {HEAD_COLUMNS} from messages indexed by messages_heads where thread_id = ? and user_id = ? order by seq"
    );
    let rows: Vec<MessageHeadRow<String>> =
        sqlx::query_as(&sql).bind(thread.to_string()).bind(user.to_string()).fetch_all(&mut *conn).await?;
    Ok(Some((Tree { heads: convert(rows)?, active: stamp.active }, stamp)))
}
