//! The messages of a conversation on SQLite: what both backends run alike ([`crate::messages`]), with
//! SQLite's way to save a new message.

use super::{turn_writes::insert_message, Shared, Sqlite};

crate::messages::messages_for!(Sqlite, insert_message);
