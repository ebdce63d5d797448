//! Search query translation: never panics; only non-empty runs of word characters reach the SQL engines, each
//! quoted in the FTS5 and tsquery forms.
#![no_main]

use libfuzzer_sys::fuzz_target;
use store::search_query::{parse, to_fts5, to_tsquery, Term};

fuzz_target!(|input: &str| {
    let terms = parse(input);
    for term in &terms {
        let words = match term {
            Term::Word(w) | Term::Prefix(w) => vec![w.clone()],
            Term::Phrase(ws) => ws.clone(),
        };
        for word in words {
            assert!(!word.is_empty() && word.chars().all(char::is_alphanumeric), "{word:?}");
        }
    }
    if let Some(fts) = to_fts5(&terms) {
        assert_eq!(fts.matches('"').count() % 2, 0, "{fts}");
    }
    if let Some(ts) = to_tsquery(&terms) {
        assert_eq!(ts.matches('\'').count() % 2, 0, "{ts}");
    }
    assert_eq!(to_fts5(&terms).is_none(), terms.is_empty());
});
