//! sqlite: see [`crate::store::Budgets`]; a turn's start checks them in its own write (`turns.rs`).

use super::{Shared, Sqlite};

crate::store::budgets::budgets_for!(Sqlite);
