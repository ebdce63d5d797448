//! Turns running in this process: their events in order, for every listener, from any point.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use app::api::ChatEvent;
use futures::Stream;
use tokio::sync::watch;
use uuid::Uuid;

use super::turn::{HEARTBEAT_EVERY, STALE_AFTER_MS};
use crate::store::DynStore;

/// A turn being written here. Events are kept for the turn's life so a listener may join at any point.
#[derive(Debug)]
pub struct LiveTurn {
    pub id: Uuid,
    pub thread_id: Uuid,
    pub user_id: Uuid,
    events: Mutex<Vec<ChatEvent>>,
    len: watch::Sender<usize>,
    cancel: watch::Sender<bool>,
}

impl LiveTurn {
    pub fn new(id: Uuid, thread_id: Uuid, user_id: Uuid) -> Arc<Self> {
        Arc::new(Self {
            id,
            thread_id,
            user_id,
            events: Mutex::new(Vec::new()),
            len: watch::channel(0).0,
            cancel: watch::channel(false).0,
        })
    }

    /// Adds an event; returns its sequence number (1-based).
    pub fn push(&self, event: ChatEvent) -> i64 {
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        events.push(event);
        let len = events.len();
        drop(events);
        self.len.send_replace(len);
        len as i64
    }

    /// The number the next event will get.
    pub fn next_seq(&self) -> i64 {
        self.events.lock().unwrap_or_else(|e| e.into_inner()).len() as i64 + 1
    }

    /// Events after `after` (a sequence number), with their numbers.
    pub fn events_after(&self, after: i64) -> Vec<(i64, ChatEvent)> {
        let events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        let start = after.max(0) as usize;
        events.iter().enumerate().skip(start).map(|(i, e)| (i as i64 + 1, e.clone())).collect()
    }

    /// Asks the turn to stop.
    pub fn cancel(&self) {
        self.cancel.send_replace(true);
    }

    /// Resolves once a stop was asked for.
    pub async fn cancelled(&self) {
        let mut rx = self.cancel.subscribe();
        let _ = rx.wait_for(|stop| *stop).await;
    }

    pub fn is_cancelled(&self) -> bool {
        *self.cancel.borrow()
    }

    /// The events after `after`, as they come, ending with the turn's last event.
    pub fn subscribe(self: &Arc<Self>, after: i64) -> impl Stream<Item = (i64, ChatEvent)> + Send + 'static {
        struct State {
            turn: Arc<LiveTurn>,
            next: i64,
            rx: watch::Receiver<usize>,
            pending: std::collections::VecDeque<(i64, ChatEvent)>,
            done: bool,
        }
        let state = State {
            turn: self.clone(),
            next: after,
            rx: self.len.subscribe(),
            pending: Default::default(),
            done: false,
        };
        futures::stream::unfold(state, |mut s| async move {
            loop {
                if s.done {
                    return None;
                }
                if let Some((seq, event)) = s.pending.pop_front() {
                    s.next = seq;
                    s.done = event.is_terminal();
                    return Some(((seq, event), s));
                }
                let fresh = s.turn.events_after(s.next);
                if !fresh.is_empty() {
                    s.pending.extend(fresh);
                    continue;
                }
                if s.rx.changed().await.is_err() {
                    return None;
                }
            }
        })
    }
}

/// The turns running in this process, by thread.
#[derive(Debug, Default)]
pub struct TurnHub {
    live: Mutex<HashMap<Uuid, Arc<LiveTurn>>>,
}

impl TurnHub {
    pub fn insert(&self, turn: Arc<LiveTurn>) {
        self.live.lock().unwrap_or_else(|e| e.into_inner()).insert(turn.thread_id, turn);
    }

    pub fn get(&self, thread: Uuid) -> Option<Arc<LiveTurn>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner()).get(&thread).cloned()
    }

    /// Forgets a finished turn (only if it is still the thread's current one).
    pub fn remove(&self, turn: &LiveTurn) {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        if live.get(&turn.thread_id).is_some_and(|t| t.id == turn.id) {
            live.remove(&turn.thread_id);
        }
    }

    /// The ids of the turns running here.
    pub fn turn_ids(&self) -> Vec<Uuid> {
        self.live.lock().unwrap_or_else(|e| e.into_inner()).values().map(|t| t.id).collect()
    }

    /// Asks every running turn to stop (shutdown).
    pub fn cancel_all(&self) {
        for turn in self.live.lock().unwrap_or_else(|e| e.into_inner()).values() {
            turn.cancel();
        }
    }
}

/// Keeps the turns running here alive in the store, all in one statement every [`HEARTBEAT_EVERY`], and
/// stops those for which a stop was requested (possibly through another instance).
pub async fn keep_alive(hub: Arc<TurnHub>, store: DynStore) {
    let mut ticker = tokio::time::interval(HEARTBEAT_EVERY);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await;
    loop {
        ticker.tick().await;
        let running = hub.turn_ids();
        if running.is_empty() {
            continue;
        }
        match store.heartbeat_turns(&running).await {
            Ok(stopped) if !stopped.is_empty() => {
                for turn in hub.live.lock().unwrap_or_else(|e| e.into_inner()).values() {
                    if stopped.contains(&turn.id) {
                        turn.cancel();
                    }
                }
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "turn heartbeat failed"),
        }
    }
}

/// Lets answers left marked as being written into the search index: at start-up (what a crashed instance left)
/// and then every [`STALE_AFTER_MS`], for a turn that died while its instance lives on (a panic, or a final save
/// and the closing of the turn both failed) and whose conversation gets no new turn.
pub async fn release_abandoned_answers(store: DynStore) {
    let mut ticker = tokio::time::interval(std::time::Duration::from_millis(STALE_AFTER_MS as u64));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        match store.release_abandoned_answers(STALE_AFTER_MS).await {
            Ok(0) => {}
            Ok(released) => tracing::info!(released, "answers cut off while being written are searchable now"),
            Err(e) => tracing::warn!(error = %e, "releasing answers cut off while being written failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    #[tokio::test]
    async fn late_listeners_get_everything_after_their_point() {
        let turn = LiveTurn::new(Uuid::nil(), Uuid::nil(), Uuid::nil());
        turn.push(ChatEvent::TextDelta { text: "a".into() });
        let listener = turn.subscribe(0);
        let resumed = turn.subscribe(1);
        turn.push(ChatEvent::TextDelta { text: "b".into() });
        turn.push(ChatEvent::MessageComplete {
            message_id: None,
            usage: Default::default(),
            stopped: false,
            model: None,
        });
        let all: Vec<i64> = listener.map(|(seq, _)| seq).collect().await;
        assert_eq!(all, vec![1, 2, 3]);
        let rest: Vec<i64> = resumed.map(|(seq, _)| seq).collect().await;
        assert_eq!(rest, vec![2, 3]);
    }
}
