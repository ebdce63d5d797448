//! Accounts and sessions on SQLite.

use super::{NewUser, Shared, Sqlite};
use crate::User;

crate::accounts::accounts_for!(Sqlite);
