//! Files attached to a conversation, and their chunks, on PostgreSQL.

use app::api::Attachment;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tracing::instrument;
use uuid::Uuid;

use super::Postgres;
use crate::store::attachments::{
    check_attachment_limits, chunk_query_words, AttachmentRow, ChunkHitRow, ATTACHMENTS, INSERT_ATTACHMENT,
};
use crate::store::columns::convert;
use crate::store::threads::{found, listing};
use crate::store::{now, AttachmentLimits, Attachments, ChunkHit, NewAttachment, Result};

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
        found(owned.is_some())?;
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
        sqlx::query(INSERT_ATTACHMENT)
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
        Ok(attachment.saved(id, created))
    }

    #[instrument(skip(self))]
    async fn list_attachments(&self, user: Uuid, thread: Uuid) -> Result<Vec<Attachment>> {
        let sql = format!("{ATTACHMENTS} where a.thread_id = $1 and a.user_id = $2 order by a.created_at, a.id");
        let rows: Vec<AttachmentRow<Uuid, DateTime<Utc>>> =
            sqlx::query_as(&sql).bind(thread).bind(user).fetch_all(&self.pool).await?;
        convert(listing(rows, self.owns("threads", user, thread)).await?)
    }

    #[instrument(skip(self))]
    async fn delete_attachment(&self, user: Uuid, thread: Uuid, attachment: Uuid) -> Result<()> {
        let sql = "delete from attachments where id = $1 and thread_id = $2 and user_id = $3";
        self.delete(sql, &[attachment, thread, user]).await
    }

    #[instrument(skip(self, query))]
    async fn search_chunks(&self, user: Uuid, thread: Uuid, query: &str, limit: u32) -> Result<Vec<ChunkHit>> {
        found(self.owns("threads", user, thread).await?)?;
        let words = chunk_query_words(query);
        if words.is_empty() {
            return Ok(Vec::new());
        }
        let any: Vec<String> = words.iter().map(|w| format!("'{}'", w.replace('\'', "''").replace('\\', ""))).collect();
        let rows: Vec<ChunkHitRow<Uuid>> = sqlx::query_as(
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
        convert(rows)
    }
}
