//! Artifacts (the documents people see) and their versions. The storage interface both backends implement, and what both make
//! of the rows they read.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;
use wire::{Artifact, ArtifactType, ArtifactVersion, VersionAuthor, REQUEST_EXCERPT_CHARS};

use super::columns::{convert, shared_sql, stored_row};
use super::projects::{readable, ThreadReach};
use super::threads::found;
use super::{NewArtifact, Result, StoreError, ThreadStamp};

/// A new version of an existing document.
#[derive(Debug, Clone)]
pub struct ArtifactRevision {
    pub title: String,
    pub content: String,
    /// The user message that asked for the revision; `None` for silent generation.
    pub request_message_id: Option<Uuid>,
    /// Earlier requests of the thread this version answers too (see [`super::NewArtifact::answers`]).
    pub answers: Vec<Uuid>,
    /// Who wrote it: the assistant (with its model) or a person by hand.
    pub author: VersionAuthor,
    /// The version it was made from, when the save must be refused if another one was saved since
    /// ([`StoreError::VersionConflict`]); `None` to save whatever the current version is.
    pub base_version: Option<i64>,
    /// The requirements it reflects, at the revisions it reflects.
    pub cites: Vec<super::Citation>,
}

shared_sql! {
    rows(ArtifactRow<D::Id, D::Time>, VersionRow<D::Id, D::Time>, FulfilmentRow<D::Id>, BriefRow<D::Id>);
    /// Saves a document under `id` at its first version, once its thread and the messages it points at are found
    /// to be the person's; the requests it answers besides are the caller's.
    pub(crate) async fn insert_artifact(
        conn: &mut D::Connection,
        id: Uuid,
        user: Uuid,
        artifact: &NewArtifact,
        created: DateTime<Utc>,
    ) -> Result<()> {
        Self::must_own(&mut *conn, "threads", user, artifact.thread_id).await?;
        // A document may only point at its owner's messages (the foreign key alone would accept anyone's).
        for message in [artifact.request_message_id, artifact.assistant_message_id].into_iter().flatten() {
            Self::must_own(&mut *conn, "messages", user, message).await?;
        }
        sqlx::query(INSERT_ARTIFACT)
            .bind(D::id(id))
            .bind(D::id(artifact.thread_id))
            .bind(D::id(user))
            .bind(artifact.artifact_type.as_str().to_owned())
            .bind(artifact.title.clone())
            .bind(artifact.content.clone())
            .bind(artifact.request_message_id.map(D::id))
            .bind(artifact.assistant_message_id.map(D::id))
            .bind(D::time(created))
            .execute(&mut *conn)
            .await?;
        sqlx::query(INSERT_FIRST_VERSION)
            .bind(D::id(id))
            .bind(artifact.title.clone())
            .bind(artifact.content.clone())
            .bind(D::time(created))
            .bind(D::id(artifact.thread_id))
            .bind(artifact.model.clone())
            .execute(conn)
            .await?;
        Ok(())
    }

    /// Saves the next version of the person's document and makes it the current one; `NotFound` when it, or
    /// the request the version points at, is missing or another user's; `VersionConflict` when the revision has
    /// a base version that is no longer the current one. The requests it answers besides are the caller's.
    pub(crate) async fn insert_version(
        conn: &mut D::Connection,
        user: Uuid,
        artifact: Uuid,
        revision: &ArtifactRevision,
        updated: DateTime<Utc>,
    ) -> Result<()> {
        // A version may only point at its owner's messages (the foreign key alone would accept anyone's).
        if let Some(message) = revision.request_message_id {
            Self::must_own(&mut *conn, "messages", user, message).await?;
        }
        // The base is checked in the statement that takes the next number, so two saves from the same version
        // cannot both land.
        let sql = format!(
            "update artifacts set title = $1, content = $2, version = version + 1,
             updated_at = {}(updated_at, $3) where id = $4 and {} and ($6 is null or version = $6)
             returning version",
            D::GREATEST,
            crate::projects::thread_access("artifacts.thread_id", "$5", wire::ProjectRole::Editor)
        );
        let version: Option<i64> = sqlx::query_scalar(&sql)
            .bind(revision.title.clone())
            .bind(revision.content.clone())
            .bind(D::time(updated))
            .bind(D::id(artifact))
            .bind(D::id(user))
            .bind(revision.base_version)
            .fetch_optional(&mut *conn)
            .await?;
        let Some(version) = version else {
            // A save from an older version, by someone who may save one, is told the current one; anyone else
            // learns nothing.
            let current = match revision.base_version {
                Some(_) => Self::readable_artifact(&mut *conn, user, artifact).await.ok(),
                None => None,
            };
            let Some(current) = current else { return Err(StoreError::NotFound) };
            return Err(match Self::thread_reach(conn, user, current.thread_id).await? {
                Some(ThreadReach::Author) => StoreError::VersionConflict(Box::new(current)),
                Some(ThreadReach::Member(role)) if role.writes() => StoreError::VersionConflict(Box::new(current)),
                _ => StoreError::NotFound,
            });
        };
        let (author_id, model) = match &revision.author {
            VersionAuthor::Person { user_id } => (Some(D::id(*user_id)), None),
            VersionAuthor::Assistant { model } => (None, model.clone()),
        };
        sqlx::query(INSERT_VERSION)
            .bind(D::id(artifact))
            .bind(version)
            .bind(revision.title.clone())
            .bind(revision.content.clone())
            .bind(D::time(updated))
            .bind(revision.request_message_id.map(D::id))
            .bind(author_id)
            .bind(model)
            .execute(conn)
            .await?;
        Ok(())
    }

    /// The document with this id, whoever owns it (for its writer, who checked).
    pub(crate) async fn artifact_by_id(conn: &mut D::Connection, artifact: Uuid) -> Result<Artifact> {
        let sql = format!("select {ARTIFACT_COLUMNS} from artifacts where id = $1");
        let row: ArtifactRow<D::Id, D::Time> = sqlx::query_as(&sql).bind(D::id(artifact)).fetch_one(conn).await?;
        row.try_into()
    }

    /// A document the person reads: theirs, or in a conversation of a project of theirs.
    pub(crate) async fn readable_artifact(conn: &mut D::Connection, user: Uuid, artifact: Uuid) -> Result<Artifact> {
        let sql = format!(
            "select {ARTIFACT_COLUMNS} from artifacts where id = $1 and {}",
            crate::projects::readable("artifacts.thread_id", "$2")
        );
        Self::owned_row::<ArtifactRow<D::Id, D::Time>, _>(conn, &sql, artifact, user).await?.ok_or(StoreError::NotFound)
    }

    /// The rows of the person's documents of `thread`, oldest first.
    pub(crate) async fn artifacts(
        conn: &mut D::Connection,
        user: Uuid,
        thread: Uuid,
    ) -> Result<Vec<ArtifactRow<D::Id, D::Time>>> {
        let sql = format!(
            "select {ARTIFACT_COLUMNS} from artifacts where thread_id = $1 and {} order by created_at, pk",
            crate::projects::readable("$1", "$2")
        );
        Ok(sqlx::query_as(&sql).bind(D::id(thread)).bind(D::id(user)).fetch_all(conn).await?)
    }

    /// See [`Artifacts::artifact_briefs`].
    pub(crate) async fn briefs(
        conn: &mut D::Connection,
        user: Uuid,
        thread: Uuid,
        most: u32,
        text_chars: u32,
    ) -> Result<Vec<ArtifactBrief>> {
        let rows: Vec<BriefRow<D::Id>> = sqlx::query_as(BRIEFS)
            .bind(D::id(thread))
            .bind(D::id(user))
            .bind(i64::from(text_chars))
            .bind(i64::from(most))
            .fetch_all(conn)
            .await?;
        convert(rows)
    }

    /// Every version of the person's document, oldest first.
    pub(crate) async fn artifact_versions(
        conn: &mut D::Connection,
        user: Uuid,
        artifact: Uuid,
    ) -> Result<Vec<ArtifactVersion>> {
        let sql = format!("{VERSIONS} where a.id = $1 and {} order by v.version", readable("a.thread_id", "$2"));
        let rows: Vec<VersionRow<D::Id, D::Time>> =
            sqlx::query_as(&sql).bind(D::id(artifact)).bind(D::id(user)).fetch_all(conn).await?;
        found(!rows.is_empty())?;
        convert(rows)
    }

    /// Every version of the person's documents of `thread`: documents oldest first, each one's versions oldest
    /// first.
    pub(crate) async fn thread_versions(
        conn: &mut D::Connection,
        user: Uuid,
        thread: Uuid,
    ) -> Result<Vec<ArtifactVersion>> {
        let sql = format!(
            "{VERSIONS} where a.thread_id = $1 and {} order by a.created_at, a.pk, v.version",
            readable("$1", "$2")
        );
        let rows: Vec<VersionRow<D::Id, D::Time>> =
            sqlx::query_as(&sql).bind(D::id(thread)).bind(D::id(user)).fetch_all(conn).await?;
        convert(rows)
    }

    /// One version of the person's document.
    pub(crate) async fn artifact_version(
        conn: &mut D::Connection,
        user: Uuid,
        artifact: Uuid,
        version: i64,
    ) -> Result<ArtifactVersion> {
        let sql = format!("{VERSIONS} where a.id = $1 and {} and v.version = $3", readable("a.thread_id", "$2"));
        let row: Option<VersionRow<D::Id, D::Time>> = sqlx::query_as(&sql)
            .bind(D::id(artifact))
            .bind(D::id(user))
            .bind(version)
            .fetch_optional(conn)
            .await?;
        row.ok_or(StoreError::NotFound)?.try_into()
    }

    /// Records that a document answers these earlier requests too: the person's messages of its own thread among
    /// them (others are ignored).
    pub(crate) async fn answer_requests(conn: &mut D::Connection, artifact: Uuid, requests: &[Uuid]) -> Result<()> {
        if requests.is_empty() {
            return Ok(());
        }
        let sql = format!(
            "insert into artifact_requests (artifact_id, message_id)
             select a.id, m.id from artifacts a join messages m on m.thread_id = a.thread_id and m.user_id = a.user_id
             where a.id = $1 and m.role = 'user' and {} on conflict do nothing",
            D::in_ids("m.id", "$2")
        );
        sqlx::query(&sql).bind(D::id(artifact)).bind(D::ids(requests)).execute(conn).await?;
        Ok(())
    }

    /// Links the person's documents to the answer that wrote them, and the versions its turn wrote of them
    /// (those written on the path that ends at the question it answers) to that answer's place, so they are on
    /// its path and not on a sibling answer's.
    pub(crate) async fn link_artifacts_to(
        conn: &mut D::Connection,
        user: Uuid,
        artifacts: &[Uuid],
        message: Uuid,
    ) -> Result<()> {
        if artifacts.is_empty() {
            return Ok(());
        }
        let sql = format!(
            "update artifacts set assistant_message_id = $1 where user_id = $2 and {}",
            D::in_ids("id", "$3")
        );
        sqlx::query(&sql).bind(D::id(message)).bind(D::id(user)).bind(D::ids(artifacts)).execute(&mut *conn).await?;
        let sql = format!(
            "update artifact_versions set written_on = $1
             where {} and artifact_id in (select id from artifacts where user_id = $2)
             and written_on = (select parent_id from messages where id = $1 and user_id = $2)",
            D::in_ids("artifact_id", "$3")
        );
        sqlx::query(&sql).bind(D::id(message)).bind(D::id(user)).bind(D::ids(artifacts)).execute(conn).await?;
        Ok(())
    }

    /// See [`Artifacts::fulfilled_requests`].
    pub(crate) async fn fulfilled(conn: &mut D::Connection, user: Uuid, thread: Uuid) -> Result<Vec<Fulfilment>> {
        let rows: Vec<FulfilmentRow<D::Id>> =
            sqlx::query_as(FULFILLED).bind(D::id(thread)).bind(D::id(user)).fetch_all(conn).await?;
        convert(rows)
    }
}

