//! Conversation summaries on SQLite.

use super::{turn_writes::add_usage, Shared, Sqlite};

crate::summaries::summaries_for!(Sqlite);
