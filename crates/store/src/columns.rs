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

/// Types a backend stores as they are (plain values of a row, too, so a row type reads every column alike).
macro_rules! native {
    ($($t:ty),*) => {$(
        impl Stored<$t> for $t {
            fn read(self, _: &str) -> Result<$t> {
                Ok(self)
            }
        }
    )*};
}

native!(Uuid, DateTime<Utc>, NaiveDate, String, bool, i64, f64);

impl Stored<Uuid> for String {
    fn read(self, column: &str) -> Result<Uuid> {
        Uuid::parse_str(&self).map_err(|e| StoreError::Corrupt(format!("{column}: {e}")))
    }
}

impl Stored<DateTime<Utc>> for i64 {
    fn read(self, _: &str) -> Result<DateTime<Utc>> {
        Ok(micros_to_time(self))
    }
}

impl Stored<NaiveDate> for String {
    fn read(self, column: &str) -> Result<NaiveDate> {
        NaiveDate::parse_from_str(&self, "%Y-%m-%d").map_err(|e| StoreError::Corrupt(format!("{column}: {e}")))
    }
}

impl Stored<serde_json::Value> for String {
    fn read(self, column: &str) -> Result<serde_json::Value> {
        serde_json::from_str(&self).map_err(|e| StoreError::Corrupt(format!("{column}: {e}")))
    }
}

impl Stored<serde_json::Value> for sqlx::types::Json<Box<serde_json::value::RawValue>> {
    fn read(self, column: &str) -> Result<serde_json::Value> {
        serde_json::from_str(self.0.get()).map_err(|e| StoreError::Corrupt(format!("{column}: {e}")))
    }
}

impl<S: Stored<T>, T> Stored<Option<T>> for Option<S> {
    fn read(self, column: &str) -> Result<Option<T>> {
        self.map(|value| value.read(column)).transpose()
    }
}

