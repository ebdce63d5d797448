//! Taking a person's conversations out of Quire and bringing them back in: one conversation as JSON or Markdown,
//! everything as JSON, and imports of Quire's own JSON and of ChatGPT's `conversations.json`.
//!
//! Everything whose cost grows with what a person sends or keeps (reading an import, rendering an export) runs
//! in the heavy-work queue ([`crate::heavy`]), off the async workers: the caller holds the job's
//! [`Ticket`](crate::heavy::Ticket).

pub mod chatgpt;
pub mod export;
pub mod import;
pub mod requirements;

use store::StoreError;

/// What can go wrong taking history out or bringing it in.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The body is not JSON at all.
    #[error("The body is not valid JSON: {0}")]
    Malformed(String),
    /// JSON, but not a format Quire imports, or nothing to import.
    #[error("{0}")]
    Unsupported(String),
    /// A value breaks one of the rules every conversation follows; `field` says where it is in the body.
    #[error("{message}")]
    Invalid { field: String, message: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Writing an export's text failed.
    #[error("rendering the export failed")]
    Render(#[source] serde_json::Error),
    /// The work given to the heavy-work queue did not finish (it panicked).
    #[error("a background task failed")]
    Task,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
