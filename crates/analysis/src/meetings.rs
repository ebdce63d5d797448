//! Meeting notes: attendees, discussion points, decisions and action items with their owners.

use lazy_regex::{lazy_regex, Lazy};
use regex::{Captures, Regex};

use super::labels::{
    looks_like_name, looks_like_person, split_label, ACTION_LABELS, ATTENDEE_LABELS, DECISION_LABELS, NOTE_LABELS,
};
use super::sentences::strip_fillers;
use super::text::{as_sentence, squash_spaces, strip_terminal, word_count};

/// An action item: who (if known) and what.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionItem {
    pub owner: Option<String>,
    pub task: String,
}

/// What a conversation says about a meeting.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Meeting {
    pub attendees: Vec<String>,
    pub points: Vec<String>,
    pub decisions: Vec<String>,
    pub actions: Vec<ActionItem>,
}

static DECISION_RE: Lazy<Regex> = lazy_regex!(
    r"(?i)\b(?:decided|decision|agreed|agree\s+on|(?:we|we'll|we\s+will)\s+go\s+with|going\s+with|chose|chosen|settled\s+on|approved|signed\s+off)\b"
);
static NAMED_ACTION_RE: Lazy<Regex> = lazy_regex!(
    r"^(?P<who>[A-Z][a-z'\-]+(?:\s+[A-Z][a-z'\-]+)?)\s+(?P<verb>will|'ll|is\s+going\s+to|is\s+to|to|should|needs\s+to|has\s+to|must|agreed\s+to|volunteered\s+to|offered\s+to)\s+(?P<task>.+)$"
);
static SELF_ACTION_RE: Lazy<Regex> =
    lazy_regex!(r"(?i)^(?:i\s+will|i'll|i\s+am\s+going\s+to|i'm\s+going\s+to)\s+(?P<task>.+)$");
static ACTION_HINT_RE: Lazy<Regex> = lazy_regex!(
    r"(?i)\b(?:action\s+items?|todo|to-do|follow\s+up|follow-up|by\s+(?:monday|tuesday|wednesday|thursday|friday|tomorrow|next\s+week|end\s+of\s+(?:day|week|month)|eod|eow))\b"
);
static NAME_VERB_RE: Lazy<Regex> = lazy_regex!(
    r"\b(?P<n>[A-Z][a-z'\-]+)\s+(?:said|says|mentioned|suggested|asked|agreed|proposed|noted|raised|explained|presented|reported|confirmed|decided|thinks|pointed\s+out|joined|attended|shared|promised|volunteered|offered)\b"
);
static LIST_SPLIT_RE: Lazy<Regex> = lazy_regex!(r"\s*(?:,|;|&|\band\b)\s*");

/// Adds `item` (trimmed) unless it is empty or already there, compared case-insensitively.
fn push_unique(list: &mut Vec<String>, item: &str) {
    let item = item.trim();
    if !item.is_empty() && !list.iter().any(|x| x.eq_ignore_ascii_case(item)) {
        list.push(item.to_string());
    }
}

/// Adds each name of a list such as "Alice, Bob and Carol.".
fn push_listed(list: &mut Vec<String>, names: &str) {
    for name in LIST_SPLIT_RE.split(strip_terminal(names)) {
        push_unique(list, name);
    }
}

/// Adds the names that come before a verb of speech or participation ("Alice said ...").
fn push_named_by_verb(list: &mut Vec<String>, text: &str) {
    for c in NAME_VERB_RE.captures_iter(text) {
        if looks_like_name(&c["n"]) {
            push_unique(list, &c["n"]);
        }
    }
}

/// Names known to be people: attendee lists, speaker labels, "<Name> said ...".
fn known_names(sentences: &[String]) -> Vec<String> {
    let mut names = Vec::new();
    for sentence in sentences {
        let (label, rest) = split_label(sentence);
        match label.map(str::to_lowercase) {
            Some(l) if ATTENDEE_LABELS.contains(&l.as_str()) => push_listed(&mut names, rest),
            Some(_) if label.is_some_and(looks_like_person) => {
                push_unique(&mut names, label.unwrap_or_default());
            }
            _ => {}
        }
        push_named_by_verb(&mut names, sentence);
    }
    names
}