/// Artifacts (the documents people see) and their versions, and which requests they fulfilled.
#[async_trait]
pub trait Artifacts: Send + Sync {
    /// `NotFound` when the thread, or a message it points at, is missing or another user's.
    async fn create_artifact(&self, user: Uuid, artifact: NewArtifact) -> Result<Artifact>;
    /// The thread's documents, oldest first; `NotFound` when the thread is missing or another user's.
    async fn list_artifacts(&self, user: Uuid, thread: Uuid) -> Result<Vec<Artifact>>;
    async fn get_artifact(&self, user: Uuid, artifact: Uuid) -> Result<Artifact>;
    /// The thread's `most` newest documents, newest first, each with its text only when that is at most
    /// `text_chars` characters (what a turn's prompt shows of them); empty for a thread that is missing or another
    /// user's. Bounded however many and however large the documents are.
    async fn artifact_briefs(&self, user: Uuid, thread: Uuid, most: u32, text_chars: u32)
        -> Result<Vec<ArtifactBrief>>;
    async fn delete_artifact(&self, user: Uuid, artifact: Uuid) -> Result<()>;
    /// Links the artifacts of a turn to the answer saved for it. Other users' artifacts are left alone;
    /// `NotFound` when the answer is missing or another user's.
    async fn link_artifacts(&self, user: Uuid, artifacts: &[Uuid], assistant_message: Uuid) -> Result<()>;
    /// Saves the next version of a document and makes it the current one, in one transaction; returns the
    /// document at its new version. `NotFound` when it is missing or another user's.
    async fn revise_artifact(&self, user: Uuid, artifact: Uuid, revision: ArtifactRevision) -> Result<Artifact>;
    /// Every version of a document, oldest first; `NotFound` when it is missing or another user's.
    async fn list_artifact_versions(&self, user: Uuid, artifact: Uuid) -> Result<Vec<ArtifactVersion>>;
    /// Every version of every document of the thread: documents oldest first, each one's versions oldest first;
    /// empty for a thread that is missing or another user's.
    async fn list_thread_artifact_versions(&self, user: Uuid, thread: Uuid) -> Result<Vec<ArtifactVersion>>;
    /// The thread's requests that produced a document or a later version of one, or that one answers besides
    /// (what the model no longer sees), each with the answer that made the document when known, in no
    /// particular order; empty for a thread that is missing or another user's.
    async fn fulfilled_requests(&self, user: Uuid, thread: Uuid) -> Result<Vec<Fulfilment>>;
    /// [`fulfilled_requests`](Self::fulfilled_requests), read after the thread's stamp, which comes with them;
    /// `NotFound` when the thread is missing or another user's.
    async fn fulfilled_requests_stamped(&self, user: Uuid, thread: Uuid) -> Result<(Vec<Fulfilment>, ThreadStamp)>;
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
            requirements: Vec::new(),
            out_of_date: Vec::new(),
            cited_conversations: Vec::new(),
            created_at: created,
        }
    }
}

