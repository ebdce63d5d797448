//! Imports on SQLite, written in short transactions and still all or nothing.
//!
//! An import of tens of megabytes written in one transaction would hold the only writer for seconds, and every
//! conversation's start and end would wait behind it. So it is written in groups of a few hundred rows (see
//! [`IMPORT_BUDGET`]), each in a transaction of its own, taken in the writer's line with the progress of running
//! turns: starts and ends go first, and nothing waits for more than one group.
//!
//! Until the last group is written, every conversation of the import carries the import's id in
//! `threads.import_id`. When a group fails, what the import wrote is removed (in short transactions too); when
//! the process stops part way, it is removed the next time the store is opened. The rows are not hidden while
//! they are written: hiding them would take a condition in every listing and search, for the few seconds a
//! large import takes. The work runs in a task of its own, so a client that goes away does not cut it short
//! between two groups. The import answers once its messages are in the search index.

use std::{collections::HashMap, sync::Arc};

use sqlx::SqliteConnection;
use uuid::Uuid;
use wire::Thread;

use super::{thread_from_row, write_tags, writer::Urgency, Shared, Sqlite, THREAD_COLUMNS};
use crate::{
    history::{import_groups, Budget, ImportThread, Part, Prepared},
    Result, StoreError,
};

/// One transaction of an import: about 5 ms of writing on two busy cores, 20 ms at most (measured when the
/// messages' text was indexed for search as it went in, which was most of the cost; it is queued now, see
/// `index.rs`).
const IMPORT_BUDGET: Budget = Budget { rows: 200, bytes: 128 * 1024, rows_per_statement: 100 };

/// Rows one removal statement deletes at most.
const REMOVED_TOGETHER: usize = 200;

/// Threads read back per statement once written.
const READ_TOGETHER: usize = 500;

/// Writes the import in a task of its own (see the module's comment) and returns its conversations.
pub(super) async fn import_threads(store: &Sqlite, user: Uuid, threads: Vec<ImportThread>) -> Result<Vec<Thread>> {
    let store = store.clone();
    tokio::spawn(async move { write_import(&store, user, Arc::new(threads)).await })
        .await
        .map_err(|_| StoreError::Database(sqlx::Error::WorkerCrashed))?
}

async fn write_import(store: &Sqlite, user: Uuid, threads: Arc<Vec<ImportThread>>) -> Result<Vec<Thread>> {
    let import = Uuid::now_v7().to_string();
    let prepared = Prepared::all(&threads);
    if let Err(e) = write_groups(store, user, &import, &threads, &prepared).await {
        if let Err(cleanup) = remove(store, &import).await {
            tracing::error!(error = %cleanup, import, "removing a failed import failed; it goes at the next start");
        }
        return Err(e);
    }
    // The imported messages are indexed for search before the import answers, so that a search right after it
    // finds them at once instead of waiting for them (see `index.rs`); a failure leaves them queued for the
    // background and the import stands.
    if let Err(e) = super::index::index_all_of(store.writer.clone(), user).await {
        tracing::warn!(error = %e, "indexing imported messages for search failed; the background indexes them");
    }
    let ids: Vec<Uuid> = prepared.iter().map(|p| p.id).collect();
    read_back(store, &ids).await
}

/// The ids [`Prepared`] gives a conversation's rows, kept apart from the conversation's borrowed data so that
/// each group's write can own what it needs.
struct Ids {
    id: Uuid,
    message_ids: Vec<Uuid>,
    artifact_ids: Vec<Uuid>,
    versions: Vec<(usize, usize)>,
    requirement_ids: Vec<Uuid>,
    revisions: Vec<(usize, usize)>,
    citations: Vec<(usize, usize)>,
}

impl Ids {
    fn of(p: &Prepared<'_>) -> Self {
        Ids {
            id: p.id,
            message_ids: p.message_ids.clone(),
            artifact_ids: p.artifact_ids.clone(),
            versions: p.versions.clone(),
            requirement_ids: p.requirement_ids.clone(),
            revisions: p.revisions.clone(),
            citations: p.citations.clone(),
        }
    }

    fn prepared<'a>(&self, thread: &'a ImportThread) -> Prepared<'a> {
        Prepared {
            id: self.id,
            thread,
            message_ids: self.message_ids.clone(),
            artifact_ids: self.artifact_ids.clone(),
            versions: self.versions.clone(),
            requirement_ids: self.requirement_ids.clone(),
            revisions: self.revisions.clone(),
            citations: self.citations.clone(),
        }
    }
}

