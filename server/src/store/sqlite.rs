//! The embedded backend: one SQLite file in WAL mode, owned by one Quire process. Writes go through a
//! single-connection pool, so writers queue inside Quire instead of failing with "database is locked"; reads use
//! a pool of their own.

use std::{
    str::FromStr,
    sync::{Arc, Mutex, MutexGuard},
    time::Duration,
};

use app::api::{
    Artifact, ArtifactType, ArtifactVersion, Attachment, AttachmentMeta, DayTokens, HistoryStats, Message,
    MessageStatus, TagCount, Thread, Trace, TypeCount, Usage,
};
use async_trait::async_trait;
use chrono::{DateTime, NaiveDate, Utc};
use sqlx::{
    sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteRow, SqliteSynchronous},
    ConnectOptions, Row, SqliteConnection, SqlitePool,
};
use tracing::instrument;
use uuid::Uuid;

use super::documents::{check_attachment_limits, chunk_query_words, AttachmentLimits};
use super::write_queue::{Urgency, WriteQueue};
use super::{
    history::{self, ImportThread},
    micros_to_time, now, parse_role as role, search_query, snippet, ArtifactRevision, ChunkHit, CursorKey, HitKind,
    IdempotencyClaim, NewArtifact, NewAttachment, NewMessage, NewUser, Result, SearchHit, SearchPage, Store,
    StoreError, StoredEvent, ThreadCursor, ThreadPage, ThreadPatch, ThreadQuery, ThreadSort, TurnRecord, TurnTrace,
    User,
};
use futures::future::BoxFuture;
use tokio::sync::oneshot;
use turn_writes::StartTurn;

/// How often the write-ahead log is copied back into the database file.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(500);

/// Hits of one kind ranked per search, newest first (see `search`).
const RANKED_CANDIDATES: u32 = 1_000;

mod accounts;
mod import;
mod summaries;
mod turn_writes;

/// SQLite storage.
#[derive(Debug, Clone)]
pub struct Sqlite {
    writer: SqlitePool,
    reader: SqlitePool,
    /// Who gets the writer next, where turns start, end and save their progress.
    queue: Arc<WriteQueue>,
    /// Turns' starts waiting for the writer.
    starts: Waiting<StartTurn, Option<Message>>,
    /// Turns' ends waiting for the writer.
    ends: Waiting<(Uuid, super::TurnEnd), ()>,
}

impl Sqlite {
    /// Opens (creating if needed) the database file and runs the migrations.
    pub async fn connect(url: &str, sync: super::SqliteSync) -> Result<Self> {
        let synchronous = match sync {
            super::SqliteSync::Normal => SqliteSynchronous::Normal,
            super::SqliteSync::Full => SqliteSynchronous::Full,
        };
        let options = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(synchronous)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10))
            // The log is copied back into the database file by a connection of its own (see
            // `checkpoint_in_background`), never by the commit that happens to fill it.
            .pragma("wal_autocheckpoint", "0");
        if let Some(parent) = options.get_filename().parent() {
            if !parent.as_os_str().is_empty() {
                std::fs::create_dir_all(parent).map_err(|e| StoreError::Database(sqlx::Error::Io(e)))?;
            }
        }
        // A connection to a file in this process cannot go stale, so none is pinged before use: with the
        // default check, every query paid a second round trip to its connection's thread.
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .test_before_acquire(false)
            .connect_with(options.clone())
            .await?;
        sqlx::migrate!("../migrations/sqlite").run(&writer).await?;
        // One process owns a SQLite database: a turn still marked running was cut off when the last one
        // stopped (its partial answer is saved as `interrupted`), so its conversation is free again at once, and
        // its answer is searchable.
        let mut tx = writer.begin().await?;
        sqlx::query("update turns set status = 'done' where status = 'running'").execute(&mut *tx).await?;
        sqlx::query("update messages set writing = 0 where writing = 1").execute(&mut *tx).await?;
        // An import cut off part way goes whole (see `import`).
        sqlx::query("delete from threads where import_id is not null").execute(&mut *tx).await?;
        tx.commit().await?;
        let queue: Arc<WriteQueue> = Arc::default();
        tokio::spawn(checkpoint_in_background(options.clone().connect().await?, Arc::downgrade(&queue)));
        let reader = SqlitePoolOptions::new()
            .max_connections(8)
            .test_before_acquire(false)
            .connect_with(options.read_only(true))
            .await?;
        Ok(Self { writer, reader, queue, starts: Arc::default(), ends: Arc::default() })
    }

    /// Runs `work` through the writer together with every write of its kind waiting by the time the writer is
    /// free: in one transaction (one commit, and two round trips to the writer's thread less for each but the
    /// first), or, if that fails, each in its own, so one write's failure is only its own. The group runs apart
    /// from the caller, so a request cancelled meanwhile never cuts it short (its own write is skipped if it has
    /// not run yet).
    ///
    /// One task per kind waits in the writer's line for all the writes of that kind (see [`lead`]): with a task
    /// per write, the many whose write an earlier group had already taken each still came to the front, one
    /// after another, and the writer stood idle while each of them was woken only to find nothing to do.
    async fn write_grouped<T, R>(
        &self,
        waiting: &Waiting<T, R>,
        urgency: Urgency,
        at_most: usize,
        work: T,
        write: WriteFn<T, R>,
    ) -> Result<R>
    where
        T: Send + Sync + 'static,
        R: Send + 'static,
    {
        let (reply, outcome) = oneshot::channel();
        let leader_needed = {
            let mut line = lock(waiting);
            line.pending.push(Pending { work, reply });
            !std::mem::replace(&mut line.led, true)
        };
        if leader_needed {
            tokio::spawn(lead(self.clone(), waiting.clone(), urgency, at_most, write));
        }
        outcome.await.unwrap_or_else(|_| Err(StoreError::Database(sqlx::Error::WorkerCrashed)))
    }

    async fn run_group<T, R>(&self, group: Vec<Pending<T, R>>, write: WriteFn<T, R>) {
        let group: Vec<Pending<T, R>> = group.into_iter().filter(|p| !p.reply.is_closed()).collect();
        if group.len() > 1 {
            match self.run_together(&group, write).await {
                Ok(outcomes) => {
                    for (pending, outcome) in group.into_iter().zip(outcomes) {
                        let _ = pending.reply.send(outcome);
                    }
                    return;
                }
                Err(e) => tracing::warn!(error = %e, writes = group.len(), "writing a group together failed"),
            }
        }
        for pending in group {
            let outcome = async {
                let mut tx = self.writer.begin().await?;
                let done = write(&mut tx, &pending.work).await?;
                tx.commit().await?;
                Ok(done)
            }
            .await;
            let _ = pending.reply.send(outcome);
        }
    }

    /// Each write's outcome; an error of the store (not a refusal: missing, or in conflict) fails them all, with
    /// nothing saved.
    async fn run_together<T, R>(&self, group: &[Pending<T, R>], write: WriteFn<T, R>) -> Result<Vec<Result<R>>> {
        let mut tx = self.writer.begin().await?;
        let mut outcomes = Vec::with_capacity(group.len());
        for pending in group {
            match write(&mut tx, &pending.work).await {
                // Refused before writing anything of its own.
                Err(refused @ (StoreError::NotFound | StoreError::Conflict(_))) => outcomes.push(Err(refused)),
                Err(e) => return Err(e),
                Ok(done) => outcomes.push(Ok(done)),
            }
        }
        tx.commit().await?;
        Ok(outcomes)
    }

    /// Whether a row with this id and owner exists in `table` (`threads` or `messages`). Used when a listing
    /// comes back empty, to tell an empty thread from one that is missing or another user's.
    async fn owns(&self, table: &str, user: Uuid, id: Uuid) -> Result<bool> {
        let sql = format!("select exists (select 1 from {table} where id = ? and user_id = ?)");
        Ok(sqlx::query_scalar(&sql).bind(id.to_string()).bind(user.to_string()).fetch_one(&self.reader).await?)
    }

    /// Runs `PRAGMA integrity_check` (used by the crash tests).
    pub async fn integrity_check(&self) -> Result<String> {
        Ok(sqlx::query_scalar("pragma integrity_check").fetch_one(&self.reader).await?)
    }
}

fn uuid(row: &SqliteRow, column: &str) -> Result<Uuid> {
    let text: String = row.try_get(column)?;
    Uuid::parse_str(&text).map_err(|e| StoreError::Corrupt(format!("{column}: {e}")))
}

fn opt_uuid(row: &SqliteRow, column: &str) -> Result<Option<Uuid>> {
    let text: Option<String> = row.try_get(column)?;
    text.map(|t| Uuid::parse_str(&t).map_err(|e| StoreError::Corrupt(format!("{column}: {e}")))).transpose()
}

fn time(row: &SqliteRow, column: &str) -> Result<DateTime<Utc>> {
    Ok(micros_to_time(row.try_get(column)?))
}

fn owner_token(user: Uuid) -> String {
    format!("u{}", user.simple())
}

const THREAD_COLUMNS: &str = "t.id, t.title, t.pinned, t.archived, t.message_count, t.created_at, t.updated_at,
    (select json_group_array(tag) from (select tag from thread_tags g where g.thread_id = t.id order by position)) as tags,
    (select substr(m.content, 1, 200) from messages m where m.thread_id = t.id and m.role = 'user' order by m.seq limit 1) as first_message";

