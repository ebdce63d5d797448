//! Requests to change a value in a document: "slots should be 45 minutes, not 30", "change 30 to 45 minutes",
//! "replace Friday with Monday", "Postgres instead of MySQL". The built-in assistant turns one into a targeted
//! edit of the document that holds the old value.

use lazy_regex::{lazy_regex, Lazy};
use regex::Regex;

use crate::requests::is_generation_sentence;
use crate::split_sentences;

/// A value to change: what the text says now (`from`) and what it should say (`to`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub from: String,
    pub to: String,
}

/// Longest value taken from a request, in characters: a longer one is a passage, not a value.
const MOST_CHARS: usize = 200;

/// "X should be A, not B" (and must, needs to, has to).
static SHOULD_BE: Lazy<Regex> = lazy_regex!(
    r"(?i)\b(?:should|must|needs?\s+to|has\s+to|have\s+to|ought\s+to)\s+be\s+(?P<to>.+?),?\s+(?:and\s+|but\s+)?not\s+(?P<from>.+)$"
);

/// "change X from B to A".
static CHANGE_FROM: Lazy<Regex> = lazy_regex!(
    r"(?i)^(?:(?:please|can\s+you|could\s+you)[,\s]+)?change\s+.+?\s+from\s+(?P<from>.+?)\s+to\s+(?P<to>.+)$"
);

/// "change B to A".
static CHANGE_TO: Lazy<Regex> =
    lazy_regex!(r"(?i)^(?:(?:please|can\s+you|could\s+you)[,\s]+)?change\s+(?P<from>.+?)\s+(?:to|into)\s+(?P<to>.+)$");

/// "replace B with A" (or "by A").
static REPLACE: Lazy<Regex> =
    lazy_regex!(r"(?i)^(?:(?:please|can\s+you|could\s+you)[,\s]+)?replace\s+(?P<from>.+?)\s+(?:with|by)\s+(?P<to>.+)$");

/// "A instead of B".
static INSTEAD: Lazy<Regex> = lazy_regex!(r"(?i)^(?P<before>.+?)\s+instead\s+of\s+(?P<from>.+)$");

/// The words after which the new value of "… A instead of B" starts: "slots should be 45 minutes instead of 30"
/// is "45 minutes".
static LEAD_IN: Lazy<Regex> = lazy_regex!(
    r"(?i)^.*\b(?:be|is|are|was|were|use|using|make|made|set|it|them|to|with|want|wants|need|needs|prefer|please|should|must|become|becomes|say|says)\s+"
);

/// The first change a text asks for, sentence by sentence; `None` when it asks for none.
pub fn requested_change(text: &str) -> Option<Change> {
    split_sentences(text).iter().find_map(|sentence| change_in(sentence))
}

fn change_in(sentence: &str) -> Option<Change> {
    let sentence = sentence.trim();
    // "Write user stories instead of a BRD" asks for a document, not a change.
    if is_generation_sentence(sentence) {
        return None;
    }
    let (from, to) = if let Some(c) = SHOULD_BE.captures(sentence) {
        (c["from"].to_string(), c["to"].to_string())
    } else if let Some(c) = CHANGE_FROM.captures(sentence).or_else(|| CHANGE_TO.captures(sentence)) {
        (c["from"].to_string(), c["to"].to_string())
    } else if let Some(c) = REPLACE.captures(sentence) {
        (c["from"].to_string(), c["to"].to_string())
    } else if let Some(c) = INSTEAD.captures(sentence) {
        let before = &c["before"];
        let to = LEAD_IN.find(before).map_or(before, |lead| &before[lead.end()..]);
        (c["from"].to_string(), to.to_string())
    } else {
        return None;
    };
    let (from, to) = (value(&from), value(&to));
    let fits = |v: &str| !v.is_empty() && v.chars().count() <= MOST_CHARS;
    (fits(&from) && fits(&to) && from != to).then_some(Change { from, to })
}

/// A value as written, without the punctuation that ends its sentence or the quotes around it.
fn value(text: &str) -> String {
    let text = text.trim().trim_end_matches(['.', '!', '?', ';', ',']).trim();
    let unquoted =
        ['"', '\'', '`'].iter().find_map(|q| text.strip_prefix(*q).and_then(|t| t.strip_suffix(*q))).unwrap_or(text);
    unquoted.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(from: &str, to: &str) -> Option<Change> {
        Some(Change { from: from.into(), to: to.into() })
    }

    #[test]
    fn each_way_of_asking_for_a_change_gives_the_old_and_the_new_value() {
        assert_eq!(requested_change("Slots should be 45 minutes, not 30."), change("30", "45 minutes"));
        assert_eq!(requested_change("The deposit must be 20%, not 10%"), change("10%", "20%"));
        assert_eq!(requested_change("Change 30 minutes to 45 minutes"), change("30 minutes", "45 minutes"));
        assert_eq!(
            requested_change("Please change the slot length from 30 to 45 minutes."),
            change("30", "45 minutes")
        );
        assert_eq!(requested_change("Replace Friday with Monday."), change("Friday", "Monday"));
        assert_eq!(requested_change("Replace \"a day\" with \"two days\""), change("a day", "two days"));
        assert_eq!(requested_change("Slots should be 45 minutes instead of 30."), change("30", "45 minutes"));
        assert_eq!(requested_change("Use PostgreSQL instead of MySQL"), change("MySQL", "PostgreSQL"));
        assert_eq!(requested_change("45 minutes instead of 30"), change("30", "45 minutes"));
        assert_eq!(requested_change("Thanks! Make it 45 minutes instead of 30."), change("30", "45 minutes"));
    }

    #[test]
    fn other_messages_ask_for_no_change() {
        for text in [
            "Customers must be able to book a slot.",
            "Generate user stories",
            "What should the slots be?",
            "Change is hard.",
            "Replace it.",
            "Slots should be 30, not 30.",
            "Generate user stories instead of a BRD.",
        ] {
            assert_eq!(requested_change(text), None, "{text}");
        }
    }
}
