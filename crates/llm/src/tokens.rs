//! Token counting shared by the whole server.
//!
//! Counts use OpenAI's `o200k_base` byte-pair encoding through [`bpe_openai`], GitHub's linear-time BPE (linear even
//! on one character repeated 100 KB). The vocabulary ships in the binary as OpenAI's list (`server/data/`, 1.3 MB
//! with brotli) and the encoder is built from it at start-up (about a second, off the async workers): the prebuilt
//! tables of `bpe_openai::o200k_base` would add 32 MB to the binary and the image (a test checks both agree).
//! Cutting ASCII text into pieces (`split`) and counting short pieces (`merge_count`) are our own, measured to matter
//! (docs/perf-log.md); property tests check they give exactly the crate's results.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
use std::sync::{LazyLock, Mutex};

use bpe_openai::Tokenizer;
use rustc_hash::FxBuildHasher;
use uuid::Uuid;

/// OpenAI's `o200k_base` vocabulary in its published form: one token a line, base64, in rank order.
const O200K_VOCABULARY: &[u8] = include_bytes!("../data/o200k_base.tiktoken.br");

/// The factor of the encoder's token hash for this vocabulary: one with no collisions among its tokens (the
/// one `bpe_openai` builds its tables with).
const O200K_HASH_FACTOR: u64 = 17_846_336_922_010_275_747;

/// `o200k_base`'s pre-tokenizing pattern as `bpe_openai` takes it: the look-ahead `\s+(?!\S)` becomes an alternative
/// whose last character is left out of the piece (`true`), then plain whitespace.
const O200K_PATTERN: [(&str, bool); 3] = [
    (
        concat!(
            r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|",
            r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|",
            r"\p{N}{1,3}|",
            r" ?[^\s\p{L}\p{N}]+[\r\n/]*|",
            r"\s*[\r\n]+|",
            r"\s+$",
        ),
        false,
    ),
    (r"\s+\s", true),
    (r"\s+", false),
];

/// Builds the `o200k_base` tokenizer from the embedded vocabulary.
fn build_o200k() -> Tokenizer {
    let mut listed = Vec::new();
    brotli::BrotliDecompress(&mut &O200K_VOCABULARY[..], &mut listed).expect("the embedded vocabulary is brotli");
    let listed = String::from_utf8(listed).expect("the embedded vocabulary is text");
    let tokens = bpe::byte_pair_encoding::read_tiktoken(&listed).expect("the embedded vocabulary is base64");
    let bpe = bpe::byte_pair_encoding::BytePairEncoding::from_dictionary(tokens, Some(O200K_HASH_FACTOR));
    Tokenizer::new_lookahead(bpe, &O200K_PATTERN, false).expect("the o200k pattern compiles")
}

/// The process-wide tokenizer, built from the embedded vocabulary on first use.
static TOKENIZER: LazyLock<Tokenizer> = LazyLock::new(build_o200k);

/// Returns the shared `o200k_base` tokenizer, building it on the first call.
pub fn tokenizer() -> &'static Tokenizer {
    &TOKENIZER
}

/// Builds the tokenizer and the table of token ranks now, so that the first request does not pay for them
/// (optional: [`count_tokens`] builds both lazily).
pub fn warm_up() {
    LazyLock::force(&TOKENIZER);
    LazyLock::force(&RANKS);
}

/// Every token of the vocabulary by its bytes, with its merge rank (in `o200k_base`, its id).
static RANKS: LazyLock<HashMap<&'static [u8], u32, FxBuildHasher>> = LazyLock::new(|| {
    let bpe = &tokenizer().bpe;
    (0..bpe.num_tokens() as u32).map(|id| (bpe.token_bytes(id), id)).collect()
});

