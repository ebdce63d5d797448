//! The storage boundary: one [`Store`] trait, two backends (embedded SQLite and PostgreSQL), picked once at
//! start-up from the database URL. Every method that reads or changes a user's data takes the owner's id and
//! scopes the query itself, so another user's row is indistinguishable from a missing one.

pub mod accounts;
pub mod documents;
pub mod history;
pub mod postgres;
pub mod search_query;
mod snippet;
pub mod sqlite;
pub mod summaries;
mod write_queue;

use std::sync::Arc;

use app::api::{
    Artifact, ArtifactType, ArtifactVersion, Attachment, Message, MessageStatus, Role, Thread, Trace, Usage,
};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub use crate::config::SqliteSync;

pub use accounts::{Accounts, Session};
pub use documents::{ArtifactRevision, AttachmentLimits, ChunkHit, NewAttachment};
pub use summaries::{NewSummary, Summaries, ThreadSummary};

/// What can go wrong in storage. `NotFound` and `Conflict` are for callers; `Internal` text stays in logs.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("not found")]
    NotFound,
    #[error("conflict: {0}")]
    Conflict(String),
    #[error("invalid database url: {0}")]
    InvalidUrl(String),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    #[error(transparent)]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("corrupt row: {0}")]
    Corrupt(String),
    /// The account's files would exceed its storage allowance.
    #[error("the storage allowance is used up")]
    QuotaExceeded,
    /// A listing cursor whose sort key does not fit the requested sort (e.g. a title cursor for a time sort).
    #[error("the cursor does not match the sort order")]
    InvalidCursor,
    /// A listing cursor from a walk that began too long ago (see [`WALK_LIFETIME_DAYS`]).
    #[error("the cursor has expired")]
    ExpiredCursor,
    /// Work handed to the blocking pool (making snippets) panicked.
    #[error("background work failed: {0}")]
    Blocking(#[from] tokio::task::JoinError),
}

impl StoreError {
    /// A turn is already running in the conversation.
    pub fn thread_busy() -> Self {
        Self::Conflict("an answer is already being written in this conversation".into())
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// A registered person.
#[derive(Debug, Clone, PartialEq)]
pub struct User {
    pub id: Uuid,
    pub email: String,
    pub password_hash: String,
    pub display_name: String,
    pub created_at: DateTime<Utc>,
}

/// A new account.
#[derive(Debug, Clone)]
pub struct NewUser {
    pub email: String,
    pub password_hash: String,
    pub display_name: String,
}

/// How threads are listed.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadQuery {
    pub limit: u32,
    pub cursor: Option<ThreadCursor>,
    pub tags: Vec<String>,
    pub sort: ThreadSort,
    pub descending: bool,
    pub archived: bool,
}

impl Default for ThreadQuery {
    fn default() -> Self {
        Self {
            limit: 50,
            cursor: None,
            tags: Vec::new(),
            sort: ThreadSort::UpdatedAt,
            descending: true,
            archived: false,
        }
    }
}

/// Sort key of a thread listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadSort {
    UpdatedAt,
    CreatedAt,
    Title,
}

/// Where the previous page ended: the sort key of its last thread and its id (a total order), and where the
/// walk began.
///
/// Later pages place every thread where it was when the first page was read: a thread renamed, pinned,
/// archived, re-tagged or given a message since then is ordered (and filtered) by its state at that moment,
/// taken from the `thread_versions` history, while the page shows its current data. So a walk returns every
/// thread that existed at its start exactly once, in order, however many change between pages; threads
/// created meanwhile show on a fresh first page. The history is kept for [`WALK_LIFETIME_DAYS`] days; an
/// older cursor is refused with [`StoreError::ExpiredCursor`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadCursor {
    pub pinned: bool,
    pub key: CursorKey,
    pub id: Uuid,
    /// When the walk began (microseconds).
    #[serde(default)]
    pub as_of: Option<i64>,
    /// The backend's mark of the walk's start: the highest history id it saw (SQLite) or its snapshot
    /// (PostgreSQL). `None` only in hand-made cursors, which are refused.
    #[serde(default)]
    pub walk: Option<String>,
}

/// How long a walk through the thread pages may last before its cursor is refused.
pub const WALK_LIFETIME_DAYS: i64 = 1;