/// The columns an [`ArtifactRow`] reads.
pub(crate) const ARTIFACT_COLUMNS: &str =
    "id, thread_id, artifact_type, title, content, version, request_message_id, assistant_message_id, created_at";

/// The versions of documents (`v`, of the document `a`) as [`VersionRow`]s, each with the start of the words of
/// its request (`m`, the owner's message, one character more than an excerpt keeps so a cut shows). The first
/// version's request is kept on the document.
pub(crate) const VERSIONS: &str = "select v.artifact_id, v.version, v.title, v.content, v.created_at,
    coalesce(v.request_message_id, case when v.version = 1 then a.request_message_id end) as request_message_id,
    v.author_id, v.model, substr(m.content, 1, 301) as request, ans.id as answer_message_id,
    (select coalesce(nullif(u.display_name, ''), u.email) from users u where u.id = v.author_id) as author_name
    from artifact_versions v join artifacts a on a.id = v.artifact_id
    left join messages m on m.user_id = a.user_id
        and m.id = coalesce(v.request_message_id, case when v.version = 1 then a.request_message_id end)
    left join messages ans on ans.user_id = a.user_id and ans.id = v.written_on
        and ans.role = 'assistant' and ans.parent_id = m.id";
// `VERSIONS` reads one character more than an excerpt keeps.
const _: () = assert!(REQUEST_EXCERPT_CHARS == 300);

