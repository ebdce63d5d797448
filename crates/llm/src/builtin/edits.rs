//! The built-in assistant's targeted edits: for a requested change ("slots should be 45 minutes, not 30") it
//! finds the document of the conversation that holds the old value and the smallest passage around it that
//! occurs once (the value itself, else its line, else the quoted passage), and replaces the value there. Rules,
//! not guesses: a value found in several places it cannot tell apart is reported, never picked at random.

use std::sync::LazyLock;

use analysis::changes::Change;
use analysis::quotes::QuotedPassage;
use regex::Regex;

use analysis::re;

/// A document as the prompt gives it: title, ID and current text (only those whose text it shows).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Document {
    pub id: String,
    pub title: String,
    pub text: String,
}

/// How the server lists a document below the prompt: `- "Title" (Kind, ID: id, version n)`.
static LISTED: LazyLock<Regex> =
    LazyLock::new(|| re(r#"(?m)^- "(?P<title>.*)" \([^\n]*?, ID: (?P<id>[0-9A-Za-z-]+), version \d+\)$"#));

/// How the server shows a document's text below the prompt.
static SHOWN: LazyLock<Regex> = LazyLock::new(|| re(r#"(?m)^<document id="(?P<id>[0-9A-Za-z-]+)" version="\d+">$"#));

/// The documents whose text the system prompt shows, with their titles.
pub(crate) fn documents(system: &str) -> Vec<Document> {
    let titles: Vec<(String, String)> =
        LISTED.captures_iter(system).map(|c| (c["id"].to_string(), c["title"].to_string())).collect();
    SHOWN
        .captures_iter(system)
        .filter_map(|c| {
            let id = c["id"].to_string();
            let start = c.get(0)?.end() + 1;
            let body = system.get(start..)?;
            let end = body.find("\n</document>")?;
            let title = titles.iter().find(|(i, _)| *i == id).map(|(_, t)| t.clone())?;
            Some(Document { id, title, text: body[..end].to_string() })
        })
        .collect()
}

/// What the assistant does about a requested change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EditPlan {
    /// One edit of one document: `find` (occurring once in it) becomes `replace`; `from` became `to` in it.
    Edit { id: String, title: String, find: String, replace: String, from: String, to: String },
    /// The old value is there, but where cannot be told: in several documents, or several times in one.
    Unclear { from: String, titles: Vec<String>, times: usize },
}

/// A document that holds the old value: the value as it stands there, and where (byte ranges).
type Holding<'a> = (&'a Document, String, Vec<(usize, usize)>);

/// The edit that makes `change` in the documents; `None` when no document holds the old value. With a quoted
/// passage, only the quoted document is looked at, and the value inside the passage first.
pub(crate) fn plan_edit(
    change: &Change,
    documents: &[Document],
    quote: Option<&QuotedPassage>,
    message: &str,
) -> Option<EditPlan> {
    let quoted = quote.and_then(|q| documents.iter().find(|d| d.id == q.artifact_id));
    let candidates: Vec<&Document> = match quoted {
        Some(document) => vec![document],
        None => documents.iter().collect(),
    };
    // Each document holding the old value, with the value as it stands there.
    let holding: Vec<Holding<'_>> = candidates
        .into_iter()
        .filter_map(|d| {
            let from = widened_value(change, &d.text);
            let found = occurrences(&d.text, &from);
            (!found.is_empty()).then_some((d, from, found))
        })
        .collect();
    let lower = message.to_lowercase();
    let chosen = match holding.as_slice() {
        [] => return None,
        [one] => one,
        several => {
            // The one the message names by title, if it names exactly one.
            let named: Vec<_> = several.iter().filter(|(d, ..)| lower.contains(&d.title.to_lowercase())).collect();
            match named.as_slice() {
                [one] => *one,
                _ => {
                    let titles = several.iter().map(|(d, ..)| d.title.clone()).collect();
                    return Some(EditPlan::Unclear { from: change.from.clone(), titles, times: several.len() });
                }
            }
        }
    };
    let (document, from, found) = chosen;
    let text = document.text.as_str();
    // Inside the quoted passage, when it is still in the document.
    let passage = quote.filter(|_| quoted.is_some()).and_then(|q| located_passage(text, q.passage.trim()));
    let within = |(s, e): &(usize, usize)| passage.is_some_and(|(start, end)| *s >= start && *e <= end);
    // The value in the passage; one the passage does not hold is looked for in the whole document.
    let inside: Vec<(usize, usize)> = match found.iter().copied().filter(within).collect::<Vec<_>>() {
        in_passage if !in_passage.is_empty() => in_passage,
        _ => found.clone(),
    };
    let unclear = |times: usize| EditPlan::Unclear { from: from.clone(), titles: vec![document.title.clone()], times };
    let [(start, end)] = inside.as_slice() else { return Some(unclear(inside.len())) };
    let (start, end) = (*start, *end);
    let to = matched_case(&text[start..end], &change.to);
    // The smallest passage around the value that occurs once: the value, its line, the quoted passage.
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[end..].find('\n').map_or(text.len(), |i| end + i);
    let mut spans = vec![(start, end), (line_start, line_end)];
    spans.extend(passage.filter(|_| within(&(start, end))));
    let Some((find_start, find_end)) = spans.into_iter().find(|(s, e)| unique_span(text, &text[*s..*e]).is_some())
    else {
        return Some(unclear(1));
    };
    let find = &text[find_start..find_end];
    let replace = format!("{}{to}{}", &text[find_start..start], &text[end..find_end]);
    Some(EditPlan::Edit {
        id: document.id.clone(),
        title: document.title.clone(),
        find: find.to_string(),
        replace,
        from: text[start..end].to_string(),
        to,
    })
}

/// The old value as the document writes it: "30" with the words the new value has beyond it ("45 minutes"
/// makes "30 minutes", "every Monday" makes "every Friday") when the document has those, else as asked.
fn widened_value(change: &Change, text: &str) -> String {
    let from_count = change.from.split_whitespace().count();
    let to_words: Vec<&str> = change.to.split_whitespace().collect();
    if from_count > 0 && to_words.len() > from_count {
        let extra = to_words.len() - from_count;
        {
            let after = format!("{} {}", change.from, to_words[to_words.len() - extra..].join(" "));
            let before = format!("{} {}", to_words[..extra].join(" "), change.from);
            for widened in [after, before] {
                if !occurrences(text, &widened).is_empty() {
                    return widened;
                }
            }
        }
    }
    change.from.clone()
}

/// Where `value` stands in `text` as whole words (not "30" inside "130"): exactly as written, else in any case.
fn occurrences(text: &str, value: &str) -> Vec<(usize, usize)> {
    let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    let bounded = |s: usize, e: usize| {
        let starts_word = word(value.chars().next());
        let ends_word = word(value.chars().last());
        (!starts_word || !word(text[..s].chars().next_back())) && (!ends_word || !word(text[e..].chars().next()))
    };
    let exact: Vec<(usize, usize)> =
        text.match_indices(value).map(|(s, m)| (s, s + m.len())).filter(|(s, e)| bounded(*s, *e)).collect();
    if !exact.is_empty() || value.is_empty() {
        return exact;
    }
    let Ok(any_case) = Regex::new(&format!("(?i){}", regex::escape(value))) else { return Vec::new() };
    any_case.find_iter(text).map(|m| (m.start(), m.end())).filter(|(s, e)| bounded(*s, *e)).collect()
}

/// Where a quoted passage stands in a document's Markdown `text` (byte range): where it occurs exactly once as
/// written, else the one line that reads as the passage once Markdown's marks are set aside. A passage is quoted
/// as the browser shows it ("REQ-2 (Must): ..."), which is not always as the source writes it ("**REQ-2** (Must):
/// ...").
fn located_passage(text: &str, passage: &str) -> Option<(usize, usize)> {
    if let Some(start) = unique_span(text, passage) {
        return Some((start, start + passage.len()));
    }
    let wanted = plain(passage);
    if wanted.is_empty() {
        return None;
    }
    let mut lines = text.split_inclusive('\n').scan(0, |at, line| {
        let start = *at;
        *at += line.len();
        Some((start, start + line.trim_end_matches(['\n', '\r']).len()))
    });
    let mut found = lines.by_ref().filter(|(s, e)| plain(&text[*s..*e]).contains(&wanted));
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

/// A line as it reads once rendered: no emphasis or code marks, no list, heading or quote marker, table bars as
/// spaces, runs of white space as one space.
fn plain(line: &str) -> String {
    let line = line.trim_start().trim_start_matches(['#', '>', '-', '+']).trim_start();
    let kept: String =
        line.chars().filter(|c| !matches!(c, '*' | '_' | '`')).map(|c| if c == '|' { ' ' } else { c }).collect();
    kept.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Where `passage` starts in `text`, when it occurs there exactly once (overlapping occurrences count, as the
/// `edit_artifact` tool counts them).
fn unique_span(text: &str, passage: &str) -> Option<usize> {
    if passage.is_empty() {
        return None;
    }
    let start = text.find(passage)?;
    let next = start + text[start..].chars().next().map_or(1, char::len_utf8);
    (!text[next..].contains(passage)).then_some(start)
}

/// The new value with a capital first letter where the old one had it (the start of a sentence).
fn matched_case(old: &str, new: &str) -> String {
    let capital = old.chars().next().is_some_and(char::is_uppercase);
    let mut chars = new.chars();
    match chars.next() {
        Some(first) if capital && first.is_lowercase() => first.to_uppercase().chain(chars).collect(),
        _ => new.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn document(id: &str, title: &str, text: &str) -> Document {
        Document { id: id.into(), title: title.into(), text: text.into() }
    }

    fn change(from: &str, to: &str) -> Change {
        Change { from: from.into(), to: to.into() }
    }

    const PLAN: &str = "# Booking Plan\n\nSlots are 30 minutes.\n\nReminders go out a day before.\n";

    fn edit(plan: Option<EditPlan>) -> (String, String, String, String) {
        match plan {
            Some(EditPlan::Edit { find, replace, from, to, .. }) => (find, replace, from, to),
            other => panic!("expected an edit, got {other:?}"),
        }
    }

    #[test]
    fn the_prompt_gives_the_documents_it_shows() {
        let system = "Rules.\n\nDOCUMENTS OF THIS CONVERSATION (...):\n- \"Booking Plan\" (Requirements Document, ID: \
                      a-1, version 2)\n- \"Big\" (User Stories, ID: b-2, version 1)\n\n<document id=\"a-1\" \
                      version=\"2\">\n# Booking Plan\n\nSlots are 30 minutes.\n</document>\n";
        assert_eq!(documents(system), vec![document("a-1", "Booking Plan", "# Booking Plan\n\nSlots are 30 minutes.")]);
        assert!(documents("No documents.").is_empty());
    }

    #[test]
    fn the_old_value_is_replaced_where_it_stands_once() {
        let docs = [document("a", "Booking Plan", PLAN)];
        let plan = plan_edit(&change("30", "45 minutes"), &docs, None, "Slots should be 45 minutes, not 30");
        // "30 minutes" occurs once: the value widened by the new value's unit is the smallest passage.
        assert_eq!(edit(plan), ("30 minutes".into(), "45 minutes".into(), "30 minutes".into(), "45 minutes".into()));
        // Case is matched at the start of a sentence.
        let plan = plan_edit(&change("reminders", "notices"), &docs, None, "replace reminders with notices");
        assert_eq!(edit(plan).1, "Notices");
        // Not in any document: nothing to edit.
        assert_eq!(plan_edit(&change("Friday", "Monday"), &docs, None, "x"), None);
        // A number inside another is not the value.
        let docs = [document("a", "Plan", "Rooms 130 and 230 open.")];
        assert_eq!(plan_edit(&change("30", "45"), &docs, None, "x"), None);
    }

    #[test]
    fn a_value_that_is_not_unique_widens_to_its_line_or_is_reported() {
        // "30" once as a word, twice as text ("2030"): the line is unique.
        let docs = [document("a", "Plan", "Opens in 2030.\nSlots are 30 long.\n")];
        let (find, replace, ..) = edit(plan_edit(&change("30", "45"), &docs, None, "x"));
        assert_eq!((find.as_str(), replace.as_str()), ("Slots are 30 long.", "Slots are 45 long."));
        // Twice as a word: which one cannot be told.
        let docs = [document("a", "Plan", "Slots are 30 minutes.\nBreaks are 30 minutes.\n")];
        let plan = plan_edit(&change("30 minutes", "45 minutes"), &docs, None, "x");
        assert_eq!(plan, Some(EditPlan::Unclear { from: "30 minutes".into(), titles: vec!["Plan".into()], times: 2 }));
        // In two documents: the one the message names, else reported.
        let docs = [document("a", "Plan", "Slots are 30 minutes."), document("b", "Stories", "Wait 30 minutes.")];
        assert!(matches!(plan_edit(&change("30", "45"), &docs, None, "in the stories, 45 not 30"),
            Some(EditPlan::Edit { ref id, .. }) if id == "b"));
        assert!(matches!(plan_edit(&change("30", "45"), &docs, None, "45 not 30"),
            Some(EditPlan::Unclear { ref titles, .. }) if titles.len() == 2));
    }

    #[test]
    fn a_passage_quoted_as_shown_finds_its_line_in_the_source() {
        let text =
            "## Requirements\n\n**REQ-2** (Must; Functional): Slots must be 30 minutes long.\n\n| ID | Requirement |\n\
                    | --- | --- |\n| REQ-2 | Slots must be 30 minutes long. |\n";
        let docs = [document("a", "Salon", text)];
        let quote = QuotedPassage {
            title: None,
            artifact_id: "a".into(),
            passage: "REQ-2 (Must; Functional): Slots must be 30 minutes long.".into(),
        };
        let (find, replace, ..) = edit(plan_edit(&change("30", "45 minutes"), &docs, Some(&quote), "x"));
        assert_eq!(find, "**REQ-2** (Must; Functional): Slots must be 30 minutes long.");
        assert_eq!(replace, "**REQ-2** (Must; Functional): Slots must be 45 minutes long.");
        // The table's cell reads the same in two lines: which one is not guessed.
        let quote = QuotedPassage { passage: "Slots must be 30 minutes long.".into(), ..quote };
        assert!(matches!(
            plan_edit(&change("30", "45 minutes"), &docs, Some(&quote), "x"),
            Some(EditPlan::Unclear { .. })
        ));
    }

    #[test]
    fn a_quoted_passage_chooses_the_place() {
        let text = "Slots are 30 minutes.\nBreaks are 30 minutes.\n";
        let docs = [document("a", "Plan", text), document("b", "Other", "Also 30 minutes.")];
        let quote = QuotedPassage {
            title: Some("Plan".into()),
            artifact_id: "a".into(),
            passage: "Breaks are 30 minutes.".into(),
        };
        let (find, replace, from, _) = edit(plan_edit(&change("30", "45 minutes"), &docs, Some(&quote), "x"));
        assert_eq!(
            (find.as_str(), replace.as_str(), from.as_str()),
            ("Breaks are 30 minutes.", "Breaks are 45 minutes.", "30 minutes")
        );
        // The same line twice: the quoted passage, unique, is the find.
        let text = "Intro.\nSlots are 30 minutes.\nSlots are 30 minutes.\nEnd.";
        let docs = [document("a", "Plan", text)];
        let quote =
            QuotedPassage { title: None, artifact_id: "a".into(), passage: "Slots are 30 minutes.\nEnd.".into() };
        let (find, replace, ..) = edit(plan_edit(&change("30", "45"), &docs, Some(&quote), "x"));
        assert_eq!((find.as_str(), replace.as_str()), ("Slots are 30 minutes.\nEnd.", "Slots are 45 minutes.\nEnd."));
        // A value the passage does not hold is changed where the document holds it once.
        let quote = QuotedPassage { title: None, artifact_id: "a".into(), passage: "Intro.".into() };
        let (find, replace, ..) = edit(plan_edit(&change("End", "Close"), &docs, Some(&quote), "x"));
        assert_eq!((find.as_str(), replace.as_str()), ("End", "Close"));
    }
}
