//! How each backend keeps ids, times and days: PostgreSQL as `uuid`, `timestamptz` and `date`, SQLite as text,
//! microseconds and `YYYY-MM-DD` text. A row type generic over these reads the same columns on both backends
//! (`SessionRow<Uuid, DateTime<Utc>>` on PostgreSQL, `SessionRow<String, i64>` on SQLite), and its conversion to
//! the type callers see is written once.

use chrono::{DateTime, NaiveDate, Utc};
use uuid::Uuid;

use super::{micros_to_time, Result, StoreError};

/// A column as one backend stores it, read as `T`; `column` names it in the error a malformed value gives.
pub(crate) trait Stored<T> {
    fn read(self, column: &str) -> Result<T>;
}

impl Stored<Uuid> for Uuid {
    fn read(self, _: &str) -> Result<Uuid> {
        Ok(self)
    }
}

impl Stored<Uuid> for String {
    fn read(self, column: &str) -> Result<Uuid> {
        Uuid::parse_str(&self).map_err(|e| StoreError::Corrupt(format!("{column}: {e}")))
    }
}

impl Stored<DateTime<Utc>> for DateTime<Utc> {
    fn read(self, _: &str) -> Result<DateTime<Utc>> {
        Ok(self)
    }
}

impl Stored<DateTime<Utc>> for i64 {
    fn read(self, _: &str) -> Result<DateTime<Utc>> {
        Ok(micros_to_time(self))
    }
}

impl Stored<NaiveDate> for NaiveDate {
    fn read(self, _: &str) -> Result<NaiveDate> {
        Ok(self)
    }
}

impl Stored<NaiveDate> for String {
    fn read(self, column: &str) -> Result<NaiveDate> {
        NaiveDate::parse_from_str(&self, "%Y-%m-%d").map_err(|e| StoreError::Corrupt(format!("{column}: {e}")))
    }
}

impl<S: Stored<T>, T> Stored<Option<T>> for Option<S> {
    fn read(self, column: &str) -> Result<Option<T>> {
        self.map(|value| value.read(column)).transpose()
    }
}

/// Rows converted to what callers see, in order; the first malformed one fails them all.
pub(crate) fn convert<R, T: TryFrom<R, Error = StoreError>>(rows: Vec<R>) -> Result<Vec<T>> {
    rows.into_iter().map(T::try_from).collect()
}

/// Ids as a backend stores them, read (see [`Stored`]).
pub(crate) fn ids<I: Stored<Uuid>>(stored: Vec<I>, column: &str) -> Result<Vec<Uuid>> {
    stored.into_iter().map(|id| id.read(column)).collect()
}
