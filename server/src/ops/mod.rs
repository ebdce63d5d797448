//! Running Quire in production: metrics for Prometheus, the log's format, the shutdown deadline.

pub mod logs;
pub mod metrics;

use std::{future::Future, time::Duration};

/// Runs `drain` for at most `deadline`; says so in the log when it had to be left unfinished.
pub async fn within_deadline(deadline: Duration, drain: impl Future<Output = ()>) {
    if tokio::time::timeout(deadline, drain).await.is_err() {
        tracing::warn!(
            seconds = deadline.as_secs_f64(),
            "the shutdown deadline passed with requests still open: stopping without them"
        );
    }
}
