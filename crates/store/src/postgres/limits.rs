//! postgres: see [`crate::SharedLimits`]. The table is unlogged: a check must not wait for the
//! write-ahead log to reach the disk, and after a crash every key simply starts again with its full burst.
//! Checks run on the store's pool for limits; the clean-up of idle keys, which may delete many rows, on the
//! main pool so that no check waits behind it.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tracing::instrument;

use super::Postgres;
use crate::limits::{Admission, Rate, SharedLimits};
use crate::Result;

/// [`Rate::decide`] as one statement: a new key is admitted; a known key is admitted if its arrival time,
/// moved on by one interval, is within the tolerance of now. A refusal leaves the arrival time as it was.
const ADMIT: &str = "insert into rate_limits as r (key, tat_micros, admitted) values ($1, $2 + $3, true)
    on conflict (key) do update set
      tat_micros = case when greatest(r.tat_micros, $2) + $3 - $4 <= $2
                        then greatest(r.tat_micros, $2) + $3 else r.tat_micros end,
      admitted = greatest(r.tat_micros, $2) + $3 - $4 <= $2
    returning tat_micros, admitted";

#[async_trait]
impl SharedLimits for Postgres {
    #[instrument(skip(self))]
    async fn admit(&self, key: &str, rate: Rate, now: DateTime<Utc>) -> Result<Admission> {
        let now = now.timestamp_micros();
        let (tat, admitted): (i64, bool) = sqlx::query_as(ADMIT)
            .bind(key)
            .bind(now)
            .bind(rate.interval_micros)
            .bind(rate.tolerance_micros())
            .fetch_one(&self.limits)
            .await?;
        Ok(if admitted { Admission::Admitted } else { Admission::Refused { retry_after: rate.retry_after(tat, now) } })
    }

    #[instrument(skip(self))]
    async fn forget_idle_limits(&self, now: DateTime<Utc>) -> Result<u64> {
        let done = sqlx::query("delete from rate_limits where tat_micros < $1")
            .bind(now.timestamp_micros())
            .execute(&self.pool);
        Ok(done.await?.rows_affected())
    }
}
