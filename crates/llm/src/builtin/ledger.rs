//! The built-in assistant's side of the requirements ledger: it reads the ledger the prompt carries, records what
//! the latest message adds, changes or drops ([`analysis::ledger`]'s rules), and updates a document to changed
//! requirements with targeted edits.

use std::sync::LazyLock;

use analysis::changes::Change;
use analysis::ledger::{ledger_changes, replace_value, Entry, LedgerChange};
use analysis::{keywords, re, stem, words};
use regex::Regex;
use serde_json::{json, Value};

use super::edits::{plan_edit, Document, EditPlan};

/// Name of the tool that keeps the ledger.
pub const RECORD_REQUIREMENTS: &str = "record_requirements";

/// Where the server puts the ledger in the prompt.
const HEADING: &str = "REQUIREMENTS LEDGER OF THIS CONVERSATION";

/// How the server lists a requirement: `- R-3 (functional, active, from M5): text`.
static LINE: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?m)^- (?P<key>R-\d+) \((?P<kind>[a-z_]+), (?P<status>[a-z]+)(?:, from M\d+)?(?:, covered)?\): (?P<text>.*)$")
});

/// The key the next added requirement gets.
static NEXT: LazyLock<Regex> = LazyLock::new(|| re(r"The next new requirement will be R-(?P<n>\d+)\."));

/// The ledger as the prompt gives it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Ledger {
    pub entries: Vec<Entry>,
    /// The number of the next added requirement.
    pub next: u64,
}

impl Ledger {
    /// The keys of the requirements in force.
    pub fn in_force(&self) -> Vec<String> {
        self.entries.iter().filter(|e| e.in_force).map(|e| e.key.clone()).collect()
    }
}

/// The keys of requirements in force of `ledger` that `text` names (`R-3`), in order.
pub(crate) fn named_keys(ledger: &Ledger, text: &str) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for m in KEY.find_iter(text) {
        let key = m.as_str().to_uppercase();
        if !keys.contains(&key) && ledger.entries.iter().any(|e| e.in_force && e.key == key) {
            keys.push(key);
        }
    }
    keys
}

static KEY: LazyLock<Regex> = LazyLock::new(|| re(r"\b[Rr]-\d{1,9}\b"));

/// The ledger below the system prompt; empty when there is none.
pub(crate) fn ledger(system: &str) -> Ledger {
    let Some(at) = system.rfind(HEADING) else { return Ledger::default() };
    let section = &system[at..];
    let entries = LINE
        .captures_iter(section)
        .map(|c| Entry { key: c["key"].to_string(), text: c["text"].to_string(), in_force: &c["status"] != "dropped" })
        .collect();
    let next = NEXT.captures(section).and_then(|c| c["n"].parse().ok()).unwrap_or(1);
    Ledger { entries, next }
}

/// What the latest message does to the ledger: the `record_requirements` call (none when it does nothing), the
/// keys it changes or drops, and the keys its additions will get.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Recording {
    pub call: Option<Value>,
    pub revised: Vec<String>,
    pub added: Vec<String>,
    /// The texts of the added requirements, in the order of `added`.
    pub added_texts: Vec<String>,
}

/// The recording of `message` against `ledger`.
pub(crate) fn recording(ledger: &Ledger, message: &str) -> Recording {
    let changes = ledger_changes(&ledger.entries, message);
    if changes.is_empty() {
        return Recording::default();
    }
    let mut next = ledger.next;
    let mut out = Recording::default();
    let entries: Vec<Value> = changes
        .into_iter()
        .map(|c| match c {
            LedgerChange::Add { text, kind } => {
                out.added.push(format!("R-{next}"));
                out.added_texts.push(text.clone());
                next += 1;
                json!({ "action": "add", "text": text, "kind": kind.as_str() })
            }
            LedgerChange::Change { key, text } => {
                out.revised.push(key.clone());
                json!({ "action": "change", "key": key, "text": text })
            }
            LedgerChange::Drop { key } => {
                out.revised.push(key.clone());
                json!({ "action": "drop", "key": key })
            }
        })
        .collect();
    out.call = Some(json!({ "entries": entries }));
    out
}