/// Tokens of a piece by OpenAI's merge loop (join the lowest-ranked adjacent pair until none is a token): 4.3 ms for
/// the pieces of 500 KB of prose where `bpe.count` takes 6.3; quadratic, so longer pieces go to `bpe` (linear).
fn merge_count(piece: &[u8]) -> usize {
    let ranks = &*RANKS;
    if piece.len() > CACHED_PIECE_BYTES {
        return tokenizer().bpe.count(piece);
    }
    if ranks.contains_key(piece) {
        return 1;
    }
    // `starts[..parts + 1]`: where each part starts, then the end of the piece.
    // `pair_ranks[i]`: the rank of parts `i` and `i + 1` joined (`u32::MAX` if that is not a token).
    let mut starts = [0u8; CACHED_PIECE_BYTES + 1];
    let mut pair_ranks = [u32::MAX; CACHED_PIECE_BYTES];
    let mut parts = piece.len();
    for (i, start) in starts.iter_mut().enumerate().take(parts + 1) {
        *start = i as u8;
    }
    let rank = |starts: &[u8], i: usize, parts: usize| {
        if i + 1 < parts {
            let joined = &piece[starts[i] as usize..starts[i + 2] as usize];
            ranks.get(joined).copied().unwrap_or(u32::MAX)
        } else {
            u32::MAX
        }
    };
    for (i, pair_rank) in pair_ranks.iter_mut().enumerate().take(parts.saturating_sub(1)) {
        *pair_rank = rank(&starts, i, parts);
    }
    while parts > 1 {
        let (at, &lowest) =
            pair_ranks[..parts - 1].iter().enumerate().min_by_key(|&(_, rank)| *rank).expect("at least one pair");
        if lowest == u32::MAX {
            break;
        }
        starts.copy_within(at + 2..parts + 1, at + 1);
        pair_ranks.copy_within(at + 2..parts, at + 1);
        parts -= 1;
        pair_ranks[at] = rank(&starts, at, parts);
        if at > 0 {
            pair_ranks[at - 1] = rank(&starts, at - 1, parts);
        }
    }
    parts
}

/// Pieces (words, with their leading space or punctuation) at most this long have their counts remembered.
const CACHED_PIECE_BYTES: usize = 24;
/// Most pieces remembered per thread; the cache starts over when full.
const CACHED_PIECES: usize = 50_000;

thread_local! {
    /// Token counts of short pieces seen on this thread. Prose repeats its words, and counting a piece with
    /// the byte-pair encoding costs several times a hash lookup.
    static PIECES: RefCell<PieceCounts> = RefCell::default();
}

/// Remembered token counts of short pieces, kept one after the other in one string: an allocation for each (some
/// 12,000 for 500 KB of prose) cost 0.5 ms more of the 9-10 ms of counting it from cold.
#[derive(Default)]
struct PieceCounts {
    /// The remembered pieces, one after the other.
    text: String,
    /// For each remembered piece: where it starts in `text`, its length and its token count.
    counts: hashbrown::HashTable<(u32, u32, u32)>,
}

impl PieceCounts {
    fn clear(&mut self) {
        self.text.clear();
        self.counts.clear();
    }

    /// The token count of `piece`, counted with `count` if not remembered yet.
    fn get_or_count(&mut self, piece: &str, count: impl FnOnce() -> usize) -> usize {
        let hash = FxBuildHasher.hash_one(piece);
        let text = &self.text;
        let stored = |&(start, len, _): &(u32, u32, u32)| &text[start as usize..][..len as usize];
        if let Some(&(_, _, n)) = self.counts.find(hash, |entry| stored(entry) == piece) {
            return n as usize;
        }
        if self.counts.len() >= CACHED_PIECES {
            self.clear();
        }
        let n = count();
        let entry = (self.text.len() as u32, piece.len() as u32, n as u32);
        self.text.push_str(piece);
        let text = &self.text;
        self.counts.insert_unique(hash, entry, |&(start, len, _)| {
            FxBuildHasher.hash_one(&text[start as usize..][..len as usize])
        });
        n
    }
}

/// Forgets the piece counts remembered on this thread (benchmarks measure counting from cold with it).
pub fn forget_pieces() {
    PIECES.with_borrow_mut(PieceCounts::clear);
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
        split(tokenizer, text.as_str())
            .map(|piece| {
                if piece.len() > CACHED_PIECE_BYTES {
                    return tokenizer.bpe.count(piece.as_bytes());
                }
                cache.get_or_count(piece, || merge_count(piece.as_bytes()))
            })
            .sum()
    })
}

