//! Documents enter PostgreSQL's search index after their saves, not in them: computing a document's vector takes
//! longer than the rest of its save (about 12 ms for 100,000 characters). A save hands over its document once
//! committed and one task per process computes the vectors of all handed over; a sweep at start and every
//! [`SWEEP_EVERY`] catches any a crash or a failure left behind. Until then search computes a waiting document's
//! vector itself (see `search`), so nothing saved is ever missing from a search.

use std::{
    collections::HashSet,
    panic::AssertUnwindSafe,
    sync::{Arc, Mutex, Weak},
    time::Duration,
};

use futures::FutureExt;
use sqlx::PgPool;
use tokio::{sync::Notify, time::Instant};
use uuid::Uuid;

use crate::Result;

/// How often documents left without their vector are looked for.
const SWEEP_EVERY: Duration = Duration::from_secs(300);
/// After a failed batch, how long before it is tried again.
const RETRY_AFTER: Duration = Duration::from_secs(1);
/// Documents per statement of a sweep: it holds their rows until it commits, and a save of one waits meanwhile.
const PER_STATEMENT: usize = 16;

/// A document's vector as search reads it, from the columns of the row `a`.
pub(super) const VECTOR: &str = "to_tsvector('simple', left(a.title || E'\\n' || a.content, 250000))";

/// Computes the vectors of documents whose saves handed them over, and of any left behind.
pub(super) struct DocumentIndexer {
    pool: PgPool,
    pending: Mutex<HashSet<Uuid>>,
    wake: Notify,
}

impl std::fmt::Debug for DocumentIndexer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DocumentIndexer").finish_non_exhaustive()
    }
}

impl DocumentIndexer {
    /// Starts the indexing task on the current runtime (it sweeps first); it ends with the store.
    pub(super) fn start(pool: PgPool) -> Arc<Self> {
        let indexer = Arc::new(Self { pool, pending: Mutex::new(HashSet::new()), wake: Notify::new() });
        tokio::spawn(Self::run(Arc::downgrade(&indexer)));
        indexer
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashSet<Uuid>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands over documents whose saves committed; they are indexed soon. Never waits.
    pub(super) fn saved(&self, documents: impl IntoIterator<Item = Uuid>) {
        self.pending().extend(documents);
        self.wake.notify_one();
    }

    async fn run(indexer: Weak<Self>) {
        let mut swept: Option<Instant> = None;
        loop {
            let Some(this) = indexer.upgrade() else { return };
            if swept.is_none_or(|at| at.elapsed() >= SWEEP_EVERY) {
                swept = this.sweep().await.then(Instant::now);
            }
            // Documents handed over are indexed after a sweep too: it skips the rows others hold.
            let indexed = swept.is_some() && this.index_pending().await;
            if !indexed {
                // Then a sweep, which finds what failed.
                swept = None;
                drop(this);
                tokio::time::sleep(RETRY_AFTER).await;
                continue;
            }
            // Woken at least every second, to notice the store is gone.
            let _ = tokio::time::timeout(Duration::from_secs(1), this.wake.notified()).await;
        }
    }

    /// Indexes what was handed over; whether all of it went in (what did not is handed over again).
    async fn index_pending(&self) -> bool {
        let documents: Vec<Uuid> = self.pending().drain().collect();
        let mut documents = documents.into_iter();
        while let Some(document) = documents.next() {
            if !self.attempt(index_document(&self.pool, document)).await {
                self.pending().extend(std::iter::once(document).chain(documents));
                return false;
            }
        }
        true
    }

    /// Indexes every document left without its current vector, a batch at a time; whether all went in.
    async fn sweep(&self) -> bool {
        loop {
            match AssertUnwindSafe(index_left_behind(&self.pool)).catch_unwind().await {
                Ok(Ok(0)) => return true,
                Ok(Ok(_)) => continue,
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "indexing documents left without their search vector failed");
                    return false;
                }
                Err(_) => {
                    tracing::error!("indexing documents left without their search vector panicked");
                    return false;
                }
            }
        }
    }

    async fn attempt(&self, indexing: impl std::future::Future<Output = Result<u64>>) -> bool {
        // A panic must not end the task: later saves would never be indexed but by a restart's sweep.
        match AssertUnwindSafe(indexing).catch_unwind().await {
            Ok(Ok(_)) => true,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "indexing saved documents failed");
                false
            }
            Err(_) => {
                tracing::error!("indexing saved documents panicked");
                false
            }
        }
    }
}

/// Writes the current vector of `document` if it lacks it, once no other statement holds its row: one at a time,
/// so the indexer holds one row while it waits for another's and no two writers can wait for each other.
async fn index_document(pool: &PgPool, document: Uuid) -> Result<u64> {
    let sql = format!(
        "update artifacts a set search = {VECTOR}, search_version = a.version
         where a.id = $1 and a.search_version is distinct from a.version"
    );
    Ok(sqlx::query(&sql).bind(document).execute(pool).await?.rows_affected())
}

/// Writes the current vector of up to [`PER_STATEMENT`] documents that lack it; how many. Rows other statements
/// hold are left for the next sweep (search computes their vectors meanwhile), so a sweep never waits.
async fn index_left_behind(pool: &PgPool) -> Result<u64> {
    let sql = format!(
        "update artifacts a set search = {VECTOR}, search_version = a.version
         from (select id from artifacts where search_version is distinct from version
               limit $1 for no key update skip locked) w
         where a.id = w.id"
    );
    Ok(sqlx::query(&sql).bind(PER_STATEMENT as i64).execute(pool).await?.rows_affected())
}
