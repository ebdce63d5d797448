//! What the store benchmarks set up alike: the stores to measure (SQLite always, PostgreSQL when
//! `QUIRE_TEST_POSTGRES_URL` names a database, as under `scripts/with-postgres`) and a person to measure with.

#![allow(dead_code)]

use store::{DynStore, NewUser};
use uuid::Uuid;

/// The stores to measure, by backend name: SQLite in `dir`, and PostgreSQL when there is one (else a line says
/// that `group`'s PostgreSQL runs are skipped).
pub fn stores(rt: &tokio::runtime::Runtime, dir: &tempfile::TempDir, group: &str) -> Vec<(&'static str, DynStore)> {
    let sqlite = format!("sqlite://{}", dir.path().join("bench.db").display());
    let mut stores = vec![("sqlite", rt.block_on(store::connect(&sqlite)).expect("store"))];
    match std::env::var("QUIRE_TEST_POSTGRES_URL") {
        Ok(url) => stores.push(("postgres", rt.block_on(store::connect(&url)).expect("postgres store"))),
        Err(_) => {
            println!("{group}/postgres: skipped (set QUIRE_TEST_POSTGRES_URL, or run under scripts/with-postgres)")
        }
    }
    stores
}

/// A new person, named at random.
pub async fn person(store: &DynStore) -> Uuid {
    store
        .create_user(NewUser {
            email: format!("{}@example.com", Uuid::new_v4().simple()),
            password_hash: "not a hash".into(),
            display_name: "Bench".into(),
        })
        .await
        .expect("user")
        .id
}
