//! The messages of a conversation on PostgreSQL: what both backends run alike ([`crate::messages`]),
//! with PostgreSQL's way to save a new message.

use super::{insert_new_message, Postgres, Shared};

crate::messages::messages_for!(Postgres, insert_new_message);
