//! A turn's events for a listener: live from this process while the turn runs here, otherwise replayed from the
//! store (following a turn that runs on another instance); and a turn started at most once per idempotency key,
//! a repeated request replaying the first one's events.

use std::{sync::Arc, time::Duration};

use bytes::Bytes;
use futures::{stream, stream::BoxStream, Stream, StreamExt};
use uuid::Uuid;
use wire::{ChatEvent, ChatRequest};

use super::engine::Engine;
use super::error::{ChatError, Result};
use super::hub::{self, LiveTurn};
use store::{DynStore, IdempotencyClaim, StoredEvent};

/// How often a listener on another instance looks for new stored events.
const POLL_EVERY: Duration = Duration::from_millis(150);

/// How long an idempotency key is remembered.
const IDEMPOTENCY_TTL_SECS: i64 = 24 * 60 * 60;

/// What a chat request started: a turn running here, or (a repeated request) a turn started earlier.
pub enum Started {
    Live(Arc<LiveTurn>),
    Earlier(Uuid),
}

impl Started {
    /// The turn's events from its beginning, as SSE text.
    pub fn events(&self, engine: &Engine, user: Uuid, thread: Uuid) -> BoxStream<'static, Bytes> {
        match self {
            Started::Live(live) => live.subscribe(0).boxed(),
            Started::Earlier(turn) => engine.turn_events(user, thread, *turn, 0),
        }
    }
}

impl Engine {
    /// The events of one turn after `after`, as SSE text: from this process while it runs here, else from the
    /// store.
    pub fn turn_events(&self, user: Uuid, thread: Uuid, turn: Uuid, after: i64) -> BoxStream<'static, Bytes> {
        match self.hub.get(thread).filter(|l| l.id == turn) {
            Some(live) => live.subscribe(after).boxed(),
            None => stored_events(self.store.clone(), user, thread, turn, after).boxed(),
        }
    }

    /// Starts the turn of `body`; with an idempotency key, at most once: the same key with the same request gets the
    /// first turn back, with another request a 422, while the first is still being started a 409.
    pub async fn start_once(
        &self,
        user: Uuid,
        thread: Uuid,
        key: Option<String>,
        body: ChatRequest,
    ) -> Result<Started> {
        let request = format!("chat:{thread}:{}", serde_json::to_string(&body).unwrap_or_default());
        self.once(user, key, &request, || self.start(user, thread, body)).await
    }

    /// Another answer to the question `answer` answered (see [`Engine::regenerate`]), at most once per
    /// idempotency key as [`start_once`](Self::start_once).
    pub async fn regenerate_once(
        &self,
        user: Uuid,
        thread: Uuid,
        key: Option<String>,
        answer: Uuid,
    ) -> Result<Started> {
        let request = format!("regenerate:{thread}:{answer}");
        self.once(user, key, &request, || self.regenerate(user, thread, answer)).await
    }

    /// Starts a turn with `start`; with an idempotency key, at most once per `request` (its text).
    async fn once<F, Fut>(&self, user: Uuid, key: Option<String>, request: &str, start: F) -> Result<Started>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<Arc<LiveTurn>>>,
    {
        let Some(key) = key else {
            return Ok(Started::Live(start().await?));
        };
        let fingerprint = fingerprint(request);
        match self.store.claim_idempotency_key(user, &key, &fingerprint, IDEMPOTENCY_TTL_SECS).await? {
            IdempotencyClaim::Fresh => match start().await {
                Ok(live) => {
                    self.store.complete_idempotency_key(user, &key, &live.id.to_string()).await?;
                    Ok(Started::Live(live))
                }
                Err(e) => {
                    self.store.release_idempotency_key(user, &key).await?;
                    Err(e)
                }
            },
            IdempotencyClaim::Existing { fingerprint: first, .. } if first != fingerprint => Err(ChatError::KeyReused),
            IdempotencyClaim::Existing { response: None, .. } => Err(ChatError::KeyInProgress),
            IdempotencyClaim::Existing { response: Some(turn), .. } => {
                Ok(Started::Earlier(Uuid::parse_str(&turn).map_err(|e| ChatError::Internal(e.into()))?))
            }
        }
    }
}

fn fingerprint(request: &str) -> String {
    use sha2::{Digest, Sha256};
    format!("{:x}", Sha256::digest(request.as_bytes()))
}

/// Replays a turn's stored events after `after`, as SSE text, following it while it runs on another instance.
fn stored_events(
    store: DynStore,
    user: Uuid,
    thread: Uuid,
    turn: Uuid,
    after: i64,
) -> impl Stream<Item = Bytes> + Send {
    struct State {
        store: DynStore,
        user: Uuid,
        thread: Uuid,
        turn: Uuid,
        after: i64,
        done: bool,
    }
    // A batch read from the store is what a listener is behind by: it goes out in pieces of several events
    // (each keeping its id), as a live listener that is behind gets them.
    let framed = |turn: Uuid, events: Vec<StoredEvent>| -> Vec<Bytes> {
        hub::coalesce(events.iter().map(|e| hub::frame(turn, e.seq, &e.name, &e.data)).collect())
    };
    let initial = State { store, user, thread, turn, after, done: false };
    stream::unfold(initial, move |mut s| async move {
        loop {
            if s.done {
                return None;
            }
            let events = match s.store.turn_events_after(s.turn, s.after).await {
                Ok(events) => events,
                Err(e) => {
                    tracing::warn!(error = %e, "reading stored events failed");
                    return None;
                }
            };
            if !events.is_empty() {
                s.done = events.iter().any(|e| ChatEvent::name_ends_turn(&e.name));
                s.after = events.last().map(|e| e.seq).unwrap_or(s.after);
                return Some((stream::iter(framed(s.turn, events)), s));
            }
            let running = matches!(s.store.latest_turn(s.user, s.thread).await,
                Ok(Some(t)) if t.id == s.turn && t.alive(super::turn::STALE_AFTER_MS));
            if !running {
                // One last look: the final events may have landed just before the turn closed.
                let tail = s.store.turn_events_after(s.turn, s.after).await.unwrap_or_default();
                s.done = true;
                if tail.is_empty() {
                    return None;
                }
                return Some((stream::iter(framed(s.turn, tail)), s));
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
    })
    .flatten()
}
