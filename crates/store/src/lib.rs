//! The storage boundary: one [`Store`] trait, two backends (embedded SQLite and PostgreSQL), picked once at
//! start-up from the database URL. Every method that reads or changes a user's data takes the owner's id and
//! scopes the query itself, so another user's row is indistinguishable from a missing one.

pub mod accounts;
pub mod admin;
pub mod approvals;
pub mod artifacts;
pub mod attachments;
pub mod budgets;
pub mod changes;
mod columns;
pub mod history;
pub mod limits;
pub mod messages;
pub mod postgres;
pub mod projects;
pub mod requirements;
pub mod search;
pub mod search_query;
pub mod settings;
pub mod shares;
mod snippet;
pub mod sqlite;
pub mod sso;
pub mod summaries;
pub mod threads;
pub mod throttle;
pub mod tokens;
pub mod turn_reads;
pub mod turns;

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;
use wire::{Artifact, ArtifactType, Message, MessageStatus, Quote, Role, Thread, Usage};

pub use accounts::{Accounts, NewUser, Session, User};
pub use admin::{AccountUsage, Admin, Invite, ResetRefusal, SignUpMode, SignUpPass, SignUpRefusal};
pub use approvals::{Approvals, NewApproval};
pub use artifacts::{ArtifactBrief, ArtifactRevision, Artifacts, Fulfilment};
pub use attachments::{AttachmentLimits, Attachments, ChunkHit, NewAttachment};
pub use budgets::{Budgets, Spending, TurnLimits};
pub use changes::{ArtifactChange, ChangeKind, SharedChanges};
pub use history::History;
pub use limits::{Admission, Rate, SharedLimits};
pub use messages::{Messages, ThreadStamp, Tree};
pub use projects::{ProjectPatch, Projects, Scope};
pub use requirements::{
    Citation, ForeignLedger, ForeignPick, LedgerRows, LedgerView, LedgerWrite, PlanWrites, Recorded, Requirements,
    Standing,
};
pub use search::{HitKind, Search, SearchHit, SearchPage, RANKED_CANDIDATES};
pub use settings::{Preferences, TurnSettings};
pub use shares::{NewShare, Shares};
pub use sso::{SingleSignOn, SsoAccount, SsoFlow, SsoIdentity, SsoRefusal};
pub use summaries::{NewSummary, Summaries, ThreadSummary};
pub use threads::Threads;
pub use tokens::{ApiToken, ApiTokens, NewApiToken};
pub use turn_reads::{TurnInputs, TurnReadLimits, TurnReads};
pub use turns::{
    EventRun, FinalAnswer, IdempotencyClaim, SpentTokens, Started, StoredEvent, TraceKey, Traces, TurnEnd,
    TurnProgress, TurnRecord, TurnStart, TurnTrace, Turns,
};

/// What can go wrong in storage. `NotFound` and `Conflict` are for callers; `Internal` text stays in logs.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("not found")]
    NotFound,
    /// The person may see the row but not do this with it (a project's viewer writing, say); why, in words for
    /// people.
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// A value the database's contents make unacceptable (an e-mail address no account has, say).
    #[error("invalid {field}: {message}")]
    Invalid { field: &'static str, message: String },
    #[error("conflict: {0}")]
    Conflict(String),
    /// A document's new version was made from one that is no longer its current version: here it is now.
    #[error("the document changed since the version the edit was made from")]
    VersionConflict(Box<Artifact>),
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
    /// Today's token budget (the person's or everyone's) is spent; it starts again at `resets_at`.
    #[error("the daily token budget is used up")]
    BudgetExceeded { resets_at: DateTime<Utc> },
    /// The person already has as many turns running as they may.
    #[error("too many answers are being written at once")]
    TooManyTurns,
}

impl StoreError {
    /// A turn is already running in the conversation.
    pub fn thread_busy() -> Self {
        Self::Conflict("an answer is already being written in this conversation".into())
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

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
                title.chars().count() <= wire::MAX_TITLE_CHARS && !wire::validate::has_nul(title)
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
    /// The conversation's model (`provider/model`); an empty one goes back to the default.
    pub model: Option<String>,
    /// The MCP servers whose tools the conversation is offered (`Some(None)`: back to its person's choice).
    pub mcp_servers: Option<Option<Vec<String>>>,
    /// The project to move it into (`Some(Some(_))`, where its author edits) or out of (`Some(None)`).
    pub project: Option<Option<Uuid>>,
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
    /// The passage of one of the thread's documents a person's message is about; a document of another thread
    /// (or none) refuses the message, as a missing thread does.
    pub quote: Option<Quote>,
    /// Who wrote a person's message when it is not the conversation's author (an editor of its project).
    pub author: Option<Uuid>,
}

/// Where a new message went: its number, and its parent (the conversation's active message when it was added).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub seq: i64,
    pub parent: Option<Uuid>,
}

impl NewMessage {
    /// The message as saved under `id`, at `place`, at `created`.
    pub fn saved(self, id: Uuid, place: Place, created: DateTime<Utc>) -> Message {
        Message {
            id,
            thread_id: self.thread_id,
            seq: place.seq,
            parent_id: place.parent,
            role: self.role,
            content: self.content,
            status: self.status,
            input_tokens: self.usage.input_tokens,
            output_tokens: self.usage.output_tokens,
            model: self.model,
            created_at: created,
            quote: self.quote,
            author_id: self.author,
        }
    }
}

