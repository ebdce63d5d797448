//! Search snippets: a few words of a hit's text around what the query matched, the matching words marked, as
//! HTML. Both backends make them here from the text, in time that grows with the text's length alone (the
//! databases' own snippet and highlight functions take time that grows with the square of the hits in a text).

use std::collections::{HashMap, VecDeque};

use super::search_query::{fold, Term};
use super::Result;

/// Words a snippet shows.
const SNIPPET_WORDS: usize = 16;
/// Characters shown of one word, or of the text between two words; the rest is left out, marked by `…`.
const MAX_PIECE_CHARS: usize = 60;

/// The snippets of hits' texts, in order, made on the blocking pool: long texts take as long as they are long.
pub(crate) async fn snippets(terms: Vec<Term>, texts: Vec<String>) -> Result<Vec<String>> {
    Ok(tokio::task::spawn_blocking(move || {
        let matcher = Matcher::new(&terms);
        texts.iter().map(|text| snippet(&matcher, text)).collect()
    })
    .await?)
}

/// Which query term, if any, a word of a text matches, the way the indexes match it.
pub(crate) struct Matcher {
    /// Whole words (of words and phrases) with the index of their term.
    words: HashMap<String, usize>,
    /// Prefixes with the index of their term.
    prefixes: Vec<(String, usize)>,
    terms: usize,
}

impl Matcher {
    pub(crate) fn new(terms: &[Term]) -> Self {
        let mut words = HashMap::new();
        let mut prefixes = Vec::new();
        for (i, term) in terms.iter().enumerate() {
            match term {
                Term::Word(word) => {
                    words.entry(word.clone()).or_insert(i);
                }
                // Each word of a phrase is marked where it stands, next to the others or not.
                Term::Phrase(phrase) => {
                    for word in phrase {
                        words.entry(word.clone()).or_insert(i);
                    }
                }
                Term::Prefix(prefix) => prefixes.push((prefix.clone(), i)),
            }
        }
        Self { words, prefixes, terms: terms.len() }
    }

    fn term_of(&self, word: &str) -> Option<usize> {
        let word = fold(word);
        if let Some(&term) = self.words.get(&word) {
            return Some(term);
        }
        self.prefixes.iter().find(|(prefix, _)| word.starts_with(prefix.as_str())).map(|(_, term)| *term)
    }
}

/// The byte ranges of a text's words: its runs of letters and digits, as the indexes split them.
fn words(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut chars = text.char_indices().peekable();
    std::iter::from_fn(move || {
        let start = loop {
            let (i, c) = chars.next()?;
            if c.is_alphanumeric() {
                break i;
            }
        };
        let mut end = text.len();
        while let Some(&(i, c)) = chars.peek() {
            if !c.is_alphanumeric() {
                end = i;
                break;
            }
            chars.next();
        }
        Some((start, end))
    })
}

/// The snippet of one text: the first run of [`SNIPPET_WORDS`] words that holds the most terms, with the matches
/// centred when there is room; the text's start when nothing matches. Two passes at most, both ending where the
/// snippet does unless no run holds every term.
pub(crate) fn snippet(matcher: &Matcher, text: &str) -> String {
    let first = first_word_shown(matcher, text);
    let last = first + SNIPPET_WORDS - 1;
    let mut out = String::new();
    let mut words = words(text).enumerate().skip(first);
    let mut end = 0;
    let mut marking = false;
    for (index, (start, stop)) in words.by_ref() {
        let between = if index == 0 {
            &text[..start]
        } else if index == first {
            out.push('…');
            ""
        } else {
            &text[end..start]
        };
        let matched = matcher.term_of(&text[start..stop]).is_some();
        // Neighbouring matches share one mark, as the words of a phrase.
        let joined = marking && matched && between.chars().all(char::is_whitespace);
        if marking && !joined {
            out.push_str("</mark>");
            marking = false;
        }
        push_between(&mut out, between);
        if matched && !marking {
            out.push_str("<mark>");
            marking = true;
        }
        push_word(&mut out, &text[start..stop]);
        end = stop;
        if index == last {
            break;
        }
    }
    if marking {
        out.push_str("</mark>");
    }
    if words.next().is_some() {
        out.push('…');
    } else {
        push_between(&mut out, &text[end..]);
    }
    out
}

/// The index of the first word a snippet shows: the window of [`SNIPPET_WORDS`] words that first holds the most
/// distinct terms, moved so its matches sit in the middle. Stops reading at a window that holds every term.
fn first_word_shown(matcher: &Matcher, text: &str) -> usize {
    let mut window: VecDeque<(usize, Option<usize>)> = VecDeque::with_capacity(SNIPPET_WORDS);
    let mut counts = vec![0usize; matcher.terms];
    let mut present = 0;
    // (terms present, first match, last match) of the best window so far.
    let mut best: Option<(usize, usize, usize)> = None;
    for (index, (start, stop)) in words(text).enumerate() {
        if window.len() == SNIPPET_WORDS {
            if let Some((_, Some(term))) = window.pop_front() {
                counts[term] -= 1;
                if counts[term] == 0 {
                    present -= 1;
                }
            }
        }
        let term = matcher.term_of(&text[start..stop]);
        window.push_back((index, term));
        let Some(term) = term else { continue };
        counts[term] += 1;
        if counts[term] > 1 {
            continue;
        }
        present += 1;
        if best.is_none_or(|(most, _, _)| present > most) {
            let first = window.iter().find(|(_, term)| term.is_some()).map_or(index, |(i, _)| *i);
            best = Some((present, first, index));
            if present == matcher.terms {
                break;
            }
        }
    }
    match best {
        Some((_, first, last)) => first.saturating_sub((SNIPPET_WORDS - (last - first + 1)) / 2),
        None => 0,
    }
}

