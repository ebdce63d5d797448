//! postgres: see [`crate::Budgets`]; a turn's start checks them under a lock of its person
//! (`turns.rs`).

use super::{Postgres, Shared};

crate::budgets::budgets_for!(Postgres);
