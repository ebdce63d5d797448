//! Changes to a conversation's documents, live for everyone watching it (`GET /api/threads/{id}/changes`).
//!
//! Each write of a document (a person's save, a restore, a deletion in `writes.rs`; the assistant's saves in
//! `turn.rs`) publishes here once it is committed. Where one process owns the database (SQLite), the change goes
//! straight to this process's watchers. Where instances share it (PostgreSQL), it is announced to all of them,
//! this one included, and each instance's one listener hands what it hears to its own watchers, reading the
//! document as its owner may read it: only ids travel between instances.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use futures::{Stream, StreamExt};
use tokio::sync::{broadcast, oneshot, watch};
use tokio_stream::wrappers::{errors::BroadcastStreamRecvError, BroadcastStream};
use uuid::Uuid;
use wire::{Artifact, ThreadChange};

use store::{ArtifactChange, ChangeKind, DynStore, SharedChanges};

/// Changes kept for a watcher that has not read them yet; one that falls further behind misses the oldest.
const BACKLOG: usize = 64;

/// Longest wait for this instance's listener before a watcher is answered all the same (changes may be missed
/// until it listens).
const LISTENER_WAIT: Duration = Duration::from_secs(10);

/// The watchers of each conversation in this process, and the listener for the other instances' changes.
pub struct ChangeHub {
    store: DynStore,
    shared: Option<Arc<dyn SharedChanges>>,
    watched: Mutex<HashMap<Uuid, Watched>>,
    /// True once the listener listens (at once where there is none to wait for).
    listening: watch::Receiver<bool>,
    /// Ends the listener when the hub goes.
    _stop: Option<oneshot::Sender<()>>,
}

/// The watchers of one conversation.
struct Watched {
    /// The conversation's owner, as whom a change heard from another instance is read.
    owner: Uuid,
    frames: broadcast::Sender<Bytes>,
}

impl ChangeHub {
    /// The hub of this process, with its listener started where instances share the database.
    pub fn start(store: DynStore) -> Arc<Self> {
        let shared = store.shared_changes();
        let (ready, listening) = watch::channel(shared.is_none());
        let (stop, stopped) = oneshot::channel();
        let hub = Arc::new(Self {
            store,
            shared: shared.clone(),
            watched: Mutex::default(),
            listening,
            _stop: shared.is_some().then_some(stop),
        });
        if let Some(shared) = shared {
            tokio::spawn(listen(Arc::downgrade(&hub), shared, ready, stopped));
        }
        hub
    }

    fn watched(&self) -> MutexGuard<'_, HashMap<Uuid, Watched>> {
        self.watched.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The changes of `thread` from now on, as SSE frames, for `user` (who the caller checked may read it: its
    /// `author`, or a member of its project). Waits for this instance's listener first, so nothing saved after the
    /// answer is missed. The changes other instances tell are read as one of the watchers, the author once they
    /// watch too (a member's reach may end; the author's does not).
    pub async fn watch(self: &Arc<Self>, user: Uuid, thread: Uuid, author: bool) -> Watcher {
        let mut listening = self.listening.clone();
        let _ = tokio::time::timeout(LISTENER_WAIT, listening.wait_for(|ready| *ready)).await;
        let receiver = {
            let mut watched = self.watched();
            let entry =
                watched.entry(thread).or_insert_with(|| Watched { owner: user, frames: broadcast::channel(BACKLOG).0 });
            if author {
                entry.owner = user;
            }
            entry.frames.subscribe()
        };
        Watcher { frames: Some(BroadcastStream::new(receiver)), hub: Arc::downgrade(self), thread }
    }

    /// Tells the watchers of a conversation, on every instance, that `artifact` got a new version.
    pub async fn saved(&self, artifact: &Artifact) {
        let change =
            ArtifactChange { thread_id: artifact.thread_id, artifact_id: artifact.id, kind: ChangeKind::Saved };
        self.publish(change, || ThreadChange::ArtifactSaved { artifact: artifact.clone() }).await;
    }

    /// Tells the watchers of `thread`, on every instance, that the document `artifact` was deleted.
    pub async fn deleted(&self, thread: Uuid, artifact: Uuid) {
        let change = ArtifactChange { thread_id: thread, artifact_id: artifact, kind: ChangeKind::Deleted };
        self.publish(change, || ThreadChange::ArtifactDeleted { artifact_id: artifact }).await;
    }

    /// Tells the watchers of `thread`, on every instance, that an answer started in it (`turn`). Never waits: the
    /// turn goes on while other instances are told.
    pub fn turn_started(self: &Arc<Self>, thread: Uuid, turn: Uuid) {
        let change = ArtifactChange { thread_id: thread, artifact_id: turn, kind: ChangeKind::TurnStarted };
        match &self.shared {
            Some(_) => {
                let hub = self.clone();
                tokio::spawn(async move { hub.publish(change, || ThreadChange::TurnStarted { turn_id: turn }).await });
            }
            None => self.tell(thread, &ThreadChange::TurnStarted { turn_id: turn }),
        }
    }

    /// Ends the watching of `thread`, on every instance: it was deleted with its documents.
    pub async fn thread_deleted(&self, thread: Uuid) {
        let change = ArtifactChange { thread_id: thread, artifact_id: Uuid::nil(), kind: ChangeKind::ThreadDeleted };
        match &self.shared {
            Some(shared) => {
                if let Err(e) = shared.announce(&change).await {
                    tracing::warn!(error = %e, "announcing a deleted conversation failed");
                }
            }
            None => self.close(thread),
        }
    }

    /// Ends the streams of `thread`'s watchers here (once they have read what was told before).
    fn close(&self, thread: Uuid) {
        self.watched().remove(&thread);
    }

    /// Announces `change` to every instance, or tells this one's watchers (`made` is what they get) where no other
    /// instance shares the database. A change that cannot be announced is logged: the write stands.
    async fn publish(&self, change: ArtifactChange, made: impl FnOnce() -> ThreadChange) {
        match &self.shared {
            Some(shared) => {
                if let Err(e) = shared.announce(&change).await {
                    tracing::warn!(error = %e, "announcing a document change failed");
                }
            }
            None => {
                if self.sender(change.thread_id).is_some() {
                    self.tell(change.thread_id, &made());
                }
            }
        }
    }

    /// The owner of a watched conversation and its watchers' channel; `None` (and forgotten) when nobody watches.
    fn sender(&self, thread: Uuid) -> Option<(Uuid, broadcast::Sender<Bytes>)> {
        let mut watched = self.watched();
        let entry = watched.get(&thread)?;
        if entry.frames.receiver_count() == 0 {
            watched.remove(&thread);
            return None;
        }
        Some((entry.owner, entry.frames.clone()))
    }

    /// Sends `change` to the watchers of `thread` here.
    fn tell(&self, thread: Uuid, change: &ThreadChange) {
        if let Some((_, frames)) = self.sender(thread) {
            // No receiver left: nobody to tell.
            let _ = frames.send(frame(change));
        }
    }

    /// A change heard from an instance (this one too): read as the conversation's owner, then told.
    async fn heard(&self, change: ArtifactChange) {
        let Some((owner, _)) = self.sender(change.thread_id) else { return };
        let told = match change.kind {
            ChangeKind::ThreadDeleted => return self.close(change.thread_id),
            ChangeKind::Deleted => ThreadChange::ArtifactDeleted { artifact_id: change.artifact_id },
            ChangeKind::TurnStarted => ThreadChange::TurnStarted { turn_id: change.artifact_id },
            ChangeKind::Saved => match self.store.get_artifact(owner, change.artifact_id).await {
                // Of that conversation only: a change is never told to another conversation's watchers.
                Ok(artifact) if artifact.thread_id == change.thread_id => ThreadChange::ArtifactSaved { artifact },
                Ok(_) | Err(store::StoreError::NotFound) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "reading a changed document failed");
                    return;
                }
            },
        };
        self.tell(change.thread_id, &told);
    }
}