impl ThreadCursor {
    /// Refuses a cursor that fits another sort (comparing its key with the column would give an arbitrary
    /// page on SQLite and a type error on PostgreSQL), lacks its walk mark or has outlived
    /// [`WALK_LIFETIME_DAYS`]; returns the walk mark.
    ///
    /// Cursors come back from clients, so every part is checked as something a client may have made up: a time
    /// key must be one a conversation can have (see [`storable_time`]), a text key a title.
    pub(crate) fn check(&self, sort: ThreadSort) -> Result<&str> {
        let fits = match (sort, &self.key) {
            (ThreadSort::UpdatedAt | ThreadSort::CreatedAt, CursorKey::Time(micros)) => {
                DateTime::from_timestamp_micros(*micros).is_some_and(storable_time)
            }
            (ThreadSort::Title, CursorKey::Text(title)) => {
                title.chars().count() <= app::api::MAX_TITLE_CHARS && !app::api::validate::has_nul(title)
            }
            _ => false,
        };
        let (true, Some(walk), Some(as_of)) = (fits, self.walk.as_deref(), self.as_of) else {
            return Err(StoreError::InvalidCursor);
        };
        let lifetime = WALK_LIFETIME_DAYS * 86_400_000_000;
        let age = now().timestamp_micros().saturating_sub(as_of);
        // A walk that began in the future (beyond a clock a little ahead on another instance) or at no time a
        // walk can have begun was made up.
        if age < -lifetime || !DateTime::from_timestamp_micros(as_of).is_some_and(storable_time) {
            return Err(StoreError::InvalidCursor);
        }
        if age > lifetime {
            return Err(StoreError::ExpiredCursor);
        }
        Ok(walk)
    }
}

/// The sort value of the last thread of a page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum CursorKey {
    Time(i64),
    Text(String),
}

/// One page of threads.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadPage {
    pub threads: Vec<Thread>,
    pub next: Option<ThreadCursor>,
}

/// A change to a thread's metadata; `None` leaves a field alone.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThreadPatch {
    pub title: Option<String>,
    pub tags: Option<Vec<String>>,
    pub pinned: Option<bool>,
    pub archived: Option<bool>,
    pub summary: Option<String>,
}

/// A message to append; its sequence number is taken atomically.
#[derive(Debug, Clone)]
pub struct NewMessage {
    pub thread_id: Uuid,
    pub role: Role,
    pub content: String,
    pub status: MessageStatus,
    pub usage: Usage,
    pub model: Option<String>,
}

impl NewMessage {
    /// The message as saved under `id`, number `seq`, at `created`.
    pub fn saved(self, id: Uuid, seq: i64, created: DateTime<Utc>) -> Message {
        Message {
            id,
            thread_id: self.thread_id,
            seq,
            role: self.role,
            content: self.content,
            status: self.status,
            input_tokens: self.usage.input_tokens,
            output_tokens: self.usage.output_tokens,
            model: self.model,
            created_at: created,
        }
    }
}

/// A message without its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageHead {
    pub id: Uuid,
    pub seq: i64,
    pub role: Role,
}

/// The final or partial state of an answer being written.
#[derive(Debug, Clone)]
pub struct MessageUpdate {
    pub content: String,
    pub status: MessageStatus,
    pub usage: Usage,
    pub model: Option<String>,
    pub context: Option<serde_json::Value>,
}

/// Answer drafts with their owners.
pub(crate) type Answers<'a> = Vec<(Uuid, &'a AnswerDraft)>;

/// A batch of progress as both backends write it: every event with its turn, and every answer with its owner,
/// `Ok` when each answer comes once (they can be rewritten many per statement) and `Err` when one comes twice
/// (written one by one, in order; the progress writer, which keeps one entry per turn, never sends one twice).
pub(crate) fn progress_parts(
    progress: &[TurnProgress],
) -> (Vec<(Uuid, &StoredEvent)>, Result<Answers<'_>, Answers<'_>>) {
    let events = progress.iter().flat_map(|item| item.events.iter().map(move |e| (item.turn, e))).collect();
    let answers: Answers<'_> =
        progress.iter().filter_map(|item| item.answer.as_ref().map(|a| (item.user, a))).collect();
    let distinct = answers.iter().map(|(_, a)| a.id).collect::<std::collections::HashSet<_>>().len();
    (events, if distinct == answers.len() { Ok(answers) } else { Err(answers) })
}

