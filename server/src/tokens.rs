//! Token counting shared by the whole server.
//!
//! Counts use OpenAI's `o200k_base` byte-pair encoding through [`bpe_openai`], GitHub's
//! linear-time BPE implementation: the vocabulary ships inside the crate (no network) and
//! counting stays linear even on pathological input such as one character repeated 100 KB.

use std::sync::LazyLock;

use bpe_openai::Tokenizer;

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

/// Number of `o200k_base` tokens in `text` (0 for the empty string).
pub fn count_tokens(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    tokenizer().count(text)
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
}
