//! Progress of running turns reaches PostgreSQL in batches. A turn hands over what it produced (new events, the
//! answer so far) and goes straight back to relaying the model's stream; one task per process commits what all
//! turns handed over in a few transactions (at most [`TURNS_PER_COMMIT`] turns each), then gathers again. With
//! hundreds of turns streaming, the store sees tens of transactions a second instead of several per turn, and no
//! delta ever waits for a disk. A turn that ends takes back what is not written yet (see
//! [`ProgressWriter::settle`]) and writes it with its end.

use std::{
    collections::{hash_map::Entry, HashMap, HashSet},
    panic::AssertUnwindSafe,
    sync::{Arc, Mutex, Weak},
    time::Duration,
};

use futures::FutureExt;

use sqlx::PgPool;
use tokio::sync::{watch, Notify};
use uuid::Uuid;

use crate::TurnProgress;

/// After a batch, how long progress gathers before the next one (unless a turn is settling).
const GATHER: Duration = Duration::from_millis(20);
/// After a failed batch, how long before it is tried again (with whatever came since).
const RETRY_AFTER: Duration = Duration::from_millis(500);
/// Turns per transaction: a transaction holds its answers' rows until it commits, and a turn ending meanwhile
/// waits for them.
const TURNS_PER_COMMIT: usize = 32;

/// Collects the progress of running turns and commits it together.
pub(super) struct ProgressWriter {
    pool: PgPool,
    queue: Mutex<Queue>,
    wake: Notify,
    /// Counts finished chunks; `settle` waits on it.
    chunks: watch::Sender<u64>,
}

#[derive(Default)]
struct Queue {
    /// Handed over, not yet in a chunk being written; one entry per turn.
    pending: HashMap<Uuid, TurnProgress>,
    /// Turns in the chunk being written.
    writing: HashSet<Uuid>,
}

impl std::fmt::Debug for ProgressWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgressWriter").finish_non_exhaustive()
    }
}

impl ProgressWriter {
    /// Starts the writing task on the current runtime; it ends with the store.
    pub(super) fn start(pool: PgPool) -> Arc<Self> {
        let writer = Arc::new(Self {
            pool,
            queue: Mutex::new(Queue::default()),
            wake: Notify::new(),
            chunks: watch::channel(0).0,
        });
        tokio::spawn(Self::run(Arc::downgrade(&writer)));
        writer
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands over a turn's progress; it is written with the next batch. Never waits.
    pub(super) fn submit(&self, progress: TurnProgress) {
        match self.queue().pending.entry(progress.turn) {
            Entry::Vacant(slot) => {
                slot.insert(progress);
            }
            Entry::Occupied(mut slot) => slot.get_mut().merge(progress),
        }
        self.wake.notify_one();
    }

    /// Takes back what `turn` handed over and is not written yet, once no chunk holding its progress is being
    /// written: the turn then writes its final state itself, and nothing older can land after it.
    pub(super) async fn settle(&self, turn: Uuid) -> Option<TurnProgress> {
        let mut chunks = self.chunks.subscribe();
        loop {
            {
                let mut queue = self.queue();
                if !queue.writing.contains(&turn) {
                    return queue.pending.remove(&turn);
                }
            }
            if chunks.changed().await.is_err() {
                return None;
            }
        }
    }

    async fn run(writer: Weak<Self>) {
        loop {
            let Some(this) = writer.upgrade() else { return };
            // Woken at least every second, to notice the store is gone.
            let _ = tokio::time::timeout(Duration::from_secs(1), this.wake.notified()).await;
            this.write_batch().await;
        }
    }

    /// Writes what was handed over, in chunks; then waits a little for more.
    async fn write_batch(&self) {
        // A chunk takes its turns' progress only when it is written, with whatever they handed over
        // meanwhile: until then a turn that ends takes its progress back.
        let mut turns: Vec<Uuid> = self.queue().pending.keys().copied().collect();
        let mut failed = false;
        while !turns.is_empty() {
            let rest = turns.split_off(turns.len().min(TURNS_PER_COMMIT));
            let chunk: Vec<TurnProgress> = {
                let mut queue = self.queue();
                let chunk: Vec<TurnProgress> = turns.iter().filter_map(|turn| queue.pending.remove(turn)).collect();
                queue.writing = chunk.iter().map(|p| p.turn).collect();
                chunk
            };
            turns = rest;
            if chunk.is_empty() {
                continue;
            }
            let saved = self.save(&chunk).await;
            {
                let mut queue = self.queue();
                queue.writing.clear();
                if !saved {
                    // Back in the queue, before whatever the turns handed over since.
                    for mut older in chunk {
                        if let Some(newer) = queue.pending.remove(&older.turn) {
                            older.merge(newer);
                        }
                        queue.pending.insert(older.turn, older);
                    }
                    failed = true;
                }
            }
            self.chunks.send_modify(|n| *n += 1);
            if failed {
                break;
            }
        }
        if failed {
            self.wake.notify_one();
            tokio::time::sleep(RETRY_AFTER).await;
        } else {
            tokio::time::sleep(GATHER).await;
        }
    }

    /// Commits one chunk of progress; whether it was saved.
    async fn save(&self, chunk: &[TurnProgress]) -> bool {
        // A panic below must not end the writing task: turns settling on this chunk would wait for ever.
        match AssertUnwindSafe(super::write_progress(&self.pool, chunk)).catch_unwind().await {
            Ok(Ok(())) => true,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, turns = chunk.len(), "saving the progress of running turns failed");
                false
            }
            Err(_) => {
                tracing::error!(turns = chunk.len(), "saving the progress of running turns panicked");
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AnswerDraft, EventRun, MessageUpdate};
    use wire::{MessageStatus, Usage};

    fn progress(turn: Uuid, seqs: &[i64], text: Option<&str>, context: Option<&str>) -> TurnProgress {
        TurnProgress {
            turn,
            user: Uuid::nil(),
            events: seqs.iter().map(|&seq| EventRun::single(seq, "text_delta", "{}".into())).collect(),
            answer: text.map(|t| AnswerDraft {
                id: Uuid::nil(),
                thread_id: Uuid::nil(),
                update: MessageUpdate {
                    content: t.into(),
                    status: MessageStatus::Interrupted,
                    usage: Usage::default(),
                    model: None,
                    context: context.map(|c| serde_json::json!(c)),
                },
                writing: true,
                question: None,
            }),
        }
    }

    #[test]
    fn merged_progress_keeps_every_event_the_newest_text_and_the_first_context() {
        let turn = Uuid::now_v7();
        let mut first = progress(turn, &[1, 2], Some("Hel"), Some("record"));
        first.merge(progress(turn, &[3], Some("Hello"), None));
        first.merge(progress(turn, &[4], None, None));
        let seqs: Vec<i64> = first.events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, vec![1, 2, 3, 4]);
        let answer = first.answer.expect("answer");
        assert_eq!(answer.update.content, "Hello");
        assert_eq!(answer.update.context, Some(serde_json::json!("record")));
    }
}