/// The right to write progress now (see [`Store::progress_turn`]); the writer is handed on when it is dropped.
pub struct ProgressTurn<'a> {
    _writer: Option<write_queue::WriterTurn<'a>>,
}

/// What one running turn produced since its progress was last saved: its new events and, for a typed turn,
/// the answer as it stands.
#[derive(Debug, Clone)]
pub struct TurnProgress {
    pub turn: Uuid,
    pub user: Uuid,
    pub events: Vec<StoredEvent>,
    pub answer: Option<AnswerDraft>,
}

/// An answer being written. Its first save creates the message under `id` (with the thread's next number);
/// later saves rewrite it.
#[derive(Debug, Clone)]
pub struct AnswerDraft {
    pub id: Uuid,
    pub thread_id: Uuid,
    pub update: MessageUpdate,
    /// Whether more of the answer is still to come: such a save stays out of the search index, which takes the
    /// answer in once, at the save that says it is finished.
    pub writing: bool,
}

impl AnswerDraft {
    /// The message its first save creates.
    pub fn first_save(&self) -> NewMessage {
        NewMessage {
            thread_id: self.thread_id,
            role: Role::Assistant,
            content: self.update.content.clone(),
            status: self.update.status,
            usage: self.update.usage,
            model: self.update.model.clone(),
        }
    }
}

/// What a turn leaves behind, stored by [`Store::finish_turn`] in the transaction that closes it.
#[derive(Debug, Default, Clone)]
pub struct TurnEnd {
    /// Its last events; the final one says how it ended.
    pub events: Vec<StoredEvent>,
    /// The answer's final state, if one is kept.
    pub answer: Option<FinalAnswer>,
    /// The tokens it spent.
    pub usage: Option<SpentTokens>,
    /// The steps it took, kept under the turn's id and, when it kept one, its answer's.
    pub trace: Option<TurnTrace>,
}

/// A turn's steps as [`Store::finish_turn`] stores them.
#[derive(Debug, Clone)]
pub struct TurnTrace {
    pub user: Uuid,
    pub thread: Uuid,
    pub steps: Vec<app::api::TraceStep>,
}

/// An answer as a turn finished it: it enters the search index, with the documents it wrote linked to it.
#[derive(Debug, Clone)]
pub struct FinalAnswer {
    pub user: Uuid,
    pub draft: AnswerDraft,
    pub artifacts: Vec<Uuid>,
}

/// Tokens spent in a thread, added to its totals and to its owner's ledger for today and the model.
#[derive(Debug, Clone)]
pub struct SpentTokens {
    pub user: Uuid,
    pub thread: Uuid,
    pub model: String,
    pub usage: Usage,
}

/// A document to save.
#[derive(Debug, Clone)]
pub struct NewArtifact {
    pub thread_id: Uuid,
    pub artifact_type: ArtifactType,
    pub title: String,
    pub content: String,
    pub request_message_id: Option<Uuid>,
    pub assistant_message_id: Option<Uuid>,
    /// Earlier person's messages of the thread that asked for this document too (one that failed, or whose
    /// document was deleted): fulfilled by it as long as it exists. Other messages are ignored.
    pub answers: Vec<Uuid>,
}

/// What a search hit points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HitKind {
    Message,
    Thread,
    Artifact,
}

/// One search result.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    pub kind: HitKind,
    pub thread_id: Uuid,
    pub thread_title: String,
    pub message_id: Option<Uuid>,
    pub artifact_id: Option<Uuid>,
    pub role: Option<Role>,
    /// HTML-escaped text with the matching words wrapped in `<mark>`.
    pub snippet: String,
    pub created_at: DateTime<Utc>,
    /// Relevance on the backend's own scale, lower is better on both (SQLite's bm25 is negative, PostgreSQL's
    /// `ts_rank` is negated); hits come ordered by it, then newest first. Not comparable across backends.
    pub rank: f64,
}

/// A page of search results and how many there are in all.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchPage {
    pub hits: Vec<SearchHit>,
    pub total: u64,
}

/// A chat turn as recorded for locking and re-attaching.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnRecord {
    pub id: Uuid,
    pub thread_id: Uuid,
    pub running: bool,
    pub stop_requested: bool,
    pub heartbeat_at: DateTime<Utc>,
}

