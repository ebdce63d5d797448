//! Targeted edits of a document's text (the `edit_artifact` tool): each edit replaces one exact passage that
//! occurs once in the current version, and either every edit of a call applies or none does. The work is linear
//! in the text and the edits.

use std::fmt;

use serde::Deserialize;

/// Most edits in one call.
pub const MAX_EDITS: usize = 50;

/// One replacement: `find` must occur exactly once.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Edit {
    pub find: String,
    pub replace: String,
}

/// Why a call's edits were not applied; edits are numbered from 1, as the model reads them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditError {
    /// No edits, or more than [`MAX_EDITS`].
    Count(usize),
    /// The edit's `find` is empty.
    Empty { edit: usize },
    /// The edit's `find` is not in the document.
    Missing { edit: usize },
    /// The edit's `find` occurs more than once (overlapping occurrences count).
    Ambiguous { edit: usize },
    /// Two edits' passages overlap.
    Overlap { edit: usize, other: usize },
}

impl fmt::Display for EditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EditError::Count(0) => write!(f, "No edits were given."),
            EditError::Count(n) => write!(f, "{n} edits were given; at most {MAX_EDITS} fit in one call."),
            EditError::Empty { edit } => write!(f, "Edit {edit}: `find` is empty; give the exact text to replace."),
            EditError::Missing { edit } => write!(
                f,
                "Edit {edit}: its `find` text does not occur in the current version of the document. Copy the text \
                 exactly as it stands (read_artifact gives the current version)."
            ),
            EditError::Ambiguous { edit } => write!(
                f,
                "Edit {edit}: its `find` text occurs more than once in the document. Include more of the surrounding \
                 text so that it occurs exactly once."
            ),
            EditError::Overlap { edit, other } => {
                write!(f, "Edits {other} and {edit} change overlapping text; combine them into one edit.")
            }
        }
    }
}

/// The text with every edit applied, or why none was.
pub fn apply(text: &str, edits: &[Edit]) -> Result<String, EditError> {
    if edits.is_empty() || edits.len() > MAX_EDITS {
        return Err(EditError::Count(edits.len()));
    }
    // Where each edit's passage is: (start, end, edit number).
    let mut spans = Vec::with_capacity(edits.len());
    for (index, edit) in edits.iter().enumerate() {
        let number = index + 1;
        if edit.find.is_empty() {
            return Err(EditError::Empty { edit: number });
        }
        let start = text.find(&edit.find).ok_or(EditError::Missing { edit: number })?;
        // Another occurrence, overlapping this one or later: searched from the character after its start.
        let next = start + text[start..].chars().next().map_or(1, char::len_utf8);
        if text[next..].contains(&edit.find) {
            return Err(EditError::Ambiguous { edit: number });
        }
        spans.push((start, start + edit.find.len(), number));
    }
    spans.sort_unstable();
    for pair in spans.windows(2) {
        let ((_, end, first), (start, _, second)) = (pair[0], pair[1]);
        if start < end {
            return Err(EditError::Overlap { edit: first.max(second), other: first.min(second) });
        }
    }
    let mut edited = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end, number) in spans {
        edited.push_str(&text[at..start]);
        edited.push_str(&edits[number - 1].replace);
        at = end;
    }
    edited.push_str(&text[at..]);
    Ok(edited)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(find: &str, replace: &str) -> Edit {
        Edit { find: find.into(), replace: replace.into() }
    }

    #[test]
    fn every_edit_applies_in_place() {
        let text = "Slots are 30 minutes.\nReminders go out a day before.\nCafé opens at 9.";
        let edited = apply(text, &[edit("a day", "two days"), edit("30", "45"), edit("Café", "Kiosk")]).unwrap();
        assert_eq!(edited, "Slots are 45 minutes.\nReminders go out two days before.\nKiosk opens at 9.");
        // Replacing with nothing deletes; an edit at the very end works.
        assert_eq!(apply("a b c", &[edit(" c", "")]).unwrap(), "a b");
    }

    #[test]
    fn a_bad_edit_applies_none_and_says_which() {
        let text = "one two one three";
        assert_eq!(apply(text, &[edit("two", "2"), edit("four", "4")]), Err(EditError::Missing { edit: 2 }));
        assert_eq!(apply(text, &[edit("one", "1")]), Err(EditError::Ambiguous { edit: 1 }));
        // Overlapping occurrences count too: "aa" is twice in "aaa".
        assert_eq!(apply("aaa", &[edit("aa", "b")]), Err(EditError::Ambiguous { edit: 1 }));
        assert_eq!(
            apply(text, &[edit("two one", "x"), edit("one three", "y")]),
            Err(EditError::Overlap { edit: 2, other: 1 })
        );
        assert_eq!(apply(text, &[edit("", "x")]), Err(EditError::Empty { edit: 1 }));
        assert_eq!(apply(text, &[]), Err(EditError::Count(0)));
        let many = vec![edit("two", "2"); MAX_EDITS + 1];
        assert_eq!(apply(text, &many), Err(EditError::Count(MAX_EDITS + 1)));
        assert!(EditError::Missing { edit: 2 }.to_string().starts_with("Edit 2:"));
    }

    #[test]
    fn adjacent_passages_are_not_overlapping() {
        assert_eq!(apply("abcd", &[edit("ab", "x"), edit("cd", "y")]).unwrap(), "xy");
    }
}