fn thread_from_row(row: &SqliteRow) -> Result<Thread> {
    let tags: String = row.try_get("tags")?;
    Ok(Thread {
        id: uuid(row, "id")?,
        title: row.try_get("title")?,
        tags: serde_json::from_str(&tags).map_err(|e| StoreError::Corrupt(format!("tags: {e}")))?,
        pinned: row.try_get("pinned")?,
        archived: row.try_get("archived")?,
        message_count: row.try_get("message_count")?,
        first_message: row.try_get("first_message")?,
        created_at: time(row, "created_at")?,
        updated_at: time(row, "updated_at")?,
    })
}

const MESSAGE_COLUMNS: &str =
    "id, thread_id, seq, role, content, status, input_tokens, output_tokens, model, created_at";

fn message_from_row(row: &SqliteRow) -> Result<Message> {
    let status: String = row.try_get("status")?;
    Ok(Message {
        id: uuid(row, "id")?,
        thread_id: uuid(row, "thread_id")?,
        seq: row.try_get("seq")?,
        role: role(row.try_get("role")?)?,
        content: row.try_get("content")?,
        status: MessageStatus::parse(&status).ok_or_else(|| StoreError::Corrupt(format!("status {status}")))?,
        input_tokens: row.try_get::<i64, _>("input_tokens")? as u64,
        output_tokens: row.try_get::<i64, _>("output_tokens")? as u64,
        model: row.try_get("model")?,
        created_at: time(row, "created_at")?,
    })
}

const ARTIFACT_COLUMNS: &str =
    "id, thread_id, artifact_type, title, content, version, request_message_id, assistant_message_id, created_at";

fn artifact_from_row(row: &SqliteRow) -> Result<Artifact> {
    let kind: String = row.try_get("artifact_type")?;
    Ok(Artifact {
        id: uuid(row, "id")?,
        thread_id: uuid(row, "thread_id")?,
        artifact_type: ArtifactType::parse(&kind).ok_or_else(|| StoreError::Corrupt(format!("type {kind}")))?,
        title: row.try_get("title")?,
        content: row.try_get("content")?,
        version: row.try_get("version")?,
        request_message_id: opt_uuid(row, "request_message_id")?,
        assistant_message_id: opt_uuid(row, "assistant_message_id")?,
        created_at: time(row, "created_at")?,
    })
}

fn version_from_row(row: &SqliteRow) -> Result<ArtifactVersion> {
    Ok(ArtifactVersion {
        artifact_id: uuid(row, "artifact_id")?,
        version: row.try_get("version")?,
        title: row.try_get("title")?,
        content: row.try_get("content")?,
        request_message_id: opt_uuid(row, "request_message_id")?,
        created_at: time(row, "created_at")?,
    })
}

fn user_from_row(row: &SqliteRow) -> Result<User> {
    Ok(User {
        id: uuid(row, "id")?,
        email: row.try_get("email")?,
        password_hash: row.try_get("password_hash")?,
        display_name: row.try_get("display_name")?,
        created_at: time(row, "created_at")?,
    })
}

fn is_unique_violation(err: &sqlx::Error) -> bool {
    matches!(err, sqlx::Error::Database(db) if db.is_unique_violation())
}

fn today() -> String {
    Utc::now().format("%Y-%m-%d").to_string()
}

/// Rewrites an answer's text, status, usage, whether it is still being written, and model and context when
/// given; whether it exists.
async fn rewrite_message(
    conn: &mut sqlx::SqliteConnection,
    user: Uuid,
    message: Uuid,
    update: &super::MessageUpdate,
    writing: bool,
) -> Result<bool> {
    let context = update.context.as_ref().map(|c| c.to_string());
    let updated = sqlx::query(
        "update messages set content = ?, status = ?, input_tokens = ?, output_tokens = ?, writing = ?,
         model = coalesce(?, model), context = coalesce(?, context) where id = ? and user_id = ?",
    )
    .bind(&update.content)
    .bind(update.status.as_str())
    .bind(update.usage.input_tokens as i64)
    .bind(update.usage.output_tokens as i64)
    .bind(writing)
    .bind(&update.model)
    .bind(context)
    .bind(message.to_string())
    .bind(user.to_string())
    .execute(&mut *conn)
    .await?;
    Ok(updated.rows_affected() > 0)
}

/// Answer drafts per update statement (nine parameters each).
const DRAFT_ROWS_PER_STATEMENT: usize = 100;

/// Rewrites answer drafts saved before, many per statement, as [`rewrite_message`] does one by one; gives back
/// the drafts that matched no message of their user (first saves, and answers whose thread is gone).
async fn rewrite_drafts<'a>(
    conn: &mut sqlx::SqliteConnection,
    drafts: &[(Uuid, &'a super::AnswerDraft)],
) -> Result<Vec<(Uuid, &'a super::AnswerDraft)>> {
    let mut rewritten = std::collections::HashSet::new();
    for chunk in drafts.chunks(DRAFT_ROWS_PER_STATEMENT) {
        let mut update = sqlx::QueryBuilder::new(
            "update messages set content = v.column3, status = v.column4, input_tokens = v.column5,
             output_tokens = v.column6, model = coalesce(v.column7, messages.model),
             context = coalesce(v.column8, messages.context), writing = v.column9 from (",
        );
        update.push_values(chunk, |mut row, (user, draft)| {
            let change = &draft.update;
            row.push_bind(draft.id.to_string())
                .push_bind(user.to_string())
                .push_bind(&change.content)
                .push_bind(change.status.as_str())
                .push_bind(change.usage.input_tokens as i64)
                .push_bind(change.usage.output_tokens as i64)
                .push_bind(&change.model)
                .push_bind(change.context.as_ref().map(|c| c.to_string()))
                .push_bind(draft.writing);
        });
        update.push(") as v where messages.id = v.column1 and messages.user_id = v.column2 returning messages.id");
        let ids: Vec<String> = update.build_query_scalar().persistent(false).fetch_all(&mut *conn).await?;
        rewritten.extend(ids);
    }
    Ok(drafts.iter().filter(|(_, draft)| !rewritten.contains(&draft.id.to_string())).copied().collect())
}

/// Turns' starts run in one transaction at most: they come first, and each is a few small statements.
const STARTS_TOGETHER: usize = 64;
/// Turns' ends run in one transaction at most: an end writes much more (the answer into the search index, its
/// events), and starts arriving meanwhile wait for the whole group.
const ENDS_TOGETHER: usize = 8;

/// A write waiting for the writer, and where its outcome goes.
#[derive(Debug)]
struct Pending<T, R> {
    work: T,
    reply: oneshot::Sender<Result<R>>,
}

/// Writes of one kind waiting for the writer (see `Sqlite::write_grouped`).
type Waiting<T, R> = Arc<Mutex<Line<T, R>>>;

#[derive(Debug)]
struct Line<T, R> {
    pending: Vec<Pending<T, R>>,
    /// Whether a task is in the writer's line for these writes (it takes them all, group after group).
    led: bool,
}

impl<T, R> Default for Line<T, R> {
    fn default() -> Self {
        Self { pending: Vec::new(), led: false }
    }
}

/// A write that can share a transaction with others of its kind.
type WriteFn<T, R> = for<'c> fn(&'c mut sqlx::SqliteConnection, &'c T) -> BoxFuture<'c, Result<R>>;

fn lock<T, R>(waiting: &Waiting<T, R>) -> MutexGuard<'_, Line<T, R>> {
    waiting.lock().unwrap_or_else(|e| e.into_inner())
}

/// Takes the writes of one kind through the writer, at most `at_most` per transaction, until none is left;
/// then the next write of the kind starts another leader. It keeps the writer from group to group unless a
/// more urgent write waits for it.
async fn lead<T, R>(store: Sqlite, waiting: Waiting<T, R>, urgency: Urgency, at_most: usize, write: WriteFn<T, R>)
where
    T: Send + Sync + 'static,
    R: Send + 'static,
{
    // Should this task end any other way (a panic), the writes still waiting fail instead of waiting for ever,
    // and the next write starts a new leader.
    let mut stepping_down = StepDown { waiting: &waiting, done: false };
    let mut turn = store.queue.enter(urgency).await;
    loop {
        let group: Vec<Pending<T, R>> = {
            let mut line = lock(&waiting);
            let take = line.pending.len().min(at_most);
            line.pending.drain(..take).collect()
        };
        store.run_group(group, write).await;
        {
            let mut line = lock(&waiting);
            if line.pending.is_empty() {
                line.led = false;
                stepping_down.done = true;
                return;
            }
        }
        if turn.more_urgent_waiting(urgency) {
            drop(turn);
            turn = store.queue.enter(urgency).await;
        }
    }
}

/// Copies the write-ahead log back into the database file every [`CHECKPOINT_EVERY`], on a connection of its
/// own, for as long as the store is open (`alive`). Left to SQLite, a checkpoint runs inside whichever commit
/// fills the log past 1,000 pages: that commit (usually a turn's end, the largest write) then held the only
/// writer while it copied about 4 MB and synced the file, and every start and end waited behind it. A passive
/// checkpoint takes no write lock: it copies what no reader still needs, and the next one the rest.
async fn checkpoint_in_background(mut conn: SqliteConnection, alive: std::sync::Weak<WriteQueue>) {
    let mut every = tokio::time::interval(CHECKPOINT_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        if alive.strong_count() == 0 {
            return;
        }
        if let Err(e) = sqlx::query("pragma wal_checkpoint(passive)").execute(&mut conn).await {
            tracing::warn!(error = %e, "copying the write-ahead log into the database failed");
        }
    }
}

struct StepDown<'a, T, R> {
    waiting: &'a Waiting<T, R>,
    done: bool,
}

impl<T, R> Drop for StepDown<'_, T, R> {
    fn drop(&mut self) {
        if !self.done {
            let mut line = lock(self.waiting);
            line.pending.clear();
            line.led = false;
        }
    }
}

