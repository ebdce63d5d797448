//! postgres: see [`crate::Admin`]. Instances share the database, so a sign-up and a change of who
//! administers take one transaction-scoped advisory lock first: they are made one after the other on every
//! instance, and each sees the accounts the one before made.

use futures::future::BoxFuture;
use sqlx::PgConnection;

use super::{NewUser, Postgres, Shared, User};
use crate::Result;

/// The advisory lock sign-ups and changes of administrators take ("Qacc").
const ACCOUNTS_LOCK: i64 = 0x5161_6363;

impl Postgres {
    /// Runs a sign-up or a change of who administers in one transaction that holds [`ACCOUNTS_LOCK`].
    async fn change_accounts<R, F>(&self, change: F) -> Result<R>
    where
        F: for<'c> FnOnce(&'c mut PgConnection) -> BoxFuture<'c, Result<R>>,
    {
        let mut tx = self.pool.begin().await?;
        sqlx::query("select pg_advisory_xact_lock($1)").bind(ACCOUNTS_LOCK).execute(&mut *tx).await?;
        let done = change(&mut tx).await?;
        tx.commit().await?;
        Ok(done)
    }
}

crate::admin::admin_for!(Postgres);
