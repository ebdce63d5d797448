//! sqlite: see [`crate::Admin`]. One writer makes every write one after the other, so a sign-up's
//! checks and its insert never interleave with another's.

use futures::future::BoxFuture;
use sqlx::SqliteConnection;

use super::{NewUser, Shared, Sqlite};
use crate::{Result, User};

impl Sqlite {
    /// Runs a sign-up or a change of who administers: [`Sqlite::write`], already one after the other.
    async fn change_accounts<R, F>(&self, change: F) -> Result<R>
    where
        R: Send + 'static,
        F: for<'c> FnOnce(&'c mut SqliteConnection) -> BoxFuture<'c, Result<R>> + Send + 'static,
    {
        self.write(change).await
    }
}

crate::admin::admin_for!(Sqlite);
