//! Documents and their versions on PostgreSQL: what both backends run alike ([`crate::store::documents`]).

use super::{Postgres, Shared};

crate::store::documents::documents_for!(Postgres);