/// The pieces `tokenizer.split` cuts `text` into, found faster (1.2 ms for 500 KB of prose, not 4.3): [`ascii_piece`]
/// cuts ASCII by byte classes, the tokenizer's regex each piece whose end a byte outside ASCII could change.
fn split<'a>(tokenizer: &'a Tokenizer, text: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= text.len() {
            return None;
        }
        let end = match ascii_piece(text.as_bytes(), start) {
            Some(end) => end,
            None => start + tokenizer.split(&text[start..]).next()?.len(),
        };
        let piece = &text[start..end];
        start = end;
        Some(piece)
    })
}

/// What `o200k_base`'s pattern sees in an ASCII byte.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Lower,
    Upper,
    Digit,
    /// `\r` or `\n`.
    Newline,
    /// Other white space: space, tab, vertical tab, form feed.
    Space,
    /// Anything else in ASCII: punctuation, symbols, control characters.
    Other,
    /// A byte of a character outside ASCII, whose Unicode class is unknown here.
    Wide,
    /// Past the end of the text.
    End,
}

const fn class_of(byte: u8) -> Class {
    match byte {
        b'a'..=b'z' => Class::Lower,
        b'A'..=b'Z' => Class::Upper,
        b'0'..=b'9' => Class::Digit,
        b'\r' | b'\n' => Class::Newline,
        b'\t' | 0x0b | 0x0c | b' ' => Class::Space,
        0x80.. => Class::Wide,
        _ => Class::Other,
    }
}

static CLASSES: [Class; 256] = {
    let mut classes = [Class::Other; 256];
    let mut byte = 0;
    while byte < 256 {
        classes[byte] = class_of(byte as u8);
        byte += 1;
    }
    classes
};

/// The class of the byte at `i`, [`Class::End`] past the end.
#[inline]
fn class_at(text: &[u8], i: usize) -> Class {
    text.get(i).map_or(Class::End, |&b| CLASSES[b as usize])
}

/// The end of the piece at `start` (not the text's end) as `o200k_base`'s pattern cuts it, `None` where a byte outside
/// ASCII takes part; branches 1 to 8 are those of [`O200K_PATTERN`] in order, tried leftmost-first.
#[inline]
fn ascii_piece(text: &[u8], start: usize) -> Option<usize> {
    let class = |i: usize| class_at(text, i);
    match class(start) {
        Class::Wide | Class::End => None,
        // Branches 1 and 2 in one: in ASCII, upper and lower case letters are disjoint.
        Class::Lower | Class::Upper => word(text, start),
        Class::Digit => {
            let mut end = start + 1;
            while end < start + 3 && class(end) == Class::Digit {
                end += 1;
            }
            // A fourth character would not be taken; a second or third might be a digit outside ASCII.
            (end == start + 3 || class(end) != Class::Wide).then_some(end)
        }
        Class::Other => match word(text, start + 1) {
            Some(end) if end > start + 1 => Some(end),
            Some(_) => symbols(text, start),
            None => None,
        },
        Class::Space => match word(text, start + 1) {
            Some(end) if end > start + 1 => Some(end),
            Some(_) if text[start] == b' ' && class(start + 1) == Class::Other => symbols(text, start + 1),
            Some(_) => white_space(text, start),
            None => None,
        },
        Class::Newline => white_space(text, start),
    }
}

/// Branches 1 and 2 after the optional prefix, from `from`: the end of the word and its contraction (`from`
/// itself when no letter is there), or `None` when a byte outside ASCII could be a letter or change a contraction.
#[inline]
fn word(text: &[u8], from: usize) -> Option<usize> {
    // The runs are scanned here and in `symbols` by hand: a shared function for them measured 1-3% slower on
    // `tokens/prose_500k`, even inlined.
    let class = |i: usize| class_at(text, i);
    let mut end = from;
    while class(end) == Class::Upper {
        end += 1;
    }
    while class(end) == Class::Lower {
        end += 1;
    }
    if class(end) == Class::Wide {
        return None;
    }
    if end == from || text.get(end) != Some(&b'\'') {
        return Some(end);
    }
    // `(?i)s` also matches U+017F (long s): leave any character outside ASCII after the apostrophe to the regex.
    let (Some(&first), second) = (text.get(end + 1), text.get(end + 2).copied()) else {
        return Some(end);
    };
    if !first.is_ascii() || second.is_some_and(|b| !b.is_ascii()) {
        return None;
    }
    let second = second.unwrap_or(0);
    Some(match first.to_ascii_lowercase() {
        b's' | b't' | b'm' | b'd' => end + 2,
        b'r' | b'v' if second.eq_ignore_ascii_case(&b'e') => end + 3,
        b'l' if second.eq_ignore_ascii_case(&b'l') => end + 3,
        _ => end,
    })
}

