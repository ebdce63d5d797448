//! Files attached to a conversation, and their chunks, on PostgreSQL.

use sqlx::PgConnection;
use uuid::Uuid;

use super::{Postgres, Shared};
use crate::attachments::ChunkHitRow;
use crate::columns::convert;
use crate::{ChunkHit, NewAttachment, Result};

/// Saves a new file's chunks, all in one statement.
async fn insert_chunks(tx: &mut PgConnection, id: Uuid, attachment: &NewAttachment) -> Result<()> {
    if attachment.chunks.is_empty() {
        return Ok(());
    }
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
    Ok(())
}

impl Postgres {
    /// The chunks of `user`'s `thread` that match any of `words`, best first, at most `limit`.
    async fn chunk_hits(&self, user: Uuid, thread: Uuid, words: &[String], limit: i64) -> Result<Vec<ChunkHit>> {
        let any: Vec<String> = words.iter().map(|w| format!("'{}'", w.replace('\'', "''").replace('\\', ""))).collect();
        let sql = format!(
            "with q as (select to_tsquery('simple', $1) as q)
             select c.attachment_id, a.filename, a.thread_id, t.title as thread_title, c.seq, c.content,
               ts_rank(c.search, q.q)::float8 as score
             from attachment_chunks c join attachments a on a.id = c.attachment_id
             join threads t on t.id = a.thread_id, q
             where c.thread_id in ({}) and c.search @@ q.q
             order by score desc, c.attachment_id, c.seq limit $4",
            crate::projects::file_threads("$2", "$3")
        );
        let rows: Vec<ChunkHitRow<Uuid>> = sqlx::query_as(&sql)
            .bind(any.join(" | "))
            .bind(thread)
            .bind(user)
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
        convert(rows)
    }
}

crate::attachments::attachments_for!(Postgres);
