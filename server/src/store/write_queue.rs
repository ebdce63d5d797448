//! The order in which work reaches SQLite's only writer. A database file has one writer at a time, so with
//! hundreds of conversations streaming every write waits for the others; what waits is served most urgent first:
//! a conversation's start (someone is watching for the first words), then a turn's end, then background work:
//! the progress of running turns (which merges whatever it could not write yet) and the parts of an import.
//! Among equals, in order of asking.

use std::{
    collections::VecDeque,
    sync::{Mutex, MutexGuard},
};

use tokio::sync::oneshot;

/// How urgent a write is, most urgent first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Urgency {
    /// A turn starting: its first words wait for it.
    Start = 0,
    /// A turn ending: its `message_complete` waits for it.
    Finish = 1,
    /// The progress of running turns, and the parts of an import.
    Progress = 2,
}

#[derive(Debug, Default)]
pub struct WriteQueue {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    busy: bool,
    /// One line per urgency; the writer is handed to the front of the first non-empty line.
    waiting: [VecDeque<oneshot::Sender<()>>; 3],
}

/// The writer's turn; handed on when dropped.
#[must_use]
pub struct WriterTurn<'a> {
    queue: &'a WriteQueue,
}

impl WriterTurn<'_> {
    /// Whether a write more urgent than `urgency` waits for the writer.
    pub fn more_urgent_waiting(&self, urgency: Urgency) -> bool {
        self.queue.state().waiting[..urgency as usize].iter().any(|line| !line.is_empty())
    }
}

impl Drop for WriterTurn<'_> {
    fn drop(&mut self) {
        self.queue.hand_on();
    }
}

/// A place in line. Dropped while waiting (its request was cancelled), it gives up its place, and hands the turn
/// on if the turn had just been handed to it.
struct Waiting<'a> {
    queue: &'a WriteQueue,
    receiver: Option<oneshot::Receiver<()>>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        crate::ops::metrics::sqlite_writes_waiting(-1);
        if let Some(mut receiver) = self.receiver.take() {
            receiver.close();
            if receiver.try_recv().is_ok() {
                self.queue.hand_on();
            }
        }
    }
}

impl WriteQueue {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for the writer's turn.
    pub async fn enter(&self, urgency: Urgency) -> WriterTurn<'_> {
        let receiver = {
            let mut state = self.state();
            if !state.busy {
                state.busy = true;
                return WriterTurn { queue: self };
            }
            let (sender, receiver) = oneshot::channel();
            state.waiting[urgency as usize].push_back(sender);
            crate::ops::metrics::sqlite_writes_waiting(1);
            receiver
        };
        let mut waiting = Waiting { queue: self, receiver: Some(receiver) };
        if let Some(receiver) = waiting.receiver.as_mut() {
            // An error would mean the queue is gone, which it cannot be while borrowed.
            let _ = receiver.await;
        }
        waiting.receiver = None;
        WriterTurn { queue: self }
    }

    /// Hands the turn to the most urgent of those waiting, or frees the writer.
    fn hand_on(&self) {
        let mut state = self.state();
        loop {
            let Some(next) = state.waiting.iter_mut().find_map(VecDeque::pop_front) else {
                state.busy = false;
                return;
            };
            // Fails only for a request cancelled meanwhile: the next one gets it.
            if next.send(()).is_ok() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::{sync::Arc, time::Duration};

    #[tokio::test]
    async fn the_most_urgent_goes_first_and_equals_in_order() {
        let queue = Arc::new(WriteQueue::default());
        let order = Arc::new(Mutex::new(Vec::new()));
        let first = queue.enter(Urgency::Progress).await;
        let mut waiting = Vec::new();
        for (name, urgency) in [
            ("progress", Urgency::Progress),
            ("finish", Urgency::Finish),
            ("start 1", Urgency::Start),
            ("start 2", Urgency::Start),
        ] {
            let (queue, order) = (queue.clone(), order.clone());
            waiting.push(tokio::spawn(async move {
                let _turn = queue.enter(urgency).await;
                order.lock().unwrap().push(name);
            }));
            // Each is in line before the next asks.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        drop(first);
        for task in waiting {
            task.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), vec!["start 1", "start 2", "finish", "progress"]);
        assert!(!queue.state().busy, "free again");
    }

    #[tokio::test]
    async fn a_cancelled_wait_never_keeps_the_writer() {
        let queue = Arc::new(WriteQueue::default());
        let held = queue.enter(Urgency::Progress).await;
        // Cancelled while in line.
        let gave_up = tokio::time::timeout(Duration::from_millis(20), queue.enter(Urgency::Start)).await;
        assert!(gave_up.is_err());
        // Cancelled right after the turn was handed to it, before it saw it.
        let mut pending = Box::pin(queue.enter(Urgency::Start));
        assert!(futures::poll!(pending.as_mut()).is_pending());
        drop(held);
        drop(pending);
        let again = tokio::time::timeout(Duration::from_secs(1), queue.enter(Urgency::Finish)).await;
        assert!(again.is_ok(), "the writer was handed on");
    }

    #[tokio::test]
    async fn a_turn_knows_when_a_more_urgent_write_waits() {
        let queue = Arc::new(WriteQueue::default());
        let turn = queue.enter(Urgency::Finish).await;
        assert!(!turn.more_urgent_waiting(Urgency::Finish));
        let in_line = |urgency| {
            let queue = queue.clone();
            tokio::spawn(async move {
                let _turn = queue.enter(urgency).await;
            })
        };
        let progress = in_line(Urgency::Progress);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!turn.more_urgent_waiting(Urgency::Finish), "a less urgent one does not count");
        let start = in_line(Urgency::Start);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(turn.more_urgent_waiting(Urgency::Finish));
        assert!(turn.more_urgent_waiting(Urgency::Progress));
        assert!(!turn.more_urgent_waiting(Urgency::Start), "nothing is more urgent than a start");
        drop(turn);
        start.await.unwrap();
        progress.await.unwrap();
    }
}
