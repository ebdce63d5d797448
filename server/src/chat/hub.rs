//! Turns running in this process: their events in order, for every listener, from any point.
//!
//! Each event is encoded once, as it happens, into the SSE text every listener writes (`id`, `event`, `data`):
//! a listener takes a reference to the same bytes, and what the store keeps of the event is read off the same
//! record. A listener waiting for the next event is woken by the push that adds it, with nothing else on the way.

use std::{
    collections::HashMap,
    pin::Pin,
    sync::{Arc, Mutex, MutexGuard},
    task::{Context, Poll, Waker},
};

use bytes::{BufMut, Bytes, BytesMut};
use futures::Stream;
use tokio::sync::watch;
use uuid::Uuid;
use wire::ChatEvent;

use store::{DynStore, EventRun};

/// How often a running turn proves it is alive (and learns about stop requests from other instances).
pub const HEARTBEAT_EVERY: std::time::Duration = std::time::Duration::from_secs(2);
/// A turn whose heartbeat is older than this is taken to be dead (its instance crashed).
pub const STALE_AFTER_MS: i64 = 30_000;

/// A turn being written here. Events are kept for the turn's life so a listener may join at any point.
#[derive(Debug)]
pub struct LiveTurn {
    pub id: Uuid,
    pub thread_id: Uuid,
    pub user_id: Uuid,
    log: Mutex<Log>,
    cancel: watch::Sender<bool>,
}

/// The events so far and the listeners waiting for the next one.
#[derive(Debug, Default)]
struct Log {
    events: Vec<Logged>,
    waiting: Vec<Waker>,
}

/// One event as it was pushed: its SSE text and what the store keeps of it.
#[derive(Debug)]
struct Logged {
    name: &'static str,
    data: String,
    frame: Bytes,
    last: bool,
}

impl LiveTurn {
    pub fn new(id: Uuid, thread_id: Uuid, user_id: Uuid) -> Arc<Self> {
        Arc::new(Self { id, thread_id, user_id, log: Mutex::default(), cancel: watch::channel(false).0 })
    }

