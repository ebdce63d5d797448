//! Splitting text into overlapping chunks of a few hundred words, cut at paragraph and sentence ends where
//! possible, so a search hit carries enough context to answer from. One pass, ending at [`MAX_CHUNKS`] chunks.

/// Target chunk size in characters.
pub const CHUNK_CHARS: usize = 1200;
/// Characters carried over from the end of one chunk to the start of the next.
const OVERLAP_CHARS: usize = 150;
/// Most chunks kept of one file (about 2.4 MB of text).
pub const MAX_CHUNKS: usize = 2000;

/// Splits text into chunks of about [`CHUNK_CHARS`] characters (plus the overlap carried from the previous one),
/// whitespace normalised; empty text gives no chunks.
pub fn chunk_text(text: &str) -> Vec<String> {
    let mut chunks = Chunks::default();
    for paragraph in text.split("\n\n") {
        // The paragraph's words joined by single spaces, cut into pieces no longer than a chunk.
        let mut piece = Counted::default();
        for word in paragraph.split_whitespace() {
            // A word longer than a chunk is cut where it must be, reading no further than each cut.
            let mut word = word;
            while let Some((cut, _)) = word.char_indices().nth(CHUNK_CHARS) {
                if !piece.is_empty() {
                    chunks.add(&std::mem::take(&mut piece));
                }
                chunks.add(&Counted { text: word[..cut].to_string(), chars: CHUNK_CHARS });
                if chunks.full() {
                    return chunks.finish();
                }
                word = &word[cut..];
            }
            let word_chars = word.chars().count();
            if !piece.is_empty() && piece.chars + word_chars + 1 > CHUNK_CHARS {
                chunks.add(&std::mem::take(&mut piece));
                if chunks.full() {
                    return chunks.finish();
                }
            }
            piece.push(' ', word, word_chars);
        }
        if !piece.is_empty() {
            chunks.add(&piece);
            if chunks.full() {
                return chunks.finish();
            }
        }
    }
    chunks.finish()
}

/// Text with its length in characters, kept as it grows.
#[derive(Default)]
struct Counted {
    text: String,
    chars: usize,
}

impl Counted {
    fn is_empty(&self) -> bool {
        self.chars == 0
    }

    /// Appends `text` of `chars` characters, after `separator` unless this is still empty.
    fn push(&mut self, separator: char, text: &str, chars: usize) {
        if !self.is_empty() {
            self.text.push(separator);
            self.chars += 1;
        }
        self.text.push_str(text);
        self.chars += chars;
    }
}

/// The chunks made so far and the one being filled.
#[derive(Default)]
struct Chunks {
    done: Vec<String>,
    current: Counted,
}

impl Chunks {
    /// Adds a piece to the current chunk, or closes the chunk first when the piece would not fit.
    fn add(&mut self, piece: &Counted) {
        if !self.current.is_empty() && self.current.chars + piece.chars + 1 > CHUNK_CHARS {
            let tail = overlap(&self.current);
            self.done.push(std::mem::replace(&mut self.current, tail).text);
        }
        self.current.push('\n', &piece.text, piece.chars);
    }

    /// Whether no more chunks are kept: the rest of the text can be left unread.
    fn full(&self) -> bool {
        self.done.len() >= MAX_CHUNKS
    }

    fn finish(mut self) -> Vec<String> {
        if !self.full() && !self.current.text.trim().is_empty() {
            self.done.push(self.current.text);
        }
        // A piece and a cut word can close two chunks in a row.
        self.done.truncate(MAX_CHUNKS);
        self.done
    }
}