/// Listens for every instance's changes while the hub lives, and hands each to it.
async fn listen(
    hub: Weak<ChangeHub>,
    shared: Arc<dyn SharedChanges>,
    ready: watch::Sender<bool>,
    mut stopped: oneshot::Receiver<()>,
) {
    let mut changes = loop {
        tokio::select! {
            _ = &mut stopped => return,
            listening = shared.listen() => match listening {
                Ok(changes) => break changes,
                Err(e) => {
                    tracing::warn!(error = %e, "listening for document changes failed; trying again");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            },
        }
    };
    let _ = ready.send(true);
    loop {
        let change = tokio::select! {
            _ = &mut stopped => return,
            change = changes.next() => change,
        };
        let (Some(change), Some(hub)) = (change, hub.upgrade()) else { return };
        hub.heard(change).await;
    }
}

/// One watcher's changes, as SSE frames; its place among the conversation's watchers is given up when dropped.
pub struct Watcher {
    frames: Option<BroadcastStream<Bytes>>,
    hub: Weak<ChangeHub>,
    thread: Uuid,
}

impl Stream for Watcher {
    type Item = Bytes;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let Some(frames) = self.frames.as_mut() else { return Poll::Ready(None) };
        loop {
            match frames.poll_next_unpin(cx) {
                Poll::Ready(Some(Ok(frame))) => return Poll::Ready(Some(frame)),
                // Fell behind: the oldest changes are missed, the newer ones follow.
                Poll::Ready(Some(Err(BroadcastStreamRecvError::Lagged(_)))) => continue,
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        drop(self.frames.take());
        if let Some(hub) = self.hub.upgrade() {
            let mut watched = hub.watched();
            if watched.get(&self.thread).is_some_and(|w| w.frames.receiver_count() == 0) {
                watched.remove(&self.thread);
            }
        }
    }
}

/// A change's SSE text: `event: <name>`, its JSON on one `data:` line (JSON text holds no line break), a blank
/// line.
fn frame(change: &ThreadChange) -> Bytes {
    let (name, data) = (change.name(), change.data_json());
    let mut out = BytesMut::with_capacity(20 + name.len() + data.len());
    out.put_slice(b"event: ");
    out.put_slice(name.as_bytes());
    out.put_slice(b"\ndata: ");
    out.put_slice(data.as_bytes());
    out.put_slice(b"\n\n");
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_one_named_event() {
        let id = Uuid::from_u128(7);
        let text = frame(&ThreadChange::ArtifactDeleted { artifact_id: id });
        assert_eq!(
            std::str::from_utf8(&text).unwrap(),
            format!("event: artifact_deleted\ndata: {{\"artifact_id\":\"{id}\"}}\n\n")
        );
    }
}
