//! Splitting text into overlapping chunks of a few hundred words, cut at paragraph and sentence ends where
//! possible, so a search hit carries enough context to answer from.

/// Target chunk size in characters.
pub const CHUNK_CHARS: usize = 1200;
/// Characters carried over from the end of one chunk to the start of the next.
const OVERLAP_CHARS: usize = 150;
/// Most chunks kept of one file (about 2.4 MB of text).
pub const MAX_CHUNKS: usize = 2000;

/// Splits text into chunks of about [`CHUNK_CHARS`] characters (plus the overlap carried from the previous one). Whitespace is normalised;
/// empty text gives no chunks.
pub fn chunk_text(text: &str) -> Vec<String> {
    // Paragraphs, each with its inner whitespace collapsed.
    let paragraphs: Vec<String> = text
        .split("\n\n")
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|p| !p.is_empty())
        .collect();
    let mut chunks: Vec<String> = Vec::new();
    let mut current = String::new();
    for paragraph in paragraphs {
        for piece in split_long(&paragraph) {
            if !current.is_empty() && current.chars().count() + piece.chars().count() + 1 > CHUNK_CHARS {
                let tail = overlap(&current);
                chunks.push(std::mem::take(&mut current));
                current = tail;
            }
            if !current.is_empty() {
                current.push('\n');
            }
            current.push_str(&piece);
        }
        if chunks.len() >= MAX_CHUNKS {
            break;
        }
    }
    if !current.trim().is_empty() {
        chunks.push(current);
    }
    chunks.truncate(MAX_CHUNKS);
    chunks
}

/// Pieces of a paragraph no longer than a chunk: cut after sentences, or at spaces, or anywhere.
fn split_long(paragraph: &str) -> Vec<String> {
    if paragraph.chars().count() <= CHUNK_CHARS {
        return vec![paragraph.to_string()];
    }
    let mut pieces = Vec::new();
    let mut current = String::new();
    for word in paragraph.split(' ') {
        let mut word = word.to_string();
        while word.chars().count() > CHUNK_CHARS {
            let head: String = word.chars().take(CHUNK_CHARS).collect();
            word = word.chars().skip(CHUNK_CHARS).collect();
            if !current.is_empty() {
                pieces.push(std::mem::take(&mut current));
            }
            pieces.push(head);
        }
        if !current.is_empty() && current.chars().count() + word.chars().count() + 1 > CHUNK_CHARS {
            pieces.push(std::mem::take(&mut current));
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(&word);
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    pieces
}

/// The end of a chunk that starts the next one: its last sentences up to [`OVERLAP_CHARS`].
fn overlap(chunk: &str) -> String {
    let chars: Vec<char> = chunk.chars().collect();
    if chars.len() <= OVERLAP_CHARS {
        return String::new();
    }
    let tail: String = chars[chars.len() - OVERLAP_CHARS..].iter().collect();
    // Start at a sentence or word boundary so no chunk begins mid-word.
    let start = tail.find(". ").map(|i| i + 2).or_else(|| tail.find(' ').map(|i| i + 1)).unwrap_or(0);
    tail[start..].trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

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
            assert!(chunk.chars().count() <= CHUNK_CHARS + OVERLAP_CHARS + 1, "{}", chunk.len());
        }
        for i in [0, 150, 299] {
            let sentence = format!("Sentence number {i} says something.");
            assert!(chunks.iter().any(|c| c.contains(&sentence)), "{sentence}");
        }
        let word = "x".repeat(5000);
        assert!(chunk_text(&word).iter().all(|c| c.chars().count() <= CHUNK_CHARS + OVERLAP_CHARS + 1));
    }
}
