//! Messages enter SQLite's search index in batches (migration 0170): saving or changing a message queues its row
//! (`messages_to_index`, by the triggers), and the queue is indexed here, in the background and before a search
//! of the person's. Indexing one message per transaction made FTS5 write a new segment, and its prefix indexes,
//! in every chat's start and end; a batch writes one. Deleting a message takes it out of the index at once.

use std::time::Duration;

use sqlx::{SqliteConnection, SqlitePool};
use uuid::Uuid;

use super::writer::{Alive, Urgency, Writer};
use crate::{Result, StoreError};

/// How often the queue is looked at.
const EVERY: Duration = Duration::from_millis(250);
/// Messages indexed in one write, at most, and their text at most (always one message, however long): a chat's
/// start may wait for one write, about 10 ms at this size (the text's size, not the count, is what costs).
const ROWS_PER_WRITE: i64 = 100;
const BYTES_PER_WRITE: i64 = 32 * 1024;

/// Indexes what was queued up to the moment it is called, of one person's messages or of everyone's, one write
/// at a time while `writer` gives the store's writer (the background lets go of it between writes, so a closed
/// store stops at once). Every message saved before a search is in that search.
pub(super) async fn index_queued(
    reader: &SqlitePool,
    writer: impl Fn() -> Option<Writer>,
    urgency: Urgency,
    owner: Option<Uuid>,
) -> Result<()> {
    let owner = owner.map(|u| u.to_string());
    // Rows queued later may be numbered lower (an answer's row is made when its turn starts); they are not
    // waited for, but a write that takes them is no harm.
    let last = match &owner {
        // A seek in the queue's key.
        None => sqlx::query_scalar("select max(pk) from messages_to_index"),
        Some(owner) => sqlx::query_scalar(
            "select max(q.pk) from messages_to_index q join messages m on m.pk = q.pk where m.user_id = ?",
        )
        .bind(owner.as_str()),
    };
    let Some(upto): Option<i64> = last.fetch_one(reader).await? else {
        return Ok(());
    };
    index_upto(writer, urgency, owner, upto).await
}

/// Indexes `owner`'s queued messages, all of them, one write at a time: for a write that queued many at once
/// (an import), asked through the writer itself, which sees every row committed.
pub(super) async fn index_all_of(writer: Writer, owner: Uuid) -> Result<()> {
    index_upto(|| Some(writer.clone()), Urgency::Background, Some(owner.to_string()), i64::MAX).await
}

async fn index_upto(
    writer: impl Fn() -> Option<Writer>,
    urgency: Urgency,
    owner: Option<String>,
    upto: i64,
) -> Result<()> {
    loop {
        let Some(writer) = writer() else { return Ok(()) };
        let owner = owner.clone();
        let more = writer.write(urgency, move |conn| Box::pin(index_some(conn, upto, owner))).await?;
        if !more {
            return Ok(());
        }
    }
}

/// Indexes the first queued messages numbered at most `upto` (of `owner`'s, if given), as they stand now (a
/// message being written stays out), within [`ROWS_PER_WRITE`] and [`BYTES_PER_WRITE`]; whether more may be left.
pub(super) async fn index_some(conn: &mut SqliteConnection, upto: i64, owner: Option<String>) -> Result<bool> {
    // A row queued with no message (none should be: deleting one takes it off) is taken off with the others.
    let queued: Vec<(i64, i64)> = sqlx::query_as(
        "select q.pk, coalesce(length(cast(m.content as blob)), 0) from messages_to_index q
         left join messages m on m.pk = q.pk
         where q.pk <= ?1 and (?2 is null or m.user_id = ?2) order by q.pk limit ?3",
    )
    .bind(upto)
    .bind(owner)
    .bind(ROWS_PER_WRITE)
    .fetch_all(&mut *conn)
    .await?;
    let mut bytes = 0;
    let taken: Vec<i64> = queued
        .iter()
        .take_while(|(_, size)| {
            let first = bytes == 0;
            bytes += size.max(&1);
            first || bytes <= BYTES_PER_WRITE
        })
        .map(|(pk, _)| *pk)
        .collect();
    if taken.is_empty() {
        return Ok(false);
    }
    let pks = serde_json::to_string(&taken).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    const TAKEN: &str = "select value from json_each(?1)";
    sqlx::query(&format!("delete from messages_fts where rowid in ({TAKEN})")).bind(&pks).execute(&mut *conn).await?;
    sqlx::query(&format!(
        "insert into messages_fts (rowid, owner, body)
         select m.pk, 'u' || replace(m.user_id, '-', ''), m.content from messages m
         where m.pk in ({TAKEN}) and m.writing = 0"
    ))
    .bind(&pks)
    .execute(&mut *conn)
    .await?;
    sqlx::query(&format!("delete from messages_to_index where pk in ({TAKEN})")).bind(&pks).execute(&mut *conn).await?;
    Ok(taken.len() < queued.len() || queued.len() as i64 == ROWS_PER_WRITE)
}

/// Indexes the queue every [`EVERY`] while the store is open, behind every write someone waits for.
pub(super) async fn index_in_background(reader: SqlitePool, alive: Alive) {
    let mut every = tokio::time::interval(EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        if !alive.is_open() {
            return;
        }
        if let Err(e) = index_queued(&reader, || alive.writer(), Urgency::Background, None).await {
            tracing::warn!(error = %e, "indexing saved messages for search failed");
        }
    }
}
