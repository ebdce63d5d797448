//! Progress of running turns reaches the store in batches. A turn hands over what it produced (new events, the
//! answer so far) and goes straight back to relaying the model's stream; one task per process commits what all
//! turns handed over in a few transactions (at most [`TURNS_PER_COMMIT`] turns each), then gathers again. With
//! hundreds of turns streaming, the store sees tens of transactions a second instead of several per turn, and no
//! delta ever waits for a disk.

use std::{
    collections::{hash_map::Entry, HashMap, HashSet},
    panic::AssertUnwindSafe,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::FutureExt;

use tokio::sync::{watch, Notify};
use uuid::Uuid;

use crate::store::{DynStore, ProgressTurn, TurnProgress};

/// After a batch, how long progress gathers before the next one (unless a turn is settling).
const GATHER: Duration = Duration::from_millis(20);
/// After a failed batch, how long before it is tried again (with whatever came since).
const RETRY_AFTER: Duration = Duration::from_millis(500);
/// Turns per transaction. SQLite has one writer: a batch of hundreds of turns in one transaction held it for
/// hundreds of milliseconds under load, and every conversation starting meanwhile waited behind it. Between
/// chunks, whoever waited for the writer goes first (the pool hands connections out in order of asking).
const TURNS_PER_COMMIT: usize = 32;

/// Collects the progress of running turns and commits it together.
pub struct ProgressWriter {
    store: DynStore,
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

/// Adds `newer` to what a turn handed over before: events after the earlier ones, the newer answer instead
/// of the older (keeping the older's context record if the newer carries none, as it is sent only once).
fn merge(into: &mut TurnProgress, newer: TurnProgress) {
    into.events.extend(newer.events);
    if let Some(mut answer) = newer.answer {
        if answer.update.context.is_none() {
            answer.update.context = into.answer.take().and_then(|a| a.update.context);
        }
        into.answer = Some(answer);
    }
}

impl ProgressWriter {
    /// Starts the writing task on the current runtime.
    pub fn start(store: DynStore) -> Arc<Self> {
        let writer = Arc::new(Self {
            store,
            queue: Mutex::new(Queue::default()),
            wake: Notify::new(),
            chunks: watch::channel(0).0,
        });
        tokio::spawn(writer.clone().run());
        writer
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands over a turn's progress; it is written with the next batch. Never waits.
    pub fn submit(&self, progress: TurnProgress) {
        match self.queue().pending.entry(progress.turn) {
            Entry::Vacant(slot) => {
                slot.insert(progress);
            }
            Entry::Occupied(mut slot) => merge(slot.get_mut(), progress),
        }
        self.wake.notify_one();
    }

    /// Takes back what `turn` handed over and is not written yet, once no chunk holding its progress is being
    /// written: the turn then writes its final state itself, and nothing older can land after it.
    pub async fn settle(&self, turn: Uuid) -> Option<TurnProgress> {
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

    async fn run(self: Arc<Self>) {
        loop {
            self.wake.notified().await;
            // The turns to write in this batch, in chunks. A chunk takes its turns' progress only once it can be
            // written at once (on SQLite, progress waits for the writer behind every start and end), with
            // whatever they handed over meanwhile: until then a turn that ends takes its progress back instead
            // of waiting for it to be written (taking a whole batch at once kept an ending turn waiting 11 s).
            let mut turns: Vec<Uuid> = self.queue().pending.keys().copied().collect();
            let mut failed = false;
            while !turns.is_empty() {
                let rest = turns.split_off(turns.len().min(TURNS_PER_COMMIT));
                let ready = self.store.progress_turn().await;
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
                let saved = self.save(ready, &chunk).await;
                {
                    let mut queue = self.queue();
                    queue.writing.clear();
                    if !saved {
                        // Back in the queue, before whatever the turns handed over since.
                        for mut older in chunk {
                            if let Some(newer) = queue.pending.remove(&older.turn) {
                                merge(&mut older, newer);
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
    }

    /// Commits one chunk of progress; whether it was saved.
    async fn save(&self, ready: ProgressTurn<'_>, chunk: &[TurnProgress]) -> bool {
        // A panic below must not end the writing task: turns settling on this chunk would wait for ever.
        match AssertUnwindSafe(self.store.save_progress_in(ready, chunk)).catch_unwind().await {
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
    use crate::store::{AnswerDraft, MessageUpdate, StoredEvent};
    use app::api::{MessageStatus, Usage};

    fn progress(turn: Uuid, seqs: &[i64], text: Option<&str>, context: Option<&str>) -> TurnProgress {
        TurnProgress {
            turn,
            user: Uuid::nil(),
            events: seqs.iter().map(|&seq| StoredEvent { seq, name: "text_delta".into(), data: "{}".into() }).collect(),
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
            }),
        }
    }

    #[test]
    fn merged_progress_keeps_every_event_the_newest_text_and_the_first_context() {
        let turn = Uuid::now_v7();
        let mut first = progress(turn, &[1, 2], Some("Hel"), Some("record"));
        merge(&mut first, progress(turn, &[3], Some("Hello"), None));
        merge(&mut first, progress(turn, &[4], None, None));
        let seqs: Vec<i64> = first.events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, vec![1, 2, 3, 4]);
        let answer = first.answer.expect("answer");
        assert_eq!(answer.update.content, "Hello");
        assert_eq!(answer.update.context, Some(serde_json::json!("record")));
    }
}
