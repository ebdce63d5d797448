//! Documents and their versions on SQLite: what both backends run alike ([`crate::store::documents`]).

use super::{Shared, Sqlite};

crate::store::documents::documents_for!(Sqlite);
