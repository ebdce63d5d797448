//! Sign-in throttling per account: after a few free failures each attempt waits twice as long as the one before,
//! up to [`MAX_DELAY_SECS`], so guessing from many addresses is slow and the owner is never kept out for long.
//!
//! An attempt counts as a failure before its check, in the statement that decides whether its wait is over
//! ([`crate::Accounts::count_sign_in_attempt`]), so guesses at once cannot all pass one read of the count.

use std::sync::LazyLock;

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

/// [`delay_after`] in microseconds as an SQL expression over the integer column `failures` (the same text on
/// SQLite and PostgreSQL), so that the database can tell in one statement whether an attempt's wait is over.
pub static DELAY_MICROS_SQL: LazyLock<String> = LazyLock::new(|| {
    let micros = |failures: u32| delay_after(failures).num_microseconds().unwrap_or(i64::MAX);
    let most = micros(u32::MAX);
    let mut sql = String::from("(case");
    for failures in FREE_FAILURES + 1.. {
        let delay = micros(failures);
        if delay >= most {
            break;
        }
        sql.push_str(&format!(" when failures = {failures} then {delay}"));
    }
    sql.push_str(&format!(" when failures > {FREE_FAILURES} then {most} else 0 end)"));
    sql
});

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

    #[tokio::test]
    async fn the_database_computes_the_same_delays() {
        use sqlx::{Connection, SqliteConnection};
        let mut db = SqliteConnection::connect("sqlite::memory:").await.unwrap();
        let sql = format!("select {} from (select ? as failures)", *DELAY_MICROS_SQL);
        for failures in (0..40).chain([1_000, i32::MAX as u32]) {
            let micros: i64 = sqlx::query_scalar(&sql).bind(i64::from(failures)).fetch_one(&mut db).await.unwrap();
            assert_eq!(micros, delay_after(failures).num_microseconds().unwrap(), "{failures}");
        }
    }
}