    fn log(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds an event and wakes the listeners waiting for it; returns its sequence number (1-based).
    pub fn push(&self, event: ChatEvent) -> i64 {
        let (name, data, last) = (event.name(), event.data_json(), event.is_terminal());
        let mut log = self.log();
        let seq = log.events.len() as i64 + 1;
        let frame = frame(self.id, seq, name, &data);
        log.events.push(Logged { name, data, frame, last });
        // Woken under the lock: a wake only puts the listener's task in line, and a listener polling meanwhile
        // then finds the event.
        for listener in log.waiting.drain(..) {
            listener.wake();
        }
        seq
    }

    /// The number the next event will get.
    pub fn next_seq(&self) -> i64 {
        self.log().events.len() as i64 + 1
    }

    /// The events after `after` (a sequence number) as the store keeps them: each run of events of one name
    /// that came one after another as one [`EventRun`] (a turn's text comes as hundreds of deltas). Also returns
    /// the number of the last event taken (`after` when there is none).
    pub fn runs_after(&self, after: i64) -> (Vec<EventRun>, i64) {
        let log = self.log();
        let start = (after.max(0) as usize).min(log.events.len());
        let mut runs = Vec::new();
        let mut i = start;
        while i < log.events.len() {
            let name = log.events[i].name;
            let end = log.events[i..].iter().position(|e| e.name != name).map_or(log.events.len(), |n| i + n);
            runs.push(EventRun::of(i as i64 + 1, name, log.events[i..end].iter().map(|e| e.data.as_str())));
            i = end;
        }
        (runs, log.events.len() as i64)
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

    /// The events after `after`, as SSE text, as they come, ending with the turn's last event.
    pub fn subscribe(self: &Arc<Self>, after: i64) -> Listener {
        Listener { turn: self.clone(), next: after.max(0) as usize, done: false }
    }
}

/// A listener of a turn running here: its events' SSE text, one after another (see [`LiveTurn::subscribe`]).
#[derive(Debug)]
pub struct Listener {
    turn: Arc<LiveTurn>,
    /// The index of the next event.
    next: usize,
    done: bool,
}

/// Most bytes of events a listener that is behind takes in one go (see [`Listener`]).
const CATCH_UP_BYTES: usize = 64 * 1024;
/// The data of a `text_delta` event is `{"text":"<escaped text>"}` ([`ChatEvent::data_json`]).
const TEXT_OPEN: &str = "{\"text\":\"";
const TEXT_CLOSE: &str = "\"}";

/// A listener that is behind (its client reads slower than the turn writes: several events wait when it is polled)
/// takes what waits in one piece of at most [`CATCH_UP_BYTES`], each run of text deltas in it merged into one
/// event numbered as the run's last: fewer, larger writes for a slow client, and fewer events for it to read,
/// the text the same. A listener keeping up gets each event's frame as it was encoded, without a copy.
impl Stream for Listener {
    type Item = Bytes;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        let mut log = this.turn.log();
        let waiting = log.events.len().saturating_sub(this.next);
        match waiting {
            0 => {
                if !log.waiting.iter().any(|w| w.will_wake(cx.waker())) {
                    log.waiting.push(cx.waker().clone());
                }
                Poll::Pending
            }
            1 => {
                let event = &log.events[this.next];
                this.next += 1;
                this.done = event.last;
                Poll::Ready(Some(event.frame.clone()))
            }
            _ => {
                let (bytes, next, done) = catch_up(this.turn.id, &log.events, this.next);
                this.next = next;
                this.done = done;
                Poll::Ready(Some(bytes))
            }
        }
    }
}

/// The events from `start` on as one piece of SSE text (see [`Listener`]): the text, the index after the last
/// event taken, and whether that was the turn's last.
fn catch_up(turn: Uuid, events: &[Logged], start: usize) -> (Bytes, usize, bool) {
    let mut out = BytesMut::new();
    let mut i = start;
    while i < events.len() && (i == start || out.len() < CATCH_UP_BYTES) {
        let event = &events[i];
        if event.name == "text_delta" && event.data.starts_with(TEXT_OPEN) && event.data.ends_with(TEXT_CLOSE) {
            // The run of deltas that follow, as one: JSON escapes each character alone, so the escaped texts joined
            // are the escaped text of the text joined.
            let mut data = String::from(TEXT_OPEN);
            let mut end = i;
            while end < events.len()
                && events[end].name == "text_delta"
                && events[end].data.starts_with(TEXT_OPEN)
                && events[end].data.ends_with(TEXT_CLOSE)
                && (end == i || out.len() + data.len() < CATCH_UP_BYTES)
            {
                let inner = &events[end].data[TEXT_OPEN.len()..events[end].data.len() - TEXT_CLOSE.len()];
                data.push_str(inner);
                end += 1;
            }
            data.push_str(TEXT_CLOSE);
            if end - i == 1 {
                out.put_slice(&event.frame);
            } else {
                out.put_slice(&frame(turn, end as i64, "text_delta", &data));
            }
            i = end;
        } else {
            out.put_slice(&event.frame);
            i += 1;
        }
        if events[i - 1].last {
            return (out.freeze(), i, true);
        }
    }
    (out.freeze(), i, false)
}

/// An event's SSE text: `id: <turn>:<seq>`, `event: <name>`, its data on `data:` lines, a blank line. The data is
/// JSON text, which holds no line break; a line break in it would start another `data:` line, which the client
/// joins back with one.
pub fn frame(turn: Uuid, seq: i64, name: &str, data: &str) -> Bytes {
    let mut id = [0u8; uuid::fmt::Hyphenated::LENGTH];
    let id = turn.as_hyphenated().encode_lower(&mut id);
    let mut seq_text = itoa::Buffer::new();
    let seq_text = seq_text.format(seq);
    let mut out = BytesMut::with_capacity(30 + id.len() + seq_text.len() + name.len() + data.len());
    out.put_slice(b"id: ");
    out.put_slice(id.as_bytes());
    out.put_u8(b':');
    out.put_slice(seq_text.as_bytes());
    out.put_slice(b"\nevent: ");
    out.put_slice(name.as_bytes());
    for line in data.split(['\n', '\r']) {
        out.put_slice(b"\ndata: ");
        out.put_slice(line.as_bytes());
    }
    out.put_slice(b"\n\n");
    out.freeze()
}

/// The turns running in this process, by thread.
#[derive(Debug, Default)]
pub struct TurnHub {
    live: Mutex<HashMap<Uuid, Arc<LiveTurn>>>,
}

impl TurnHub {
    /// Holds `turn` as its thread's running turn. Of two turns of one thread held here, the older was taken over
    /// (the newer one's start found its heartbeat gone quiet): it is asked to stop, so it spends nothing more, and
    /// the newer one stays, whichever of them came here first. Turn ids are v7 UUIDs: the newer is the greater.
    pub fn insert(&self, turn: Arc<LiveTurn>) {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        match live.get(&turn.thread_id) {
            Some(held) if held.id > turn.id => turn.cancel(),
            _ => {
                let id = turn.id;
                if let Some(older) = live.insert(turn.thread_id, turn).filter(|older| older.id != id) {
                    older.cancel();
                }
            }
        }
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
/// stops those for which a stop was requested (possibly through another instance) and those that no longer hold
/// their conversation (taken over on another instance, or deleted with it).
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

    #[test]
    fn of_two_turns_of_one_thread_the_older_is_stopped_whichever_comes_first() {
        let thread = Uuid::now_v7();
        let (older, newer) = (Uuid::now_v7(), Uuid::now_v7());
        for (first, second) in [(older, newer), (newer, older)] {
            let hub = TurnHub::default();
            let (first, second) =
                (LiveTurn::new(first, thread, Uuid::nil()), LiveTurn::new(second, thread, Uuid::nil()));
            hub.insert(first.clone());
            hub.insert(second.clone());
            assert_eq!(hub.get(thread).map(|t| t.id), Some(newer));
            let stopped = [&first, &second].into_iter().filter(|t| t.is_cancelled()).map(|t| t.id).collect::<Vec<_>>();
            assert_eq!(stopped, vec![older]);
            hub.remove(&first);
            hub.remove(&second);
            assert!(hub.turn_ids().is_empty());
        }
    }

    #[test]
    fn events_are_taken_for_the_store_in_runs_of_one_name() {
        let turn = LiveTurn::new(Uuid::nil(), Uuid::nil(), Uuid::nil());
        let text = |t: &str| ChatEvent::TextDelta { text: t.into() };
        turn.push(text("a"));
        turn.push(text("b"));
        let (runs, last) = turn.runs_after(0);
        assert_eq!(last, 2);
        assert_eq!(runs, [EventRun::of(1, "text_delta", [r#"{"text":"a"}"#, r#"{"text":"b"}"#].into_iter())]);
        turn.push(ChatEvent::ToolExecuting { tool: "save_artifact".into(), input: serde_json::json!({}) });
        turn.push(text("c"));
        let (runs, last) = turn.runs_after(2);
        let names: Vec<(i64, i64, &str)> = runs.iter().map(|r| (r.seq, r.last_seq, r.name.as_str())).collect();
        assert_eq!((names, last), (vec![(3, 3, "tool_executing"), (4, 4, "text_delta")], 4));
        assert_eq!(turn.runs_after(4), (Vec::new(), 4));
    }

    #[test]
    fn a_frame_is_the_sse_text_of_one_event() {
        let id = Uuid::from_u128(1);
        assert_eq!(
            frame(id, 12, "text_delta", r#"{"text":"hi"}"#),
            "id: 00000000-0000-0000-0000-000000000001:12\nevent: text_delta\ndata: {\"text\":\"hi\"}\n\n"
        );
        // A line break would end the field: it starts another data line instead, which the client joins back.
        assert_eq!(
            frame(id, 1, "x", "a\nb"),
            "id: 00000000-0000-0000-0000-000000000001:1\nevent: x\ndata: a\ndata: b\n\n"
        );
    }

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
        // Behind by three events, the listener takes them in one piece, the two deltas as one event numbered 2.
        let all: Vec<Bytes> = listener.collect().await;
        assert_eq!(all.len(), 1);
        assert_eq!(
            events_of(&all),
            vec![
                (2, "text_delta".to_string(), r#"{"text":"ab"}"#.to_string()),
                (
                    3,
                    "message_complete".into(),
                    r#"{"message_id":null,"usage":{"input_tokens":0,"output_tokens":0}}"#.into()
                )
            ]
        );
        let rest: Vec<Bytes> = resumed.collect().await;
        let rest = events_of(&rest);
        assert_eq!((rest[0].0, rest[0].2.as_str(), rest[1].0), (2, r#"{"text":"b"}"#, 3));
    }

    /// The events of SSE text: number, name, data.
    fn events_of(pieces: &[Bytes]) -> Vec<(i64, String, String)> {
        let text: String = pieces.iter().map(|p| String::from_utf8_lossy(p).into_owned()).collect();
        text.split("\n\n")
            .filter(|e| !e.is_empty())
            .map(|event| {
                let field =
                    |name: &str| event.lines().find_map(|l| l.strip_prefix(name)).unwrap_or_default().to_string();
                let seq = field("id: ").rsplit(':').next().unwrap().parse().unwrap();
                (seq, field("event: "), field("data: "))
            })
            .collect()
    }

    #[tokio::test]
    async fn a_listener_behind_gets_bounded_pieces_with_the_same_text_and_every_other_event() {
        let turn = LiveTurn::new(Uuid::nil(), Uuid::nil(), Uuid::nil());
        let mut text = String::new();
        for i in 0..5_000 {
            let delta = format!("w{i} \"q\" é\\ ");
            text.push_str(&delta);
            turn.push(ChatEvent::TextDelta { text: delta });
            if i == 2_500 {
                turn.push(ChatEvent::ToolExecuting { tool: "save_artifact".into(), input: serde_json::json!({}) });
            }
        }
        turn.push(ChatEvent::Error { code: "c".into(), message: "m".into() });
        let pieces: Vec<Bytes> = turn.subscribe(0).collect().await;
        assert!(pieces.len() > 1 && pieces.iter().all(|p| p.len() <= CATCH_UP_BYTES + 1024), "bounded pieces");
        let events = events_of(&pieces);
        let names: Vec<&str> = events.iter().map(|e| e.1.as_str()).collect();
        assert_eq!(names.iter().filter(|n| **n == "tool_executing").count(), 1);
        assert_eq!(names.last(), Some(&"error"));
        assert!(events.windows(2).all(|w| w[0].0 < w[1].0), "numbers only grow");
        assert_eq!(events.last().unwrap().0, 5_002);
        let joined: String = events
            .iter()
            .filter(|e| e.1 == "text_delta")
            .map(|e| serde_json::from_str::<serde_json::Value>(&e.2).unwrap()["text"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(joined, text);
    }
}
