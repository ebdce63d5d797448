//! sqlite: see [`crate::store::Attachments`].

#[allow(unused_imports)]
use super::*;

#[async_trait]
impl Attachments for Sqlite {
    #[instrument(skip(self, attachment), fields(thread = %attachment.thread_id, chunks = attachment.chunks.len()))]
    async fn create_attachment(
        &self,
        user: Uuid,
        attachment: NewAttachment,
        limits: AttachmentLimits,
    ) -> Result<Attachment> {
        let id = Uuid::now_v7();
        let created = now();
        self.write(move |tx| {
            Box::pin(async move {
                if !owned_in(tx, "threads", user, attachment.thread_id).await? {
                    return Err(StoreError::NotFound);
                }
                let (count, used): (i64, i64) = sqlx::query_as(
                    "select (select count(*) from attachments where thread_id = ?),
                    (select coalesce(sum(size), 0) from attachments where user_id = ?)",
                )
                .bind(attachment.thread_id.to_string())
                .bind(user.to_string())
                .fetch_one(&mut *tx)
                .await?;
                check_attachment_limits(limits, count, used, attachment.size)?;
                sqlx::query(
                    "insert into attachments (id, thread_id, user_id, filename, content_type, size, created_at)
             values (?, ?, ?, ?, ?, ?, ?)",
                )
                .bind(id.to_string())
                .bind(attachment.thread_id.to_string())
                .bind(user.to_string())
                .bind(&attachment.filename)
                .bind(&attachment.content_type)
                .bind(attachment.size)
                .bind(created.timestamp_micros())
                .execute(&mut *tx)
                .await?;
                // Every chunk in one statement (one hand-off to the connection's thread instead of one per chunk, which
                // held the writer for a second on a large file).
                let chunks =
                    serde_json::to_string(&attachment.chunks).map_err(|e| StoreError::Corrupt(e.to_string()))?;
                sqlx::query(
                    "insert into attachment_chunks (attachment_id, thread_id, seq, content)
             select ?, ?, key, value from json_each(?)",
                )
                .bind(id.to_string())
                .bind(attachment.thread_id.to_string())
                .bind(chunks)
                .execute(&mut *tx)
                .await?;
                Ok(Attachment {
                    id,
                    thread_id: attachment.thread_id,
                    filename: attachment.filename,
                    content_type: attachment.content_type,
                    size: attachment.size,
                    chunks: attachment.chunks.len() as i64,
                    created_at: created,
                })
            })
        })
        .await
    }

    #[instrument(skip(self))]
    async fn list_attachments(&self, user: Uuid, thread: Uuid) -> Result<Vec<Attachment>> {
        let rows = sqlx::query(
            "select a.id, a.thread_id, a.filename, a.content_type, a.size, a.created_at,
                    (select count(*) from attachment_chunks c where c.attachment_id = a.id) as chunks
             from attachments a where a.thread_id = ? and a.user_id = ? order by a.created_at, a.id",
        )
        .bind(thread.to_string())
        .bind(user.to_string())
        .fetch_all(&self.reader)
        .await?;
        if rows.is_empty() && !self.owns("threads", user, thread).await? {
            return Err(StoreError::NotFound);
        }
        rows.iter()
            .map(|row| {
                Ok(Attachment {
                    id: uuid(row, "id")?,
                    thread_id: uuid(row, "thread_id")?,
                    filename: row.try_get("filename")?,
                    content_type: row.try_get("content_type")?,
                    size: row.try_get("size")?,
                    chunks: row.try_get("chunks")?,
                    created_at: time(row, "created_at")?,
                })
            })
            .collect()
    }

    #[instrument(skip(self))]
    async fn delete_attachment(&self, user: Uuid, thread: Uuid, attachment: Uuid) -> Result<()> {
        // The chunks (and their index rows, through the trigger) go with it by the foreign key's cascade.
        let deleted = self
            .writer
            .write(Urgency::Waited, move |conn| {
                Box::pin(async move {
                    Ok(sqlx::query("delete from attachments where id = ? and thread_id = ? and user_id = ?")
                        .bind(attachment.to_string())
                        .bind(thread.to_string())
                        .bind(user.to_string())
                        .execute(conn)
                        .await?)
                })
            })
            .await?;
        if deleted.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    #[instrument(skip(self, query))]
    async fn search_chunks(&self, user: Uuid, thread: Uuid, query: &str, limit: u32) -> Result<Vec<ChunkHit>> {
        if !self.owns("threads", user, thread).await? {
            return Err(StoreError::NotFound);
        }
        let words = chunk_query_words(query);
        if words.is_empty() {
            return Ok(Vec::new());
        }
        let any: Vec<String> = words.iter().map(|w| format!("\"{}\"", w.replace('"', "\"\""))).collect();
        // The thread token is part of the MATCH (see the schema), so only this thread's chunks are read.
        let expression = format!("owner : \"t{}\" AND body : ({})", thread.simple(), any.join(" OR "));
        let rows = sqlx::query(
            "select c.attachment_id, a.filename, c.seq, c.content, -bm25(chunks_fts, 0.0, 1.0) as score
             from chunks_fts join attachment_chunks c on c.id = chunks_fts.rowid
             join attachments a on a.id = c.attachment_id
             where chunks_fts match ? and a.user_id = ?
             order by score desc, c.attachment_id, c.seq limit ?",
        )
        .bind(&expression)
        .bind(user.to_string())
        .bind(limit.clamp(1, 20) as i64)
        .fetch_all(&self.reader)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(ChunkHit {
                    attachment_id: uuid(row, "attachment_id")?,
                    filename: row.try_get("filename")?,
                    seq: row.try_get("seq")?,
                    content: row.try_get("content")?,
                    score: row.try_get("score")?,
                })
            })
            .collect()
    }
}
