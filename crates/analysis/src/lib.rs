//! Quire's reading of what people write: sentences, requirement statements, roles, goals, priorities, the product
//! being discussed and meeting facts (attendees, decisions, actions), and which messages ask for a document or about
//! attached files ([`requests`]). The chat layer uses [`requests`] to keep requests already answered out of what
//! every model sees; the built-in assistant uses all of it to write its answers and documents.
//!
//! Everything here is rule based and deterministic: the same text always gives the same result. No I/O, no async,
//! no dependency on the rest of Quire but the wire types.

pub mod changes;
mod classify;
mod goals;
mod keywords;
mod labels;
pub mod ledger;
mod meetings;
mod products;
pub mod quotes;
pub mod requests;
mod requirements;
mod roles;
mod sentences;
mod text;

use regex::Regex;

pub use classify::{Priority, Quality};
pub use goals::Goal;
pub use keywords::{keywords, stem};
pub use meetings::{analyse_meeting, ActionItem, Meeting};
pub use products::derive_subject;
pub use requirements::{benefit_of, collect_requirements, is_requirement_sentence, Requirement};
pub use sentences::split_sentences;
pub use text::{article, capitalize_first, distinct, first_words, strip_terminal, table_cell, words};

pub use requirements::parse_requirement;

/// Compiles a regex known to be valid at compile time.
pub fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("static regex is valid")
}
