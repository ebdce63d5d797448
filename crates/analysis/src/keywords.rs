//! Content words: the words of a text that carry meaning (stopwords removed), and a light stem to compare them.

use super::text::{normalize_quotes, WORD_RE};

/// Words too common to say what a text is about.
const STOPWORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "don't",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "him",
    "his",
    "how",
    "i",
    "i'd",
    "i'm",
    "if",
    "in",
    "into",
    "is",
    "it",
    "it's",
    "its",
    "just",
    "me",
    "more",
    "most",
    "my",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "out",
    "over",
    "own",
    "please",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "them",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "what's",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "tell",
    "say",
    "says",
    "said",
    "know",
    "let",
    "us",
    "thanks",
    "thank",
    "hi",
    "hello",
    "hey",
    "there's",
    "that's",
    "anything",
    "something",
    "give",
    "show",
    "find",
    "explain",
    "summarize",
    "summarise",
    "describe",
    "according",
    "mention",
    "mentioned",
    "mentions",
    "want",
    "need",
    "like",
    "get",
    "got",
    "really",
    "ok",
    "okay",
    "can't",
    "much",
    "many",
];

/// Content words of `text` in order of first appearance, as written (stopwords and
/// `extra_stop` removed, duplicates compared case-insensitively).
pub fn keywords(text: &str, extra_stop: &[&str]) -> Vec<String> {
    let text = normalize_quotes(text);
    let mut out: Vec<String> = Vec::new();
    for m in WORD_RE.find_iter(&text) {
        let word = m.as_str();
        let lower = word.to_lowercase();
        if lower.len() < 2 && !lower.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        if STOPWORDS.contains(&lower.as_str()) || extra_stop.contains(&lower.as_str()) {
            continue;
        }
        if !out.iter().any(|w| w.eq_ignore_ascii_case(word)) {
            out.push(word.to_string());
        }
    }
    out
}

/// Lightweight stem used to compare words ("orders" ~ "order", "shipping" ~ "ship").
pub fn stem(word: &str) -> String {
    let w = word.to_lowercase();
    for suffix in ["ingly", "ing", "edly", "ed", "ies", "es", "s", "ly"] {
        if w.len() > suffix.len() + 3 && w.ends_with(suffix) {
            return w[..w.len() - suffix.len()].to_string();
        }
    }
    w
}
