//! Line labels: a speaker's name ("Alice: ...") or a note heading ("Decisions: ...") before a
//! colon, and telling people's names apart from other capitalised words.

use lazy_regex::{lazy_regex, Lazy};
use regex::Regex;

use super::roles::role_of;

static LABEL_RE: Lazy<Regex> =
    lazy_regex!(r"^(?P<label>[A-Za-z][\w'\-]*(?:\s+[A-Za-z][\w'\-]*){0,2})\s*:\s+(?P<rest>.+)$");

/// Splits a leading "Label: " (a speaker name or a heading word) from a sentence.
pub fn split_label(sentence: &str) -> (Option<&str>, &str) {
    match LABEL_RE.captures(sentence) {
        Some(c) => (Some(c.name("label").map_or("", |m| m.as_str())), c.name("rest").map_or(sentence, |m| m.as_str())),
        None => (None, sentence),
    }
}

/// Removes a leading speaker name or note label ("Alice: ...", "Note: ...") from a sentence.
pub fn strip_speaker(sentence: &str) -> &str {
    match split_label(sentence) {
        (Some(label), rest) if looks_like_person(label) || is_known_label(&label.to_lowercase()) => rest,
        _ => sentence,
    }
}

fn is_known_label(label: &str) -> bool {
    [ATTENDEE_LABELS, DECISION_LABELS, ACTION_LABELS, NOTE_LABELS].iter().any(|list| list.contains(&label))
}

/// Capitalised words that start sentences but are not names.
const NOT_NAMES: &[&str] = &[
    "i",
    "we",
    "the",
    "they",
    "it",
    "this",
    "that",
    "these",
    "those",
    "there",
    "he",
    "she",
    "you",
    "our",
    "my",
    "and",
    "but",
    "so",
    "also",
    "then",
    "everyone",
    "someone",
    "nobody",
    "management",
    "maybe",
    "please",
    "what",
    "when",
    "where",
    "why",
    "how",
    "who",
    "if",
    "finally",
    "next",
    "now",
    "today",
    "yesterday",
    "tomorrow",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "a",
    "an",
    "all",
    "each",
    "some",
    "any",
    "no",
    "yes",
    "ok",
    "okay",
    "system",
    "app",
    "it's",
    "let's",
    "one",
    "both",
    "in",
    "on",
    "for",
    "with",
    "after",
    "before",
];

/// Headings of a list of people present.
pub(super) const ATTENDEE_LABELS: &[&str] = &[
    "attendees",
    "attendee",
    "participants",
    "participant",
    "present",
    "in attendance",
    "attending",
    "people",
    "invitees",
];
/// Headings of a decision.
pub(super) const DECISION_LABELS: &[&str] = &["decision", "decisions", "agreed", "resolution", "resolved", "outcome"];
/// Headings of an action item.
pub(super) const ACTION_LABELS: &[&str] = &[
    "action",
    "actions",
    "action item",
    "action items",
    "todo",
    "to do",
    "to-do",
    "next step",
    "next steps",
    "follow up",
    "follow-up",
    "task",
    "tasks",
];
/// Headings of a note that is neither a decision nor an action.
pub(super) const NOTE_LABELS: &[&str] = &[
    "note",
    "notes",
    "agenda",
    "topic",
    "summary",
    "context",
    "goal",
    "goals",
    "background",
    "update",
    "question",
    "fyi",
    "ps",
    "requirement",
    "requirements",
    "idea",
    "problem",
    "issue",
    "risk",
    "important",
    "feedback",
    "date",
    "time",
    "location",
    "subject",
    "re",
];

/// Whether a word is written like a first name ("Alice", "O'Brien") and is not a common word or role.
pub(super) fn looks_like_name(word: &str) -> bool {
    let lower = word.to_lowercase();
    word.chars().next().is_some_and(char::is_uppercase)
        && word.chars().skip(1).all(|c| c.is_lowercase() || c == '-' || c == '\'')
        && word.len() > 1
        && !NOT_NAMES.contains(&lower.as_str())
        && role_of(&lower).is_none()
}

/// Whether a label is one or two names ("Alice", "Bob Smith").
pub(super) fn looks_like_person(label: &str) -> bool {
    let parts: Vec<&str> = label.split_whitespace().collect();
    !parts.is_empty() && parts.len() <= 2 && parts.iter().all(|w| looks_like_name(w))
}