/// Saves a document at its first version: id, thread, owner, type, title, content, request, answer, time.
pub(crate) const INSERT_ARTIFACT: &str = "insert into artifacts (id, thread_id, user_id, artifact_type, title, content,
    version, request_message_id, assistant_message_id, created_at, updated_at)
    values ($1, $2, $3, $4, $5, $6, 1, $7, $8, $9, $9)";

/// Saves the first version of a document (the assistant's): its id, title, content, time, thread and model,
/// written on the path its thread shows now (see [`Shares::documents_on_path`](super::Shares::documents_on_path)).
pub(crate) const INSERT_FIRST_VERSION: &str =
    "insert into artifact_versions (artifact_id, version, title, content, created_at, written_on, model)
     values ($1, 1, $2, $3, $4, (select active_id from threads where id = $5), $6)";

/// Saves a later version of a document: its id, number, title, content, time, the request that asked for it and
/// its author (the person, or the assistant's model), written on the path its thread shows now (see
/// [`Shares::documents_on_path`](super::Shares::documents_on_path)).
pub(crate) const INSERT_VERSION: &str = "insert into artifact_versions
    (artifact_id, version, title, content, created_at, request_message_id, written_on, author_id, model)
    values ($1, $2, $3, $4, $5, $6,
        (select t.active_id from threads t join artifacts a on a.thread_id = t.id where a.id = $1), $7, $8)";

