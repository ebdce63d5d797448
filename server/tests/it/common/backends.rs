//! Runs one test on every storage backend: SQLite always (a temporary file), PostgreSQL when
//! `QUIRE_TEST_POSTGRES_URL` names a cluster (a database of its own per test, dropped afterwards; without the
//! variable the PostgreSQL runs print a "skipped" line and pass). `stories!` declares async stories over a fresh
//! store, `properties!` proptest properties; both make `<name>::sqlite` and `<name>::postgres`.

use std::{fmt::Debug, future::Future, panic::AssertUnwindSafe, str::FromStr, sync::Arc};

use futures::FutureExt;
use proptest::{
    strategy::Strategy,
    test_runner::{Config as ProptestConfig, TestRunner},
};
use sqlx::{
    postgres::PgPoolOptions,
    sqlite::{SqliteConnectOptions, SqlitePoolOptions},
    PgPool, SqlitePool,
};
use store::DynStore;
use tempfile::TempDir;
use uuid::Uuid;

pub(crate) const POSTGRES_URL_VAR: &str = "QUIRE_TEST_POSTGRES_URL";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    Sqlite,
    Postgres,
}

/// A fresh store, plus a plain connection to the same database for checks the trait cannot make (orphan rows,
/// token totals).
#[derive(Clone)]
pub(crate) struct Db {
    pub(crate) store: DynStore,
    pub(crate) raw: Raw,
    /// Keeps the SQLite file's directory alive.
    pub(crate) _dir: Option<Arc<TempDir>>,
    /// The maintenance URL and name of the PostgreSQL database to drop at the end.
    pub(crate) drop_database: Option<(String, String)>,
}

