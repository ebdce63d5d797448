//! Plain-text analysis of a conversation: sentences, requirement statements, roles, goals,
//! priorities, the product being discussed and meeting facts (attendees, decisions, actions).
//!
//! Everything here is rule based and deterministic: the same text always gives the same result.

mod classify;
mod goals;
mod keywords;
mod labels;
mod meetings;
mod products;
mod requirements;
mod roles;
mod sentences;
mod text;

use regex::Regex;

pub(crate) use classify::{Priority, Quality};
pub(crate) use goals::Goal;
pub(crate) use keywords::{keywords, stem};
pub(crate) use meetings::{analyse_meeting, ActionItem, Meeting};
pub(crate) use products::derive_subject;
pub(crate) use requirements::{benefit_of, collect_requirements, is_requirement_sentence, Requirement};
pub(crate) use sentences::split_sentences;
pub(crate) use text::{article, capitalize_first, distinct, first_words, strip_terminal, table_cell, words};

// Parsing a single sentence is needed outside this module only by the document tests.
#[cfg(test)]
pub(crate) use requirements::parse_requirement;

/// Compiles a regex known to be valid at compile time.
pub(crate) fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("static regex is valid")
}