fn start_turn_boxed<'c>(
    conn: &'c mut sqlx::SqliteConnection,
    start: &'c StartTurn,
) -> BoxFuture<'c, Result<Option<Message>>> {
    Box::pin(turn_writes::start_turn(conn, start))
}

fn end_turn_boxed<'c>(
    conn: &'c mut sqlx::SqliteConnection,
    end: &'c (Uuid, super::TurnEnd),
) -> BoxFuture<'c, Result<()>> {
    Box::pin(turn_writes::end_turn(conn, end.0, &end.1))
}

/// Links the user's documents to the answer that wrote them, in one statement.
async fn link_artifacts_to(
    conn: &mut sqlx::SqliteConnection,
    user: Uuid,
    artifacts: &[Uuid],
    message: Uuid,
) -> Result<()> {
    if artifacts.is_empty() {
        return Ok(());
    }
    let ids = serde_json::to_string(&artifacts.iter().map(Uuid::to_string).collect::<Vec<_>>())
        .map_err(|e| StoreError::Corrupt(e.to_string()))?;
    sqlx::query(
        "update artifacts set assistant_message_id = ? where user_id = ? and id in (select value from json_each(?))",
    )
    .bind(message.to_string())
    .bind(user.to_string())
    .bind(ids)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Stores a turn's trace (replacing one of the same turn and owner), with the answer it kept if that is a
/// message of its thread; nothing when the thread is missing or another user's. Whether it was stored.
async fn write_trace(
    conn: &mut sqlx::SqliteConnection,
    turn: Uuid,
    trace: &TurnTrace,
    message: Option<Uuid>,
) -> Result<bool> {
    let written = sqlx::query(WRITE_TRACE)
        .bind(turn.to_string())
        .bind(message.map(|m| m.to_string()))
        .bind(steps_json(trace)?)
        .bind(now().timestamp_micros())
        .bind(trace.thread.to_string())
        .bind(trace.user.to_string())
        .execute(&mut *conn)
        .await?;
    Ok(written.rows_affected() > 0)
}

/// Stores a turn's trace (see [`write_trace`]). Binds the turn, its answer (kept only if it is a message of the
/// thread), the steps as JSON, the time, the thread and its owner; stores nothing for another user's thread.
pub(super) const WRITE_TRACE: &str =
    "insert into turn_traces (turn_id, thread_id, user_id, message_id, steps, created_at)
    select ?, t.id, t.user_id, (select m.id from messages m where m.id = ? and m.thread_id = t.id), ?, ?
    from threads t where t.id = ? and t.user_id = ?
    on conflict (turn_id) do update set message_id = excluded.message_id, steps = excluded.steps
    where turn_traces.user_id = excluded.user_id";

/// A trace's steps as stored.
pub(super) fn steps_json(trace: &TurnTrace) -> Result<String> {
    serde_json::to_string(&trace.steps).map_err(|e| StoreError::Corrupt(format!("trace: {e}")))
}

fn trace_from_row(row: &SqliteRow) -> Result<Trace> {
    let steps: String = row.try_get("steps")?;
    Ok(Trace {
        turn_id: uuid(row, "turn_id")?,
        thread_id: uuid(row, "thread_id")?,
        message_id: opt_uuid(row, "message_id")?,
        steps: serde_json::from_str(&steps).map_err(|e| StoreError::Corrupt(format!("trace steps: {e}")))?,
    })
}

async fn owned_in(tx: &mut sqlx::SqliteConnection, table: &str, user: Uuid, id: Uuid) -> Result<bool> {
    let sql = format!("select exists (select 1 from {table} where id = ? and user_id = ?)");
    Ok(sqlx::query_scalar(&sql).bind(id.to_string()).bind(user.to_string()).fetch_one(&mut *tx).await?)
}

/// Records that a document answers these earlier requests too: the person's messages of its own thread among
/// them (others are ignored).
async fn answer_requests(tx: &mut sqlx::SqliteConnection, artifact: Uuid, requests: &[Uuid]) -> Result<()> {
    if requests.is_empty() {
        return Ok(());
    }
    let ids = serde_json::to_string(&requests.iter().map(Uuid::to_string).collect::<Vec<_>>())
        .map_err(|e| StoreError::Corrupt(e.to_string()))?;
    sqlx::query(
        "insert or ignore into artifact_requests (artifact_id, message_id)
         select a.id, m.id from artifacts a join messages m on m.thread_id = a.thread_id and m.user_id = a.user_id
         where a.id = ? and m.role = 'user' and m.id in (select value from json_each(?))",
    )
    .bind(artifact.to_string())
    .bind(ids)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

async fn write_tags(tx: &mut sqlx::SqliteConnection, user: Uuid, thread: Uuid, tags: &[String]) -> Result<()> {
    sqlx::query("delete from thread_tags where thread_id = ?").bind(thread.to_string()).execute(&mut *tx).await?;
    for (position, tag) in tags.iter().enumerate() {
        sqlx::query("insert or ignore into thread_tags (thread_id, user_id, tag, position) values (?, ?, ?, ?)")
            .bind(thread.to_string())
            .bind(user.to_string())
            .bind(tag)
            .bind(position as i64)
            .execute(&mut *tx)
            .await?;
    }
    Ok(())
}

#[async_trait]
impl Store for Sqlite {
    fn backend(&self) -> &'static str {
        "sqlite"
    }

    fn one_process(&self) -> bool {
        true
    }

    #[instrument(skip_all)]
    async fn create_user(&self, user: NewUser) -> Result<User> {
        let id = Uuid::now_v7();
        let created = now();
        let result = sqlx::query(
            "insert into users (id, email, password_hash, display_name, created_at) values (?, ?, ?, ?, ?)",
        )
        .bind(id.to_string())
        .bind(&user.email)
        .bind(&user.password_hash)
        .bind(&user.display_name)
        .bind(created.timestamp_micros())
        .execute(&self.writer)
        .await;
        match result {
            Ok(_) => Ok(User {
                id,
                email: user.email,
                password_hash: user.password_hash,
                display_name: user.display_name,
                created_at: created,
            }),
            Err(e) if is_unique_violation(&e) => Err(StoreError::Conflict("email already registered".into())),
            Err(e) => Err(e.into()),
        }
    }

    #[instrument(skip_all)]
    async fn user_by_email(&self, email: &str) -> Result<User> {
        let row = sqlx::query("select * from users where lower(email) = lower(?)")
            .bind(email)
            .fetch_optional(&self.reader)
            .await?
            .ok_or(StoreError::NotFound)?;
        user_from_row(&row)
    }

    #[instrument(skip(self))]
    async fn user_by_id(&self, id: Uuid) -> Result<User> {
        let row = sqlx::query("select * from users where id = ?")
            .bind(id.to_string())
            .fetch_optional(&self.reader)
            .await?
            .ok_or(StoreError::NotFound)?;
        user_from_row(&row)
    }

    #[instrument(skip(self, title, tags))]
    async fn create_thread(&self, user: Uuid, title: &str, tags: &[String]) -> Result<Thread> {
        let id = Uuid::now_v7();
        let created = now().timestamp_micros();
        let mut tx = self.writer.begin().await?;
        sqlx::query("insert into threads (id, user_id, title, created_at, updated_at) values (?, ?, ?, ?, ?)")
            .bind(id.to_string())
            .bind(user.to_string())
            .bind(title)
            .bind(created)
            .bind(created)
            .execute(&mut *tx)
            .await?;
        write_tags(&mut tx, user, id, tags).await?;
        let sql = format!("select {THREAD_COLUMNS} from threads t where t.id = ?");
        let row = sqlx::query(&sql).bind(id.to_string()).fetch_one(&mut *tx).await?;
        tx.commit().await?;
        thread_from_row(&row)
    }

    #[instrument(skip(self, query))]
    async fn list_threads(&self, user: Uuid, query: &ThreadQuery) -> Result<ThreadPage> {
        // Later pages order and filter by each thread's state when the walk began (`s`, see ThreadCursor);
        // the first page by the current one, straight from `threads` and its indexes.
        let walk = match &query.cursor {
            Some(cursor) => Some(cursor.check(query.sort)?.parse::<i64>().map_err(|_| StoreError::InvalidCursor)?),
            None => None,
        };
        let state = if walk.is_some() { "s" } else { "t" };
        let (key_column, text_key) = match query.sort {
            ThreadSort::UpdatedAt => (format!("{state}.updated_at"), false),
            ThreadSort::CreatedAt => ("t.created_at".to_owned(), false),
            ThreadSort::Title => (format!("{state}.title"), true),
        };
        let (cmp, dir) = if query.descending { ("<", "desc") } else { (">", "asc") };
        let mut sql = if walk.is_some() {
            format!(
                "with changed as (
                    select thread_id, min(id) as first from thread_versions where user_id = ? and id > ? group by thread_id
                ), s as (
                    select t.id, t.pinned, t.archived, t.title, t.updated_at, null as tags, 1 as existed
                        from threads t where t.user_id = ? and t.id not in (select thread_id from changed)
                    union all
                    select v.thread_id, v.pinned, v.archived, v.title, v.updated_at, v.tags, v.existed
                        from changed c join thread_versions v on v.id = c.first
                )
                select {THREAD_COLUMNS}, {key_column} as sort_key, {state}.pinned as sort_pinned, 0 as walk
                from s join threads t on t.id = s.id where s.existed = 1 and s.archived = ?"
            )
        } else {
            format!(
                "select {THREAD_COLUMNS}, {key_column} as sort_key, {state}.pinned as sort_pinned,
                    (select coalesce(max(id), 0) from thread_versions) as walk
                from threads t where t.user_id = ? and t.archived = ?"
            )
        };
        for _ in &query.tags {
            sql.push_str(if walk.is_some() {
                " and (case when s.tags is null
                    then exists (select 1 from thread_tags g where g.thread_id = t.id and g.tag = ?)
                    else exists (select 1 from json_each(s.tags) where json_each.value = ?) end)"
            } else {
                " and exists (select 1 from thread_tags g where g.thread_id = t.id and g.tag = ?)"
            });
        }
        if query.cursor.is_some() {
            sql.push_str(&format!(
                " and ({state}.pinned < ? or ({state}.pinned = ? and ({key_column} {cmp} ? or ({key_column} = ? and t.id {cmp} ?))))"
            ));
        }
        sql.push_str(&format!(" order by {state}.pinned desc, {key_column} {dir}, t.id {dir} limit ?"));
        let mut q = sqlx::query(&sql);
        if let Some(walk) = walk {
            q = q.bind(user.to_string()).bind(walk);
        }
        q = q.bind(user.to_string()).bind(query.archived);
        for tag in &query.tags {
            q = q.bind(tag);
            if walk.is_some() {
                q = q.bind(tag);
            }
        }
        if let Some(cursor) = &query.cursor {
            q = q.bind(cursor.pinned).bind(cursor.pinned);
            q = match &cursor.key {
                CursorKey::Time(t) => q.bind(*t).bind(*t),
                CursorKey::Text(s) => q.bind(s.clone()).bind(s.clone()),
            };
            q = q.bind(cursor.id.to_string());
        }
        let limit = query.limit.clamp(1, 100);
        let rows = q.bind(limit as i64 + 1).fetch_all(&self.reader).await?;
        let mut threads = Vec::with_capacity(rows.len());
        let mut last_key = None;
        for row in rows.iter().take(limit as usize) {
            threads.push(thread_from_row(row)?);
            // The page shows current data, but the walk goes on from the state it was ordered by.
            last_key = Some((
                row.try_get::<bool, _>("sort_pinned")?,
                if text_key {
                    CursorKey::Text(row.try_get("sort_key")?)
                } else {
                    CursorKey::Time(row.try_get("sort_key")?)
                },
            ));
        }
        let next = match (rows.len() > limit as usize, threads.last(), last_key) {
            (true, Some(last), Some((pinned, key))) => {
                let (as_of, walk) = match &query.cursor {
                    Some(cursor) => (cursor.as_of, cursor.walk.clone()),
                    None => (Some(now().timestamp_micros()), Some(rows[0].try_get::<i64, _>("walk")?.to_string())),
                };
                Some(ThreadCursor { pinned, key, id: last.id, as_of, walk })
            }
            _ => None,
        };
        Ok(ThreadPage { threads, next })
    }

    #[instrument(skip(self))]
    async fn get_thread(&self, user: Uuid, thread: Uuid) -> Result<Thread> {
        let sql = format!("select {THREAD_COLUMNS} from threads t where t.id = ? and t.user_id = ?");
        let row = sqlx::query(&sql)
            .bind(thread.to_string())
            .bind(user.to_string())
            .fetch_optional(&self.reader)
            .await?
            .ok_or(StoreError::NotFound)?;
        thread_from_row(&row)
    }

    #[instrument(skip(self, patch))]
    async fn update_thread(&self, user: Uuid, thread: Uuid, patch: &ThreadPatch) -> Result<Thread> {
        let mut tx = self.writer.begin().await?;
        let updated = sqlx::query(
            "update threads set title = coalesce(?, title), pinned = coalesce(?, pinned), archived = coalesce(?, archived),
             summary = coalesce(?, summary), updated_at = max(updated_at, ?) where id = ? and user_id = ?",
        )
        .bind(&patch.title)
        .bind(patch.pinned)
        .bind(patch.archived)
        .bind(&patch.summary)
        .bind(now().timestamp_micros())
        .bind(thread.to_string())
        .bind(user.to_string())
        .execute(&mut *tx)
        .await?;
        if updated.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        if let Some(tags) = &patch.tags {
            write_tags(&mut tx, user, thread, tags).await?;
        }
        let sql = format!("select {THREAD_COLUMNS} from threads t where t.id = ?");
        let row = sqlx::query(&sql).bind(thread.to_string()).fetch_one(&mut *tx).await?;
        tx.commit().await?;
        thread_from_row(&row)
    }

    #[instrument(skip(self))]
    async fn delete_thread(&self, user: Uuid, thread: Uuid) -> Result<()> {
        let deleted = sqlx::query("delete from threads where id = ? and user_id = ?")
            .bind(thread.to_string())
            .bind(user.to_string())
            .execute(&self.writer)
            .await?;
        if deleted.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    #[instrument(skip(self, message), fields(thread = %message.thread_id))]
    async fn append_message(&self, user: Uuid, message: NewMessage) -> Result<Message> {
        let id = Uuid::now_v7();
        let created = now();
        let mut tx = self.writer.begin().await?;
        let seq =
            turn_writes::insert_message(&mut tx, user, id, &message, created).await?.ok_or(StoreError::NotFound)?;
        tx.commit().await?;
        Ok(message.saved(id, seq, created))
    }

    #[instrument(skip(self, message), fields(thread = %message.thread_id))]
    async fn append_message_between_turns(
        &self,
        user: Uuid,
        message: NewMessage,
        stale_after_ms: i64,
    ) -> Result<Message> {
        let id = Uuid::now_v7();
        let created = now();
        // The one writer connection serialises this with every turn's start.
        let mut tx = self.writer.begin().await?;
        let busy: bool = sqlx::query_scalar(
            "select exists (select 1 from turns
             where thread_id = ? and user_id = ? and status = 'running' and heartbeat_at >= ?)",
        )
        .bind(message.thread_id.to_string())
        .bind(user.to_string())
        .bind(created.timestamp_micros() - stale_after_ms * 1000)
        .fetch_one(&mut *tx)
        .await?;
        if busy {
            return Err(StoreError::thread_busy());
        }
        let seq =
            turn_writes::insert_message(&mut tx, user, id, &message, created).await?.ok_or(StoreError::NotFound)?;
        tx.commit().await?;
        Ok(message.saved(id, seq, created))
    }

    #[instrument(skip(self, update))]
    async fn update_message(&self, user: Uuid, message: Uuid, update: &super::MessageUpdate) -> Result<()> {
        let mut conn = self.writer.acquire().await?;
        if !rewrite_message(&mut conn, user, message, update, false).await? {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    #[instrument(skip(self))]
    async fn list_messages(&self, user: Uuid, thread: Uuid) -> Result<Vec<Message>> {
        let messages = self.list_messages_from(user, thread, i64::MIN).await?;
        if messages.is_empty() && !self.owns("threads", user, thread).await? {
            return Err(StoreError::NotFound);
        }
        Ok(messages)
    }

    #[instrument(skip(self))]
    async fn list_message_heads(&self, user: Uuid, thread: Uuid) -> Result<Vec<super::MessageHead>> {
        // Answered from the `messages_heads` index alone: the rows (and their texts) are not read.
        let rows = sqlx::query(
            "select id, seq, role from messages indexed by messages_heads
             where thread_id = ? and user_id = ? order by seq",
        )
        .bind(thread.to_string())
        .bind(user.to_string())
        .fetch_all(&self.reader)
        .await?;
        if rows.is_empty() && !self.owns("threads", user, thread).await? {
            return Err(StoreError::NotFound);
        }
        rows.iter()
            .map(|row| {
                Ok(super::MessageHead {
                    id: uuid(row, "id")?,
                    seq: row.try_get("seq")?,
                    role: role(row.try_get("role")?)?,
                })
            })
            .collect()
    }

    #[instrument(skip(self))]
    async fn list_messages_from(&self, user: Uuid, thread: Uuid, from_seq: i64) -> Result<Vec<Message>> {
        let sql = format!(
            "select {MESSAGE_COLUMNS} from messages where thread_id = ? and user_id = ? and seq >= ? order by seq"
        );
        let rows = sqlx::query(&sql)
            .bind(thread.to_string())
            .bind(user.to_string())
            .bind(from_seq)
            .fetch_all(&self.reader)
            .await?;
        rows.iter().map(message_from_row).collect()
    }

    #[instrument(skip(self))]
    async fn get_message(&self, user: Uuid, message: Uuid) -> Result<Message> {
        let sql = format!("select {MESSAGE_COLUMNS} from messages where id = ? and user_id = ?");
        let row = sqlx::query(&sql)
            .bind(message.to_string())
            .bind(user.to_string())
            .fetch_optional(&self.reader)
            .await?
            .ok_or(StoreError::NotFound)?;
        message_from_row(&row)
    }

    #[instrument(skip(self))]
    async fn message_context(&self, user: Uuid, message: Uuid) -> Result<Option<serde_json::Value>> {
        let context: Option<String> = sqlx::query_scalar("select context from messages where id = ? and user_id = ?")
            .bind(message.to_string())
            .bind(user.to_string())
            .fetch_optional(&self.reader)
            .await?
            .ok_or(StoreError::NotFound)?;
        context.map(|c| serde_json::from_str(&c).map_err(|e| StoreError::Corrupt(format!("context: {e}")))).transpose()
    }

    #[instrument(skip(self))]
    async fn delete_message(&self, user: Uuid, thread: Uuid, message: Uuid) -> Result<()> {
        let mut tx = self.writer.begin().await?;
        let deleted = sqlx::query("delete from messages where id = ? and thread_id = ? and user_id = ?")
            .bind(message.to_string())
            .bind(thread.to_string())
            .bind(user.to_string())
            .execute(&mut *tx)
            .await?;
        if deleted.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        sqlx::query("update threads set message_count = message_count - 1 where id = ?")
            .bind(thread.to_string())
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    #[instrument(skip(self, artifact), fields(thread = %artifact.thread_id))]
    async fn create_artifact(&self, user: Uuid, artifact: NewArtifact) -> Result<Artifact> {
        let id = Uuid::now_v7();
        let created = now();
        let mut tx = self.writer.begin().await?;
        let owned: Option<i64> = sqlx::query_scalar("select 1 from threads where id = ? and user_id = ?")
            .bind(artifact.thread_id.to_string())
            .bind(user.to_string())
            .fetch_optional(&mut *tx)
            .await?;
        owned.ok_or(StoreError::NotFound)?;
        // A document may only point at its owner's messages (the foreign key alone would accept anyone's).
        for message in [artifact.request_message_id, artifact.assistant_message_id].into_iter().flatten() {
            if !owned_in(&mut tx, "messages", user, message).await? {
                return Err(StoreError::NotFound);
            }
        }
        sqlx::query(
            "insert into artifacts (id, thread_id, user_id, artifact_type, title, content, version, request_message_id,
             assistant_message_id, created_at, updated_at) values (?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?)",
        )
        .bind(id.to_string())
        .bind(artifact.thread_id.to_string())
        .bind(user.to_string())
        .bind(artifact.artifact_type.as_str())
        .bind(&artifact.title)
        .bind(&artifact.content)
        .bind(artifact.request_message_id.map(|m| m.to_string()))
        .bind(artifact.assistant_message_id.map(|m| m.to_string()))
        .bind(created.timestamp_micros())
        .bind(created.timestamp_micros())
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "insert into artifact_versions (artifact_id, version, title, content, created_at) values (?, 1, ?, ?, ?)",
        )
        .bind(id.to_string())
        .bind(&artifact.title)
        .bind(&artifact.content)
        .bind(created.timestamp_micros())
        .execute(&mut *tx)
        .await?;
        answer_requests(&mut tx, id, &artifact.answers).await?;
        tx.commit().await?;
        Ok(Artifact {
            id,
            thread_id: artifact.thread_id,
            artifact_type: artifact.artifact_type,
            title: artifact.title,
            content: artifact.content,
            version: 1,
            request_message_id: artifact.request_message_id,
            assistant_message_id: artifact.assistant_message_id,
            created_at: created,
        })
    }

    #[instrument(skip(self))]
    async fn list_artifacts(&self, user: Uuid, thread: Uuid) -> Result<Vec<Artifact>> {
        let sql = format!(
            "select {ARTIFACT_COLUMNS} from artifacts where thread_id = ? and user_id = ? order by created_at, pk"
        );
        let rows = sqlx::query(&sql).bind(thread.to_string()).bind(user.to_string()).fetch_all(&self.reader).await?;
        if rows.is_empty() && !self.owns("threads", user, thread).await? {
            return Err(StoreError::NotFound);
        }
        rows.iter().map(artifact_from_row).collect()
    }

    #[instrument(skip(self))]
    async fn get_artifact(&self, user: Uuid, artifact: Uuid) -> Result<Artifact> {
        let sql = format!("select {ARTIFACT_COLUMNS} from artifacts where id = ? and user_id = ?");
        let row = sqlx::query(&sql)
            .bind(artifact.to_string())
            .bind(user.to_string())
            .fetch_optional(&self.reader)
            .await?
            .ok_or(StoreError::NotFound)?;
        artifact_from_row(&row)
    }

    #[instrument(skip(self))]
    async fn delete_artifact(&self, user: Uuid, artifact: Uuid) -> Result<()> {
        let deleted = sqlx::query("delete from artifacts where id = ? and user_id = ?")
            .bind(artifact.to_string())
            .bind(user.to_string())
            .execute(&self.writer)
            .await?;
        if deleted.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    #[instrument(skip(self, artifacts))]
    async fn link_artifacts(&self, user: Uuid, artifacts: &[Uuid], assistant_message: Uuid) -> Result<()> {
        let mut tx = self.writer.begin().await?;
        if !owned_in(&mut tx, "messages", user, assistant_message).await? {
            return Err(StoreError::NotFound);
        }
        link_artifacts_to(&mut tx, user, artifacts, assistant_message).await?;
        tx.commit().await?;
        Ok(())
    }

    // Documents: versions and attachments.

    #[instrument(skip(self, revision))]
    async fn revise_artifact(&self, user: Uuid, artifact: Uuid, revision: ArtifactRevision) -> Result<Artifact> {
        let updated = now();
        let mut tx = self.writer.begin().await?;
        // A version may only point at its owner's messages (the foreign key alone would accept anyone's).
        if let Some(message) = revision.request_message_id {
            if !owned_in(&mut tx, "messages", user, message).await? {
                return Err(StoreError::NotFound);
            }
        }
        let version: Option<i64> = sqlx::query_scalar(
            "update artifacts set title = ?, content = ?, version = version + 1, updated_at = max(updated_at, ?)
             where id = ? and user_id = ? returning version",
        )
        .bind(&revision.title)
        .bind(&revision.content)
        .bind(updated.timestamp_micros())
        .bind(artifact.to_string())
        .bind(user.to_string())
        .fetch_optional(&mut *tx)
        .await?;
        let version = version.ok_or(StoreError::NotFound)?;
        sqlx::query(
            "insert into artifact_versions (artifact_id, version, title, content, created_at, request_message_id)
             values (?, ?, ?, ?, ?, ?)",
        )
        .bind(artifact.to_string())
        .bind(version)
        .bind(&revision.title)
        .bind(&revision.content)
        .bind(updated.timestamp_micros())
        .bind(revision.request_message_id.map(|m| m.to_string()))
        .execute(&mut *tx)
        .await?;
        answer_requests(&mut tx, artifact, &revision.answers).await?;
        let sql = format!("select {ARTIFACT_COLUMNS} from artifacts where id = ?");
        let row = sqlx::query(&sql).bind(artifact.to_string()).fetch_one(&mut *tx).await?;
        tx.commit().await?;
        artifact_from_row(&row)
    }

    #[instrument(skip(self))]
    async fn list_artifact_versions(&self, user: Uuid, artifact: Uuid) -> Result<Vec<ArtifactVersion>> {
        let rows = sqlx::query(
            "select v.artifact_id, v.version, v.title, v.content, v.created_at,
                    coalesce(v.request_message_id, case when v.version = 1 then a.request_message_id end) as request_message_id
             from artifact_versions v
             join artifacts a on a.id = v.artifact_id where a.id = ? and a.user_id = ? order by v.version",
        )
        .bind(artifact.to_string())
        .bind(user.to_string())
        .fetch_all(&self.reader)
        .await?;
        if rows.is_empty() {
            return Err(StoreError::NotFound);
        }
        rows.iter().map(version_from_row).collect()
    }

    #[instrument(skip(self))]
    async fn fulfilled_requests(&self, user: Uuid, thread: Uuid) -> Result<Vec<Uuid>> {
        let ids: Vec<String> = sqlx::query_scalar(
            "select request_message_id from artifacts
             where thread_id = ?1 and user_id = ?2 and request_message_id is not null
             union
             select v.request_message_id from artifact_versions v join artifacts a on a.id = v.artifact_id
             where a.thread_id = ?1 and a.user_id = ?2 and v.request_message_id is not null
             union
             select r.message_id from artifact_requests r join artifacts a on a.id = r.artifact_id
             where a.thread_id = ?1 and a.user_id = ?2",
        )
        .bind(thread.to_string())
        .bind(user.to_string())
        .fetch_all(&self.reader)
        .await?;
        ids.iter().map(|id| Uuid::parse_str(id).map_err(|e| StoreError::Corrupt(format!("request id: {e}")))).collect()
    }

    #[instrument(skip(self))]
    async fn get_artifact_version(&self, user: Uuid, artifact: Uuid, version: i64) -> Result<ArtifactVersion> {
        let row = sqlx::query(
            "select v.artifact_id, v.version, v.title, v.content, v.created_at,
                    coalesce(v.request_message_id, case when v.version = 1 then a.request_message_id end) as request_message_id
             from artifact_versions v
             join artifacts a on a.id = v.artifact_id where a.id = ? and a.user_id = ? and v.version = ?",
        )
        .bind(artifact.to_string())
        .bind(user.to_string())
        .bind(version)
        .fetch_optional(&self.reader)
        .await?
        .ok_or(StoreError::NotFound)?;
        version_from_row(&row)
    }

    #[instrument(skip(self, attachment), fields(thread = %attachment.thread_id, chunks = attachment.chunks.len()))]
    async fn create_attachment(
        &self,
        user: Uuid,
        attachment: NewAttachment,
        limits: AttachmentLimits,
    ) -> Result<Attachment> {
        let id = Uuid::now_v7();
        let created = now();
        let mut tx = self.writer.begin().await?;
        if !owned_in(&mut tx, "threads", user, attachment.thread_id).await? {
            return Err(StoreError::NotFound);
        }
        let (count, used): (i64, i64) = sqlx::query_as(
            "select (select count(*) from attachments where thread_id = ?),
                    (select coalesce(sum(size), 0) from attachments where user_id = ?)",
        )
        .bind(attachment.thread_id.to_string())
        .bind(user.to_string())
        .fetch_one(&mut *tx)
        .await?;
        check_attachment_limits(limits, count, used, attachment.size)?;
        sqlx::query(
            "insert into attachments (id, thread_id, user_id, filename, content_type, size, created_at)
             values (?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(id.to_string())
        .bind(attachment.thread_id.to_string())
        .bind(user.to_string())
        .bind(&attachment.filename)
        .bind(&attachment.content_type)
        .bind(attachment.size)
        .bind(created.timestamp_micros())
        .execute(&mut *tx)
        .await?;
        // Every chunk in one statement (one hand-off to the connection's thread instead of one per chunk, which
        // held the writer for a second on a large file).
        let chunks = serde_json::to_string(&attachment.chunks).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        sqlx::query(
            "insert into attachment_chunks (attachment_id, thread_id, seq, content)
             select ?, ?, key, value from json_each(?)",
        )
        .bind(id.to_string())
        .bind(attachment.thread_id.to_string())
        .bind(chunks)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Attachment {
            id,
            thread_id: attachment.thread_id,
            filename: attachment.filename,
            content_type: attachment.content_type,
            size: attachment.size,
            chunks: attachment.chunks.len() as i64,
            created_at: created,
        })
    }

    #[instrument(skip(self))]
    async fn list_attachments(&self, user: Uuid, thread: Uuid) -> Result<Vec<Attachment>> {
        let rows = sqlx::query(
            "select a.id, a.thread_id, a.filename, a.content_type, a.size, a.created_at,
                    (select count(*) from attachment_chunks c where c.attachment_id = a.id) as chunks
             from attachments a where a.thread_id = ? and a.user_id = ? order by a.created_at, a.id",
        )
        .bind(thread.to_string())
        .bind(user.to_string())
        .fetch_all(&self.reader)
        .await?;
        if rows.is_empty() && !self.owns("threads", user, thread).await? {
            return Err(StoreError::NotFound);
        }
        rows.iter()
            .map(|row| {
                Ok(Attachment {
                    id: uuid(row, "id")?,
                    thread_id: uuid(row, "thread_id")?,
                    filename: row.try_get("filename")?,
                    content_type: row.try_get("content_type")?,
                    size: row.try_get("size")?,
                    chunks: row.try_get("chunks")?,
                    created_at: time(row, "created_at")?,
                })
            })
            .collect()
    }

    #[instrument(skip(self))]
    async fn delete_attachment(&self, user: Uuid, thread: Uuid, attachment: Uuid) -> Result<()> {
        // The chunks (and their index rows, through the trigger) go with it by the foreign key's cascade.
        let deleted = sqlx::query("delete from attachments where id = ? and thread_id = ? and user_id = ?")
            .bind(attachment.to_string())
            .bind(thread.to_string())
            .bind(user.to_string())
            .execute(&self.writer)
            .await?;
        if deleted.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    #[instrument(skip(self, query))]
    async fn search_chunks(&self, user: Uuid, thread: Uuid, query: &str, limit: u32) -> Result<Vec<ChunkHit>> {
        if !self.owns("threads", user, thread).await? {
            return Err(StoreError::NotFound);
        }
        let words = chunk_query_words(query);
        if words.is_empty() {
            return Ok(Vec::new());
        }
        let any: Vec<String> = words.iter().map(|w| format!("\"{}\"", w.replace('"', "\"\""))).collect();
        // The thread token is part of the MATCH (see the schema), so only this thread's chunks are read.
        let expression = format!("owner : \"t{}\" AND body : ({})", thread.simple(), any.join(" OR "));
        let rows = sqlx::query(
            "select c.attachment_id, a.filename, c.seq, c.content, -bm25(chunks_fts, 0.0, 1.0) as score
             from chunks_fts join attachment_chunks c on c.id = chunks_fts.rowid
             join attachments a on a.id = c.attachment_id
             where chunks_fts match ? and a.user_id = ?
             order by score desc, c.attachment_id, c.seq limit ?",
        )
        .bind(&expression)
        .bind(user.to_string())
        .bind(limit.clamp(1, 20) as i64)
        .fetch_all(&self.reader)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(ChunkHit {
                    attachment_id: uuid(row, "attachment_id")?,
                    filename: row.try_get("filename")?,
                    seq: row.try_get("seq")?,
                    content: row.try_get("content")?,
                    score: row.try_get("score")?,
                })
            })
            .collect()
    }

    #[instrument(skip(self, trace), fields(turn = %trace.turn_id))]
    async fn save_trace(&self, user: Uuid, trace: &Trace) -> Result<()> {
        let mut tx = self.writer.begin().await?;
        if let Some(message) = trace.message_id {
            let in_thread: bool = sqlx::query_scalar(
                "select exists (select 1 from messages where id = ? and thread_id = ? and user_id = ?)",
            )
            .bind(message.to_string())
            .bind(trace.thread_id.to_string())
            .bind(user.to_string())
            .fetch_one(&mut *tx)
            .await?;
            if !in_thread {
                return Err(StoreError::NotFound);
            }
        }
        let turn = TurnTrace { user, thread: trace.thread_id, steps: trace.steps.clone() };
        if !write_trace(&mut tx, trace.turn_id, &turn, trace.message_id).await? {
            return Err(StoreError::NotFound);
        }
        tx.commit().await?;
        Ok(())
    }

    #[instrument(skip(self))]
    async fn trace(&self, user: Uuid, message: Uuid) -> Result<Trace> {
        let row = sqlx::query("select * from turn_traces where message_id = ? and user_id = ?")
            .bind(message.to_string())
            .bind(user.to_string())
            .fetch_optional(&self.reader)
            .await?;
        trace_from_row(&row.ok_or(StoreError::NotFound)?)
    }

    #[instrument(skip(self))]
    async fn turn_trace(&self, user: Uuid, turn: Uuid) -> Result<Trace> {
        let row = sqlx::query("select * from turn_traces where turn_id = ? and user_id = ?")
            .bind(turn.to_string())
            .bind(user.to_string())
            .fetch_optional(&self.reader)
            .await?;
        trace_from_row(&row.ok_or(StoreError::NotFound)?)
    }

    #[instrument(skip(self))]
    async fn thread_traces(&self, user: Uuid, thread: Uuid) -> Result<Vec<Trace>> {
        let rows =
            sqlx::query("select * from turn_traces where thread_id = ? and user_id = ? order by created_at, turn_id")
                .bind(thread.to_string())
                .bind(user.to_string())
                .fetch_all(&self.reader)
                .await?;
        if rows.is_empty() && !self.owns("threads", user, thread).await? {
            return Err(StoreError::NotFound);
        }
        rows.iter().map(trace_from_row).collect()
    }

    #[instrument(skip(self))]
    async fn record_usage(&self, user: Uuid, thread: Uuid, model: &str, usage: Usage) -> Result<()> {
        let mut tx = self.writer.begin().await?;
        turn_writes::add_usage(&mut tx, &super::SpentTokens { user, thread, model: model.to_string(), usage }).await?;
        tx.commit().await?;
        Ok(())
    }

    #[instrument(skip(self, key, fingerprint))]
    async fn claim_idempotency_key(
        &self,
        user: Uuid,
        key: &str,
        fingerprint: &str,
        ttl_secs: i64,
    ) -> Result<IdempotencyClaim> {
        let now = now().timestamp_micros();
        let mut tx = self.writer.begin().await?;
        sqlx::query("delete from idempotency_keys where user_id = ? and key = ? and expires_at < ?")
            .bind(user.to_string())
            .bind(key)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        let inserted = sqlx::query(
            "insert or ignore into idempotency_keys (user_id, key, fingerprint, created_at, expires_at) values (?, ?, ?, ?, ?)",
        )
        .bind(user.to_string())
        .bind(key)
        .bind(fingerprint)
        .bind(now)
        .bind(now + ttl_secs * 1_000_000)
        .execute(&mut *tx)
        .await?;
        let claim = if inserted.rows_affected() == 1 {
            IdempotencyClaim::Fresh
        } else {
            let row = sqlx::query("select fingerprint, response from idempotency_keys where user_id = ? and key = ?")
                .bind(user.to_string())
                .bind(key)
                .fetch_one(&mut *tx)
                .await?;
            IdempotencyClaim::Existing { fingerprint: row.try_get("fingerprint")?, response: row.try_get("response")? }
        };
        tx.commit().await?;
        Ok(claim)
    }

    #[instrument(skip(self, key, response))]
    async fn complete_idempotency_key(&self, user: Uuid, key: &str, response: &str) -> Result<()> {
        sqlx::query("update idempotency_keys set response = ? where user_id = ? and key = ?")
            .bind(response)
            .bind(user.to_string())
            .bind(key)
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    #[instrument(skip(self, key))]
    async fn release_idempotency_key(&self, user: Uuid, key: &str) -> Result<()> {
        sqlx::query("delete from idempotency_keys where user_id = ? and key = ? and response is null")
            .bind(user.to_string())
            .bind(key)
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    #[instrument(skip(self, query))]
    async fn search(&self, user: Uuid, query: &str, limit: u32, offset: u32) -> Result<SearchPage> {
        let terms = search_query::parse(query);
        let Some(body) = search_query::to_fts5(&terms) else {
            return Ok(SearchPage { hits: Vec::new(), total: 0 });
        };
        // The owner token is part of the MATCH, so FTS5 intersects posting lists instead of filtering rows.
        let expression = format!("owner : \"{}\" AND {body}", owner_token(user));
        // 1. Rank by the index rows alone (no joins, no snippets) and keep the page. bm25 costs a few
        //    microseconds a row, so ranking a word found in thousands of a person's messages would take tens of
        //    milliseconds: only the newest RANKED_CANDIDATES hits of each kind (or as many as the page reaches)
        //    are ranked; FTS5 walks its rowids newest first without sorting. Among equal ranks the newer row
        //    comes first.
        let candidates = RANKED_CANDIDATES.max(offset.saturating_add(limit.clamp(1, 100)));
        let candidates_sql = |table: &str, kind: &str| {
            format!(
                "select * from (select '{kind}' as kind, rowid as pk, bm25({table}, 0.0, 1.0) as rank from {table}
                 where {table} match ?1 order by rowid desc limit {candidates})"
            )
        };
        let sql = format!(
            "select kind, pk, rank, count(*) over () as ranked from ({} union all {} union all {})
             order by rank, pk desc, kind limit ?2 offset ?3",
            candidates_sql("messages_fts", "message"),
            candidates_sql("threads_fts", "thread"),
            candidates_sql("artifacts_fts", "artifact"),
        );
        let page: Vec<(String, i64, f64, i64)> = sqlx::query_as(&sql)
            .bind(&expression)
            .bind(limit.clamp(1, 100) as i64)
            .bind(offset as i64)
            .fetch_all(&self.reader)
            .await?;
        // Fewer hits than one kind's candidates: none was cut, so they were all counted already.
        let total: i64 = match page.first() {
            Some(first) if first.3 < i64::from(candidates) => first.3,
            _ => {
                sqlx::query_scalar(
                    "select (select count(*) from messages_fts where messages_fts match ?1)
                          + (select count(*) from threads_fts where threads_fts match ?1)
                          + (select count(*) from artifacts_fts where artifacts_fts match ?1)",
                )
                .bind(&expression)
                .fetch_one(&self.reader)
                .await?
            }
        };
        // 2. Details and texts for the page only (the pks are integers read from the database). Every part
        //    names its columns: any of them may come first in the union. Snippets are made from the texts:
        //    FTS5's snippet() and highlight() take time that grows with the square of the hits in one text.
        let pks =
            |kind: &str| page.iter().filter(|p| p.0 == kind).map(|p| p.1.to_string()).collect::<Vec<_>>().join(", ");
        let mut parts = Vec::new();
        let (messages, threads, artifacts) = (pks("message"), pks("thread"), pks("artifact"));
        if !messages.is_empty() {
            parts.push(format!(
                "select 'message' as kind, m.pk, m.id as ref_id, m.thread_id, t.title as thread_title, m.role,
                        m.content as body, m.created_at
                 from messages m join threads t on t.id = m.thread_id
                 where m.pk in ({messages})"
            ));
        }
        if !threads.is_empty() {
            parts.push(format!(
                "select 'thread' as kind, t.pk, t.id as ref_id, t.id as thread_id, t.title as thread_title,
                        null as role, t.title as body, t.created_at
                 from threads t
                 where t.pk in ({threads})"
            ));
        }
        if !artifacts.is_empty() {
            parts.push(format!(
                "select 'artifact' as kind, a.pk, a.id as ref_id, a.thread_id, t.title as thread_title,
                        null as role, a.title || char(10) || a.content as body, a.created_at
                 from artifacts a join threads t on t.id = a.thread_id
                 where a.pk in ({artifacts})"
            ));
        }
        let details = if parts.is_empty() {
            Vec::new()
        } else {
            sqlx::query(&parts.join(" union all ")).fetch_all(&self.reader).await?
        };
        let mut rows = Vec::with_capacity(page.len());
        for (kind, pk, rank, _) in &page {
            let found = details.iter().find(|row| {
                row.try_get::<String, _>("kind").is_ok_and(|k| k == *kind)
                    && row.try_get::<i64, _>("pk").is_ok_and(|p| p == *pk)
            });
            // A row deleted between the two reads is left out.
            if let Some(row) = found {
                rows.push((row, *rank));
            }
        }
        let texts = rows.iter().map(|(row, _)| row.try_get("body")).collect::<Result<Vec<String>, _>>()?;
        let snippets = snippet::snippets(terms, texts).await?;
        let hits = rows
            .iter()
            .zip(snippets)
            .map(|((row, rank), snippet)| {
                let kind: String = row.try_get("kind")?;
                let kind = match kind.as_str() {
                    "message" => HitKind::Message,
                    "thread" => HitKind::Thread,
                    _ => HitKind::Artifact,
                };
                let ref_id = uuid(row, "ref_id")?;
                let role_text: Option<String> = row.try_get("role")?;
                Ok(SearchHit {
                    kind,
                    thread_id: uuid(row, "thread_id")?,
                    thread_title: row.try_get("thread_title")?,
                    message_id: (kind == HitKind::Message).then_some(ref_id),
                    artifact_id: (kind == HitKind::Artifact).then_some(ref_id),
                    role: role_text.as_deref().map(role).transpose()?,
                    snippet,
                    created_at: time(row, "created_at")?,
                    rank: *rank,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(SearchPage { hits, total: total as u64 })
    }

    #[instrument(skip(self))]
    async fn begin_turn_with(
        &self,
        user: Uuid,
        thread: Uuid,
        turn: Uuid,
        stale_after_ms: i64,
        request: Option<NewMessage>,
    ) -> Result<Option<Message>> {
        // Turns starting while the writer is busy start together.
        let start = StartTurn { user, thread, turn, stale_after_ms, request };
        self.write_grouped(&self.starts, Urgency::Start, STARTS_TOGETHER, start, start_turn_boxed).await
    }

    #[instrument(skip_all, fields(turns = turns.len()))]
    async fn heartbeat_turns(&self, turns: &[Uuid]) -> Result<Vec<Uuid>> {
        if turns.is_empty() {
            return Ok(Vec::new());
        }
        let ids = serde_json::to_string(&turns.iter().map(Uuid::to_string).collect::<Vec<_>>())
            .map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let beaten: Vec<(String, bool)> = sqlx::query_as(
            "update turns set heartbeat_at = ? where id in (select value from json_each(?)) returning id, stop_requested",
        )
        .bind(now().timestamp_micros())
        .bind(ids)
        .fetch_all(&self.writer)
        .await?;
        let stopped = beaten.into_iter().filter_map(|(id, stop)| stop.then_some(id));
        stopped.map(|id| Uuid::parse_str(&id).map_err(|e| StoreError::Corrupt(format!("turn id: {e}")))).collect()
    }

    #[instrument(skip(self))]
    async fn request_stop(&self, user: Uuid, thread: Uuid) -> Result<bool> {
        let updated = sqlx::query(
            "update turns set stop_requested = 1 where thread_id = ? and user_id = ? and status = 'running'",
        )
        .bind(thread.to_string())
        .bind(user.to_string())
        .execute(&self.writer)
        .await?;
        Ok(updated.rows_affected() > 0)
    }

    #[instrument(skip(self, end))]
    async fn finish_turn(&self, turn: Uuid, end: super::TurnEnd) -> Result<()> {
        // Turns ending while the writer is busy end together.
        self.write_grouped(&self.ends, Urgency::Finish, ENDS_TOGETHER, (turn, end), end_turn_boxed).await
    }

    #[instrument(skip(self))]
    async fn latest_turn(&self, user: Uuid, thread: Uuid) -> Result<Option<TurnRecord>> {
        let row = sqlx::query(
            "select id, thread_id, status, stop_requested, heartbeat_at from turns
             where thread_id = ? and user_id = ? order by started_at desc, rowid desc limit 1",
        )
        .bind(thread.to_string())
        .bind(user.to_string())
        .fetch_optional(&self.reader)
        .await?;
        row.map(|row| {
            let status: String = row.try_get("status")?;
            Ok(TurnRecord {
                id: uuid(&row, "id")?,
                thread_id: uuid(&row, "thread_id")?,
                running: status == "running",
                stop_requested: row.try_get("stop_requested")?,
                heartbeat_at: time(&row, "heartbeat_at")?,
            })
        })
        .transpose()
    }

    #[instrument(skip(self, events))]
    async fn append_turn_events(&self, turn: Uuid, events: &[StoredEvent]) -> Result<()> {
        if events.is_empty() {
            return Ok(());
        }
        let mut tx = self.writer.begin().await?;
        turn_writes::insert_turn_events(&mut tx, &events.iter().map(|e| (turn, e)).collect::<Vec<_>>()).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn progress_turn(&self) -> super::ProgressTurn<'_> {
        super::ProgressTurn { _writer: Some(self.queue.enter(Urgency::Progress).await) }
    }

    #[instrument(skip_all, fields(turns = progress.len()))]
    async fn save_progress_in(&self, turn: super::ProgressTurn<'_>, progress: &[super::TurnProgress]) -> Result<()> {
        if progress.is_empty() {
            return Ok(());
        }
        // Held to the commit: progress goes only in the writer's turn (see `progress_turn`).
        let _turn = turn;
        let mut tx = self.writer.begin().await?;
        let (events, answers) = super::progress_parts(progress);
        turn_writes::insert_turn_events(&mut tx, &events).await?;
        // Answers saved before are rewritten many per statement; what is left (first saves) is saved one by one.
        let unsaved = match answers {
            Ok(answers) => rewrite_drafts(&mut tx, &answers).await?,
            Err(in_order) => in_order,
        };
        for (user, answer) in unsaved {
            turn_writes::save_answer(&mut tx, user, answer).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    #[instrument(skip(self))]
    async fn release_abandoned_answers(&self, stale_after_ms: i64) -> Result<u64> {
        let released = sqlx::query(
            "update messages set writing = 0 where writing = 1 and not exists (select 1 from turns
             where turns.thread_id = messages.thread_id and status = 'running' and heartbeat_at >= ?)",
        )
        .bind(now().timestamp_micros() - stale_after_ms * 1000)
        .execute(&self.writer)
        .await?;
        Ok(released.rows_affected())
    }

    #[instrument(skip(self))]
    async fn turn_events_after(&self, turn: Uuid, after_seq: i64) -> Result<Vec<StoredEvent>> {
        let rows = sqlx::query("select seq, name, data from turn_events where turn_id = ? and seq > ? order by seq")
            .bind(turn.to_string())
            .bind(after_seq)
            .fetch_all(&self.reader)
            .await?;
        rows.iter()
            .map(|row| {
                Ok(StoredEvent { seq: row.try_get("seq")?, name: row.try_get("name")?, data: row.try_get("data")? })
            })
            .collect()
    }

    // History: stats, export, import.

    #[instrument(skip(self))]
    async fn history_stats(&self, user: Uuid, today: NaiveDate) -> Result<HistoryStats> {
        let user_id = user.to_string();
        let totals = sqlx::query(
            "select count(*) as threads, coalesce(sum(message_count), 0) as messages, min(created_at) as first,
             max(updated_at) as last from threads where user_id = ?",
        )
        .bind(&user_id)
        .fetch_one(&self.reader)
        .await?;
        let threads: i64 = totals.try_get("threads")?;
        let messages: i64 = totals.try_get("messages")?;
        let first: Option<i64> = totals.try_get("first")?;
        let last: Option<i64> = totals.try_get("last")?;
        let tags = sqlx::query(
            "select tag, count(*) as n from thread_tags where user_id = ? group by tag order by n desc, tag limit ?",
        )
        .bind(&user_id)
        .bind(history::TOP_TAGS)
        .fetch_all(&self.reader)
        .await?
        .iter()
        .map(|row| Ok(TagCount { tag: row.try_get("tag")?, count: row.try_get::<i64, _>("n")? as u64 }))
        .collect::<Result<Vec<_>>>()?;
        let tokens = sqlx::query(
            "select coalesce(sum(input_tokens), 0) as input, coalesce(sum(output_tokens), 0) as output
             from usage_ledger where user_id = ?",
        )
        .bind(&user_id)
        .fetch_one(&self.reader)
        .await?;
        let start = history::stats_window_start(today);
        let used = sqlx::query(
            "select day, sum(input_tokens) as input, sum(output_tokens) as output from usage_ledger
             where user_id = ? and day >= ? and day <= ? group by day",
        )
        .bind(&user_id)
        .bind(start.format("%Y-%m-%d").to_string())
        .bind(today.format("%Y-%m-%d").to_string())
        .fetch_all(&self.reader)
        .await?
        .iter()
        .map(|row| {
            let day: String = row.try_get("day")?;
            Ok(DayTokens {
                day: NaiveDate::parse_from_str(&day, "%Y-%m-%d")
                    .map_err(|e| StoreError::Corrupt(format!("day: {e}")))?,
                input_tokens: row.try_get::<i64, _>("input")? as u64,
                output_tokens: row.try_get::<i64, _>("output")? as u64,
                messages: 0,
            })
        })
        .collect::<Result<Vec<_>>>()?;
        let (from, until) = history::stats_window_bounds(today);
        let written = sqlx::query(
            "select date(created_at / 1000000, 'unixepoch') as day, count(*) as n from messages
             where user_id = ? and created_at >= ? and created_at < ? group by day",
        )
        .bind(&user_id)
        .bind(from.timestamp_micros())
        .bind(until.timestamp_micros())
        .fetch_all(&self.reader)
        .await?
        .iter()
        .map(|row| {
            let day: String = row.try_get("day")?;
            let day =
                NaiveDate::parse_from_str(&day, "%Y-%m-%d").map_err(|e| StoreError::Corrupt(format!("day: {e}")))?;
            Ok((day, row.try_get::<i64, _>("n")? as u64))
        })
        .collect::<Result<Vec<_>>>()?;
        let artifacts = sqlx::query(
            "select artifact_type, count(*) as n from artifacts where user_id = ?
             group by artifact_type order by n desc, artifact_type",
        )
        .bind(&user_id)
        .fetch_all(&self.reader)
        .await?
        .iter()
        .map(|row| {
            let kind: String = row.try_get("artifact_type")?;
            Ok(TypeCount {
                artifact_type: ArtifactType::parse(&kind).ok_or_else(|| StoreError::Corrupt(format!("type {kind}")))?,
                count: row.try_get::<i64, _>("n")? as u64,
            })
        })
        .collect::<Result<Vec<_>>>()?;
        Ok(HistoryStats {
            total_threads: threads as u64,
            total_messages: messages as u64,
            average_messages_per_thread: if threads == 0 { 0.0 } else { messages as f64 / threads as f64 },
            first_conversation_at: first.map(micros_to_time),
            last_conversation_at: last.map(micros_to_time),
            top_tags: tags,
            input_tokens: tokens.try_get::<i64, _>("input")? as u64,
            output_tokens: tokens.try_get::<i64, _>("output")? as u64,
            tokens_per_day: history::fill_days(today, &used, &written),
            artifacts_by_type: artifacts,
        })
    }

    #[instrument(skip(self))]
    async fn all_thread_ids(&self, user: Uuid) -> Result<Vec<Uuid>> {
        let rows = sqlx::query("select id from threads where user_id = ? order by created_at, pk")
            .bind(user.to_string())
            .fetch_all(&self.reader)
            .await?;
        rows.iter().map(|row| uuid(row, "id")).collect()
    }

    #[instrument(skip(self))]
    async fn list_user_attachments(&self, user: Uuid) -> Result<Vec<AttachmentMeta>> {
        let rows = sqlx::query(
            "select id, thread_id, filename, content_type, size, created_at from attachments where user_id = ?
             order by created_at, id",
        )
        .bind(user.to_string())
        .fetch_all(&self.reader)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(AttachmentMeta {
                    id: uuid(row, "id")?,
                    thread_id: uuid(row, "thread_id")?,
                    filename: row.try_get("filename")?,
                    content_type: row.try_get("content_type")?,
                    size: row.try_get("size")?,
                    created_at: time(row, "created_at")?,
                })
            })
            .collect()
    }

    #[instrument(skip_all, fields(count = threads.len()))]
    async fn import_threads(&self, user: Uuid, threads: Vec<ImportThread>) -> Result<Vec<Thread>> {
        import::import_threads(self, user, threads).await
    }

    #[instrument(skip(self))]
    async fn list_tags(&self, user: Uuid) -> Result<Vec<TagCount>> {
        sqlx::query("select tag, count(*) as n from thread_tags where user_id = ? group by tag order by n desc, tag")
            .bind(user.to_string())
            .fetch_all(&self.reader)
            .await?
            .iter()
            .map(|row| Ok(TagCount { tag: row.try_get("tag")?, count: row.try_get::<i64, _>("n")? as u64 }))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SqliteSync;

    #[tokio::test]
    async fn commits_are_as_durable_as_configured() {
        let dir = tempfile::tempdir().expect("temp dir");
        for (sync, expected) in [(SqliteSync::Normal, 1), (SqliteSync::Full, 2)] {
            let url = format!("sqlite://{}", dir.path().join("sync.db").display());
            let store = Sqlite::connect(&url, sync).await.expect("open");
            let level: i64 = sqlx::query_scalar("pragma synchronous").fetch_one(&store.writer).await.expect("pragma");
            assert_eq!(level, expected, "{sync:?}");
            let mode: String =
                sqlx::query_scalar("pragma journal_mode").fetch_one(&store.writer).await.expect("pragma");
            assert_eq!(mode, "wal");
        }
    }

    #[tokio::test]
    async fn an_import_cut_off_part_way_is_gone_after_a_restart() {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}", dir.path().join("import.db").display());
        let store = Sqlite::connect(&url, SqliteSync::Normal).await.expect("open");
        let user = store
            .create_user(NewUser {
                email: "i@example.com".into(),
                password_hash: String::new(),
                display_name: "I".into(),
            })
            .await
            .expect("user")
            .id;
        let kept = store.create_thread(user, "kept", &[]).await.expect("thread");
        let cut_off = store.create_thread(user, "cut off", &[]).await.expect("thread");
        store
            .append_message(
                user,
                NewMessage {
                    thread_id: cut_off.id,
                    role: app::api::Role::User,
                    content: "half an import".into(),
                    status: MessageStatus::Complete,
                    usage: Usage::default(),
                    model: None,
                },
            )
            .await
            .expect("message");
        // What a process stopped in the middle of an import leaves: a conversation still marked as its.
        sqlx::query("update threads set import_id = 'an import' where id = ?")
            .bind(cut_off.id.to_string())
            .execute(&store.writer)
            .await
            .expect("mark");
        store.writer.close().await;
        let store = Sqlite::connect(&url, SqliteSync::Normal).await.expect("open again");
        assert_eq!(store.all_thread_ids(user).await.expect("ids"), vec![kept.id]);
        assert_eq!(store.search(user, "import", 10, 0).await.expect("search").total, 0);
    }

    #[tokio::test]
    async fn the_log_reaches_the_database_file_without_a_commit_copying_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("checkpoint.db");
        let store = Sqlite::connect(&format!("sqlite://{}", path.display()), SqliteSync::Normal).await.expect("open");
        let every: i64 =
            sqlx::query_scalar("pragma wal_autocheckpoint").fetch_one(&store.writer).await.expect("pragma");
        assert_eq!(every, 0, "no commit copies the log");
        // The schema went to the log; until a checkpoint the file itself holds only its first page.
        let file_pages = || std::fs::metadata(&path).map(|m| m.len() / 4096).unwrap_or(0);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while file_pages() < 10 {
            assert!(tokio::time::Instant::now() < deadline, "the log never reached the file ({} pages)", file_pages());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
