//! Storage types of documents: revisions of artifacts, attachments and their searchable chunks.

use uuid::Uuid;

/// A new version of an existing document.
#[derive(Debug, Clone)]
pub struct ArtifactRevision {
    pub title: String,
    pub content: String,
    /// The user message that asked for the revision; `None` for silent generation.
    pub request_message_id: Option<Uuid>,
    /// Earlier requests of the thread this version answers too (see [`super::NewArtifact::answers`]).
    pub answers: Vec<Uuid>,
}

/// A file to attach, with its text already split into chunks.
#[derive(Debug, Clone)]
pub struct NewAttachment {
    pub thread_id: Uuid,
    pub filename: String,
    pub content_type: String,
    pub size: i64,
    pub chunks: Vec<String>,
}

/// One chunk found by [`super::Store::search_chunks`].
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkHit {
    pub attachment_id: Uuid,
    pub filename: String,
    pub seq: i64,
    pub content: String,
}

/// Most words of a chunk query that are searched.
const MAX_QUERY_WORDS: usize = 16;

/// The distinct lower-case words of a chunk query. Chunks match on ANY of them and are ranked by relevance,
/// because a model's query ("refund policy days") rarely has every word in one passage.
pub fn chunk_query_words(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in super::search_query::words(query) {
        if !out.contains(&word) {
            out.push(word);
        }
        if out.len() == MAX_QUERY_WORDS {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_words_are_distinct_and_plain() {
        assert_eq!(chunk_query_words("Refund \"policy\" OR refund* (days)"), vec!["refund", "policy", "or", "days"]);
        assert!(chunk_query_words("*** :: ()").is_empty());
    }
}