/// Declares a row type generic over how the backend keeps ids (`I`), times (`T`), lists (`L`) and JSON (`J`), and its
/// conversion to the type callers see. Each field in the first braces is read ([`Stored::read`]) into the field
/// of that name; the fields after `with` are bound by name for the expressions after `=>`, which make the rest.
macro_rules! stored_row {
    (@reads I) => { uuid::Uuid };
    (@reads T) => { chrono::DateTime<chrono::Utc> };
    (@reads L) => { Vec<String> };
    (@reads J) => { serde_json::Value };
    (
        $(#[$attr:meta])*
        $row:ident<$($p:ident),+> -> $target:ident {
            $($field:ident: $ty:ty),* $(,)?
        }
        $(with {
            $($other:ident: $other_ty:ty),* $(,)?
        } => {
            $($made:ident: $make:expr),* $(,)?
        })?
    ) => {
        $(#[$attr])*
        #[derive(sqlx::FromRow)]
        pub(crate) struct $row<$($p),+> {
            $($field: $ty,)*
            $($($other: $other_ty,)*)?
        }

        impl<$($p),+> TryFrom<$row<$($p),+>> for $target
        where
            $($p: $crate::columns::Stored<$crate::columns::stored_row!(@reads $p)>,)+
        {
            type Error = $crate::StoreError;

            fn try_from(row: $row<$($p),+>) -> $crate::Result<Self> {
                use $crate::columns::Stored as _;
                let $row { $($field,)* $($($other,)*)? } = row;
                Ok($target {
                    $($($made: $make,)*)?
                    $($field: $field.read(stringify!($field))?,)*
                })
            }
        }
    };
}
pub(crate) use stored_row;

/// Rows converted to what callers see, in order; the first malformed one fails them all.
pub(crate) fn convert<R, T: TryFrom<R, Error = StoreError>>(rows: Vec<R>) -> Result<Vec<T>> {
    rows.into_iter().map(T::try_from).collect()
}

/// Ids as a backend stores them, read (see [`Stored`]).
pub(crate) fn ids<I: Stored<Uuid>>(stored: Vec<I>, column: &str) -> Result<Vec<Uuid>> {
    stored.into_iter().map(|id| id.read(column)).collect()
}

/// A value a backend `D` writes and reads as it is.
pub(crate) trait Column<D: sqlx::Database>:
    for<'q> sqlx::Encode<'q, D> + for<'r> sqlx::Decode<'r, D> + sqlx::Type<D> + Send + Sync + Unpin + 'static
{
}

impl<D: sqlx::Database, T> Column<D> for T where
    T: for<'q> sqlx::Encode<'q, D> + for<'r> sqlx::Decode<'r, D> + sqlx::Type<D> + Send + Sync + Unpin + 'static
{
}

/// One backend's way of keeping ids, times and days, for the statements both backends run alike (written once,
/// with `$n` placeholders, which both accept, as methods of [`Sql`]).
pub(crate) trait Dialect: sqlx::Database + sqlx::database::HasStatementCache {
    /// An id as this backend stores it.
    type Id: Column<Self> + Stored<Uuid>;
    /// A time as this backend stores it.
    type Time: Column<Self> + Stored<DateTime<Utc>>;
    /// A UTC day as this backend stores it.
    type Day: Column<Self> + Stored<NaiveDate>;
    /// A JSON value as this backend stores it.
    type Json: Column<Self> + Stored<serde_json::Value>;
    /// A list of ids as this backend binds it, for [`Dialect::in_ids`].
    type Ids: Column<Self>;
    /// A list of whole numbers as this backend binds it, for [`Dialect::in_numbers`].
    type Numbers: Column<Self>;
    /// The lock a `select` takes on the rows it reads until the transaction ends (none where one writer makes
    /// every write one after the other).
    const FOR_UPDATE: &'static str;
    /// The function that gives the larger of its arguments.
    const GREATEST: &'static str;
    /// What follows a text column in an `order by` for it to compare byte-wise (the database's locale aside).
    const BYTEWISE: &'static str;

    fn id(id: Uuid) -> Self::Id;
    fn time(at: DateTime<Utc>) -> Self::Time;
    fn day(day: NaiveDate) -> Self::Day;
    fn json(value: &impl serde::Serialize) -> Result<Self::Json>;
    fn ids(ids: &[Uuid]) -> Self::Ids;
    /// SQL for "`column` is one of the ids bound to the placeholder `param`" (bound with [`Dialect::ids`]).
    fn in_ids(column: &str, param: &str) -> String;
    fn numbers(numbers: &[i64]) -> Self::Numbers;
    /// SQL for "`column` is one of the numbers bound to the placeholder `param`" (bound with
    /// [`Dialect::numbers`]).
    fn in_numbers(column: &str, param: &str) -> String;
    /// What follows a table's name for the query planner to read it through `index` (where one can be named).
    fn indexed_by(index: &str) -> String;
    /// How many rows a statement changed.
    fn rows_affected(done: &Self::QueryResult) -> u64;
    /// SQL for the time `micros` microseconds after `time` (both SQL expressions).
    fn plus_micros(time: &str, micros: &str) -> String;
    /// SQL for the UTC day of `time` (an SQL expression), as this backend stores a day.
    fn utc_day(time: &str) -> String;
    /// SQL for one text column holding every row of a query as a JSON array of arrays of `items` (SQL
    /// expressions): many rows read as one, decoded at once (see [`json_time`] for the times in it).
    fn json_rows(items: &str) -> String;
    /// SQL for a table `alias` of the rows of a JSON array of objects bound (as text) to the placeholder `param`:
    /// many rows written by one statement. `columns` are the objects' keys with their PostgreSQL types.
    fn json_table(param: &str, alias: &str, columns: &[(&str, &str)]) -> String;
}

/// A time as [`Dialect::json_rows`] gives it: microseconds (SQLite) or an RFC 3339 text (PostgreSQL).
pub(crate) fn json_time(value: &serde_json::Value) -> Result<DateTime<Utc>> {
    match value {
        serde_json::Value::Number(n) => n.as_i64().map(super::micros_to_time),
        serde_json::Value::String(s) => DateTime::parse_from_rfc3339(s).ok().map(|t| t.with_timezone(&Utc)),
        _ => None,
    }
    .ok_or_else(|| StoreError::Corrupt(format!("time {value}")))
}

impl Dialect for sqlx::Postgres {
    type Id = Uuid;
    type Time = DateTime<Utc>;
    type Day = NaiveDate;
    /// JSON text as it was made, sent as it is (no tree of the value is built to write it).
    type Json = sqlx::types::Json<Box<serde_json::value::RawValue>>;
    type Ids = Vec<Uuid>;
    type Numbers = Vec<i64>;
    const FOR_UPDATE: &'static str = "for update";
    const GREATEST: &'static str = "greatest";
    const BYTEWISE: &'static str = " collate \"C\"";

    fn id(id: Uuid) -> Uuid {
        id
    }
    fn time(at: DateTime<Utc>) -> DateTime<Utc> {
        at
    }
    fn day(day: NaiveDate) -> NaiveDate {
        day
    }
    fn json(value: &impl serde::Serialize) -> Result<Self::Json> {
        serde_json::value::to_raw_value(value).map(sqlx::types::Json).map_err(|e| StoreError::Corrupt(e.to_string()))
    }
    fn ids(ids: &[Uuid]) -> Vec<Uuid> {
        ids.to_vec()
    }
    fn in_ids(column: &str, param: &str) -> String {
        format!("{column} = any({param})")
    }
    fn numbers(numbers: &[i64]) -> Vec<i64> {
        numbers.to_vec()
    }
    fn in_numbers(column: &str, param: &str) -> String {
        format!("{column} = any({param})")
    }
    fn indexed_by(_: &str) -> String {
        String::new()
    }
    fn rows_affected(done: &sqlx::postgres::PgQueryResult) -> u64 {
        done.rows_affected()
    }
    fn plus_micros(time: &str, micros: &str) -> String {
        format!("{time} + {micros} * interval '1 microsecond'")
    }
    fn utc_day(time: &str) -> String {
        format!("({time} at time zone 'UTC')::date")
    }
    fn json_rows(items: &str) -> String {
        format!("coalesce(json_agg(json_build_array({items})), '[]')::text")
    }
    fn json_table(param: &str, alias: &str, columns: &[(&str, &str)]) -> String {
        let typed: Vec<String> = columns.iter().map(|(name, kind)| format!("{name} {kind}")).collect();
        format!("json_to_recordset(cast({param} as json)) as {alias}({})", typed.join(", "))
    }
}

impl Dialect for sqlx::Sqlite {
    type Id = String;
    type Time = i64;
    type Day = String;
    type Json = String;
    /// A JSON array of the ids, as text.
    type Ids = String;
    /// A JSON array of the numbers, as text.
    type Numbers = String;
    const FOR_UPDATE: &'static str = "";
    const GREATEST: &'static str = "max";
    const BYTEWISE: &'static str = "";

    fn id(id: Uuid) -> String {
        id.to_string()
    }
    fn time(at: DateTime<Utc>) -> i64 {
        at.timestamp_micros()
    }
    fn day(day: NaiveDate) -> String {
        day.format("%Y-%m-%d").to_string()
    }
    fn json(value: &impl serde::Serialize) -> Result<String> {
        serde_json::to_string(value).map_err(|e| StoreError::Corrupt(e.to_string()))
    }
    fn ids(ids: &[Uuid]) -> String {
        serde_json::Value::from(ids.iter().map(Uuid::to_string).collect::<Vec<_>>()).to_string()
    }
    fn in_ids(column: &str, param: &str) -> String {
        format!("{column} in (select value from json_each({param}))")
    }
    fn numbers(numbers: &[i64]) -> String {
        serde_json::Value::from(numbers).to_string()
    }
    fn in_numbers(column: &str, param: &str) -> String {
        format!("{column} in (select value from json_each({param}))")
    }
    fn indexed_by(index: &str) -> String {
        format!("indexed by {index}")
    }
    fn rows_affected(done: &sqlx::sqlite::SqliteQueryResult) -> u64 {
        done.rows_affected()
    }
    fn plus_micros(time: &str, micros: &str) -> String {
        format!("{time} + {micros}")
    }
    fn utc_day(time: &str) -> String {
        format!("date({time} / 1000000, 'unixepoch')")
    }
    fn json_rows(items: &str) -> String {
        format!("json_group_array(json_array({items}))")
    }
    fn json_table(param: &str, alias: &str, columns: &[(&str, &str)]) -> String {
        let read: Vec<String> =
            columns.iter().map(|(name, _)| format!("json_extract(value, '$.{name}') as {name}")).collect();
        format!("(select {} from json_each({param})) as {alias}", read.join(", "))
    }
}

/// The statements both backends run alike, over a connection of the backend `D`; each concept adds its own
/// (with [`shared_sql!`] in its file).
pub(crate) struct Sql<D>(std::marker::PhantomData<D>);

/// Adds statements to [`Sql`]: writes `impl<D: Dialect> Sql<D>` with what every such statement needs of the
/// backend (a connection that runs it, its arguments, the plain values it binds and reads) and, after `rows`,
/// the row types the concept's statements read.
///
/// A macro, as Rust assumes where a trait is used only the bounds on `Self` and its associated types, not bounds
/// on other types (`&mut D::Connection: Executor`, `bool: Column<D>`): a supertrait of [`Dialect`] could not
/// carry them, and every generic `impl` would restate them. The statements stay written once against a generic
/// `D` (not copied into an `impl` for each backend), so they read as the SQL both backends run.
macro_rules! shared_sql {
    (rows($($row:ty),* $(,)?); $($body:tt)*) => {
        impl<D: $crate::columns::Dialect> $crate::columns::Sql<D>
        where
            for<'c> &'c mut D::Connection: sqlx::Executor<'c, Database = D>,
            for<'q> D::Arguments<'q>: sqlx::IntoArguments<'q, D>,
            usize: sqlx::ColumnIndex<D::Row>,
            bool: $crate::columns::Column<D>,
            i32: $crate::columns::Column<D>,
            i64: $crate::columns::Column<D>,
            String: $crate::columns::Column<D>,
            Option<bool>: $crate::columns::Column<D>,
            Option<i64>: $crate::columns::Column<D>,
            Option<String>: $crate::columns::Column<D>,
            Option<D::Id>: $crate::columns::Column<D>,
            Option<D::Json>: $crate::columns::Column<D>,
            Option<D::Time>: $crate::columns::Column<D>,
            for<'a> &'a str: sqlx::Encode<'a, D> + sqlx::Type<D>,
            $($row: for<'r> sqlx::FromRow<'r, D::Row>,)*
        {
            $($body)*
        }
    };
    ($($body:tt)*) => {
        $crate::columns::shared_sql! { rows(); $($body)* }
    };
}
pub(crate) use shared_sql;
