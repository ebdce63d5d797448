//! Sign-in throttling per account. The policy (how long each failure makes the next attempt wait) is the store's,
//! which applies it in the statement that counts an attempt ([`store::throttle`]); here is the task that forgets old
//! failures.

use chrono::Duration;
use store::DynStore;

pub use store::throttle::*;

/// How often the counts whose last failure is older than [`FORGET_AFTER_HOURS`] are deleted.
const FORGET_EVERY: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// Deletes, now and then, the counts whose last failure is older than [`FORGET_AFTER_HOURS`] (they count for
/// nothing any more).
pub async fn forget_old_failures(store: DynStore) {
    let mut every = tokio::time::interval(FORGET_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let before = store::now() - Duration::hours(FORGET_AFTER_HOURS);
        match store.forget_sign_in_failures(before).await {
            Ok(0) => {}
            Ok(deleted) => tracing::debug!(deleted, "old sign-in failures forgotten"),
            Err(e) => tracing::warn!(error = %e, "deleting old sign-in failures failed"),
        }
    }
}