impl TurnRecord {
    /// Whether the turn is still being written: marked running and heard from within `stale_after_ms` (one
    /// whose heartbeat went quiet died with its instance).
    pub fn alive(&self, stale_after_ms: i64) -> bool {
        self.running && (now() - self.heartbeat_at).num_milliseconds() < stale_after_ms
    }
}

/// What claiming an idempotency key found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdempotencyClaim {
    /// The key is ours: do the work, then complete it.
    Fresh,
    /// The key was used before, for the request with this fingerprint; `response` is `None` while that
    /// request is still running.
    Existing { fingerprint: String, response: Option<String> },
}

/// One stored event of a turn.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    pub seq: i64,
    pub name: String,
    pub data: String,
}

/// Everything Quire keeps. Both backends pass the same story suite (`server/tests/store_story.rs`).
#[async_trait]
pub trait Store: Accounts + Summaries + Send + Sync + 'static {
    /// `sqlite` or `postgres`.
    fn backend(&self) -> &'static str;
    /// Whether one process owns the store (SQLite). Then a running turn is only ever followed in that process's
    /// memory, and its events are stored when it ends; with several instances sharing the store (PostgreSQL),
    /// they are stored as they come, for a listener on another instance.
    fn one_process(&self) -> bool {
        false
    }

    // Users.
    async fn create_user(&self, user: NewUser) -> Result<User>;
    async fn user_by_email(&self, email: &str) -> Result<User>;
    async fn user_by_id(&self, id: Uuid) -> Result<User>;

    // Threads.
    async fn create_thread(&self, user: Uuid, title: &str, tags: &[String]) -> Result<Thread>;
    async fn list_threads(&self, user: Uuid, query: &ThreadQuery) -> Result<ThreadPage>;
    async fn get_thread(&self, user: Uuid, thread: Uuid) -> Result<Thread>;
    async fn update_thread(&self, user: Uuid, thread: Uuid, patch: &ThreadPatch) -> Result<Thread>;
    async fn delete_thread(&self, user: Uuid, thread: Uuid) -> Result<()>;

    // Messages.
    /// Appends with the next sequence number and bumps the thread's count, in one transaction.
    async fn append_message(&self, user: Uuid, message: NewMessage) -> Result<Message>;
    /// [`append_message`](Store::append_message) outside any turn: `Conflict` while a turn heard from within
    /// `stale_after_ms` holds the thread, checked in the same transaction; `NotFound` when the thread is
    /// missing or another user's.
    async fn append_message_between_turns(
        &self,
        user: Uuid,
        message: NewMessage,
        stale_after_ms: i64,
    ) -> Result<Message>;
    /// Rewrites an answer's text, status, usage and context, as finished (searchable at once).
    async fn update_message(&self, user: Uuid, message: Uuid, update: &MessageUpdate) -> Result<()>;
    /// The thread's messages by sequence number; `NotFound` when the thread is missing or another user's.
    async fn list_messages(&self, user: Uuid, thread: Uuid) -> Result<Vec<Message>>;
    /// The thread's messages without their text, by sequence number (what the context needs of every message
    /// of a long thread); `NotFound` when the thread is missing or another user's.
    async fn list_message_heads(&self, user: Uuid, thread: Uuid) -> Result<Vec<MessageHead>>;
    /// The thread's messages numbered `from_seq` or later, by sequence number; empty when there are none or
    /// the thread is missing or another user's.
    async fn list_messages_from(&self, user: Uuid, thread: Uuid, from_seq: i64) -> Result<Vec<Message>>;
    async fn get_message(&self, user: Uuid, message: Uuid) -> Result<Message>;
    async fn message_context(&self, user: Uuid, message: Uuid) -> Result<Option<serde_json::Value>>;
    async fn delete_message(&self, user: Uuid, thread: Uuid, message: Uuid) -> Result<()>;

    // Artifacts.
    /// `NotFound` when the thread, or a message it points at, is missing or another user's.
    async fn create_artifact(&self, user: Uuid, artifact: NewArtifact) -> Result<Artifact>;
    /// The thread's documents, oldest first; `NotFound` when the thread is missing or another user's.
    async fn list_artifacts(&self, user: Uuid, thread: Uuid) -> Result<Vec<Artifact>>;
    async fn get_artifact(&self, user: Uuid, artifact: Uuid) -> Result<Artifact>;
    async fn delete_artifact(&self, user: Uuid, artifact: Uuid) -> Result<()>;
    /// Links the artifacts of a turn to the answer saved for it. Other users' artifacts are left alone;
    /// `NotFound` when the answer is missing or another user's.
    async fn link_artifacts(&self, user: Uuid, artifacts: &[Uuid], assistant_message: Uuid) -> Result<()>;

    // Documents: versions and attachments.
    /// Saves the next version of a document and makes it the current one, in one transaction; returns the
    /// document at its new version. `NotFound` when it is missing or another user's.
    async fn revise_artifact(&self, user: Uuid, artifact: Uuid, revision: ArtifactRevision) -> Result<Artifact>;
    /// Every version of a document, oldest first; `NotFound` when it is missing or another user's.
    async fn list_artifact_versions(&self, user: Uuid, artifact: Uuid) -> Result<Vec<ArtifactVersion>>;
    /// The thread's requests that produced a document or a later version of one, or that one answers besides
    /// (what the model no longer sees), in no particular order; empty for a thread that is missing or another
    /// user's.
    async fn fulfilled_requests(&self, user: Uuid, thread: Uuid) -> Result<Vec<Uuid>>;
    async fn get_artifact_version(&self, user: Uuid, artifact: Uuid, version: i64) -> Result<ArtifactVersion>;
    /// Saves a file's metadata and its chunks (indexed for full-text search) in one transaction. `NotFound`
    /// when the thread is missing or another user's; `Conflict` when the thread already has `per_thread` files;
    /// `QuotaExceeded` when the account's files would pass `user_bytes`.
    async fn create_attachment(
        &self,
        user: Uuid,
        attachment: NewAttachment,
        limits: AttachmentLimits,
    ) -> Result<Attachment>;
    /// The thread's attachments, oldest first; `NotFound` when the thread is missing or another user's.
    async fn list_attachments(&self, user: Uuid, thread: Uuid) -> Result<Vec<Attachment>>;
    /// Removes an attachment of the thread and its chunks.
    async fn delete_attachment(&self, user: Uuid, thread: Uuid, attachment: Uuid) -> Result<()>;
    /// The thread's chunks that match any word of the query, best first.
    async fn search_chunks(&self, user: Uuid, thread: Uuid, query: &str, limit: u32) -> Result<Vec<ChunkHit>>;

    // Traces.
    /// Stores a turn's trace, replacing one kept under the same turn; `NotFound` when its thread is missing or
    /// another user's, or its answer is not a message of that thread.
    async fn save_trace(&self, user: Uuid, trace: &Trace) -> Result<()>;
    /// The trace of the turn that wrote an answer; `NotFound` when the message is missing, another user's or
    /// has none (a person's message, an imported answer).
    async fn trace(&self, user: Uuid, message: Uuid) -> Result<Trace>;
    /// A turn's trace; `NotFound` when there is none or it is another user's.
    async fn turn_trace(&self, user: Uuid, turn: Uuid) -> Result<Trace>;
    /// The traces of a thread's turns, oldest first; `NotFound` when the thread is missing or another user's.
    async fn thread_traces(&self, user: Uuid, thread: Uuid) -> Result<Vec<Trace>>;

    // Usage.
    /// Adds tokens to the thread totals and the user's ledger for today and this model.
    async fn record_usage(&self, user: Uuid, thread: Uuid, model: &str, usage: Usage) -> Result<()>;

    // Idempotency.
    /// Claims `key` for a request with `fingerprint`: a new (or expired) key is taken for `ttl_secs`;
    /// otherwise what was stored under it comes back.
    async fn claim_idempotency_key(
        &self,
        user: Uuid,
        key: &str,
        fingerprint: &str,
        ttl_secs: i64,
    ) -> Result<IdempotencyClaim>;
    /// Stores the outcome of the request that claimed `key`.
    async fn complete_idempotency_key(&self, user: Uuid, key: &str, response: &str) -> Result<()>;
    /// Frees `key` (the request failed before doing anything), so a retry may run.
    async fn release_idempotency_key(&self, user: Uuid, key: &str) -> Result<()>;

    // Search.
    /// The user's messages, thread titles and documents matching the query (see [`search_query`]), best first.
    async fn search(&self, user: Uuid, query: &str, limit: u32, offset: u32) -> Result<SearchPage>;

    // Turns.
    /// Takes the thread for a new turn; `Conflict` while another live turn holds it. A turn whose
    /// heartbeat is older than `stale_after_ms` is considered dead and released, and its answer, left marked as
    /// being written, is let into the search index.
    async fn begin_turn(&self, user: Uuid, thread: Uuid, turn: Uuid, stale_after_ms: i64) -> Result<()> {
        self.begin_turn_with(user, thread, turn, stale_after_ms, None).await.map(drop)
    }
    /// [`begin_turn`](Store::begin_turn) and, in the same transaction, appends the person's message that starts
    /// it (returned as saved): one commit where a turn starts.
    async fn begin_turn_with(
        &self,
        user: Uuid,
        thread: Uuid,
        turn: Uuid,
        stale_after_ms: i64,
        request: Option<NewMessage>,
    ) -> Result<Option<Message>>;
    /// Keeps these turns alive, in one statement; returns those of them for which a stop was requested.
    /// Unknown ids are ignored.
    async fn heartbeat_turns(&self, turns: &[Uuid]) -> Result<Vec<Uuid>>;
    async fn request_stop(&self, user: Uuid, thread: Uuid) -> Result<bool>;
    /// Closes a turn in one transaction with what it leaves (see [`TurnEnd`]): whoever sees it closed can read
    /// all of it. An answer of its thread still marked as being written (a turn ending without a final answer) is
    /// let into the search index. The events of the thread's earlier turns are dropped: only the newest turn's
    /// are kept for re-attaching.
    async fn finish_turn(&self, turn: Uuid, end: TurnEnd) -> Result<()>;
    /// The newest turn of a thread.
    async fn latest_turn(&self, user: Uuid, thread: Uuid) -> Result<Option<TurnRecord>>;
    async fn append_turn_events(&self, turn: Uuid, events: &[StoredEvent]) -> Result<()>;
    /// Waits until progress can be written at once: on SQLite for the writer, which serves progress after
    /// every start and end waiting; elsewhere it never waits. What to write is best taken only then: a turn that
    /// ends meanwhile takes its own back instead of waiting for it to be written.
    async fn progress_turn(&self) -> ProgressTurn<'_> {
        ProgressTurn { _writer: None }
    }
    /// Saves the progress of several turns in one transaction, in the turn [`progress_turn`](Self::progress_turn)
    /// gave (events already stored are kept). Events of a turn that is gone and answers whose thread is gone
    /// (deleted while the turn ran) are skipped.
    async fn save_progress_in(&self, turn: ProgressTurn<'_>, progress: &[TurnProgress]) -> Result<()>;
    /// Waits for [`progress_turn`](Self::progress_turn) and saves `progress` in it.
    async fn save_progress(&self, progress: &[TurnProgress]) -> Result<()> {
        let turn = self.progress_turn().await;
        self.save_progress_in(turn, progress).await
    }
    /// Lets into the search index every answer still marked as being written whose conversation has no running
    /// turn heard from within `stale_after_ms`: its turn died, or ended without saving its final state. Returns
    /// how many there were.
    async fn release_abandoned_answers(&self, stale_after_ms: i64) -> Result<u64>;
    async fn turn_events_after(&self, turn: Uuid, after_seq: i64) -> Result<Vec<StoredEvent>>;

    // History: stats, export, import.
    /// Counts, dates, top tags, metered tokens (in all and per day of the 30 ending `today`) and documents by
    /// type, over the user's own rows.
    async fn history_stats(&self, user: Uuid, today: chrono::NaiveDate) -> Result<app::api::HistoryStats>;
    /// Every thread id of the user, archived ones too, oldest first.
    async fn all_thread_ids(&self, user: Uuid) -> Result<Vec<Uuid>>;
    /// The metadata of the user's attachments, oldest first.
    async fn list_user_attachments(&self, user: Uuid) -> Result<Vec<app::api::AttachmentMeta>>;
    /// Creates the threads with their messages and documents, all of them or none, and returns them in order.
    /// PostgreSQL writes them in one transaction; SQLite in many short ones, so that an import never holds its
    /// only writer for long, and removes what it wrote if one fails.
    async fn import_threads(&self, user: Uuid, threads: Vec<history::ImportThread>) -> Result<Vec<Thread>>;
    /// Every tag of the user with how many of their conversations (archived ones too) carry it, most used first,
    /// ties by name compared byte-wise.
    async fn list_tags(&self, user: Uuid) -> Result<Vec<app::api::TagCount>>;
}

