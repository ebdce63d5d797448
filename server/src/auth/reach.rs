//! Ending the open event streams a project member holds on a conversation they did not write, once they no longer
//! reach it: removed from the project, the project deleted, the conversation moved out of it. Every
//! [`CHECK_EVERY`], one statement asks which of this instance's watched pairs (person, conversation) are no longer
//! readable, whichever instance made the change, so such a stream ends within a second of it.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use tokio::sync::watch;
use uuid::Uuid;

use store::DynStore;

/// How often an instance checks its members' streams.
pub const CHECK_EVERY: Duration = Duration::from_millis(400);

/// One open stream: whose, on which conversation, and how it is told to end.
#[derive(Debug)]
struct Watched {
    user: Uuid,
    thread: Uuid,
    end: watch::Sender<bool>,
}

/// The streams members hold on conversations they reach through a project, on this instance.
#[derive(Debug, Default)]
pub struct LiveReach {
    open: Mutex<HashMap<u64, Watched>>,
    next: AtomicU64,
}

impl LiveReach {
    fn open(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Watched>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Resolves when `user` no longer reaches `thread`.
    pub fn lost(&self, user: Uuid, thread: Uuid) -> impl std::future::Future<Output = ()> + Send + 'static {
        let (sender, mut receiver) = watch::channel(false);
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        self.open().insert(key, Watched { user, thread, end: sender });
        async move {
            // An error means the sender is gone, which happens only once the reach was lost.
            let _ = receiver.wait_for(|lost| *lost).await;
        }
    }

    /// The pairs (person, conversation) of the streams still open; the closed ones are forgotten.
    pub fn watched(&self) -> Vec<(Uuid, Uuid)> {
        let mut open = self.open();
        open.retain(|_, watched| watched.end.receiver_count() > 0);
        let mut pairs: Vec<(Uuid, Uuid)> = open.values().map(|w| (w.user, w.thread)).collect();
        pairs.sort_unstable();
        pairs.dedup();
        pairs
    }

    /// Ends the streams of these pairs.
    pub fn end(&self, lost: &[(Uuid, Uuid)]) {
        self.open().retain(|_, watched| {
            let gone = lost.contains(&(watched.user, watched.thread));
            if gone {
                let _ = watched.end.send(true);
            }
            !gone
        });
    }
}

/// Checks the watched streams every [`CHECK_EVERY`] and ends those whose person lost their reach.
pub async fn follow_reach(live: Arc<LiveReach>, store: DynStore) {
    let mut ticks = tokio::time::interval(CHECK_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let watched = live.watched();
        if watched.is_empty() {
            continue;
        }
        match store.unreachable(&watched).await {
            Ok(lost) if !lost.is_empty() => live.end(&lost),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "checking members' streams failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_stream_ends_when_its_pair_is_lost_only() {
        let live = LiveReach::default();
        let (ann, bob, thread) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let first = tokio::spawn(live.lost(ann, thread));
        let other = tokio::spawn(live.lost(bob, thread));
        tokio::task::yield_now().await;
        assert_eq!(live.watched().len(), 2);
        live.end(&[(ann, thread)]);
        first.await.unwrap();
        tokio::task::yield_now().await;
        assert!(!other.is_finished());
        other.abort();
        let _ = other.await;
        assert!(live.watched().is_empty(), "a closed stream is forgotten");
    }
}
