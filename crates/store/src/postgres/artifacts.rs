//! Documents and their versions on PostgreSQL: what both backends run alike ([`crate::documents`]).

use super::{Postgres, Shared};

crate::artifacts::artifacts_for!(Postgres);
crate::requirements::requirements_for!(Postgres);