/// The store as the rest of the server holds it.
pub type DynStore = Arc<dyn Store>;

/// Opens the backend named by the URL's scheme and runs its migrations.
pub async fn connect(url: &str) -> Result<DynStore> {
    connect_with(url, SqliteSync::default()).await
}

/// [`connect`], with SQLite's commits made durable as `sync` says.
pub async fn connect_with(url: &str, sync: SqliteSync) -> Result<DynStore> {
    if url.starts_with("sqlite:") {
        Ok(Arc::new(sqlite::Sqlite::connect(url, sync).await?))
    } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
        Ok(Arc::new(postgres::Postgres::connect(url).await?))
    } else {
        let scheme = url.split(':').next().unwrap_or_default();
        Err(StoreError::InvalidUrl(format!(
            "unsupported scheme `{scheme}`: use sqlite://path/to/quire.db or postgres://user@host/db"
        )))
    }
}

/// The highest number a conversation gives a message. Only conversations stored before imports were checked
/// come near it (their numbers may reach `i64::MAX`, where counting on would overflow): the next message into
/// one first numbers its messages again from 1, in their order (see [`renumbering_base`]).
pub const MAX_SEQ: i64 = 1 << 53;

/// Renumbering a conversation's `count` messages, whose lowest number is `lowest`, takes two steps so that no
/// two messages ever share a number (the database checks each row as it changes): each first moves to `base -
/// rank` (below every number they have, and below 1), then to its rank. The base, or `None` when there is no
/// room below (numbers at both ends of the range: the conversation then refuses new messages).
pub(crate) fn renumbering_base(lowest: i64, count: i64) -> Option<i64> {
    let base = lowest.min(1);
    base.checked_sub(count).map(|_| base)
}