#[derive(Clone)]
pub(crate) enum Raw {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

impl Raw {
    /// One integer from `sql`, whose only parameter (written `?`) is the id.
    pub(crate) async fn int(&self, sql: &str, id: Uuid) -> i64 {
        let result = match self {
            Raw::Sqlite(pool) => sqlx::query_scalar(sql).bind(id.to_string()).fetch_one(pool).await,
            Raw::Postgres(pool) => sqlx::query_scalar(&sql.replace('?', "$1")).bind(id).fetch_one(pool).await,
        };
        result.unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// Runs `sql`, whose only parameter (written `?`, any number of times) is the id: damage no API can make.
    pub(crate) async fn exec(&self, sql: &str, id: Uuid) {
        let result = match self {
            Raw::Sqlite(pool) => {
                // The checking pool only reads: one connection that may write, for this statement alone.
                let options = (*pool.connect_options()).clone().read_only(false);
                let mut conn = sqlx::ConnectOptions::connect(&options).await.expect("writable sqlite");
                sqlx::query(&sql.replace('?', "?1")).bind(id.to_string()).execute(&mut conn).await.map(drop)
            }
            Raw::Postgres(pool) => sqlx::query(&sql.replace('?', "$1")).bind(id).execute(pool).await.map(drop),
        };
        result.unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// Makes writes to `thread` wait until [`WritesHeld::release`] by locking its row (PostgreSQL only: a SQLite
    /// database's writes belong to the one process that serves it). Reads go on.
    pub(crate) async fn hold_writes(&self, thread: Uuid) -> WritesHeld {
        let Raw::Postgres(pool) = self else { panic!("writes are held back on PostgreSQL only") };
        let mut tx = pool.begin().await.expect("begin");
        sqlx::query("select 1 from threads where id = $1 for update")
            .bind(thread)
            .execute(&mut *tx)
            .await
            .expect("lock the thread's row");
        WritesHeld(tx)
    }

    /// How many rows of `table` have `column` equal to the id.
    pub(crate) async fn count(&self, table: &str, column: &str, id: Uuid) -> i64 {
        self.int(&format!("select count(*) from {table} where {column} = ?"), id).await
    }
}

/// Writes held back by [`Raw::hold_writes`].
pub(crate) struct WritesHeld(sqlx::Transaction<'static, sqlx::Postgres>);

impl WritesHeld {
    /// Lets the writes go on.
    pub(crate) async fn release(self) {
        self.0.rollback().await.expect("release the writes");
    }
}

/// The URL with its database name replaced.
pub(crate) fn with_database(url: &str, name: &str) -> String {
    let (base, params) = match url.split_once('?') {
        Some((base, params)) => (base, Some(params)),
        None => (url, None),
    };
    let host_start = base.find("://").map_or(0, |i| i + 3);
    let server = match base[host_start..].find('/') {
        Some(slash) => &base[..host_start + slash],
        None => base,
    };
    match params {
        Some(params) => format!("{server}/{name}?{params}"),
        None => format!("{server}/{name}"),
    }
}

impl Db {
    /// A store on an empty database, or `None` (after saying so) when PostgreSQL is not configured.
    pub(crate) async fn open(backend: Backend, test: &str) -> Option<Db> {
        match backend {
            Backend::Sqlite => {
                let dir = tempfile::tempdir().expect("temp dir");
                let url = super::sqlite_url(dir.path());
                let store = store::connect(&url).await.expect("open the SQLite store");
                assert_eq!(store.backend(), "sqlite");
                let options = SqliteConnectOptions::from_str(&url).expect("sqlite url").read_only(true);
                let raw = SqlitePoolOptions::new().max_connections(2).connect_with(options).await.expect("raw sqlite");
                Some(Db { store, raw: Raw::Sqlite(raw), _dir: Some(Arc::new(dir)), drop_database: None })
            }
            Backend::Postgres => {
                let (base, name, url) = super::fresh_postgres(test).await?;
                let store = store::connect(&url).await.expect("open the PostgreSQL store");
                assert_eq!(store.backend(), "postgres");
                let raw = PgPoolOptions::new().max_connections(2).connect(&url).await.expect("raw postgres");
                Some(Db { store, raw: Raw::Postgres(raw), _dir: None, drop_database: Some((base, name)) })
            }
        }
    }

    /// Drops the PostgreSQL database (its pools may still be open: `with (force)` ends them).
    pub(crate) async fn close(self) {
        if let Raw::Postgres(pool) = &self.raw {
            pool.close().await;
        }
        if let Some((base, name)) = &self.drop_database {
            if let Ok(pool) = PgPoolOptions::new().max_connections(1).connect(base).await {
                let _ = sqlx::query(&format!("drop database if exists {name} with (force)")).execute(&pool).await;
                pool.close().await;
            }
        }
    }
}

/// Runs one story on a fresh store of the backend and cleans up even when it fails.
pub(crate) async fn run_story<F, Fut>(backend: Backend, test: &str, story: F)
where
    F: FnOnce(Db) -> Fut,
    Fut: Future<Output = ()>,
{
    let Some(db) = Db::open(backend, test).await else { return };
    let keep = db.clone();
    let outcome = AssertUnwindSafe(story(db)).catch_unwind().await;
    keep.close().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// Declares `<story>::sqlite` and `<story>::postgres` for each story function.
macro_rules! stories {
    ($($story:ident),+ $(,)?) => {$(
        mod $story {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::run_story(super::Backend::Sqlite, concat!(stringify!($story), "::sqlite"), super::$story).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::run_story(super::Backend::Postgres, concat!(stringify!($story), "::postgres"), super::$story)
                    .await;
            }
        }
    )+};
}

/// Runs a property on a fresh store of the backend: proptest generates the inputs, a runtime of our own runs
/// the async check (a failed assertion panics; proptest catches it and shrinks).
pub(crate) fn check_property<S, F, Fut>(backend: Backend, test: &str, cases: u32, strategy: S, property: F)
where
    S: Strategy,
    S::Value: Debug,
    F: Fn(Db, S::Value) -> Fut,
    Fut: Future<Output = ()>,
{
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let Some(db) = runtime.block_on(Db::open(backend, test)) else { return };
    // PROPTEST_CASES still wins, for a deeper run by hand.
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(cases);
    let config = ProptestConfig { cases, failure_persistence: None, max_shrink_iters: 64, ..ProptestConfig::default() };
    let outcome = TestRunner::new(config).run(&strategy, |input| {
        runtime.block_on(property(db.clone(), input));
        Ok(())
    });
    runtime.block_on(db.close());
    if let Err(failure) = outcome {
        panic!("{test}: {failure}");
    }
}

/// Declares `<property>::sqlite` and `<property>::postgres` for each `fn property(backend, test_name)`.
macro_rules! properties {
    ($($property:ident),+ $(,)?) => {$(
        mod $property {
            #[test]
            fn sqlite() {
                super::$property(super::Backend::Sqlite, concat!(stringify!($property), "::sqlite"));
            }

            #[test]
            fn postgres() {
                super::$property(super::Backend::Postgres, concat!(stringify!($property), "::postgres"));
            }
        }
    )+};
}

pub(crate) use properties;
pub(crate) use stories;