/// "Update the document "T" (ID: id) to the requirements as they stand now." and its lines.
static UPDATE: LazyLock<Regex> = LazyLock::new(|| {
    re(r#"^Update the document ".*" \(ID: (?P<id>[0-9A-Za-z-]+)\) to the requirements as they stand now\."#)
});
static CHANGED: LazyLock<Regex> =
    LazyLock::new(|| re(r#"(?m)^- (?P<key>R-\d+(?:@[0-9a-f]{12})?) changed from "(?P<was>.*)" to "(?P<now>.*)"$"#));
static DROPPED: LazyLock<Regex> =
    LazyLock::new(|| re(r#"(?m)^- (?P<key>R-\d+(?:@[0-9a-f]{12})?) was dropped: "(?P<was>.*)"$"#));

/// The `edit_artifact` call that updates a document to changed requirements, for an "Update document" request;
/// `None` when `request` is not one. Each changed requirement's changed words are changed where the document holds
/// them; each dropped one's line (the one citing its key, else the one sharing most of its words) is removed.
pub(crate) fn update_call(request: &str, documents: &[Document]) -> Option<Result<Value, String>> {
    let id = UPDATE.captures(request.trim_start())?["id"].to_string();
    let Some(document) = documents.iter().find(|d| d.id == id) else {
        return Some(Err("I can't see that document's text, so I can't update it.".into()));
    };
    let mut edits: Vec<(String, String)> = Vec::new();
    let mut keys: Vec<String> = Vec::new();
    for c in CHANGED.captures_iter(request) {
        keys.push(c["key"].to_string());
        let Some(change) = changed_words(&c["was"], &c["now"]) else { continue };
        match plan_edit(&change, std::slice::from_ref(document), None, &c["now"]) {
            Some(EditPlan::Edit { find, replace, .. }) => edits.push((find, replace)),
            _ => edits.extend(section_edits(&document.text, &c["key"], &change)),
        }
    }
    for c in DROPPED.captures_iter(request) {
        keys.push(c["key"].to_string());
        match citing_section(&document.text, &c["key"]) {
            Some(section) if document.text.matches(section.as_str()).count() == 1 => {
                edits.push((section, String::new()));
            }
            _ => edits.extend(covering_line(&document.text, &c["key"], &c["was"]).map(|l| (l, String::new()))),
        }
    }
    // Edits that overlap cannot all apply: the first of them stays.
    let mut kept: Vec<(String, String)> = Vec::new();
    for (find, replace) in edits {
        if kept.iter().all(|(f, _)| !f.contains(find.as_str()) && !find.contains(f.as_str())) {
            kept.push((find, replace));
        }
    }
    if kept.is_empty() {
        return Some(Err("The document holds none of the words these requirements changed.".into()));
    }
    let edits: Vec<Value> =
        kept.into_iter().map(|(find, replace)| json!({ "find": find, "replace": replace })).collect();
    Some(Ok(json!({ "artifact_id": document.id, "edits": edits, "requirements": keys })))
}

/// `edit_artifact` calls that make `change` in the parts of each document citing one of `keys` (see
/// [`section_edits`]); one call per document that has any.
pub(crate) fn revision_calls(documents: &[Document], keys: &[String], change: &Change) -> Vec<Value> {
    documents
        .iter()
        .filter_map(|d| {
            let edits: Vec<(String, String)> = keys.iter().flat_map(|k| section_edits(&d.text, k, change)).collect();
            let edits = distinct_edits(edits);
            (!edits.is_empty()).then(|| {
                let edits: Vec<Value> = edits.into_iter().map(|(f, r)| json!({ "find": f, "replace": r })).collect();
                json!({ "artifact_id": d.id, "edits": edits, "requirements": keys })
            })
        })
        .collect()
}

fn distinct_edits(edits: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut kept: Vec<(String, String)> = Vec::new();
    for (find, replace) in edits {
        if kept.iter().all(|(f, _)| !f.contains(find.as_str()) && !find.contains(f.as_str())) {
            kept.push((find, replace));
        }
    }
    kept
}

/// The part of `text` that cites `[key]`: a heading's whole section (to the next heading of its level or above),
/// or the one line that cites it; `None` when no line or several lines cite it.
fn citing_section(text: &str, key: &str) -> Option<String> {
    let cite = format!("[{key}]");
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let citing: Vec<usize> = lines.iter().enumerate().filter(|(_, l)| l.contains(&cite)).map(|(i, _)| i).collect();
    let [at] = citing.as_slice() else { return None };
    let level = |line: &str| {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        (hashes > 0 && line[hashes..].starts_with(' ')).then_some(hashes)
    };
    let Some(own) = level(lines[*at]) else { return Some(lines[*at].to_string()) };
    let end =
        lines[at + 1..].iter().position(|l| level(l).is_some_and(|n| n <= own)).map_or(lines.len(), |p| at + 1 + p);
    Some(lines[*at..end].concat())
}

/// Edits that make `change` on every line of the part of `text` citing `key` that holds the old value, each line
/// found once in the whole text (a line found twice is left: it cannot be told apart).
pub(crate) fn section_edits(text: &str, key: &str, change: &Change) -> Vec<(String, String)> {
    let Some(section) = citing_section(text, key) else { return Vec::new() };
    section
        .split_inclusive('\n')
        .filter_map(|line| {
            let new = replace_value(line, change)?;
            (text.matches(line).count() == 1).then(|| (line.to_string(), new))
        })
        .collect()
}

/// The words that differ between two texts of a requirement, as a change of value: what is between their common
/// first and last words.
fn changed_words(was: &str, now: &str) -> Option<Change> {
    let a: Vec<&str> = was.split_whitespace().collect();
    let b: Vec<&str> = now.split_whitespace().collect();
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..].iter().rev().zip(b[prefix..].iter().rev()).take_while(|(x, y)| x == y).count();
    let from = a[prefix..a.len() - suffix].join(" ");
    let to = b[prefix..b.len() - suffix].join(" ");
    let trim = |s: &str| s.trim_end_matches(['.', ',', ';', '!']).to_string();
    let (from, to) = (trim(&from), trim(&to));
    (!from.is_empty() && !to.is_empty() && from != to).then_some(Change { from, to })
}

/// The line of `text` (with its line break) that covers a requirement: the one citing `[key]`, else the one
/// sharing most of the requirement's words (at least half), when only one does.
fn covering_line(text: &str, key: &str, requirement: &str) -> Option<String> {
    let cite = format!("[{key}]");
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let citing: Vec<&&str> = lines.iter().filter(|l| l.contains(&cite)).collect();
    if let [line] = citing.as_slice() {
        return Some((**line).to_string());
    }
    let wanted: Vec<String> = keywords(requirement, &[]).iter().map(|w| stem(w)).collect();
    if wanted.is_empty() {
        return None;
    }
    let score = |line: &str| {
        let have: Vec<String> = words(line).iter().map(|w| stem(w)).collect();
        wanted.iter().filter(|w| have.contains(w)).count() as f64 / wanted.len() as f64
    };
    let mut scored: Vec<(f64, &str)> =
        lines.iter().filter(|l| !l.trim_start().starts_with('#')).map(|l| (score(l), *l)).collect();
    scored.sort_by(|x, y| y.0.total_cmp(&x.0));
    match scored.as_slice() {
        [(best, line), rest @ ..] if *best >= 0.5 && rest.first().is_none_or(|(next, _)| next < best) => {
            let line = line.to_string();
            (text.matches(line.as_str()).count() == 1).then_some(line)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SYSTEM: &str = "Rules.\n\nREQUIREMENTS LEDGER OF THIS CONVERSATION (data):\n\
        - R-1 (functional, changed, from M1): Customers must book 30-minute slots.\n\
        - R-3 (quality, active, covered): Pages must load in under 2 seconds.\n\
        - R-2 (functional, dropped, from M1): We would like a dark mode.\n\
        The person's latest message is M5. The next new requirement will be R-4.\n";

    #[test]
    fn the_ledger_is_read_from_the_prompt() {
        let l = ledger(SYSTEM);
        assert_eq!(l.next, 4);
        assert_eq!(l.in_force(), vec!["R-1", "R-3"]);
        assert_eq!(ledger("no ledger"), Ledger::default());
    }

    #[test]
    fn a_message_is_recorded_with_the_keys_it_will_take() {
        let r = recording(&ledger(SYSTEM), "Slots should be 45 minutes, not 30. Staff must see the bookings.");
        assert_eq!(r.revised, vec!["R-1"]);
        assert_eq!(r.added, vec!["R-4"]);
        let entries = r.call.unwrap()["entries"].as_array().unwrap().clone();
        assert_eq!(entries[0]["action"], "change");
        assert_eq!(entries[0]["text"], "Customers must book 45-minute slots.");
        assert_eq!(entries[1]["action"], "add");
        assert_eq!(recording(&ledger(SYSTEM), "Hello there"), Recording::default());
    }

    #[test]
    fn an_update_edits_the_changed_words_and_removes_dropped_lines() {
        let doc = Document {
            id: "d1".into(),
            title: "Stories".into(),
            text: "# Stories\n- Book a 30-minute slot [R-1]\n- Use a dark mode [R-2]\n- Fast pages [R-3]\n".into(),
        };
        let request = "Update the document \"Stories\" (ID: d1) to the requirements as they stand now.\n\
            - R-1 changed from \"Customers must book 30-minute slots.\" to \"Customers must book 45-minute slots.\"\n\
            - R-2 was dropped: \"We would like a dark mode.\"\nRevise only...";
        let call = update_call(request, &[doc]).unwrap().unwrap();
        assert_eq!(call["requirements"], json!(["R-1", "R-2"]));
        let edits = call["edits"].as_array().unwrap();
        assert_eq!(edits.len(), 2, "{call}");
        assert_eq!(edits[1]["find"], "- Use a dark mode [R-2]\n");
        assert_eq!(edits[1]["replace"], "");
        assert!(edits[0]["replace"].as_str().unwrap().contains("45"), "{call}");
        assert!(update_call("Write stories", &[]).is_none());
    }

    #[test]
    fn an_update_reaches_requirements_of_other_conversations() {
        let doc = Document {
            id: "d1".into(),
            title: "Checkout".into(),
            text: "# Checkout\n- Pay by card [R-2@0a1b2c3d4e5f]\n- Print a receipt [R-1]\n".into(),
        };
        let request = "Update the document \"Checkout\" (ID: d1) to the requirements as they stand now.\n\
            - R-2@0a1b2c3d4e5f changed from \"Pay by card.\" to \"Pay by card or bank transfer.\"\nRevise only...";
        let call = update_call(request, &[doc]).unwrap().unwrap();
        assert_eq!(call["requirements"], json!(["R-2@0a1b2c3d4e5f"]));
        let edits = call["edits"].as_array().unwrap();
        assert_eq!(edits.len(), 1, "{call}");
        assert!(edits[0]["replace"].as_str().unwrap().contains("bank transfer"), "{call}");
    }
}