/// A message without its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageHead {
    pub id: Uuid,
    pub seq: i64,
    pub role: Role,
    pub parent: Option<Uuid>,
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
/// (written one by one, in order; progress handed over is kept one entry per turn, so it never comes twice).
pub(crate) fn progress_parts(progress: &[TurnProgress]) -> (Vec<(Uuid, &EventRun)>, Result<Answers<'_>, Answers<'_>>) {
    let events = progress.iter().flat_map(|item| item.events.iter().map(move |e| (item.turn, e))).collect();
    let answers: Answers<'_> =
        progress.iter().filter_map(|item| item.answer.as_ref().map(|a| (item.user, a))).collect();
    let distinct = answers.iter().map(|(_, a)| a.id).collect::<std::collections::HashSet<_>>().len();
    (events, if distinct == answers.len() { Ok(answers) } else { Err(answers) })
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
    /// The message it answers: its first save goes after it (none when that is gone), and becomes the active
    /// message only while that one is, so a turn taken over answers beside the newer turn. `None`: after the active.
    pub question: Option<Uuid>,
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
            quote: None,
            author: None,
        }
    }
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
    /// The model that wrote it (its first version's author is the assistant); `None` when not known.
    pub model: Option<String>,
    /// The requirements it reflects, at the revisions it reflects.
    pub cites: Vec<requirements::Citation>,
}

/// A connection pool's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolUse {
    /// Connections open, in use or idle.
    pub size: u32,
    pub idle: u32,
}

/// Whether the newest migration a database has recorded as applied is the newest this build knows.
pub(crate) fn migrations_current(applied: Option<i64>, migrator: &sqlx::migrate::Migrator) -> bool {
    let known = migrator.iter().filter(|m| m.migration_type.is_up_migration()).map(|m| m.version).max();
    applied >= known
}

/// Everything Quire keeps. Both backends pass the same story suite (`server/tests/store_story.rs`).
#[async_trait]
pub trait Store:
    Accounts
    + Admin
    + Threads
    + Messages
    + Artifacts
    + Requirements
    + Attachments
    + Search
    + Turns
    + Traces
    + History
    + Summaries
    + Budgets
    + Preferences
    + TurnInputs
    + Shares
    + Projects
    + SingleSignOn
    + ApiTokens
    + Approvals
    + Send
    + Sync
    + 'static
{
    /// `sqlite` or `postgres`.
    fn backend(&self) -> &'static str;
    /// Each connection pool's name, size and idle connections, where the backend has pools worth watching
    /// (metrics): PostgreSQL's main pool (`main`) and the one kept for rate-limit checks (`rate_limits`).
    fn pool_use(&self) -> Vec<(&'static str, PoolUse)> {
        Vec::new()
    }
    /// Rate limits kept in the database for every instance; `None` where one process owns the database and
    /// counts them itself (SQLite).
    fn shared_limits(&self) -> Option<Arc<dyn SharedLimits>> {
        None
    }
    /// Document changes told to every instance sharing the database; `None` where one process owns the database
    /// (SQLite) and tells its own changes itself.
    fn shared_changes(&self) -> Option<Arc<dyn SharedChanges>> {
        None
    }
    /// Whether the database answers and has every migration this build knows applied (`GET /api/ready`).
    async fn ready(&self) -> Result<bool>;
}

/// When a SQLite commit counts as done (PostgreSQL follows its own `synchronous_commit`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SqliteSync {
    /// Once it is in the write-ahead log; the log reaches the disk at checkpoints. Nothing is lost when Quire
    /// crashes or is killed; a power cut or an operating-system crash may lose the last commits, never the
    /// database's integrity. SQLite's recommended setting in WAL mode.
    #[default]
    Normal,
    /// Once it is on the disk: nothing acknowledged is lost even on a power cut, at the price of an fsync per
    /// commit (a turn's start waits for it).
    Full,
}

impl SqliteSync {
    /// Every setting's name, as `QUIRE_SQLITE_SYNC` takes it.
    pub const NAMES: [&'static str; 2] = ["normal", "full"];

    /// The setting named `name`, if any.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "normal" => Some(SqliteSync::Normal),
            "full" => Some(SqliteSync::Full),
            _ => None,
        }
    }
}

/// The store as the rest of the server holds it.
pub type DynStore = Arc<dyn Store>;

/// What the store needs from its caller's configuration, besides the database URL.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// When a SQLite commit counts as done.
    pub sqlite_sync: SqliteSync,
    /// PostgreSQL only: connections kept for rate-limit checks, apart from the pool of every other query.
    pub limit_connections: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Self { sqlite_sync: SqliteSync::default(), limit_connections: postgres::LIMIT_CONNECTIONS }
    }
}

/// Opens the backend named by the URL's scheme and runs its migrations.
pub async fn connect(url: &str) -> Result<DynStore> {
    connect_with(url, Settings::default()).await
}

/// [`connect`], with SQLite's commits made durable as `settings` say and, on PostgreSQL, its connections kept for
/// rate-limit checks.
pub async fn connect_with(url: &str, settings: Settings) -> Result<DynStore> {
    let Settings { sqlite_sync: sync, limit_connections } = settings;
    if url.starts_with("sqlite:") {
        Ok(Arc::new(sqlite::Sqlite::connect(url, sync).await?))
    } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
        Ok(Arc::new(postgres::Postgres::connect(url, limit_connections).await?))
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
