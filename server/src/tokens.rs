//! Token counting shared by the whole server.
//!
//! Counts use OpenAI's `o200k_base` byte-pair encoding through [`bpe_openai`], GitHub's
//! linear-time BPE implementation: the vocabulary ships inside the crate (no network) and
//! counting stays linear even on pathological input such as one character repeated 100 KB.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, DefaultHasher, Hash, Hasher};
use std::sync::{LazyLock, Mutex};

use bpe_openai::Tokenizer;
use rustc_hash::FxHasher;
use uuid::Uuid;

/// The process-wide tokenizer, deserialised from the embedded vocabulary on first use.
static TOKENIZER: LazyLock<&'static Tokenizer> = LazyLock::new(bpe_openai::o200k_base);

/// Returns the shared `o200k_base` tokenizer, building it on the first call.
pub fn tokenizer() -> &'static Tokenizer {
    *TOKENIZER
}

/// Builds the tokenizer now, so that the first request does not pay for it.
///
/// Calling it is optional: [`count_tokens`] builds the tokenizer lazily.
pub fn warm_up() {
    LazyLock::force(&TOKENIZER);
}

/// Pieces (words, with their leading space or punctuation) at most this long have their counts remembered.
const CACHED_PIECE_BYTES: usize = 24;
/// Most pieces remembered per thread; the cache starts over when full.
const CACHED_PIECES: usize = 50_000;

thread_local! {
    /// Token counts of short pieces seen on this thread. Prose repeats its words, and counting a piece with
    /// the byte-pair encoding costs several times a hash lookup.
    static PIECES: RefCell<HashMap<Box<str>, u32, BuildHasherDefault<FxHasher>>> = RefCell::default();
}

/// Forgets the piece counts remembered on this thread (benchmarks measure counting from cold with it).
pub fn forget_pieces() {
    PIECES.with_borrow_mut(HashMap::clear);
}

/// Number of `o200k_base` tokens in `text` (0 for the empty string): the same as the tokenizer's own
/// `count`, which splits the text into pieces with OpenAI's pattern and counts each piece.
pub fn count_tokens(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    let tokenizer = tokenizer();
    let text = tokenizer.normalize(text);
    PIECES.with_borrow_mut(|cache| {
        tokenizer
            .split(text.as_str())
            .map(|piece| {
                if piece.len() > CACHED_PIECE_BYTES {
                    return tokenizer.bpe.count(piece.as_bytes());
                }
                if let Some(&count) = cache.get(piece) {
                    return count as usize;
                }
                let count = tokenizer.bpe.count(piece.as_bytes());
                if cache.len() >= CACHED_PIECES {
                    cache.clear();
                }
                cache.insert(piece.into(), count as u32);
                count
            })
            .sum()
    })
}

/// Most message counts kept; the cache starts over when full.
const CACHED_MESSAGES: usize = 200_000;

/// Token counts of stored messages by id, with a fingerprint of the text they were counted from.
static MESSAGE_COUNTS: LazyLock<Mutex<HashMap<Uuid, (u64, usize)>>> = LazyLock::new(Default::default);

/// [`count_tokens`] of a stored message, remembered per message: building the context of a long conversation
/// again at every turn then only counts what is new. A message whose text changed is counted again.
pub fn count_message_tokens(id: Uuid, text: &str) -> usize {
    let mut hasher = DefaultHasher::new();
    text.hash(&mut hasher);
    let fingerprint = hasher.finish();
    let cached = MESSAGE_COUNTS.lock().unwrap_or_else(|e| e.into_inner()).get(&id).copied();
    if let Some((seen, count)) = cached {
        if seen == fingerprint {
            return count;
        }
    }
    let count = count_tokens(text);
    let mut counts = MESSAGE_COUNTS.lock().unwrap_or_else(|e| e.into_inner());
    if counts.len() >= CACHED_MESSAGES {
        counts.clear();
    }
    counts.insert(id, (fingerprint, count));
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_text_has_no_tokens() {
        assert_eq!(count_tokens(""), 0);
    }

    #[test]
    fn counts_known_text() {
        // "Hello, world!" is 4 tokens in o200k_base: "Hello", ",", " world", "!".
        assert_eq!(count_tokens("Hello, world!"), 4);
        assert!(count_tokens("The quick brown fox jumps over the lazy dog.") >= 9);
    }

    #[test]
    fn long_run_of_one_character_is_counted() {
        let text = "a".repeat(100 * 1024);
        let n = count_tokens(&text);
        assert!(n > 0 && n <= text.len(), "implausible count {n}");
        let spaces = " ".repeat(100 * 1024);
        let n = count_tokens(&spaces);
        assert!(n > 0 && n <= spaces.len(), "implausible count {n}");
    }

    #[test]
    fn remembered_pieces_count_as_the_tokenizer_does() {
        let prose =
            "The quick brown fox jumps over the lazy dog. Über naïve café, 12345 items!\n\n  indented\tcode();\n";
        let long = format!("{} {}", prose.repeat(40), "supercalifragilisticexpialidocious-and-then-some ".repeat(3));
        for text in [prose, long.as_str(), "   ", "\n\n\n", "a", "日本語のテキスト"] {
            // Twice: the second time every short piece comes from the cache.
            assert_eq!(count_tokens(text), tokenizer().count(text), "{text:?}");
            assert_eq!(count_tokens(text), tokenizer().count(text), "{text:?} again");
        }
    }

    #[test]
    fn message_counts_follow_the_text() {
        let id = Uuid::new_v4();
        assert_eq!(count_message_tokens(id, "Hello, world!"), 4);
        assert_eq!(count_message_tokens(id, "Hello, world!"), 4);
        assert_eq!(count_message_tokens(id, "Hello"), 1, "an edited message is counted again");
    }
}
