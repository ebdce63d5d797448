//! What a person's message does to a conversation's requirements ledger, by rules: the requirements it states
//! (added), the values it corrects ("slots should be 45 minutes, not 30", "45 minutes instead of 30", "change 30
//! to 45"), the requirements it restates ("actually, customers must book at most 3 slots" replaces the one about
//! booking slots) and those it drops ("drop the dark mode", "we no longer need reminders"). The built-in
//! assistant records what this finds; any model may do better with the `record_requirements` tool.

use std::collections::HashSet;

use lazy_regex::{lazy_regex, Lazy};
use regex::Regex;
use wire::RequirementKind;

use crate::changes::requested_change;
use crate::keywords::{keywords, stem};
use crate::requests::is_generation_sentence;
use crate::requirements::{is_requirement_sentence, parse_requirement};
use crate::sentences::split_sentences;
use crate::text::words;

/// A requirement of the ledger as the rules see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub key: String,
    pub text: String,
    /// Active or changed (not dropped).
    pub in_force: bool,
}

/// One change a message makes to the ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LedgerChange {
    Add { text: String, kind: RequirementKind },
    Change { key: String, text: String },
    Drop { key: String },
}

/// "drop the dark mode", "remove the reminders requirement", "we no longer need reminders", "forget about X".
static DROP: Lazy<Regex> = lazy_regex!(
    r"(?i)^(?:(?:ok(?:ay)?|so|also|and|actually|please)[,\s]+)*(?:(?:let'?s|please|we\s+can|you\s+can)\s+)?(?:drop|remove|forget(?:\s+about)?|scrap|cut|skip)\s+(?:the\s+)?(?P<what>.+?)(?:\s+requirement)?(?:\s+(?:for\s+now|entirely|altogether|completely))?$|^(?:we|i|they|customers|users)\s+(?:no\s+longer|don'?t|do\s+not)\s+(?:need|want|require)\s+(?:the\s+|any\s+)?(?P<what2>.+?)(?:\s+any\s*more|\s+anymore)?$|^(?P<what3>.+?)\s+(?:is|are)\s+(?:no\s+longer\s+needed|out\s+of\s+scope\s+now|not\s+needed\s+any\s*more|not\s+needed\s+anymore)$"
);

/// "Actually, ..." / "On second thought, ..." / "Correction: ...": the sentence restates something said before.
static RESTATES: Lazy<Regex> = lazy_regex!(
    r"(?i)^(?:actually|on\s+second\s+thought|correction|to\s+correct\s+that|wait|sorry|rather|instead)\s*[,:;\-]?\s+"
);

/// Out-of-scope statements: "X is out of scope", "we won't support X", "no X in the first release".
static OUT_OF_SCOPE: Lazy<Regex> = lazy_regex!(
    r"(?i)\b(?:out\s+of\s+scope|not\s+in\s+scope|won'?t\s+(?:support|include|have|need)|will\s+not\s+(?:support|include|have)|not\s+(?:part\s+of|included\s+in)\s+(?:the\s+)?(?:first|initial|mvp|v1))"
);

/// Constraints: a technology, a rule, a date or a budget the solution must keep to.
static CONSTRAINT: Lazy<Regex> = lazy_regex!(
    r"(?i)\b(?:must\s+(?:use|run\s+on|be\s+built\s+(?:with|on)|comply|be\s+hosted)|has\s+to\s+(?:use|run\s+on|comply)|comply\s+with|compliant|gdpr|hipaa|pci|budget|deadline|no\s+later\s+than|by\s+(?:january|february|march|april|may|june|july|august|september|october|november|december|q[1-4]|the\s+end\s+of)|only\s+(?:use|run)|written\s+in|built\s+(?:with|on)\s+\w+)"
);

/// Words too common to tell requirements apart.
const STOP: &[&str] = &[
    "should",
    "must",
    "need",
    "needs",
    "want",
    "wants",
    "able",
    "allow",
    "allows",
    "system",
    "app",
    "users",
    "user",
    "customer",
    "customers",
    "would",
    "like",
    "shall",
    "requirement",
    "drop",
    "remove",
    "longer",
    "anymore",
];

/// The kind of a requirement sentence.
pub fn kind_of(sentence: &str) -> RequirementKind {
    if OUT_OF_SCOPE.is_match(sentence) {
        RequirementKind::OutOfScope
    } else if CONSTRAINT.is_match(sentence) {
        RequirementKind::Constraint
    } else if parse_requirement(sentence).quality.is_some() {
        RequirementKind::Quality
    } else {
        RequirementKind::Functional
    }
}

