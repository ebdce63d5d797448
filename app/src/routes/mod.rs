//! One module per page.

pub mod admin;
pub mod auth;
pub mod chat;
pub mod projects;
pub mod search;
pub mod settings;
pub mod share;
pub mod stats;
