//! postgres: see [`crate::store::Messages`].

#[allow(unused_imports)]
use super::*;

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
        owned.ok_or(StoreError::NotFound)?;
        let busy: bool = sqlx::query_scalar(
            "select exists (select 1 from turns
             where thread_id = $1 and user_id = $2 and status = 'running' and heartbeat_at >= $3)",
        )
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
        if !rewrite_message(&mut conn, user, message, update, false).await? {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    #[instrument(skip(self))]
    async fn list_messages(&self, user: Uuid, thread: Uuid) -> Result<Vec<Message>> {
        let messages = self.list_messages_from(user, thread, i64::MIN).await?;
        if messages.is_empty() && !self.owns("threads", user, thread).await? {
            return Err(StoreError::NotFound);
        }
        Ok(messages)
    }

    #[instrument(skip(self))]
    async fn list_message_heads(&self, user: Uuid, thread: Uuid) -> Result<Vec<crate::store::MessageHead>> {
        // Answered from the `messages_heads` index (an index-only scan once the table is vacuumed).
        let rows = sqlx::query("select id, seq, role from messages where thread_id = $1 and user_id = $2 order by seq")
            .bind(thread)
            .bind(user)
            .fetch_all(&self.pool)
            .await?;
        if rows.is_empty() && !self.owns("threads", user, thread).await? {
            return Err(StoreError::NotFound);
        }
        rows.iter()
            .map(|row| {
                Ok(crate::store::MessageHead {
                    id: row.try_get("id")?,
                    seq: row.try_get("seq")?,
                    role: parse_role(row.try_get::<&str, _>("role")?)?,
                })
            })
            .collect()
    }

    #[instrument(skip(self))]
    async fn list_messages_from(&self, user: Uuid, thread: Uuid, from_seq: i64) -> Result<Vec<Message>> {
        let sql = format!(
            "select {MESSAGE_COLUMNS} from messages where thread_id = $1 and user_id = $2 and seq >= $3 order by seq"
        );
        let rows = sqlx::query(&sql).bind(thread).bind(user).bind(from_seq).fetch_all(&self.pool).await?;
        rows.iter().map(message_from_row).collect()
    }

    #[instrument(skip(self))]
    async fn get_message(&self, user: Uuid, message: Uuid) -> Result<Message> {
        let sql = format!("select {MESSAGE_COLUMNS} from messages where id = $1 and user_id = $2");
        let row =
            sqlx::query(&sql).bind(message).bind(user).fetch_optional(&self.pool).await?.ok_or(StoreError::NotFound)?;
        message_from_row(&row)
    }

    #[instrument(skip(self))]
    async fn message_context(&self, user: Uuid, message: Uuid) -> Result<Option<serde_json::Value>> {
        let context: Option<serde_json::Value> =
            sqlx::query_scalar("select context from messages where id = $1 and user_id = $2")
                .bind(message)
                .bind(user)
                .fetch_optional(&self.pool)
                .await?
                .ok_or(StoreError::NotFound)?;
        Ok(context)
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
        if deleted.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        sqlx::query("update threads set message_count = message_count - 1 where id = $1")
            .bind(thread)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }
}
