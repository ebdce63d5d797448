//! sqlite: see [`crate::Budgets`]; a turn's start checks them in its own write (`turns.rs`).

use super::{Shared, Sqlite};

crate::budgets::budgets_for!(Sqlite);
