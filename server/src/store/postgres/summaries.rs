//! Conversation summaries on PostgreSQL.

use super::{add_usage, Postgres, Shared};

crate::store::summaries::summaries_for!(Postgres);
