//! One module per page.

pub mod account;
pub mod auth;
pub mod chat;
pub mod search;
pub mod stats;
