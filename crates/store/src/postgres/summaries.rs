//! Conversation summaries on PostgreSQL.

use super::{add_usage, Postgres, Shared};

crate::summaries::summaries_for!(Postgres);