/// Appends a word, cut after [`MAX_PIECE_CHARS`] characters (letters and digits need no escaping).
fn push_word(out: &mut String, word: &str) {
    match word.char_indices().nth(MAX_PIECE_CHARS) {
        Some((cut, _)) => {
            out.push_str(&word[..cut]);
            out.push('…');
        }
        None => out.push_str(word),
    }
}

/// Appends the text between two words escaped for HTML: each run of whitespace as one space, control characters
/// left out, cut after [`MAX_PIECE_CHARS`] characters.
fn push_between(out: &mut String, text: &str) {
    let mut written = 0;
    let mut after_space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            if !after_space {
                if written == MAX_PIECE_CHARS {
                    out.push('…');
                    return;
                }
                out.push(' ');
                written += 1;
                after_space = true;
            }
            continue;
        }
        if c.is_control() {
            continue;
        }
        if written == MAX_PIECE_CHARS {
            out.push('…');
            return;
        }
        after_space = false;
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
        written += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search_query::parse;
    use proptest::prelude::*;

    fn make(query: &str, text: &str) -> String {
        snippet(&Matcher::new(&parse(query)), text)
    }

    #[test]
    fn short_texts_are_shown_whole_with_matches_marked() {
        assert_eq!(make("roadmap", "Roadmap"), "<mark>Roadmap</mark>");
        assert_eq!(make("payments", "Payments <script>"), "<mark>Payments</mark> &lt;script&gt;");
        assert_eq!(
            make("refund*", "Refund policy: <b>five</b> & 'a' \"receipt\""),
            "<mark>Refund</mark> policy: &lt;b&gt;five&lt;/b&gt; &amp; &#39;a&#39; &quot;receipt&quot;"
        );
        assert_eq!(make("\"single sign on\"", "We support single sign on."), "We support <mark>single sign on</mark>.");
        assert_eq!(make("e-mail", "Send an e-mail"), "Send an <mark>e</mark>-<mark>mail</mark>");
    }

    #[test]
    fn marker_and_control_characters_in_the_text_are_left_out() {
        assert_eq!(make("needle", "a \u{2}needle\u{3} \u{3}b\u{2}\n\n\tc"), "a <mark>needle</mark> b c");
    }

    #[test]
    fn long_texts_show_the_words_around_the_first_best_match() {
        let words: Vec<String> = (0..1000).map(|i| format!("w{i}")).collect();
        let text = words.join(" ");
        let html = make("w500", &text);
        assert_eq!(html, format!("…{} <mark>w500</mark> {}…", words[493..500].join(" "), words[501..509].join(" ")));
        // The window holding both terms wins over the earlier one holding one.
        let text = format!("alpha {} alpha beta {}", words[..100].join(" "), words[..100].join(" "));
        let html = make("alpha beta", &text);
        assert!(html.contains("<mark>alpha beta</mark>"), "{html}");
        assert!(html.starts_with('…') && html.ends_with('…'), "{html}");
        // Nothing marked (no word matches as written): the start of the text.
        assert_eq!(make("zzz", &text), format!("alpha {}…", words[..15].join(" ")));
    }

    #[test]
    fn huge_words_and_gaps_are_cut() {
        let word = "x".repeat(1_000_000);
        assert_eq!(make("x*", &word), format!("<mark>{}…</mark>", "x".repeat(MAX_PIECE_CHARS)));
        let text = format!("a{}b {}", "-".repeat(1_000_000), " ".repeat(1_000_000));
        assert_eq!(make("b", &text), format!("a{}…<mark>b</mark> ", "-".repeat(MAX_PIECE_CHARS)));
    }

    #[test]
    fn terms_far_apart_in_a_long_text_are_found_past_half_a_million_hits() {
        let text = "word ".repeat(500_000) + "other";
        let html = make("word other", &text);
        assert!(html.starts_with("…<mark>word word ") && html.ends_with(" word other</mark>"), "{html}");
    }

    proptest! {
        #[test]
        fn snippets_are_short_well_formed_and_mark_what_matches(
            text in "[a-zé <>&\"'\u{2}\u{3}\n-]{0,400}",
            query in "[a-z*\" -]{1,20}",
        ) {
            let terms = parse(&query);
            let html = snippet(&Matcher::new(&terms), &text);
            prop_assert!(html.chars().count() <= 2 * SNIPPET_WORDS * (MAX_PIECE_CHARS + 1) + 100, "{html}");
            prop_assert_eq!(html.matches("<mark>").count(), html.matches("</mark>").count());
            let plain = html.replace("<mark>", "").replace("</mark>", "");
            prop_assert!(!plain.contains(['<', '>', '"', '\'', '\u{2}', '\u{3}']), "{html}");
            if !terms.is_empty() && crate::search_query::matches(&terms, &text) {
                prop_assert!(html.contains("<mark>"), "{query:?} in {text:?}: {html}");
            }
        }
    }
}
