//! Documents (artifacts) and their versions. The storage interface both backends implement, and what both make
//! of the rows they read.

use app::api::{Artifact, ArtifactType, ArtifactVersion};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::columns::stored_row;
use super::{NewArtifact, Result, StoreError};

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

/// Documents (artifacts) and their versions, and which requests they fulfilled.
#[async_trait]
pub trait Documents: Send + Sync {
    /// `NotFound` when the thread, or a message it points at, is missing or another user's.
    async fn create_artifact(&self, user: Uuid, artifact: NewArtifact) -> Result<Artifact>;
    /// The thread's documents, oldest first; `NotFound` when the thread is missing or another user's.
    async fn list_artifacts(&self, user: Uuid, thread: Uuid) -> Result<Vec<Artifact>>;
    async fn get_artifact(&self, user: Uuid, artifact: Uuid) -> Result<Artifact>;
    async fn delete_artifact(&self, user: Uuid, artifact: Uuid) -> Result<()>;
    /// Links the artifacts of a turn to the answer saved for it. Other users' artifacts are left alone;
    /// `NotFound` when the answer is missing or another user's.
    async fn link_artifacts(&self, user: Uuid, artifacts: &[Uuid], assistant_message: Uuid) -> Result<()>;
    /// Saves the next version of a document and makes it the current one, in one transaction; returns the
    /// document at its new version. `NotFound` when it is missing or another user's.
    async fn revise_artifact(&self, user: Uuid, artifact: Uuid, revision: ArtifactRevision) -> Result<Artifact>;
    /// Every version of a document, oldest first; `NotFound` when it is missing or another user's.
    async fn list_artifact_versions(&self, user: Uuid, artifact: Uuid) -> Result<Vec<ArtifactVersion>>;
    /// The thread's requests that produced a document or a later version of one, or that one answers besides
    /// (what the model no longer sees), each with the answer that made the document when known, in no
    /// particular order; empty for a thread that is missing or another user's.
    async fn fulfilled_requests(&self, user: Uuid, thread: Uuid) -> Result<Vec<Fulfilment>>;
    async fn get_artifact_version(&self, user: Uuid, artifact: Uuid, version: i64) -> Result<ArtifactVersion>;
}

impl NewArtifact {
    /// The document as saved under `id`, at its first version, at `created`.
    pub(crate) fn saved(self, id: Uuid, created: DateTime<Utc>) -> Artifact {
        Artifact {
            id,
            thread_id: self.thread_id,
            artifact_type: self.artifact_type,
            title: self.title,
            content: self.content,
            version: 1,
            request_message_id: self.request_message_id,
            assistant_message_id: self.assistant_message_id,
            created_at: created,
        }
    }
}

/// The columns an [`ArtifactRow`] reads.
pub(crate) const ARTIFACT_COLUMNS: &str =
    "id, thread_id, artifact_type, title, content, version, request_message_id, assistant_message_id, created_at";

/// The versions of documents (`v`, of the document `a`) as [`VersionRow`]s. The first version's request is kept
/// on the document.
pub(crate) const VERSIONS: &str = "select v.artifact_id, v.version, v.title, v.content, v.created_at,
    coalesce(v.request_message_id, case when v.version = 1 then a.request_message_id end) as request_message_id
    from artifact_versions v join artifacts a on a.id = v.artifact_id";

/// Saves a document at its first version: id, thread, owner, type, title, content, request, answer, time.
pub(crate) const INSERT_ARTIFACT: &str = "insert into artifacts (id, thread_id, user_id, artifact_type, title, content,
    version, request_message_id, assistant_message_id, created_at, updated_at)
    values ($1, $2, $3, $4, $5, $6, 1, $7, $8, $9, $9)";

/// Saves the first version of a document: its id, title, content and time.
pub(crate) const INSERT_FIRST_VERSION: &str =
    "insert into artifact_versions (artifact_id, version, title, content, created_at) values ($1, 1, $2, $3, $4)";

/// Saves a later version of a document: its id, number, title, content, time and the request that asked for it.
pub(crate) const INSERT_VERSION: &str = "insert into artifact_versions
    (artifact_id, version, title, content, created_at, request_message_id) values ($1, $2, $3, $4, $5, $6)";

/// The requests of a thread (`$1`) of a user (`$2`) that a document or a version of one answers.
pub(crate) const FULFILLED: &str = "select request_message_id as request, assistant_message_id as made_by
    from artifacts where thread_id = $1 and user_id = $2 and request_message_id is not null
    union
    select v.request_message_id, null from artifact_versions v join artifacts a on a.id = v.artifact_id
    where a.thread_id = $1 and a.user_id = $2 and v.request_message_id is not null
    union
    select r.message_id, a.assistant_message_id from artifact_requests r join artifacts a on a.id = r.artifact_id
    where a.thread_id = $1 and a.user_id = $2";

/// A request a document answers, and the answer that made the document (`None` while its turn runs, or when
/// that answer is gone or not known).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fulfilment {
    pub request: Uuid,
    pub made_by: Option<Uuid>,
}

stored_row! {
    /// A [`Fulfilment`]'s row.
    FulfilmentRow<I> -> Fulfilment {
        request: I,
        made_by: Option<I>,
    }
}

stored_row! {
    /// A document's row: ids and times as the backend keeps them (see [`Stored`]).
    ArtifactRow<I, T> -> Artifact {
        id: I,
        thread_id: I,
        title: String,
        content: String,
        version: i64,
        request_message_id: Option<I>,
        assistant_message_id: Option<I>,
        created_at: T,
    } with {
        artifact_type: String,
    } => {
        artifact_type: ArtifactType::parse(&artifact_type)
            .ok_or_else(|| StoreError::Corrupt(format!("type {artifact_type}")))?,
    }
}

stored_row! {
    /// A document version's row (see [`VERSIONS`]).
    VersionRow<I, T> -> ArtifactVersion {
        artifact_id: I,
        version: i64,
        title: String,
        content: String,
        request_message_id: Option<I>,
        created_at: T,
    }
}