/// Writes the groups in the background line of the writer: starts and ends go first.
async fn write_groups(
    store: &Sqlite,
    user: Uuid,
    import: &str,
    threads: &Arc<Vec<ImportThread>>,
    prepared: &[Prepared<'_>],
) -> Result<()> {
    let ids: Arc<Vec<Ids>> = Arc::new(prepared.iter().map(Ids::of).collect());
    for group in import_groups(prepared, IMPORT_BUDGET) {
        let (threads, ids, import) = (threads.clone(), ids.clone(), import.to_owned());
        store
            .writer
            .write(Urgency::Background, move |tx| {
                Box::pin(async move {
                    for part in &group {
                        let t = part.thread();
                        let p = ids[t].prepared(&threads[t]);
                        write_part(tx, user, &import, &p, part).await?;
                    }
                    Ok(())
                })
            })
            .await?;
    }
    let import = import.to_owned();
    store
        .writer
        .write(Urgency::Background, move |conn| {
            Box::pin(async move {
                sqlx::query("update threads set import_id = null where import_id = ?")
                    .bind(import)
                    .execute(conn)
                    .await?;
                Ok(())
            })
        })
        .await
}

async fn write_part(
    conn: &mut SqliteConnection,
    user: Uuid,
    import: &str,
    p: &Prepared<'_>,
    part: &Part,
) -> Result<()> {
    match part {
        Part::Thread(_) => {
            let created_at = p.thread.created_at.timestamp_micros();
            sqlx::query(
                "insert into threads (id, user_id, title, pinned, archived, message_count, last_seq, created_at,
                 updated_at, import_id, active_id) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(p.id.to_string())
            .bind(user.to_string())
            .bind(&p.thread.title)
            .bind(p.thread.pinned)
            .bind(p.thread.archived)
            .bind(p.thread.messages.len() as i64)
            .bind(p.last_seq())
            .bind(created_at)
            .bind(p.updated_at().timestamp_micros())
            .bind(import)
            .bind(p.active().map(|id| id.to_string()))
            .execute(&mut *conn)
            .await?;
            write_tags(conn, user, p.id, &p.thread.tags).await?;
        }
        Part::Messages(_, range) => Shared::insert_imported_messages(conn, user, p, range.clone()).await?,
        Part::Artifacts(_, range) => Shared::insert_imported_artifacts(conn, user, p, range.clone()).await?,
        Part::Versions(_, range) => Shared::insert_imported_versions(conn, user, p, range.clone()).await?,
        Part::Requirements(_, range) => Shared::insert_imported_requirements(conn, user, p, range.clone()).await?,
        Part::Revisions(_, range) => Shared::insert_imported_revisions(conn, user, p, range.clone()).await?,
        Part::Citations(_, range) => Shared::insert_imported_citations(conn, p, range.clone()).await?,
    }
    Ok(())
}

/// Removes what an import wrote, a few hundred rows per transaction: requirements (with their revisions and
/// citations), documents, then messages (each removal also clears the links to it), then the conversations with
/// what is left of them.
async fn remove(store: &Sqlite, import: &str) -> Result<()> {
    let statements = [
        "delete from requirements where rowid in (select r.rowid from requirements r join threads t
         on t.id = r.thread_id where t.import_id = ?1 limit ?2)",
        "delete from artifacts where pk in (select a.pk from artifacts a join threads t on t.id = a.thread_id
         where t.import_id = ?1 limit ?2)",
        "delete from messages where pk in (select m.pk from messages m join threads t on t.id = m.thread_id
         where t.import_id = ?1 limit ?2)",
        "delete from threads where pk in (select pk from threads where import_id = ?1 limit ?2)",
    ];
    for sql in statements {
        loop {
            let import = import.to_owned();
            let done = store
                .writer
                .write(Urgency::Background, move |conn| {
                    Box::pin(async move {
                        Ok(sqlx::query(sql).bind(import).bind(REMOVED_TOGETHER as i64).execute(conn).await?)
                    })
                })
                .await?;
            if done.rows_affected() == 0 {
                break;
            }
        }
    }
    Ok(())
}

/// The written conversations, in the import's order (one deleted meanwhile is left out).
async fn read_back(store: &Sqlite, ids: &[Uuid]) -> Result<Vec<Thread>> {
    let mut found = HashMap::with_capacity(ids.len());
    let sql = format!("select {THREAD_COLUMNS} from threads t where t.id in (select value from json_each(?))");
    for chunk in ids.chunks(READ_TOGETHER) {
        let list = serde_json::to_string(&chunk.iter().map(Uuid::to_string).collect::<Vec<_>>())
            .map_err(|e| StoreError::Corrupt(e.to_string()))?;
        for row in sqlx::query(&sql).bind(list).fetch_all(&store.reader).await? {
            let thread = thread_from_row(&row)?;
            found.insert(thread.id, thread);
        }
    }
    Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
}
