//! Running Quire in production: metrics for Prometheus, the log's format, the shutdown deadline.

pub mod logs;
pub mod metrics;

use std::{future::Future, time::Duration};

use crate::chat::hub::TurnHub;

/// Waits until every turn running here has ended (each saves its answer so far when it stops), asking any turn
/// that started meanwhile to stop too.
pub async fn turns_saved(hub: &TurnHub) {
    loop {
        if hub.turn_ids().is_empty() {
            return;
        }
        hub.cancel_all();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Runs `drain` for at most `deadline`; says so in the log when it had to be left unfinished.
pub async fn within_deadline(deadline: Duration, drain: impl Future<Output = ()>) {
    if tokio::time::timeout(deadline, drain).await.is_err() {
        tracing::warn!(
            seconds = deadline.as_secs_f64(),
            "the shutdown deadline passed with requests still open: stopping without them"
        );
    }
}
