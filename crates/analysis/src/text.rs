//! Small text helpers shared by the analyses: words, casing, punctuation and Markdown escaping.

use lazy_regex::{lazy_regex, Lazy};
use regex::Regex;

/// Replaces typographic quotes with ASCII ones so that patterns only deal with `'` and `"`.
pub fn normalize_quotes(text: &str) -> String {
    text.replace(['\u{2019}', '\u{2018}'], "'").replace(['\u{201C}', '\u{201D}'], "\"")
}

/// A word: letters and digits, with inner apostrophes or hyphens ("don't", "e-mail").
pub(super) static WORD_RE: Lazy<Regex> = lazy_regex!(r"[A-Za-z0-9]+(?:['\-][A-Za-z0-9]+)*");

/// The words of `text`, lowercased, in order.
pub fn words(text: &str) -> Vec<String> {
    WORD_RE.find_iter(text).map(|m| m.as_str().to_lowercase()).collect()
}

/// The first word of `text`, lowercased ("" when there is none).
pub(super) fn first_word(text: &str) -> String {
    words(text).into_iter().next().unwrap_or_default()
}

/// Number of whitespace-separated words.
pub fn word_count(text: &str) -> usize {
    text.split_whitespace().count()
}

/// `text` with its first character replaced by what `change` makes of it.
fn map_first<I: Iterator<Item = char>>(text: &str, change: impl FnOnce(char) -> I) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => change(first).chain(chars).collect(),
        None => String::new(),
    }
}

/// Uppercases the first character.
pub fn capitalize_first(text: &str) -> String {
    map_first(text, char::to_uppercase)
}

/// Lowercases the first character unless the first word looks like an acronym or a name
/// written with inner capitals ("API", "iOS", "FitBook").
pub fn lower_first(text: &str) -> String {
    let first_word = text.split_whitespace().next().unwrap_or("");
    let inner_upper = first_word.chars().skip(1).any(|c| c.is_uppercase());
    if inner_upper || first_word == "I" || first_word.starts_with("I'") {
        return text.to_string();
    }
    map_first(text, char::to_lowercase)
}

/// The first `n` words of `text`, with an ellipsis when something was cut.
pub fn first_words(text: &str, n: usize) -> String {
    let all: Vec<&str> = text.split_whitespace().collect();
    if all.len() <= n {
        all.join(" ")
    } else {
        format!("{}…", all[..n].join(" "))
    }
}

/// Removes final sentence punctuation and surrounding whitespace.
pub fn strip_terminal(text: &str) -> &str {
    text.trim().trim_end_matches(['.', '!', '?', ';', ':', ',']).trim_end()
}

/// Trims `text` and makes sure it ends with sentence punctuation.
pub fn as_sentence(text: &str) -> String {
    let t = text.trim();
    if t.ends_with(['.', '!', '?']) {
        capitalize_first(t)
    } else {
        format!("{}.", capitalize_first(t))
    }
}

/// Escapes text for a Markdown table cell.
pub fn table_cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

const SMALL_TITLE_WORDS: &[&str] =
    &["a", "an", "the", "and", "or", "for", "of", "to", "in", "on", "with", "that", "at", "by", "from", "which", "as"];

/// Title-cases a phrase, keeping small words lowercase and words with capitals as written.
pub fn title_case(text: &str) -> String {
    text.split_whitespace()
        .enumerate()
        .map(|(i, w)| {
            let keep = w.chars().any(|c| c.is_uppercase()) || (i > 0 && SMALL_TITLE_WORDS.contains(&w));
            if keep {
                w.to_string()
            } else {
                capitalize_first(w)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// "a" or "an" for the word that follows.
pub fn article(word: &str) -> &'static str {
    let w = word.to_lowercase();
    let vowel_sound = match w.chars().next() {
        Some('a' | 'e' | 'i' | 'o') => true,
        Some('u') => !(w.starts_with("us") || w.starts_with("uni") || w.starts_with("ut")),
        _ => w.starts_with("hour") || w.starts_with("honest"),
    };
    if vowel_sound {
        "an"
    } else {
        "a"
    }
}

/// `text` without `prefix`, compared case-insensitively, when it starts with it.
pub(super) fn strip_prefix_ci<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &text[prefix.len()..])
}

/// `items` in their order, each once.
pub fn distinct<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// Collapses every run of whitespace to one space ("is  going\tto" -> "is going to").
pub(super) fn squash_spaces(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
