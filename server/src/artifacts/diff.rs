//! Differences between two texts of a document: which lines were kept, removed and added, and within a line
//! that was rewritten, which words changed. Both are `similar`'s; the whole diff shares one deadline, so a
//! hostile pair of texts costs at most about [`DIFF_DEADLINE`] and still gives a true (if coarser) diff.

use std::time::{Duration, Instant};

use similar::{ChangeTag, DiffTag, TextDiff};
use wire::{DiffLine, DiffOp, DiffPart};

/// How long a diff may search for the shortest edit before it settles for a longer, still correct one.
pub const DIFF_DEADLINE: Duration = Duration::from_millis(500);

/// The lines of `old` turned into those of `new`: kept, removed and added, in reading order. Lines removed and
/// added in the same place, alike enough to be one line rewritten, carry their text in parts with the changed
/// words marked.
pub fn diff_lines(old: &str, new: &str) -> Vec<DiffLine> {
    let deadline = Instant::now() + DIFF_DEADLINE;
    let diff = TextDiff::configure().deadline(deadline).diff_lines(old, new);
    let mut lines = Vec::new();
    for op in diff.ops() {
        if op.tag() != DiffTag::Replace {
            lines.extend(diff.iter_changes(op).map(|change| line(change.tag(), change.value(), Vec::new())));
            continue;
        }
        let changes: Vec<_> = diff.iter_inline_changes_deadline(op, Some(deadline)).collect();
        // `similar` gives up on words when the lines are too unlike: then they are lines removed and added,
        // without parts.
        let paired = changes.iter().any(|change| change.values().iter().any(|(changed, _)| *changed));
        for change in changes {
            let text: String = change.values().iter().map(|(_, text)| *text).collect();
            let parts = if paired { parts(change.values()) } else { Vec::new() };
            lines.push(line(change.tag(), &text, parts));
        }
    }
    lines
}

/// A line of the diff, without its line ending.
fn line(tag: ChangeTag, text: &str, parts: Vec<DiffPart>) -> DiffLine {
    let op = match tag {
        ChangeTag::Equal => DiffOp::Equal,
        ChangeTag::Insert => DiffOp::Insert,
        ChangeTag::Delete => DiffOp::Delete,
    };
    DiffLine { op, text: without_line_ending(text).to_string(), parts }
}

fn without_line_ending(text: &str) -> &str {
    text.trim_end_matches(['\n', '\r'])
}

/// The pieces of a rewritten line as `similar` marks them, neighbours alike joined, the line ending left out.
fn parts(values: &[(bool, &str)]) -> Vec<DiffPart> {
    let mut parts: Vec<DiffPart> = Vec::with_capacity(values.len());
    for (changed, text) in values {
        match parts.last_mut() {
            Some(last) if last.changed == *changed => last.text.push_str(text),
            _ => parts.push(DiffPart { changed: *changed, text: (*text).to_string() }),
        }
    }
    // The line ending is in the last pieces (alone, or after the last word).
    while let Some(last) = parts.last_mut() {
        let kept = without_line_ending(&last.text).len();
        if kept > 0 {
            last.text.truncate(kept);
            break;
        }
        parts.pop();
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn joined(line: &DiffLine) -> String {
        line.parts.iter().map(|p| p.text.as_str()).collect()
    }

    fn changed(line: &DiffLine) -> Vec<&str> {
        line.parts.iter().filter(|p| p.changed).map(|p| p.text.as_str()).collect()
    }

    #[test]
    fn a_diff_keeps_common_lines_and_marks_the_changed_ones() {
        let lines = diff_lines("# Plan\nShip in May\nTest\n", "# Plan\nShip in June\nTest\nCelebrate");
        let ops: Vec<(DiffOp, &str)> = lines.iter().map(|l| (l.op, l.text.as_str())).collect();
        assert_eq!(
            ops,
            [
                (DiffOp::Equal, "# Plan"),
                (DiffOp::Delete, "Ship in May"),
                (DiffOp::Insert, "Ship in June"),
                (DiffOp::Equal, "Test"),
                (DiffOp::Insert, "Celebrate"),
            ]
        );
        assert!(diff_lines("same\r\n", "same\r\n").iter().all(|l| l.op == DiffOp::Equal && l.text == "same"));
    }

    #[test]
    fn the_changed_word_of_a_rewritten_line_is_marked() {
        let lines = diff_lines("# Booking\nSlots are 30 minutes\nEnd\n", "# Booking\nSlots are 45 minutes\nEnd\n");
        let deleted = lines.iter().find(|l| l.op == DiffOp::Delete).unwrap();
        let inserted = lines.iter().find(|l| l.op == DiffOp::Insert).unwrap();
        assert_eq!(changed(deleted), ["30"]);
        assert_eq!(changed(inserted), ["45"]);
        assert_eq!(joined(deleted), "Slots are 30 minutes");
        assert_eq!(joined(inserted), "Slots are 45 minutes");
        assert!(lines.iter().filter(|l| l.op == DiffOp::Equal).all(|l| l.parts.is_empty()), "kept lines have none");
    }

    #[test]
    fn parts_join_to_the_line_in_every_case() {
        let pairs = [
            ("a b c\r\nd e f\r\n", "a x c\r\nd e g\r\n"),
            ("one two three", "one two four"),
            ("héllo wörld ünïcode\n", "héllo wörld ünïcöde\n"),
            ("  indented line  \n", "  indented lane  \n"),
            ("first\nsecond line here\nthird\n", "first\nsecond line there and more\nthird\nfourth\n"),
            ("totally different\n", "nothing alike at all, not one word\n"),
        ];
        for (old, new) in pairs {
            for line in diff_lines(old, new) {
                if !line.parts.is_empty() {
                    assert_eq!(joined(&line), line.text, "{old:?} -> {new:?}");
                    assert_ne!(line.op, DiffOp::Equal);
                }
            }
        }
    }

    #[test]
    fn lines_with_nothing_in_common_have_no_parts() {
        let lines = diff_lines("keep\nthe meeting is on Monday\n", "keep\n12345 67890\n");
        assert!(lines.iter().all(|l| l.parts.is_empty()));
        assert_eq!(lines.iter().filter(|l| l.op != DiffOp::Equal).count(), 2);
    }

    /// Two long versions differing on every other line, the line diff's worst input: the deadline cuts the search
    /// short and the diff stays true (kept and deleted lines give the old version, kept and inserted the new).
    #[test]
    fn a_long_diff_ends_by_its_deadline_and_stays_true() {
        let old: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
        let new: String =
            (0..20_000).map(|i| if i % 2 == 0 { format!("line {i}\n") } else { format!("changed {i}\n") }).collect();
        let lines = diff_lines(&old, &new);
        let side = |other: DiffOp| -> String {
            lines.iter().filter(|l| l.op == DiffOp::Equal || l.op == other).map(|l| format!("{}\n", l.text)).collect()
        };
        assert_eq!(side(DiffOp::Delete), old);
        assert_eq!(side(DiffOp::Insert), new);
        assert!(lines.iter().any(|l| l.op == DiffOp::Equal));
        for line in lines.iter().filter(|l| !l.parts.is_empty()) {
            assert_eq!(joined(line), line.text);
        }
    }
}