/// Branch 4 from the first symbol at `from`: symbols, then any run of `\r`, `\n` and `/`.
#[inline]
fn symbols(text: &[u8], from: usize) -> Option<usize> {
    let class = |i: usize| class_at(text, i);
    let mut end = from;
    while class(end) == Class::Other {
        end += 1;
    }
    if class(end) == Class::Wide {
        return None;
    }
    while matches!(text.get(end), Some(b'\r' | b'\n' | b'/')) {
        end += 1;
    }
    Some(end)
}

/// Branches 5 to 8 at a run of white space starting at `start`.
#[inline]
fn white_space(text: &[u8], start: usize) -> Option<usize> {
    let class = |i: usize| class_at(text, i);
    let mut end = start;
    let mut after_newline = None;
    loop {
        match class(end) {
            Class::Newline => after_newline = Some(end + 1),
            Class::Space => {}
            Class::Wide => return None,
            _ => break,
        }
        end += 1;
    }
    Some(match after_newline {
        // `\s*[\r\n]+`: as much white space as reaches the last line break of the run.
        Some(after) => after,
        // `\s+$`: the run ends the text.
        None if end == text.len() => end,
        // `\s+\s` minus its last character, or the single white space character `\s+` takes.
        None => (end - 1).max(start + 1),
    })
}

/// Most message counts kept; the cache starts over when full.
const CACHED_MESSAGES: usize = 200_000;

/// Token counts of stored messages by id, with a fingerprint of the text they were counted from.
static MESSAGE_COUNTS: LazyLock<Mutex<HashMap<Uuid, (u64, usize)>>> = LazyLock::new(Default::default);