/// The requests of a thread (`$1`) of a user (`$2`) that a document or a version of one answers.
pub(crate) const FULFILLED: &str = "select request_message_id as request, assistant_message_id as made_by
    from artifacts where thread_id = $1 and user_id = $2 and request_message_id is not null
    union
    select v.request_message_id, null from artifact_versions v join artifacts a on a.id = v.artifact_id
    where a.thread_id = $1 and a.user_id = $2 and v.request_message_id is not null
    union
    select r.message_id, a.assistant_message_id from artifact_requests r join artifacts a on a.id = r.artifact_id
    where a.thread_id = $1 and a.user_id = $2";

/// A thread's newest documents with the text of the short ones (see [`Artifacts::artifact_briefs`]): `$1` thread,
/// `$2` owner, `$3` most characters of a text that is read, `$4` most documents.
pub(crate) const BRIEFS: &str = "select id, artifact_type, title, version, assistant_message_id,
    case when length(content) <= $3 then content end as content
    from artifacts where thread_id = $1 and user_id = $2 order by created_at desc, pk desc limit $4";

/// A document as a turn's prompt lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct ArtifactBrief {
    pub id: Uuid,
    pub artifact_type: ArtifactType,
    pub title: String,
    pub version: i64,
    /// The answer that made it (`None` for silent generation and imports): which branch it belongs to.
    pub assistant_message_id: Option<Uuid>,
    /// Its current text, when short enough to be read.
    pub content: Option<String>,
}

stored_row! {
    /// An [`ArtifactBrief`]'s row.
    BriefRow<I> -> ArtifactBrief {
        id: I,
        title: String,
        version: i64,
        assistant_message_id: Option<I>,
        content: Option<String>,
    } with {
        artifact_type: String,
    } => {
        artifact_type: ArtifactType::parse(&artifact_type)
            .ok_or_else(|| StoreError::Corrupt(format!("type {artifact_type}")))?,
    }
}

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
        // Read from the ledger by those that show them (see `Requirements::ledger`).
        requirements: Vec::new(),
        out_of_date: Vec::new(),
        cited_conversations: Vec::new(),
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
        answer_message_id: Option<I>,
        author_name: Option<String>,
        created_at: T,
    } with {
        author_id: Option<I>,
        model: Option<String>,
        request: Option<String>,
    } => {
        author: match author_id.read("author_id")? {
            Some(user_id) => VersionAuthor::Person { user_id },
            None => VersionAuthor::Assistant { model },
        },
        request: request.map(|words| wire::shortened(&words, REQUEST_EXCERPT_CHARS)),
    }
}

