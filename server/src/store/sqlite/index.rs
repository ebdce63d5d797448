//! Messages enter SQLite's search index in batches (migration 0170): saving or changing a message queues its row
//! (`messages_to_index`, by the triggers), and the queue is indexed here, in the background and before any
//! search. Indexing one message per transaction made FTS5 write a new segment, and its prefix indexes, in every
//! chat's start and end; a batch writes one. Deleting a message takes it out of the index at once.

use std::time::Duration;

use sqlx::{SqliteConnection, SqlitePool};

use super::writer::{Alive, Urgency, Writer};
use crate::store::Result;

/// How often the queue is looked at.
const EVERY: Duration = Duration::from_millis(250);
/// Messages indexed in one write, at most: a chat's start may wait for one (a few milliseconds).
const ROWS_PER_WRITE: i64 = 100;

/// Indexes what was queued up to the moment it is called: every write before a search is in the search.
pub(super) async fn index_queued(reader: &SqlitePool, writer: &Writer, urgency: Urgency) -> Result<()> {
    // Rows queued later may be numbered lower (an answer's row is made when its turn starts); they are not
    // waited for, but a write that takes them is no harm.
    let Some(upto) =
        sqlx::query_scalar::<_, Option<i64>>("select max(pk) from messages_to_index").fetch_one(reader).await?
    else {
        return Ok(());
    };
    loop {
        let taken = writer.write(urgency, move |conn| Box::pin(index_some(conn, upto))).await?;
        if taken < ROWS_PER_WRITE {
            return Ok(());
        }
    }
}

/// Indexes the first [`ROWS_PER_WRITE`] queued messages numbered at most `upto` as they stand now (a message being
/// written stays out); how many it took off the queue.
async fn index_some(conn: &mut SqliteConnection, upto: i64) -> Result<i64> {
    const BATCH: &str = "select pk from messages_to_index where pk <= ?1 order by pk limit ?2";
    sqlx::query(&format!("delete from messages_fts where rowid in ({BATCH})"))
        .bind(upto)
        .bind(ROWS_PER_WRITE)
        .execute(&mut *conn)
        .await?;
    sqlx::query(&format!(
        "insert into messages_fts (rowid, owner, body)
         select m.pk, 'u' || replace(m.user_id, '-', ''), m.content from messages m
         where m.pk in ({BATCH}) and m.writing = 0"
    ))
    .bind(upto)
    .bind(ROWS_PER_WRITE)
    .execute(&mut *conn)
    .await?;
    let taken = sqlx::query(&format!("delete from messages_to_index where pk in ({BATCH})"))
        .bind(upto)
        .bind(ROWS_PER_WRITE)
        .execute(&mut *conn)
        .await?
        .rows_affected();
    Ok(taken as i64)
}

/// Indexes the queue every [`EVERY`] while the store is open, behind every write someone waits for.
pub(super) async fn index_in_background(reader: SqlitePool, alive: Alive) {
    let mut every = tokio::time::interval(EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let Some(writer) = alive.writer() else { return };
        if let Err(e) = index_queued(&reader, &writer, Urgency::Background).await {
            tracing::warn!(error = %e, "indexing saved messages for search failed");
        }
    }
}
