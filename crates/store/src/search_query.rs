//! Turns what a person types into a search box into a safe full-text query for either backend.
//!
//! Supported: plain words (all must match), `"exact phrases"` and `prefix*`. Everything else is treated as
//! text: syntax characters can never reach the database's query parser.

/// One part of a parsed query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Term {
    Word(String),
    Prefix(String),
    Phrase(Vec<String>),
}

/// Most terms taken from one query; the rest is ignored.
const MAX_TERMS: usize = 16;

/// Splits text into lower-case words the way the indexes do (letters and digits).
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).map(fold).filter(|w| !w.is_empty()).collect()
}

/// A run of letters and digits as the indexes compare it: lower case.
pub fn fold(word: &str) -> String {
    word.to_lowercase().chars().filter(|c| c.is_alphanumeric()).collect()
}

/// Parses a query. Returns no terms when nothing searchable is left.
pub fn parse(input: &str) -> Vec<Term> {
    let mut terms = Vec::new();
    let mut rest = input;
    while !rest.is_empty() && terms.len() < MAX_TERMS {
        rest = rest.trim_start();
        if let Some(after_quote) = rest.strip_prefix('"') {
            let (inside, next) = match after_quote.find('"') {
                Some(end) => (&after_quote[..end], &after_quote[end + 1..]),
                None => (after_quote, ""),
            };
            let phrase = words(inside);
            match phrase.len() {
                0 => {}
                1 => terms.push(Term::Word(phrase.into_iter().next().unwrap_or_default())),
                _ => terms.push(Term::Phrase(phrase)),
            }
            rest = next;
            continue;
        }
        let end = rest.find(|c: char| c.is_whitespace() || c == '"').unwrap_or(rest.len());
        let token = &rest[..end];
        rest = &rest[end..];
        let is_prefix = token.ends_with('*');
        let mut parts = words(token);
        match (parts.len(), is_prefix) {
            (0, _) => {}
            (1, true) => terms.push(Term::Prefix(parts.remove(0))),
            (1, false) => terms.push(Term::Word(parts.remove(0))),
            // "e-mail" is two words in the index: search them as a phrase.
            _ => terms.push(Term::Phrase(parts)),
        }
    }
    terms.truncate(MAX_TERMS);
    terms
}

fn fts5_quote(word: &str) -> String {
    format!("\"{}\"", word.replace('"', "\"\""))
}

/// Every term as `term` writes it, joined by `and`, or `None` when there is nothing to search.
fn all_of(terms: &[Term], and: &str, term: impl Fn(&Term) -> String) -> Option<String> {
    if terms.is_empty() {
        return None;
    }
    Some(terms.iter().map(term).collect::<Vec<_>>().join(and))
}

/// An FTS5 MATCH expression for the `body` column, or `None` when there is nothing to search.
pub fn to_fts5(terms: &[Term]) -> Option<String> {
    let all = all_of(terms, " AND ", |t| match t {
        Term::Word(w) => fts5_quote(w),
        Term::Prefix(w) => format!("{}*", fts5_quote(w)),
        Term::Phrase(ws) => fts5_quote(&ws.join(" ")),
    })?;
    Some(format!("body : ({all})"))
}

fn ts_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', "''").replace('\\', ""))
}

/// A PostgreSQL `to_tsquery('simple', ...)` expression, or `None` when there is nothing to search.
pub fn to_tsquery(terms: &[Term]) -> Option<String> {
    all_of(terms, " & ", |t| match t {
        Term::Word(w) => ts_quote(w),
        Term::Prefix(w) => format!("{}:*", ts_quote(w)),
        Term::Phrase(ws) => format!("({})", ws.iter().map(|w| ts_quote(w)).collect::<Vec<_>>().join(" <-> ")),
    })
}

/// Whether a text matches the terms the way the index would (used by tests to check every hit).
pub fn matches(terms: &[Term], text: &str) -> bool {
    let tokens = words(text);
    terms.iter().all(|t| match t {
        Term::Word(w) => tokens.iter().any(|x| x == w),
        Term::Prefix(p) => tokens.iter().any(|x| x.starts_with(p.as_str())),
        Term::Phrase(ws) => tokens.windows(ws.len()).any(|win| win == ws.as_slice()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_words_phrases_and_prefixes() {
        assert_eq!(
            parse(r#"login "single sign on" auth* e-mail"#),
            vec![
                Term::Word("login".into()),
                Term::Phrase(vec!["single".into(), "sign".into(), "on".into()]),
                Term::Prefix("auth".into()),
                Term::Phrase(vec!["e".into(), "mail".into()]),
            ]
        );
        assert_eq!(to_fts5(&parse("auth*")).unwrap(), "body : (\"auth\"*)");
        assert_eq!(to_tsquery(&parse("\"a b\" c*")).unwrap(), "('a' <-> 'b') & 'c':*");
    }

    #[test]
    fn syntax_only_input_searches_nothing() {
        assert!(parse("* () AND OR NOT : ^ -")
            .iter()
            .all(|t| matches!(t, Term::Word(w) if w == "and" || w == "or" || w == "not")));
        assert_eq!(parse("*** ::: ((("), vec![]);
        assert_eq!(to_fts5(&[]), None);
    }

    proptest! {
        #[test]
        fn any_input_yields_only_word_characters(input in ".{0,200}") {
            for term in parse(&input) {
                let ws = match term { Term::Word(w) | Term::Prefix(w) => vec![w], Term::Phrase(ws) => ws };
                for w in ws {
                    prop_assert!(!w.is_empty());
                    prop_assert!(w.chars().all(char::is_alphanumeric), "{w:?}");
                }
            }
        }
    }
}
