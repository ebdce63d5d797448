//! One module per page.

pub mod chat;
