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

/// The most a listener that is behind takes in one piece (a single event larger than this still goes whole).
pub const COALESCE_BYTES: usize = 32 * 1024;

impl Stream for Listener {
    type Item = Bytes;

    /// The next event; for a listener that is behind (a slow reader, or one joining late), every event waiting, up
    /// to [`COALESCE_BYTES`], in one piece: one write instead of one per event, and each event keeps its id, so
    /// resuming after any of them works as before.
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        let mut log = this.turn.log();
        let waiting = log.events.get(this.next..).unwrap_or_default();
        let Some(first) = waiting.first() else {
            if !log.waiting.iter().any(|w| w.will_wake(cx.waker())) {
                log.waiting.push(cx.waker().clone());
            }
            return Poll::Pending;
        };
        if waiting.len() == 1 || first.last {
            this.next += 1;
            this.done = first.last;
            return Poll::Ready(Some(first.frame.clone()));
        }
        // Only references are taken under the lock; the copy into one piece is made after it.
        let mut taken: Vec<Bytes> = Vec::new();
        let mut bytes = 0;
        for event in waiting {
            if !taken.is_empty() && bytes + event.frame.len() > COALESCE_BYTES {
                break;
            }
            bytes += event.frame.len();
            taken.push(event.frame.clone());
            if event.last {
                this.done = true;
                break;
            }
        }
        drop(log);
        this.next += taken.len();
        Poll::Ready(Some(join(&taken, bytes)))
    }
}

/// Frames written one after another as one piece of `bytes` bytes.
pub fn join(frames: &[Bytes], bytes: usize) -> Bytes {
    match frames {
        [one] => one.clone(),
        _ => {
            let mut out = BytesMut::with_capacity(bytes);
            for frame in frames {
                out.put_slice(frame);
            }
            out.freeze()
        }
    }
}

/// Frames grouped into pieces of at most [`COALESCE_BYTES`] (a larger frame alone), in order: what a listener that
/// is behind is sent.
pub fn coalesce(frames: Vec<Bytes>) -> Vec<Bytes> {
    let mut pieces = Vec::new();
    let (mut group, mut bytes) = (Vec::new(), 0);
    for frame in frames {
        if !group.is_empty() && bytes + frame.len() > COALESCE_BYTES {
            pieces.push(join(&group, bytes));
            group.clear();
            bytes = 0;
        }
        bytes += frame.len();
        group.push(frame);
    }
    if !group.is_empty() {
        pieces.push(join(&group, bytes));
    }
    pieces
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
        // A listener that is behind gets what is waiting in one piece, each event with its id.
        let ids = |piece: Bytes| {
            String::from_utf8_lossy(&piece).lines().filter(|l| l.starts_with("id: ")).map(str::to_string).collect()
        };
        let pieces: Vec<Vec<String>> = listener.map(ids).collect().await;
        assert_eq!(pieces.len(), 1, "{pieces:?}");
        let all = pieces.concat();
        assert_eq!(
            all,
            [
                "id: 00000000-0000-0000-0000-000000000000:1",
                "id: 00000000-0000-0000-0000-000000000000:2",
                "id: 00000000-0000-0000-0000-000000000000:3"
            ]
        );
        let rest: Vec<String> = resumed.map(ids).collect::<Vec<Vec<String>>>().await.concat();
        assert_eq!(rest, all[1..]);
    }

    /// The events in a piece of SSE text (each ends with a blank line).
    fn events_in(piece: &[u8]) -> usize {
        String::from_utf8_lossy(piece).matches("\n\n").count()
    }

    #[tokio::test]
    async fn a_listener_that_keeps_up_gets_one_event_at_a_time() {
        let turn = LiveTurn::new(Uuid::nil(), Uuid::nil(), Uuid::nil());
        let mut listener = turn.subscribe(0);
        for text in ["a", "b"] {
            turn.push(ChatEvent::TextDelta { text: text.into() });
            let piece = listener.next().await.expect("an event");
            assert_eq!(events_in(&piece), 1, "{piece:?}");
        }
    }

    #[tokio::test]
    async fn a_listener_far_behind_gets_pieces_of_at_most_the_limit_in_order() {
        let turn = LiveTurn::new(Uuid::nil(), Uuid::nil(), Uuid::nil());
        let big = "x".repeat(COALESCE_BYTES + 10);
        for i in 0..2_000 {
            turn.push(ChatEvent::TextDelta { text: format!("delta {i} of a long answer") });
        }
        turn.push(ChatEvent::TextDelta { text: big.clone() });
        turn.push(ChatEvent::TextDelta { text: "after".into() });
        turn.push(ChatEvent::Error { code: "failed".into(), message: "end".into() });
        let pieces: Vec<Bytes> = turn.subscribe(0).collect().await;
        // Larger pieces, each within the limit but for the one event larger than it, which goes alone.
        assert!(pieces.len() < 20, "{} pieces", pieces.len());
        for piece in &pieces {
            assert!(piece.len() <= COALESCE_BYTES || events_in(piece) == 1, "{}", piece.len());
        }
        // Every event once, in order, each with its own id, the last one ending the stream.
        let text: String = pieces.iter().map(|p| String::from_utf8_lossy(p).into_owned()).collect();
        let seqs: Vec<i64> = text
            .lines()
            .filter_map(|l| l.strip_prefix("id: 00000000-0000-0000-0000-000000000000:"))
            .map(|n| n.parse().expect("a number"))
            .collect();
        assert_eq!(seqs, (1..=2_003).collect::<Vec<_>>());
        assert!(text.contains(&big), "the large event went whole");
        assert!(text.ends_with("\"end\"}\n\n") && text.contains("event: error"), "{}", &text[text.len() - 80..]);
    }

    #[test]
    fn frames_are_grouped_up_to_the_limit_in_order() {
        let frame = |n: usize| Bytes::from(vec![b'a' + (n % 26) as u8; 1_000 * n]);
        let frames: Vec<Bytes> = (1..=40).map(frame).collect();
        let pieces = coalesce(frames.clone());
        assert_eq!(pieces.concat(), frames.concat());
        assert!(pieces.iter().all(|p| p.len() <= COALESCE_BYTES || frames.contains(p)));
        assert!(pieces.len() < frames.len());
        assert_eq!(coalesce(Vec::new()), Vec::<Bytes>::new());
    }
}
