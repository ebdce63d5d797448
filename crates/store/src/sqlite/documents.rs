//! Documents and their versions on SQLite: what both backends run alike ([`crate::documents`]).

use super::{Shared, Sqlite};

crate::documents::documents_for!(Sqlite);