/// A conversation whose numbers cannot be renumbered (see [`renumbering_base`]).
pub(crate) fn unnumberable() -> StoreError {
    StoreError::Conflict("This conversation's message numbers are damaged; export it and import it again.".into())
}

/// Microseconds since the epoch, the resolution every stored time has.
pub fn now() -> DateTime<Utc> {
    micros_to_time(Utc::now().timestamp_micros())
}

/// Whether both backends keep this time as it is: the years -1 to 10000 (UTC), which is what an RFC 3339 time
/// can be with any offset. Every stored time is one (imports check theirs).
pub fn storable_time(time: DateTime<Utc>) -> bool {
    (-1..=10_000).contains(&chrono::Datelike::year(&time))
}

pub(crate) fn micros_to_time(micros: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_micros(micros).unwrap_or_default()
}

/// A title from the first words of a message: at most five words and 80 characters; deterministic.
pub fn title_from_message(content: &str) -> String {
    let words: Vec<&str> = content.split_whitespace().take(5).collect();
    let mut title = words.join(" ");
    if title.chars().count() > 80 {
        title = title.chars().take(80).collect();
    }
    let title = title.trim_end_matches([',', ';', ':', '-']).to_string();
    if title.is_empty() {
        "New conversation".to_string()
    } else {
        title
    }
}

/// A stored role name.
pub(crate) fn parse_role(text: &str) -> Result<Role> {
    match text {
        "user" => Ok(Role::User),
        "assistant" => Ok(Role::Assistant),
        other => Err(StoreError::Corrupt(format!("role {other}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_take_five_words() {
        assert_eq!(title_from_message("  We need a  mobile app for field staff, please "), "We need a mobile app");
        assert_eq!(title_from_message(""), "New conversation");
        assert_eq!(title_from_message("Hello,"), "Hello");
    }

    #[test]
    fn renumbered_messages_move_below_every_old_number_and_below_one() {
        assert_eq!(renumbering_base(i64::MAX - 1, 2), Some(1));
        assert_eq!(renumbering_base(-5, 2), Some(-5));
        assert_eq!(renumbering_base(i64::MIN + 2, 2), Some(i64::MIN + 2));
        assert_eq!(renumbering_base(i64::MIN + 1, 2), None);
    }
}
