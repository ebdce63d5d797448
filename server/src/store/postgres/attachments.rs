//! postgres: see [`crate::store::Attachments`].

#[allow(unused_imports)]
use super::*;

#[async_trait]
impl Attachments for Postgres {
    #[instrument(skip(self, attachment), fields(thread = %attachment.thread_id, chunks = attachment.chunks.len()))]
    async fn create_attachment(
        &self,
        user: Uuid,
        attachment: NewAttachment,
        limits: AttachmentLimits,
    ) -> Result<Attachment> {
        let id = Uuid::now_v7();
        let created = now();
        let mut tx = self.pool.begin().await?;
        // The thread row's lock makes the count and the insert one step for concurrent uploads.
        let owned: Option<Uuid> =
            sqlx::query_scalar("select id from threads where id = $1 and user_id = $2 for update")
                .bind(attachment.thread_id)
                .bind(user)
                .fetch_optional(&mut *tx)
                .await?;
        owned.ok_or(StoreError::NotFound)?;
        // The account's row lock makes the allowance check and the insert one step for uploads to several of
        // its conversations at once.
        sqlx::query("select 1 from users where id = $1 for update").bind(user).execute(&mut *tx).await?;
        let (count, used): (i64, i64) = sqlx::query_as(
            "select (select count(*) from attachments where thread_id = $1),
                    (select coalesce(sum(size), 0)::bigint from attachments where user_id = $2)",
        )
        .bind(attachment.thread_id)
        .bind(user)
        .fetch_one(&mut *tx)
        .await?;
        check_attachment_limits(limits, count, used, attachment.size)?;
        sqlx::query(
            "insert into attachments (id, thread_id, user_id, filename, content_type, size, created_at)
             values ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(id)
        .bind(attachment.thread_id)
        .bind(user)
        .bind(&attachment.filename)
        .bind(&attachment.content_type)
        .bind(attachment.size)
        .bind(created)
        .execute(&mut *tx)
        .await?;
        if !attachment.chunks.is_empty() {
            let seqs: Vec<i64> = (0..attachment.chunks.len() as i64).collect();
            sqlx::query(
                "insert into attachment_chunks (attachment_id, thread_id, seq, content)
                 select $1, $2, s, c from unnest($3::bigint[], $4::text[]) as t (s, c)",
            )
            .bind(id)
            .bind(attachment.thread_id)
            .bind(&seqs)
            .bind(&attachment.chunks)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(Attachment {
            id,
            thread_id: attachment.thread_id,
            filename: attachment.filename,
            content_type: attachment.content_type,
            size: attachment.size,
            chunks: attachment.chunks.len() as i64,
            created_at: created,
        })
    }

    #[instrument(skip(self))]
    async fn list_attachments(&self, user: Uuid, thread: Uuid) -> Result<Vec<Attachment>> {
        let rows = sqlx::query(
            "select a.id, a.thread_id, a.filename, a.content_type, a.size, a.created_at,
                    (select count(*) from attachment_chunks c where c.attachment_id = a.id) as chunks
             from attachments a where a.thread_id = $1 and a.user_id = $2 order by a.created_at, a.id",
        )
        .bind(thread)
        .bind(user)
        .fetch_all(&self.pool)
        .await?;
        if rows.is_empty() && !self.owns("threads", user, thread).await? {
            return Err(StoreError::NotFound);
        }
        rows.iter()
            .map(|row| {
                Ok(Attachment {
                    id: row.try_get("id")?,
                    thread_id: row.try_get("thread_id")?,
                    filename: row.try_get("filename")?,
                    content_type: row.try_get("content_type")?,
                    size: row.try_get("size")?,
                    chunks: row.try_get("chunks")?,
                    created_at: row.try_get("created_at")?,
                })
            })
            .collect()
    }

    #[instrument(skip(self))]
    async fn delete_attachment(&self, user: Uuid, thread: Uuid, attachment: Uuid) -> Result<()> {
        let deleted = sqlx::query("delete from attachments where id = $1 and thread_id = $2 and user_id = $3")
            .bind(attachment)
            .bind(thread)
            .bind(user)
            .execute(&self.pool)
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
        let any: Vec<String> = words.iter().map(|w| format!("'{}'", w.replace('\'', "''").replace('\\', ""))).collect();
        let rows = sqlx::query(
            "with q as (select to_tsquery('simple', $1) as q)
             select c.attachment_id, a.filename, c.seq, c.content, ts_rank(c.search, q.q)::float8 as score
             from attachment_chunks c join attachments a on a.id = c.attachment_id, q
             where c.thread_id = $2 and a.user_id = $3 and c.search @@ q.q
             order by score desc, c.attachment_id, c.seq limit $4",
        )
        .bind(any.join(" | "))
        .bind(thread)
        .bind(user)
        .bind(limit.clamp(1, 20) as i64)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(ChunkHit {
                    attachment_id: row.try_get("attachment_id")?,
                    filename: row.try_get("filename")?,
                    seq: row.try_get("seq")?,
                    content: row.try_get("content")?,
                    score: row.try_get("score")?,
                })
            })
            .collect()
    }
}