/// [`count_tokens`] of a stored message, remembered per message: building the context of a long conversation
/// again at every turn then only counts what is new. A message whose text changed is counted again.
pub fn count_message_tokens(id: Uuid, text: &str) -> usize {
    let fingerprint = BuildHasherDefault::<DefaultHasher>::default().hash_one(text);
    let cached = MESSAGE_COUNTS.lock().unwrap_or_else(|e| e.into_inner()).get(&id).copied();
    if let Some((_, count)) = cached.filter(|&(seen, _)| seen == fingerprint) {
        return count;
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
    fn the_built_tokenizer_is_bpe_openais_o200k_base() {
        let theirs = bpe_openai::o200k_base();
        let ours = tokenizer();
        assert_eq!(ours.bpe.num_tokens(), theirs.bpe.num_tokens());
        for id in (0..theirs.bpe.num_tokens() as u32).step_by(97) {
            assert_eq!(ours.bpe.token_bytes(id), theirs.bpe.token_bytes(id), "token {id}");
        }
        let text = "Hello, world! Ünïcödé 12345 tokens\n\n  spaces   and\ttabs; emoji 🦀🦀 and CamelCaseWords.\r\n";
        assert_eq!(ours.split(text).collect::<Vec<_>>(), theirs.split(text).collect::<Vec<_>>());
        assert_eq!(ours.encode(text), theirs.encode(text));
        let long = "abc ".repeat(5_000) + &"x".repeat(10_000);
        assert_eq!(ours.count(&long), theirs.count(&long));
    }

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

    /// Pieces that exercise every branch of the pattern, in ASCII and out of it.
    const FRAGMENTS: &[&str] = &[
        "a",
        "word",
        "Word",
        "WORD",
        "camelCase",
        "HTTPServer",
        "x",
        "Z",
        "the",
        " the",
        "  ",
        " ",
        "   ",
        "\t",
        "\n",
        "\r\n",
        "\r",
        "\n\n",
        " \n ",
        "\x0b",
        "\x0c",
        "\u{a0}",
        "\u{2003}",
        "\u{85}",
        "\u{3000}",
        "0",
        "7",
        "42",
        "1234",
        "3.14",
        "1,000",
        "'",
        "'s",
        "'S",
        "'t",
        "'re",
        "'RE",
        "'rE",
        "'ve",
        "'m",
        "'ll",
        "'Ll",
        "'d",
        "'x",
        "'\u{17f}",
        "don't",
        "I'M",
        "it's",
        "'l",
        "'r",
        ".",
        ",",
        "!",
        "?!",
        "...",
        "(",
        ")",
        "\"",
        "-",
        "--",
        "/",
        "//",
        "/\n",
        "#",
        "@",
        "_",
        "`",
        "~",
        "\x00",
        "\x1f",
        "\x7f",
        "é",
        "e\u{301}",
        "É",
        "ß",
        "naïve",
        "Ελληνικά",
        "Жук",
        "ǅ",
        "ʰ",
        "日本語",
        "のテキスト",
        "٣",
        "²",
        "½",
        "Ⅻ",
        "🦀",
        "👍🏽",
        "—",
        "«",
        "»",
        "€",
        "\u{200b}",
        "\u{feff}",
    ];

    fn text_of(fragments: Vec<&'static str>) -> String {
        fragments.concat()
    }

    /// Fails unless `text` splits into the tokenizer's pieces and counts as many tokens as the tokenizer says.
    fn agrees_with_the_tokenizer(text: &str) -> Result<(), proptest::test_runner::TestCaseError> {
        let ours: Vec<&str> = split(tokenizer(), text).collect();
        let theirs: Vec<&str> = tokenizer().split(text).collect();
        proptest::prop_assert_eq!(ours, theirs, "{:?}", text);
        proptest::prop_assert_eq!(count_tokens(text), tokenizer().count(text), "{:?}", text);
        Ok(())
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(10_000))]
        #[test]
        fn merge_count_matches_the_encoder_on_joined_tokens(
            ids in proptest::collection::vec(0..tokenizer().bpe.num_tokens() as u32, 1..8),
            len in 1..=CACHED_PIECE_BYTES,
        ) {
            let bpe = &tokenizer().bpe;
            let bytes: Vec<u8> = ids.iter().flat_map(|&id| bpe.token_bytes(id)).copied().take(len).collect();
            proptest::prop_assert_eq!(merge_count(&bytes), bpe.count(&bytes), "{:?}", bytes);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(2_000))]

        #[test]
        fn pieces_and_counts_match_the_tokenizer_on_mixed_text(
            fragments in proptest::collection::vec(proptest::sample::select(FRAGMENTS), 0..40)
        ) {
            let text = text_of(fragments);
            agrees_with_the_tokenizer(&text)?;
        }

        #[test]
        fn pieces_and_counts_match_the_tokenizer_on_ascii(text in "[\\x00-\\x7f]{0,80}") {
            agrees_with_the_tokenizer(&text)?;
        }

        #[test]
        fn pieces_and_counts_match_the_tokenizer_on_any_text(text in "\\PC{0,60}|.{0,60}") {
            agrees_with_the_tokenizer(&text)?;
        }
    }

    #[test]
    fn counts_stay_right_when_the_remembered_pieces_start_over() {
        // More distinct short pieces than are remembered: the cache fills, starts over and fills again.
        let word = |mut i: usize| {
            let mut word = String::from(" ");
            while i > 0 || word.len() == 1 {
                word.push(char::from(b'a' + (i % 26) as u8));
                i /= 26;
            }
            word
        };
        let text: String = (0..CACHED_PIECES + CACHED_PIECES / 2).map(word).collect();
        forget_pieces();
        assert_eq!(count_tokens(&text), tokenizer().count(text.as_str()));
        assert_eq!(count_tokens(&text), tokenizer().count(text.as_str()), "again");
    }

    #[test]
    fn message_counts_follow_the_text() {
        let id = Uuid::new_v4();
        assert_eq!(count_message_tokens(id, "Hello, world!"), 4);
        assert_eq!(count_message_tokens(id, "Hello, world!"), 4);
        assert_eq!(count_message_tokens(id, "Hello"), 1, "an edited message is counted again");
    }
}
