//! Sign-in throttling per account: the first few failures cost nothing (typing mistakes), then every further
//! attempt must wait twice as long as the one before, up to [`MAX_DELAY_SECS`], so guessing a password from many
//! addresses is slow while the owner is never kept out for long. Failures are forgotten a day after the last.

use chrono::{DateTime, Duration, Utc};

/// Failures allowed before attempts must wait.
pub const FREE_FAILURES: u32 = 3;
/// The longest wait between two attempts, in seconds.
pub const MAX_DELAY_SECS: i64 = 300;
/// How long after the last failure the count starts again from zero.
pub const FORGET_AFTER_HOURS: i64 = 24;

/// How long an account with `failures` failures waits after the last of them.
pub fn delay_after(failures: u32) -> Duration {
    match failures.checked_sub(FREE_FAILURES) {
        None | Some(0) => Duration::zero(),
        Some(over) => Duration::seconds(1_i64.checked_shl(over - 1).unwrap_or(i64::MAX).min(MAX_DELAY_SECS)),
    }
}

/// How much longer an attempt at `now` must wait, if at all.
pub fn wait(failures: u32, last_failed_at: DateTime<Utc>, now: DateTime<Utc>) -> Option<Duration> {
    if now - last_failed_at > Duration::hours(FORGET_AFTER_HOURS) {
        return None;
    }
    let remaining = last_failed_at + delay_after(failures) - now;
    (remaining > Duration::zero()).then_some(remaining)
}

/// The key failures are counted under: the address as typed, trimmed and in lower case.
pub fn account_key(email: &str) -> String {
    email.trim().to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_then_stop_growing() {
        let delays: Vec<i64> = (0..=14).map(|n| delay_after(n).num_seconds()).collect();
        assert_eq!(delays, vec![0, 0, 0, 0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
        assert_eq!(delay_after(u32::MAX).num_seconds(), MAX_DELAY_SECS);
        // Fifty guesses take hours, not seconds.
        let total: i64 = (0..50).map(|n| delay_after(n).num_seconds()).sum();
        assert!(total > 3 * 3600, "{total}");
    }

    #[test]
    fn waits_run_from_the_last_failure_and_old_failures_are_forgotten() {
        let last = Utc::now();
        assert_eq!(wait(2, last, last), None);
        assert_eq!(wait(5, last, last), Some(Duration::seconds(2)));
        assert_eq!(wait(5, last, last + Duration::seconds(2)), None);
        assert_eq!(wait(40, last, last + Duration::hours(FORGET_AFTER_HOURS) + Duration::seconds(1)), None);
        assert_eq!(account_key("  Ada@Example.ORG "), "ada@example.org");
    }
}