/// The changes `message` makes to `ledger`, in the order it makes them. A requirement already in force with the
/// same words is not added again.
pub fn ledger_changes(ledger: &[Entry], message: &str) -> Vec<LedgerChange> {
    let mut entries: Vec<Entry> = ledger.to_vec();
    let mut out: Vec<LedgerChange> = Vec::new();
    let mut next = 0usize;
    for sentence in split_sentences(message) {
        let sentence = sentence.trim();
        if sentence.is_empty() || sentence.ends_with('?') {
            continue;
        }
        // A value corrected: every requirement in force that holds the old value takes the new one.
        if let Some(change) = requested_change(sentence) {
            for entry in entries.iter_mut().filter(|e| e.in_force) {
                if let Some(text) = replace_value(&entry.text, &change) {
                    entry.text.clone_from(&text);
                    push_change(&mut out, LedgerChange::Change { key: entry.key.clone(), text });
                }
            }
            // A correction of a value no requirement holds corrects a document or an answer, not the ledger: it
            // states nothing new.
            continue;
        }
        if is_generation_sentence(sentence) {
            continue;
        }
        let bare = strip_end(sentence);
        if let Some(c) = DROP.captures(bare) {
            let what = c.name("what").or(c.name("what2")).or(c.name("what3")).map_or("", |m| m.as_str());
            if let Some(i) = best_match(&entries, what, 0.5) {
                let key = entries[i].key.clone();
                entries[i].in_force = false;
                push_change(&mut out, LedgerChange::Drop { key });
                continue;
            }
        }
        let restated = RESTATES.find(sentence).map(|m| &sentence[m.end()..]);
        let stated = restated.unwrap_or(sentence);
        if !is_requirement_sentence(stated) {
            continue;
        }
        let text = parse_requirement(stated).text;
        let same = words(&text).join(" ");
        if entries.iter().any(|e| e.in_force && words(&e.text).join(" ") == same) {
            continue;
        }
        // "Actually, ..." restates the closest requirement in force, when one is close enough.
        if restated.is_some() {
            if let Some(i) = best_match(&entries, &text, 0.4) {
                entries[i].text.clone_from(&text);
                push_change(&mut out, LedgerChange::Change { key: entries[i].key.clone(), text });
                continue;
            }
        }
        let kind = kind_of(&text);
        entries.push(Entry { key: format!("new-{next}"), text: text.clone(), in_force: true });
        next += 1;
        out.push(LedgerChange::Add { text, kind });
    }
    out
}

/// `text` with every whole-word occurrence of the change's old value replaced by the new one (a compound such as
/// "30-minute" keeps its unit: "45-minute"); `None` when it holds the old value nowhere.
pub fn replace_value(text: &str, change: &crate::changes::Change) -> Option<String> {
    let from = Regex::new(&format!(r"(?i)\b{}\b(?P<unit>-[A-Za-z]+)?", regex::escape(&change.from))).ok()?;
    if !from.is_match(text) {
        return None;
    }
    let replaced = from
        .replace_all(text, |c: &regex::Captures<'_>| match c.name("unit") {
            Some(unit) => compound(&change.to, unit.as_str()),
            None => change.to.clone(),
        })
        .into_owned();
    (replaced != text).then_some(replaced)
}

/// Adds `change`, or replaces an earlier change of the same requirement in `out` (one change per requirement
/// per message, the last wins).
fn push_change(out: &mut Vec<LedgerChange>, change: LedgerChange) {
    let key = match &change {
        LedgerChange::Change { key, .. } | LedgerChange::Drop { key } => key.clone(),
        LedgerChange::Add { .. } => {
            out.push(change);
            return;
        }
    };
    if key.starts_with("new-") {
        return;
    }
    out.retain(|c| !matches!(c, LedgerChange::Change { key: k, .. } | LedgerChange::Drop { key: k } if *k == key));
    out.push(change);
}

/// The new value in the place of a compound: "30-minute" corrected to "45 minutes" is "45-minute" (the unit
/// said once), to "45" is "45-minute".
fn compound(to: &str, unit: &str) -> String {
    let unit_word = unit.trim_start_matches('-');
    match to.rsplit_once(' ') {
        Some((value, last)) if singular(last) == singular(unit_word) => format!("{value}{unit}"),
        _ if to.contains(' ') => to.to_string(),
        _ => format!("{to}{unit}"),
    }
}

fn singular(word: &str) -> String {
    let word = word.to_lowercase();
    word.strip_suffix('s').map_or(word.clone(), str::to_string)
}

fn strip_end(sentence: &str) -> &str {
    sentence.trim().trim_end_matches(['.', '!', ';']).trim()
}

