//! Accounts, sessions and API tokens on SQLite.

use super::{NewUser, Shared, Sqlite};
use crate::User;

crate::accounts::accounts_for!(Sqlite);
crate::sso::single_sign_on_for!(Sqlite);
crate::tokens::api_tokens_for!(Sqlite);