/// Implements [`Artifacts`] for a backend, written once for both, as
/// [`accounts_for`](super::accounts::accounts_for) does; the backend has `owns`, `delete` and `saved_documents`
/// (told of each document a committed save wrote).
macro_rules! artifacts_for {
    ($backend:ty) => {
        const _: () = {
            use tracing::instrument;
            use uuid::Uuid;
            use wire::{Artifact, ArtifactVersion};
            use $crate::columns::convert;
            use $crate::threads::listing;
            use $crate::{now, ArtifactRevision, Artifacts, Fulfilment, NewArtifact, Result};

            #[async_trait::async_trait]
            impl Artifacts for $backend {
                #[instrument(skip(self, artifact), fields(thread = %artifact.thread_id))]
                async fn create_artifact(&self, user: Uuid, artifact: NewArtifact) -> Result<Artifact> {
                    let id = Uuid::now_v7();
                    let created = now();
                    let saved = self
                        .write_together(move |tx| {
                            Box::pin(async move {
                                Shared::insert_artifact(&mut *tx, id, user, &artifact, created).await?;
                                Shared::cite(&mut *tx, id, 1, &artifact.cites).await?;
                                Shared::answer_requests(tx, id, &artifact.answers).await?;
                                Ok(artifact.saved(id, created))
                            })
                        })
                        .await?;
                    self.saved_documents([id]);
                    Ok(saved)
                }

                #[instrument(skip(self))]
                async fn list_artifacts(&self, user: Uuid, thread: Uuid) -> Result<Vec<Artifact>> {
                    let rows = Shared::artifacts(&mut *self.read().await?, user, thread).await?;
                    convert(listing(rows, self.reads_thread(user, thread)).await?)
                }

                #[instrument(skip(self))]
                async fn get_artifact(&self, user: Uuid, artifact: Uuid) -> Result<Artifact> {
                    Shared::readable_artifact(&mut *self.read().await?, user, artifact).await
                }

                #[instrument(skip(self))]
                async fn artifact_briefs(
                    &self,
                    user: Uuid,
                    thread: Uuid,
                    most: u32,
                    text_chars: u32,
                ) -> Result<Vec<$crate::ArtifactBrief>> {
                    Shared::briefs(&mut *self.read().await?, user, thread, most, text_chars).await
                }

                #[instrument(skip(self))]
                async fn delete_artifact(&self, user: Uuid, artifact: Uuid) -> Result<()> {
                    self.delete("delete from artifacts where id = $1 and user_id = $2", &[artifact, user]).await
                }

                #[instrument(skip(self, artifacts))]
                async fn link_artifacts(&self, user: Uuid, artifacts: &[Uuid], assistant_message: Uuid) -> Result<()> {
                    let artifacts = artifacts.to_vec();
                    self.write_together(move |tx| {
                        Box::pin(async move {
                            Shared::must_own(&mut *tx, "messages", user, assistant_message).await?;
                            Shared::link_artifacts_to(tx, user, &artifacts, assistant_message).await
                        })
                    })
                    .await
                }

                #[instrument(skip(self, revision))]
                async fn revise_artifact(
                    &self,
                    user: Uuid,
                    artifact: Uuid,
                    revision: ArtifactRevision,
                ) -> Result<Artifact> {
                    let updated = now();
                    let revised = self
                        .write_together(move |tx| {
                            Box::pin(async move {
                                Shared::insert_version(&mut *tx, user, artifact, &revision, updated).await?;
                                Shared::answer_requests(&mut *tx, artifact, &revision.answers).await?;
                                let revised = Shared::artifact_by_id(&mut *tx, artifact).await?;
                                Shared::cite(&mut *tx, artifact, revised.version, &revision.cites).await?;
                                if let wire::VersionAuthor::Person { user_id } = revision.author {
                                    let kind = wire::ActivityKind::DocumentEdited;
                                    let title = format!("{} (version {})", revised.title, revised.version);
                                    Shared::log_thread_activity(tx, revised.thread_id, user_id, kind, &title).await?;
                                }
                                Ok(revised)
                            })
                        })
                        .await?;
                    self.saved_documents([artifact]);
                    Ok(revised)
                }

                #[instrument(skip(self))]
                async fn list_artifact_versions(&self, user: Uuid, artifact: Uuid) -> Result<Vec<ArtifactVersion>> {
                    Shared::artifact_versions(&mut *self.read().await?, user, artifact).await
                }

                #[instrument(skip(self))]
                async fn list_thread_artifact_versions(
                    &self,
                    user: Uuid,
                    thread: Uuid,
                ) -> Result<Vec<ArtifactVersion>> {
                    Shared::thread_versions(&mut *self.read().await?, user, thread).await
                }

                #[instrument(skip(self))]
                async fn fulfilled_requests(&self, user: Uuid, thread: Uuid) -> Result<Vec<Fulfilment>> {
                    Shared::fulfilled(&mut *self.read().await?, user, thread).await
                }

                #[instrument(skip(self))]
                async fn fulfilled_requests_stamped(
                    &self,
                    user: Uuid,
                    thread: Uuid,
                ) -> Result<(Vec<Fulfilment>, $crate::ThreadStamp)> {
                    let mut conn = self.read().await?;
                    let stamp = Shared::stamp(&mut conn, user, thread).await?.ok_or($crate::StoreError::NotFound)?;
                    Ok((Shared::fulfilled(&mut conn, user, thread).await?, stamp))
                }

                #[instrument(skip(self))]
                async fn get_artifact_version(
                    &self,
                    user: Uuid,
                    artifact: Uuid,
                    version: i64,
                ) -> Result<ArtifactVersion> {
                    Shared::artifact_version(&mut *self.read().await?, user, artifact, version).await
                }
            }
        };
    };
}
pub(crate) use artifacts_for;
