//! Files attached to a conversation: their text is extracted, split into chunks and indexed, so the
//! assistant can search them (`document_search`) in every later turn.

pub mod chunk;
pub mod extract;

pub use chunk::chunk_text;
pub use extract::{ExtractError, Extractor, FileKind};