/// Whether "<who> <verb> ..." assigns a task to a person.
fn is_owner(who: &str, verb: &str, known: &[String]) -> bool {
    if known.iter().any(|k| k.eq_ignore_ascii_case(who)) {
        return true;
    }
    let verb = squash_spaces(verb);
    let firm = matches!(
        verb.as_str(),
        "will" | "'ll" | "is going to" | "is to" | "to" | "agreed to" | "volunteered to" | "offered to"
    );
    firm && looks_like_person(who) && !who.ends_with('s')
}

/// Extracts attendees, discussion points, decisions and action items from sentences.
pub fn analyse_meeting(sentences: &[String]) -> Meeting {
    let known = known_names(sentences);
    let mut m = Meeting::default();
    for sentence in sentences {
        let (label, rest) = split_label(sentence);
        let label_lower = label.map(str::to_lowercase);
        let mut speaker = None;
        match label_lower.as_deref() {
            Some(l) if ATTENDEE_LABELS.contains(&l) => {
                push_listed(&mut m.attendees, rest);
                continue;
            }
            Some(l) if DECISION_LABELS.contains(&l) => {
                push_unique(&mut m.decisions, &as_sentence(rest));
                continue;
            }
            Some(l) if ACTION_LABELS.contains(&l) => {
                m.actions.push(action_from(rest, None, &known));
                continue;
            }
            Some(l) if NOTE_LABELS.contains(&l) => {}
            Some(_) if label.is_some_and(looks_like_person) => {
                let name = label.unwrap_or_default();
                push_unique(&mut m.attendees, name);
                speaker = Some(name.to_string());
            }
            _ => {}
        }
        let labelled_note = label_lower.is_some_and(|l| NOTE_LABELS.contains(&l.as_str()));
        let text = if speaker.is_some() || labelled_note { rest } else { sentence.as_str() };
        push_named_by_verb(&mut m.attendees, text);
        let body = strip_fillers(text);
        if let Some(c) = NAMED_ACTION_RE.captures(body) {
            if is_owner(&c["who"], &c["verb"], &known) {
                push_unique(&mut m.attendees, &c["who"]);
                m.actions.push(named_action(&c));
                continue;
            }
        }
        if let Some(c) = SELF_ACTION_RE.captures(body) {
            m.actions.push(ActionItem { owner: speaker.clone(), task: strip_terminal(&c["task"]).to_string() });
            continue;
        }
        if DECISION_RE.is_match(body) {
            push_unique(&mut m.decisions, &attributed(body, speaker.as_deref()));
            continue;
        }
        if ACTION_HINT_RE.is_match(body) {
            m.actions.push(action_from(body, speaker.as_deref(), &known));
            continue;
        }
        if word_count(body) >= 3 {
            push_unique(&mut m.points, &attributed(body, speaker.as_deref()));
        }
    }
    m
}

/// The action of a [`NAMED_ACTION_RE`] match: its person and task.
fn named_action(c: &Captures) -> ActionItem {
    ActionItem { owner: Some(c["who"].to_string()), task: strip_terminal(&c["task"]).to_string() }
}

/// A sentence, prefixed with its speaker's name in bold when known.
fn attributed(text: &str, speaker: Option<&str>) -> String {
    match speaker {
        Some(name) => format!("**{name}:** {}", as_sentence(text)),
        None => as_sentence(text),
    }
}

/// An action item from a sentence, owned by the person it names, else by its speaker.
fn action_from(text: &str, speaker: Option<&str>, known: &[String]) -> ActionItem {
    let text = strip_terminal(strip_fillers(text));
    if let Some(c) = NAMED_ACTION_RE.captures(text) {
        if is_owner(&c["who"], &c["verb"], known) || looks_like_person(&c["who"]) {
            return named_action(&c);
        }
    }
    ActionItem { owner: speaker.map(str::to_string), task: text.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::split_sentences;

    #[test]
    fn extracts_meeting_facts() {
        let sentences: Vec<String> = split_sentences(
            "Attendees: Alice, Bob and Carol\nAlice: we need to ship the beta in May.\nWe decided to use Stripe for payments.\nBob will prepare the mockups by Friday.",
        );
        let m = analyse_meeting(&sentences);
        assert_eq!(m.attendees, vec!["Alice", "Bob", "Carol"]);
        assert_eq!(m.decisions, vec!["We decided to use Stripe for payments."]);
        assert_eq!(m.actions[0].owner.as_deref(), Some("Bob"));
        assert_eq!(m.points[0], "**Alice:** We need to ship the beta in May.");
    }
}
