//! Splitting text into sentences and trimming the connective words that start a clause.

use lazy_regex::{lazy_regex, Lazy};
use regex::Regex;

use super::text::normalize_quotes;

static BULLET_RE: Lazy<Regex> = lazy_regex!(r"^\s*(?:[-*+>•]|\d{1,3}[.)])\s+");

const ABBREVIATIONS: &[&str] =
    &["e.g", "i.e", "eg", "ie", "etc", "vs", "mr", "mrs", "ms", "dr", "approx", "incl", "no", "st"];

/// Splits text into sentences: every line separately (list markers and heading marks removed),
/// then at `.`, `!` or `?` followed by whitespace, ignoring common abbreviations.
pub fn split_sentences(text: &str) -> Vec<String> {
    let text = normalize_quotes(text);
    let mut out = Vec::new();
    for line in text.lines() {
        let line = BULLET_RE.replace(line, "");
        let line = line.trim().trim_start_matches('#').trim();
        split_line(line, &mut out);
    }
    out
}

fn split_line(line: &str, out: &mut Vec<String>) {
    let chars: Vec<(usize, char)> = line.char_indices().collect();
    let mut start = 0;
    let mut i = 0;
    while i < chars.len() {
        let (pos, c) = chars[i];
        if !matches!(c, '.' | '!' | '?') {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        while j < chars.len() && matches!(chars[j].1, '.' | '!' | '?' | '"' | '\'' | ')') {
            j += 1;
        }
        let at_end = j == chars.len();
        if at_end || chars[j].1.is_whitespace() {
            let end = if at_end { line.len() } else { chars[j].0 };
            let before = &line[start..pos];
            let last = before.rsplit(|ch: char| ch.is_whitespace()).next().unwrap_or("").to_lowercase();
            let is_abbreviation = c == '.'
                && (ABBREVIATIONS.contains(&last.as_str())
                    || (last.len() == 1 && last.chars().all(|ch| ch.is_alphabetic())));
            if !is_abbreviation {
                push_sentence(&line[start..end], out);
                start = end;
            }
        }
        i = j;
    }
    push_sentence(&line[start..], out);
}

fn push_sentence(s: &str, out: &mut Vec<String>) {
    let s = s.trim();
    if s.chars().any(|c| c.is_alphanumeric()) {
        out.push(s.to_string());
    }
}

const FILLER_STARTS: &[&str] = &[
    "and",
    "also",
    "plus",
    "but",
    "so",
    "then",
    "ok",
    "okay",
    "oh",
    "well",
    "finally",
    "additionally",
    "furthermore",
    "moreover",
    "basically",
    "anyway",
    "lastly",
    "first",
    "second",
    "third",
    "next",
];

/// Removes leading connective words ("Also,", "And then", "OK so") from a clause.
pub fn strip_fillers(text: &str) -> &str {
    let mut rest = text.trim_start();
    loop {
        let word_end = rest.find(|c: char| !(c.is_alphanumeric() || c == '\'')).unwrap_or(rest.len());
        let word = rest[..word_end].to_lowercase();
        if word_end > 0 && word_end < rest.len() && FILLER_STARTS.contains(&word.as_str()) {
            rest = rest[word_end..].trim_start_matches([',', ' ', '-', ':']);
        } else {
            return rest;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_sentences_lines_and_bullets() {
        let s = split_sentences("Hello there. Users must log in!\n- Admins need reports, e.g. sales.\n2) Done?");
        assert_eq!(s, vec!["Hello there.", "Users must log in!", "Admins need reports, e.g. sales.", "Done?"]);
    }
}
