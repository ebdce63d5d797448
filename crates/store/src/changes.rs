//! Changes to a conversation's documents told to every instance that shares the database, so each can show
//! them live to the people watching (`GET /api/threads/{id}/changes`). Only ids travel, never a document's text:
//! a listener reads what changed itself.

use async_trait::async_trait;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::Result;

/// What happened to a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// A new version (or the first) was saved.
    Saved,
    /// It was deleted with all its versions.
    Deleted,
    /// Its conversation was deleted, and every document in it (`artifact_id` is nil): nothing more to watch.
    ThreadDeleted,
    /// An answer started in the conversation (`artifact_id` is the turn's id).
    TurnStarted,
}

/// A change to one document of one conversation (or to all of them, for [`ChangeKind::ThreadDeleted`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactChange {
    pub thread_id: Uuid,
    pub artifact_id: Uuid,
    pub kind: ChangeKind,
}

impl ArtifactChange {
    /// The change as it travels between instances.
    pub fn payload(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A change read back from [`payload`](Self::payload); `None` for anything else.
    pub fn from_payload(payload: &str) -> Option<Self> {
        serde_json::from_str(payload).ok()
    }
}

/// Changes as the instances sharing one database tell them to each other (PostgreSQL's `NOTIFY`/`LISTEN`). A
/// store that one process owns (SQLite) has none: its changes are told within that process.
#[async_trait]
pub trait SharedChanges: Send + Sync {
    /// Tells every instance listening, this one included, of `change` (once it is committed).
    async fn announce(&self, change: &ArtifactChange) -> Result<()>;
    /// Every change announced from now on, by any instance: listening once this returns. A lost connection is
    /// opened again (changes announced meanwhile are missed).
    async fn listen(&self) -> Result<BoxStream<'static, ArtifactChange>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_travels_as_ids_and_comes_back_whole() {
        let change =
            ArtifactChange { thread_id: Uuid::now_v7(), artifact_id: Uuid::now_v7(), kind: ChangeKind::Deleted };
        assert_eq!(ArtifactChange::from_payload(&change.payload()), Some(change));
        assert!(change.payload().len() < 200, "well under NOTIFY's 8,000 bytes");
        assert_eq!(ArtifactChange::from_payload("{\"thread_id\": 1}"), None);
    }
}
