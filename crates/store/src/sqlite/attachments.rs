//! Files attached to a conversation, and their chunks, on SQLite.

use sqlx::SqliteConnection;
use uuid::Uuid;

use super::{Shared, Sqlite};
use crate::attachments::ChunkHitRow;
use crate::columns::convert;
use crate::{ChunkHit, NewAttachment, Result, StoreError};

/// Saves a new file's chunks. Every chunk in one statement (one hand-off to the connection's thread instead of
/// one per chunk, which held the writer for a second on a large file).
async fn insert_chunks(tx: &mut SqliteConnection, id: Uuid, attachment: &NewAttachment) -> Result<()> {
    let chunks = serde_json::to_string(&attachment.chunks).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    sqlx::query(
        "insert into attachment_chunks (attachment_id, thread_id, seq, content)
         select ?, ?, key, value from json_each(?)",
    )
    .bind(id.to_string())
    .bind(attachment.thread_id.to_string())
    .bind(chunks)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

impl Sqlite {
    /// The chunks of `user`'s `thread` that match any of `words`, best first, at most `limit`.
    async fn chunk_hits(&self, user: Uuid, thread: Uuid, words: &[String], limit: i64) -> Result<Vec<ChunkHit>> {
        let any: Vec<String> = words.iter().map(|w| format!("\"{}\"", w.replace('"', "\"\""))).collect();
        // The conversations whose files are searched (this one, and its project's), those with files only.
        let sql = format!(
            "select distinct thread_id from attachments where thread_id in ({})",
            crate::projects::file_threads("?1", "?2")
        );
        let threads: Vec<(String,)> =
            sqlx::query_as(&sql).bind(thread.to_string()).bind(user.to_string()).fetch_all(&self.reader).await?;
        if threads.is_empty() {
            return Ok(Vec::new());
        }
        // The thread tokens are part of the MATCH (see the schema), so only those threads' chunks are read. (The
        // ids were read from the database: a token is `t` and hex digits.)
        let tokens: Vec<String> = threads
            .iter()
            .filter_map(|(id,)| Uuid::parse_str(id).ok())
            .map(|id| format!("\"t{}\"", id.simple()))
            .collect();
        let expression = format!("owner : ({}) AND body : ({})", tokens.join(" OR "), any.join(" OR "));
        let rows: Vec<ChunkHitRow<String>> = sqlx::query_as(
            "select c.attachment_id, a.filename, a.thread_id, t.title as thread_title, c.seq, c.content,
               -bm25(chunks_fts, 0.0, 1.0) as score
             from chunks_fts join attachment_chunks c on c.id = chunks_fts.rowid
             join attachments a on a.id = c.attachment_id join threads t on t.id = a.thread_id
             where chunks_fts match ?
             order by score desc, c.attachment_id, c.seq limit ?",
        )
        .bind(&expression)
        .bind(limit)
        .fetch_all(&self.reader)
        .await?;
        convert(rows)
    }
}

crate::attachments::attachments_for!(Sqlite);
