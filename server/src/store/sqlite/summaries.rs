//! Conversation summaries on SQLite.

use super::{turn_writes::add_usage, Shared, Sqlite};

crate::store::summaries::summaries_for!(Sqlite);
