//! Ending the open event streams of sessions that end, and of API tokens revoked: at once when the session ends
//! (or the token is revoked) on this instance, within [`FOLLOW_EVERY`] when it does on another one sharing the
//! database (see [`follow_ended`]). Streams are keyed by the session's id or the token's; a token that merely
//! expires leaves its open streams to finish, as a session that expires does.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::sync::watch;
use uuid::Uuid;

use store::DynStore;

/// How often an instance looks for sessions ended (and API tokens revoked) elsewhere.
pub const FOLLOW_EVERY: Duration = Duration::from_millis(500);

/// The sessions (and API tokens) with open streams on this instance.
#[derive(Debug, Default)]
pub struct LiveSessions {
    open: Mutex<HashMap<Uuid, (Uuid, watch::Sender<bool>)>>,
}

impl LiveSessions {
    fn open(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, (Uuid, watch::Sender<bool>)>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Resolves when the session (or API token) `id` of `user` ends.
    pub fn ended(&self, id: Uuid, user: Uuid) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut receiver = {
            let mut open = self.open();
            // Forget sessions whose streams are all closed.
            if open.len() > 32 {
                open.retain(|_, (_, sender)| sender.receiver_count() > 0);
            }
            open.entry(id).or_insert_with(|| (user, watch::channel(false).0)).1.subscribe()
        };
        async move {
            // An error means the sender is gone, which happens only once the session ended.
            let _ = receiver.wait_for(|ended| *ended).await;
        }
    }

    /// Ends the streams of these sessions (or API tokens).
    pub fn end(&self, ids: &[Uuid]) {
        let mut open = self.open();
        for id in ids {
            if let Some((_, sender)) = open.remove(id) {
                let _ = sender.send(true);
            }
        }
    }

    /// Ends the streams of every session and API token of `user`.
    pub fn end_user(&self, user: Uuid) {
        let mut open = self.open();
        open.retain(|_, (owner, sender)| {
            if *owner == user {
                let _ = sender.send(true);
            }
            *owner != user
        });
    }
}

/// Ends the local streams of sessions ended (and API tokens revoked) on other instances, looking every
/// [`FOLLOW_EVERY`]. Only needed where several instances share the store; where one process owns it, it finds
/// nothing new.
pub async fn follow_ended(live: Arc<LiveSessions>, store: DynStore) {
    // Clocks of instances differ a little: each look reaches back a few seconds (ending twice is harmless).
    let overlap = chrono::Duration::seconds(5);
    let mut since = store::now() - overlap;
    let mut ticks = tokio::time::interval(FOLLOW_EVERY);
    loop {
        ticks.tick().await;
        let now = store::now();
        let ended = match (store.sessions_ended_since(since).await, store.api_tokens_revoked_since(since).await) {
            (Ok(sessions), Ok(tokens)) => sessions.into_iter().map(|(id, _)| id).chain(tokens).collect::<Vec<_>>(),
            (Err(e), _) | (_, Err(e)) => {
                tracing::warn!(error = %e, "looking for ended sessions and revoked tokens failed");
                continue;
            }
        };
        live.end(&ended);
        since = now - overlap;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn streams_end_with_their_session_only() {
        let live = LiveSessions::default();
        let (alice, bob) = (Uuid::new_v4(), Uuid::new_v4());
        let (a1, a2, b1) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let first = tokio::spawn(live.ended(a1, alice));
        let second = tokio::spawn(live.ended(a2, alice));
        let other = tokio::spawn(live.ended(b1, bob));
        live.end(&[a1]);
        first.await.unwrap();
        tokio::task::yield_now().await;
        assert!(!second.is_finished() && !other.is_finished());
        live.end_user(alice);
        second.await.unwrap();
        assert!(!other.is_finished());
        other.abort();
    }
}
