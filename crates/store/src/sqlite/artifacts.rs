//! Documents and their versions on SQLite: what both backends run alike ([`crate::documents`]).

use super::{Shared, Sqlite};

crate::artifacts::artifacts_for!(Sqlite);
crate::requirements::requirements_for!(Sqlite);
