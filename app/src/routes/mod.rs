//! One module per page.

pub mod account;
pub mod admin;
pub mod auth;
pub mod chat;
pub mod search;
pub mod stats;
