//! Rate limits counted where every instance sees them: one row per key holding the key's theoretical arrival
//! time (GCRA), changed by one statement per check, so N instances on one database allow a limit once, not N
//! times. PostgreSQL implements it (`postgres/limits.rs`); one process owns a SQLite file, so there the limits
//! are counted in that process (`http::rate_limit`) and the store offers none.

use std::{num::NonZeroU32, time::Duration};

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::Result;

/// A limit as GCRA sees it: up to `burst` requests at once, then one more every `interval_micros`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// The time one request uses up, in microseconds.
    pub interval_micros: i64,
    /// Requests admitted at once when the key has been idle.
    pub burst: u32,
}

/// What one check decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    Admitted,
    /// Refused: the next request under the key is admitted after this wait.
    Refused {
        retry_after: Duration,
    },
}

impl Rate {
    /// `n` requests a minute, all of them at once if the key was idle for a minute.
    pub fn per_minute(n: NonZeroU32) -> Self {
        Self { interval_micros: (60_000_000 / i64::from(n.get())).max(1), burst: n.get() }
    }

    /// How far past now a key's arrival time may run and still admit one more request.
    pub fn tolerance_micros(&self) -> i64 {
        self.interval_micros.saturating_mul(i64::from(self.burst))
    }

    /// Whether a request at `now` is admitted when the key's arrival time is `tat` (all in microseconds since
    /// 1970), and the key's arrival time afterwards. This is the rule the database's statement applies.
    pub fn decide(&self, tat: Option<i64>, now: i64) -> (Admission, i64) {
        let next = tat.unwrap_or(now).max(now).saturating_add(self.interval_micros);
        if next - self.tolerance_micros() <= now {
            (Admission::Admitted, next)
        } else {
            let tat = tat.unwrap_or(now);
            (Admission::Refused { retry_after: self.retry_after(tat, now) }, tat)
        }
    }

    /// How long a request refused at `now` waits, the key's arrival time staying `tat`.
    pub fn retry_after(&self, tat: i64, now: i64) -> Duration {
        let wait = tat.max(now).saturating_add(self.interval_micros) - self.tolerance_micros() - now;
        Duration::from_micros(u64::try_from(wait).unwrap_or(0))
    }
}

/// Limits kept in the database, shared by every instance that uses it.
#[async_trait]
pub trait SharedLimits: Send + Sync {
    /// Counts one request under `key` at `now` against `rate`, in one statement.
    async fn admit(&self, key: &str, rate: Rate, now: DateTime<Utc>) -> Result<Admission>;
    /// Deletes the keys whose arrival time has passed by `now` (they are as good as new); returns how many.
    async fn forget_idle_limits(&self, now: DateTime<Utc>) -> Result<u64>;
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: i64 = 1_000_000;

    fn admitted(rate: Rate, tat: &mut Option<i64>, now: i64) -> Admission {
        let (admission, next) = rate.decide(*tat, now);
        *tat = Some(next);
        admission
    }

    #[test]
    fn a_burst_is_admitted_then_one_request_per_interval() {
        let rate = Rate::per_minute(NonZeroU32::new(3).unwrap());
        assert_eq!(rate.interval_micros, 20 * SECOND);
        let mut tat = None;
        let t0 = 1_700_000_000 * SECOND;
        for _ in 0..3 {
            assert_eq!(admitted(rate, &mut tat, t0), Admission::Admitted);
        }
        // The fourth waits until the first one's share of the minute is over.
        assert_eq!(admitted(rate, &mut tat, t0), Admission::Refused { retry_after: Duration::from_secs(20) });
        assert_eq!(
            admitted(rate, &mut tat, t0 + 5 * SECOND),
            Admission::Refused { retry_after: Duration::from_secs(15) },
            "a refusal uses nothing up"
        );
        assert_eq!(admitted(rate, &mut tat, t0 + 20 * SECOND), Admission::Admitted);
        assert!(matches!(admitted(rate, &mut tat, t0 + 20 * SECOND), Admission::Refused { .. }));
        // After a whole idle minute the full burst is back, and not more.
        let later = t0 + 120 * SECOND;
        for _ in 0..3 {
            assert_eq!(admitted(rate, &mut tat, later), Admission::Admitted);
        }
        assert_eq!(admitted(rate, &mut tat, later), Admission::Refused { retry_after: Duration::from_secs(20) });
    }

    #[test]
    fn a_steady_caller_at_the_rate_is_never_refused_and_a_faster_one_is() {
        let rate = Rate::per_minute(NonZeroU32::new(60).unwrap());
        let t0 = 1_700_000_000 * SECOND;
        let mut tat = None;
        assert!((0..600).all(|i| admitted(rate, &mut tat, t0 + i * SECOND) == Admission::Admitted));
        let mut tat = None;
        let admitted_fast = (0..600).filter(|i| admitted(rate, &mut tat, t0 + i * SECOND / 2) == Admission::Admitted);
        // 60 at once, then one a second over the remaining 299.5 s.
        assert_eq!(admitted_fast.count(), 60 + 299);
    }

    #[test]
    fn the_announced_wait_is_enough_and_not_more() {
        let rate = Rate::per_minute(NonZeroU32::new(7).unwrap());
        let t0 = 1_700_000_000 * SECOND;
        let mut tat = None;
        while admitted(rate, &mut tat, t0) == Admission::Admitted {}
        let Admission::Refused { retry_after } = rate.decide(tat, t0).0 else { panic!("refused") };
        let wait = i64::try_from(retry_after.as_micros()).unwrap();
        assert!(matches!(rate.decide(tat, t0 + wait - 1).0, Admission::Refused { .. }));
        assert_eq!(rate.decide(tat, t0 + wait).0, Admission::Admitted);
    }
}