/// The end of a chunk that starts the next one: its last sentences up to [`OVERLAP_CHARS`].
fn overlap(chunk: &Counted) -> Counted {
    if chunk.chars <= OVERLAP_CHARS {
        return Counted::default();
    }
    let from = chunk.text.char_indices().rev().nth(OVERLAP_CHARS - 1).map_or(0, |(i, _)| i);
    let tail = &chunk.text[from..];
    // Start at a sentence or word boundary so no chunk begins mid-word.
    let start = tail.find(". ").map(|i| i + 2).or_else(|| tail.find(' ').map(|i| i + 1)).unwrap_or(0);
    let text = tail[start..].trim().to_string();
    Counted { chars: text.chars().count(), text }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use proptest::prelude::*;

    use super::*;

    /// The longest a chunk can be: the overlap carried in, a line break and a full piece.
    const MOST_CHARS: usize = CHUNK_CHARS + OVERLAP_CHARS + 1;

    #[test]
    fn short_text_is_one_chunk_and_empty_text_none() {
        assert_eq!(chunk_text("Hello\n\n  world  "), vec!["Hello\nworld".to_string()]);
        assert!(chunk_text(" \n\n ").is_empty());
    }

    #[test]
    fn long_text_is_cut_into_bounded_chunks_that_keep_every_sentence() {
        let text: String =
            (0..300).map(|i| format!("Sentence number {i} says something. ")).collect::<Vec<_>>().join("\n\n");
        let chunks = chunk_text(&text);
        assert!(chunks.len() > 5);
        for chunk in &chunks {
            assert!(chunk.chars().count() <= MOST_CHARS, "{}", chunk.len());
        }
        for i in [0, 150, 299] {
            let sentence = format!("Sentence number {i} says something.");
            assert!(chunks.iter().any(|c| c.contains(&sentence)), "{sentence}");
        }
        let word = "x".repeat(5000);
        assert!(chunk_text(&word).iter().all(|c| c.chars().count() <= MOST_CHARS));
    }

    #[test]
    fn a_huge_word_gives_the_most_chunks_kept_cut_from_its_start() {
        // 8 MiB without whitespace, in characters of one, two and three bytes.
        let text = "abcé日".repeat(1024 * 1024);
        let chunks = chunk_text(&text);
        assert_eq!(chunks.len(), MAX_CHUNKS);
        assert!(chunks.iter().all(|c| c.chars().count() <= MOST_CHARS));
        // Each chunk after the first is the end of the one before, a line break and the next cut of the word.
        let first: Vec<char> = chunks[0].chars().collect();
        let carried: String = first[CHUNK_CHARS - OVERLAP_CHARS..].iter().collect();
        assert!(chunks[1].starts_with(&format!("{carried}\n")), "{}", &chunks[1][..40]);
        let cuts: String = chunks.iter().map(|c| c.rsplit('\n').next().unwrap_or_default()).collect();
        let kept: String = text.chars().take(MAX_CHUNKS * CHUNK_CHARS).collect();
        assert!(cuts == kept, "the cuts are not the start of the text");
    }

    #[test]
    fn a_million_lines_give_bounded_chunks_from_the_first_line_on() {
        let text: String = (0..1_000_000).map(|i| format!("line {i} of the log\n")).collect();
        let chunks = chunk_text(&text);
        assert_eq!(chunks.len(), MAX_CHUNKS);
        assert!(chunks.iter().all(|c| c.chars().count() <= MOST_CHARS));
        assert!(chunks[0].starts_with("line 0 of the log line 1 of the log line 2 "), "{}", &chunks[0][..60]);
        // The lines are kept from the first on, none skipped, until the chunks run out.
        let mut seen = HashSet::new();
        for chunk in &chunks {
            let words: Vec<&str> = chunk.split_whitespace().collect();
            for pair in words.windows(2) {
                if pair[0] == "line" {
                    seen.insert(pair[1].parse::<usize>().expect("a line number"));
                }
            }
        }
        let last = *seen.iter().max().expect("some lines");
        assert!(last > 50_000, "{last}");
        assert!((0..last).all(|i| seen.contains(&i)));
    }

    /// Prose: words with and without accents, sentences, line breaks, paragraphs and stray spacing.
    fn prose() -> impl Strategy<Value = String> {
        let separator = prop::sample::select(vec![" ", " ", " ", ". ", ", ", "\n", "\n\n", "  \t", ".\n\n", "\r\n"]);
        prop::collection::vec(("[a-zA-Z0-9éüß日]{1,14}", separator), 0..1000)
            .prop_map(|parts| parts.into_iter().map(|(word, separator)| word + separator).collect())
    }

    proptest! {
        #[test]
        fn chunks_are_bounded_and_keep_every_word(text in prose()) {
            let chunks = chunk_text(&text);
            for chunk in &chunks {
                prop_assert!(!chunk.trim().is_empty());
                prop_assert!(chunk.chars().count() <= MOST_CHARS, "{} characters", chunk.chars().count());
            }
            let words: HashSet<&str> = chunks.iter().flat_map(|c| c.split_whitespace()).collect();
            for word in text.split_whitespace() {
                prop_assert!(words.contains(word), "{word:?} is in no chunk");
            }
        }
    }
}
