//! Accounts and sessions on SQLite.

use super::{NewUser, Shared, Sqlite};
use crate::store::User;

crate::store::accounts::accounts_for!(Sqlite);