/// The requirement in force whose words `text` shares most of (at least `least` of the shorter's stems); `None`
/// when none does, or two share as much.
fn best_match(entries: &[Entry], text: &str, least: f64) -> Option<usize> {
    let wanted: HashSet<String> = stems(text);
    if wanted.is_empty() {
        return None;
    }
    let mut best: Option<(usize, f64)> = None;
    let mut tied = false;
    for (i, entry) in entries.iter().enumerate().filter(|(_, e)| e.in_force && !e.key.starts_with("new-")) {
        let have = stems(&entry.text);
        if have.is_empty() {
            continue;
        }
        let shared = wanted.intersection(&have).count() as f64;
        let score = shared / wanted.len().min(have.len()) as f64;
        match best {
            Some((_, b)) if score < b => {}
            Some((_, b)) if (score - b).abs() < f64::EPSILON => tied = true,
            _ => {
                best = Some((i, score));
                tied = false;
            }
        }
    }
    best.filter(|(_, score)| *score >= least && !tied).map(|(i, _)| i)
}

fn stems(text: &str) -> HashSet<String> {
    keywords(text, STOP).iter().map(|w| stem(w)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: &str, text: &str) -> Entry {
        Entry { key: key.into(), text: text.into(), in_force: true }
    }

    #[test]
    fn a_message_adds_the_requirements_it_states_once() {
        let changes = ledger_changes(
            &[entry("R-1", "Customers must be able to book a slot.")],
            "Customers must be able to book a slot. Staff should see the day's bookings. Pages must load in under \
             2 seconds. Write user stories.",
        );
        assert_eq!(
            changes,
            vec![
                LedgerChange::Add {
                    text: "Staff should see the day's bookings.".into(),
                    kind: RequirementKind::Functional
                },
                LedgerChange::Add {
                    text: "Pages must load in under 2 seconds.".into(),
                    kind: RequirementKind::Quality
                },
            ]
        );
    }

    #[test]
    fn corrections_change_the_requirements_that_hold_the_old_value() {
        let ledger = [entry("R-1", "Customers must book 30-minute slots."), entry("R-2", "Staff need a dashboard.")];
        for message in ["Slots should be 45 minutes, not 30.", "45 minutes instead of 30", "Change 30 to 45."] {
            let changes = ledger_changes(&ledger, message);
            assert_eq!(changes.len(), 1, "{message}: {changes:?}");
            let LedgerChange::Change { key, text } = &changes[0] else { panic!("{message}: {changes:?}") };
            assert_eq!(key, "R-1");
            assert_eq!(text, "Customers must book 45-minute slots.");
        }
    }

    #[test]
    fn actually_restates_the_closest_requirement() {
        let ledger =
            [entry("R-1", "Customers must be able to cancel a booking."), entry("R-2", "Staff need a dashboard.")];
        let changes =
            ledger_changes(&ledger, "Actually, customers must be able to cancel a booking up to 24 hours before.");
        assert_eq!(
            changes,
            vec![LedgerChange::Change {
                key: "R-1".into(),
                text: "Customers must be able to cancel a booking up to 24 hours before.".into()
            }]
        );
    }

    #[test]
    fn drops_name_the_requirement_they_drop() {
        let ledger =
            [entry("R-1", "We would like a dark mode."), entry("R-2", "The system must send email reminders.")];
        assert_eq!(ledger_changes(&ledger, "Drop the dark mode."), vec![LedgerChange::Drop { key: "R-1".into() }]);
        assert_eq!(
            ledger_changes(&ledger, "We no longer need email reminders."),
            vec![LedgerChange::Drop { key: "R-2".into() }]
        );
        assert!(ledger_changes(&ledger, "Drop the invoices.").is_empty());
    }

    #[test]
    fn kinds_follow_the_wording() {
        assert_eq!(kind_of("Payments are out of scope for the first release."), RequirementKind::OutOfScope);
        assert_eq!(kind_of("The system must use PostgreSQL."), RequirementKind::Constraint);
        assert_eq!(kind_of("Pages must load in under 2 seconds."), RequirementKind::Quality);
        assert_eq!(kind_of("Customers must be able to book a slot."), RequirementKind::Functional);
    }

    #[test]
    fn questions_and_requests_for_documents_change_nothing() {
        let ledger = [entry("R-1", "Customers must book 30-minute slots.")];
        assert!(ledger_changes(&ledger, "Should slots be 45 minutes?").is_empty());
        assert!(ledger_changes(&ledger, "Generate user stories.").is_empty());
        assert!(
            ledger_changes(&ledger, "Breaks should be 15 minutes, not 10.").is_empty(),
            "a correction adds nothing"
        );
    }
}
