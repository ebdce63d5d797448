//! Accounts, sessions and API tokens on PostgreSQL, and how the concepts written once for both backends (such as
//! [`accounts_for`](crate::accounts::accounts_for)) reach this one's pool.

use futures::future::BoxFuture;
use sqlx::{pool::PoolConnection, PgConnection};

use super::{NewUser, Postgres, Shared, User};
use crate::Result;

impl Postgres {
    /// A connection of the pool, for reads.
    pub(super) async fn read(&self) -> Result<PoolConnection<sqlx::Postgres>> {
        Ok(self.pool.acquire().await?)
    }

    /// Runs statements that stand alone, each committed as it runs.
    pub(super) async fn write<R, F>(&self, write: F) -> Result<R>
    where
        F: for<'c> FnOnce(&'c mut PgConnection) -> BoxFuture<'c, Result<R>>,
    {
        write(&mut *self.pool.acquire().await?).await
    }

    /// Runs statements that must agree, in one transaction.
    pub(super) async fn write_together<R, F>(&self, write: F) -> Result<R>
    where
        F: for<'c> FnOnce(&'c mut PgConnection) -> BoxFuture<'c, Result<R>>,
    {
        let mut tx = self.pool.begin().await?;
        let done = write(&mut tx).await?;
        tx.commit().await?;
        Ok(done)
    }
}

crate::accounts::accounts_for!(Postgres);
crate::sso::single_sign_on_for!(Postgres);
crate::tokens::api_tokens_for!(Postgres);
