//! The server backend: PostgreSQL 15 or newer through one connection pool (and a small one of its own for
//! rate-limit checks). Every method has the semantics of the SQLite backend (the shared story suite runs against
//! both); concurrency comes from row locks instead of a single writer: appending a message locks its thread row
//! while taking the next sequence number.

use std::{str::FromStr, sync::Arc, time::Duration};

use async_trait::async_trait;
use chrono::{DateTime, NaiveDate, Utc};
use sqlx::{
    postgres::{PgConnectOptions, PgPoolOptions, PgRow},
    FromRow, PgPool, Row,
};
use uuid::Uuid;
use wire::{AttachmentMeta, HistoryStats, Message, Thread};

use super::threads::{found, ThreadRow};
use super::{
    history::ImportThread, now, search_query, EventRun, History, IdempotencyClaim, NewMessage, NewUser, Place, Result,
    Search, SearchPage, Store, StoreError, ThreadStamp, TurnRecord, Turns, User, MAX_SEQ,
};

/// The statements both backends run alike, bound the PostgreSQL way.
type Shared = super::columns::Sql<sqlx::Postgres>;

mod accounts;
mod admin;
mod artifacts;
mod attachments;
mod budgets;
mod changes;
mod history;
mod index;
mod limits;
mod messages;
mod progress;
mod search;
mod settings;
mod summaries;
mod threads;
mod turns;

/// Most connections one server process opens for its queries (rate-limit checks have their own, below).
const MAX_CONNECTIONS: u32 = 16;

/// Connections kept for rate-limit checks unless configured otherwise (`QUIRE_RATE_LIMIT_CONNECTIONS`).
pub const LIMIT_CONNECTIONS: u32 = 2;

/// How long a request waits for a free connection before failing.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

/// PostgreSQL storage.
#[derive(Debug, Clone)]
pub struct Postgres {
    pool: PgPool,
    /// Rate-limit checks only: a short statement on every limited request, which a small pool keeps on
    /// connections that are always warm (see [`Postgres::limit_pool_options`]).
    limits: PgPool,
    /// Running turns' progress, written in batches.
    progress: Arc<progress::ProgressWriter>,
    /// Saved documents' search vectors, computed after their saves.
    index: Arc<index::DocumentIndexer>,
}

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/postgres");

impl Postgres {
    /// Saves the message that starts a turn the turn's statement could not number: its thread's count reached
    /// [`MAX_SEQ`], and [`insert_message`] numbers the thread again first.
    async fn save_request(
        &self,
        user: Uuid,
        request: Option<(Uuid, &NewMessage)>,
        now: DateTime<Utc>,
    ) -> Result<Option<Message>> {
        let Some((id, request)) = request else { return Ok(None) };
        let mut tx = self.pool.begin().await?;
        let place = insert_new_message(&mut tx, user, id, request, now).await?.ok_or(StoreError::NotFound)?;
        tx.commit().await?;
        Ok(Some(request.clone().saved(id, place, now)))
    }

    /// Hands documents whose saves have committed to the search index (see [`index`]).
    fn saved_documents(&self, documents: impl IntoIterator<Item = Uuid>) {
        self.index.saved(documents);
    }

    /// Whether a row with this id and owner exists in `table` (`threads` or `messages`). Used when a listing
    /// comes back empty, to tell an empty thread from one that is missing or another user's.
    async fn owns(&self, table: &str, user: Uuid, id: Uuid) -> Result<bool> {
        Shared::owns(&mut *self.pool.acquire().await?, table, user, id).await
    }

    /// Whether the person reads the thread: theirs, or in a project of theirs. Used when a listing a member may
    /// read comes back empty, as [`owns`](Self::owns) is.
    async fn reads_thread(&self, user: Uuid, thread: Uuid) -> Result<bool> {
        Shared::reads_thread(&mut *self.pool.acquire().await?, user, thread).await
    }

    /// Runs a delete scoped to its owner, binding `ids` in order; `NotFound` when it removed nothing.
    async fn delete(&self, sql: &str, ids: &[Uuid]) -> Result<()> {
        let query = ids.iter().fold(sqlx::query(sql), |query, id| query.bind(*id));
        found(query.execute(&self.pool).await?.rows_affected() > 0)
    }

    /// Connects to the database named by a `postgres://` or `postgresql://` URL, with `limit_connections`
    /// connections for rate-limit checks, and runs the migrations.
    pub async fn connect(url: &str, limit_connections: u32) -> Result<Self> {
        let options = PgConnectOptions::from_str(url)?;
        Self::connect_with(options, Self::pool_options(), Self::limit_pool_options(limit_connections)).await
    }

    /// The pool every store opens. A connection is not pinged before it is handed out (sqlx's default): that
    /// was a second round trip for every query, half the time of a rate-limit check. A connection that died
    /// meanwhile (the server restarted) fails the one query that finds it, which goes back as an error and the
    /// connection out of the pool; connections are replaced after ten idle minutes and half an hour anyway.
    pub fn pool_options() -> PgPoolOptions {
        PgPoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .test_before_acquire(false)
    }

    /// The pool of rate-limit checks: `size` connections (at least one), otherwise as [`Postgres::pool_options`].
    /// sqlx hands out idle connections in turn, so checks one after the other go round every connection a pool
    /// has opened; on a pool of 16 each backend sat idle between its turns and the slowest checks took
    /// milliseconds, on two they stay warm.
    pub fn limit_pool_options(size: u32) -> PgPoolOptions {
        Self::pool_options().max_connections(size.max(1))
    }

    /// Like [`Postgres::connect`] with other connection or pool options (the benchmarks compare them): `pool`
    /// for every query but rate-limit checks, `limits` for those.
    pub async fn connect_with(options: PgConnectOptions, pool: PgPoolOptions, limits: PgPoolOptions) -> Result<Self> {
        let pool = pool.connect_with(options.clone()).await?;
        // sqlx takes an advisory lock around migrations, so several instances may start at once.
        MIGRATOR.run(&pool).await?;
        let limits = limits.connect_with(options).await?;
        let progress = progress::ProgressWriter::start(pool.clone());
        let index = index::DocumentIndexer::start(pool.clone());
        Ok(Self { pool, limits, progress, index })
    }
}

/// Closes a turn in one transaction with what it leaves (see `Store::finish_turn`).
async fn end_turn(pool: &PgPool, turn: Uuid, end: &super::TurnEnd) -> Result<Option<ThreadStamp>> {
    let mut tx = pool.begin().await?;
    let mut answer_saved = false;
    if let Some(answer) = &end.answer {
        // Its documents first: the answer's save then locks the thread's row (its stamp counts the answer
        // finished), and whoever edits or deletes a document locks the document, then the thread's row. One order
        // for both, so neither waits for the other while holding what the other needs.
        if !answer.artifacts.is_empty() {
            sqlx::query("select id from artifacts where id = any($1) and user_id = $2 order by id for no key update")
                .bind(&answer.artifacts)
                .bind(answer.user)
                .execute(&mut *tx)
                .await?;
        }
        answer_saved = save_answer(&mut tx, answer.user, &answer.draft).await?;
        if answer_saved {
            Shared::link_artifacts_to(&mut tx, answer.user, &answer.artifacts, answer.draft.id).await?;
        }
    }
    if let Some(trace) = &end.trace {
        let answer = end.answer.as_ref().filter(|_| answer_saved).map(|a| a.draft.id);
        Shared::write_trace(&mut tx, turn, trace, answer).await?;
    }
    // A turn saves one answer: saved just now, it left nothing else being written in the thread. Released
    // before the turn's row is touched: releasing locks the thread's row (its stamp counts it), and a start
    // locks the thread's row and then waits for the turn's; the other order deadlocked with such a start. Only
    // while the turn still holds the thread: one taken over (its heartbeat had gone quiet) leaves the newer
    // turn's answer alone.
    if !answer_saved {
        sqlx::query(
            "update messages set writing = false
             where writing and thread_id = (select thread_id from turns where id = $1 and status = 'running')",
        )
        .bind(turn)
        .execute(&mut *tx)
        .await?;
    }
    insert_turn_events(&mut tx, turn, &end.events).await?;
    sqlx::query("update turns set status = 'done' where id = $1").bind(turn).execute(&mut *tx).await?;
    // Only the thread's newest turn keeps its events for re-attaching, as `latest_turn` finds it: this one's, or
    // after a take-over the newer turn's (and then this one's go at once). Written as a list of turns, which the
    // planner looks up in the primary key one by one: as `in (select ...)` it joined the subquery against a scan
    // of every turn's events (a few milliseconds per turn's end with hundreds streaming).
    sqlx::query(
        "delete from turn_events where turn_id = any(array(
         select t.id from turns t join
         (select id, thread_id from turns where thread_id = (select thread_id from turns where id = $1)
          order by started_at desc, pk desc limit 1) newest
         on t.thread_id = newest.thread_id and t.id <> newest.id))",
    )
    .bind(turn)
    .execute(&mut *tx)
    .await?;
    let stamp = match end.answer.as_ref().filter(|_| answer_saved) {
        Some(answer) => Shared::stamp(&mut tx, answer.user, answer.draft.thread_id).await?,
        None => None,
    };
    // Last before the commit: the owner's ledger row for the day is shared by all their turns, and whoever
    // updates it holds it until the commit, so each of their other turns ending meanwhile waits that long.
    if let Some(spent) = &end.usage {
        add_usage(&mut tx, spent).await?;
    }
    tx.commit().await?;
    Ok(stamp)
}

/// Saves a batch of running turns' progress in one transaction.
async fn write_progress(pool: &PgPool, progress: &[super::TurnProgress]) -> Result<()> {
    if progress.is_empty() {
        return Ok(());
    }
    // Every statement is a round trip, and a batch's transaction holds its answers' rows until it commits
    // (a turn ending meanwhile waits for them): the events of all its turns are one statement, the answers
    // saved before one more, and their first saves a third.
    let mut tx = pool.begin().await?;
    let (events, answers) = super::progress_parts(progress);
    insert_events(&mut tx, &events).await?;
    match answers {
        Ok(answers) => {
            let unsaved = rewrite_drafts(&mut tx, &answers).await?;
            insert_first_drafts(&mut tx, &unsaved).await?;
        }
        Err(in_order) => {
            for (user, answer) in in_order {
                save_answer(&mut tx, user, answer).await?;
            }
        }
    }
    tx.commit().await?;
    Ok(())
}

const THREAD_COLUMNS: &str =
    "t.id, t.title, t.model, t.mcp_servers, t.project_id, t.pinned, t.archived, t.message_count, t.created_at, t.updated_at,
    array(select g.tag from thread_tags g where g.thread_id = t.id order by g.position) as tags,
    (select left(m.content, 200) from messages m where m.thread_id = t.id and m.role = 'user' order by m.seq limit 1)
        as first_message";

/// A thread read by a statement that selects [`THREAD_COLUMNS`].
fn thread_from_row(row: &PgRow) -> Result<Thread> {
    ThreadRow::<Uuid, DateTime<Utc>, Vec<String>>::from_row(row)?.try_into()
}

fn is_unique_violation(err: &sqlx::Error) -> bool {
    matches!(err, sqlx::Error::Database(db) if db.is_unique_violation())
}

/// Replaces a thread's tags, keeping their order; a repeated tag keeps its first position.
async fn write_tags(tx: &mut sqlx::PgConnection, user: Uuid, thread: Uuid, tags: &[String]) -> Result<()> {
    sqlx::query("delete from thread_tags where thread_id = $1").bind(thread).execute(&mut *tx).await?;
    if tags.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "insert into thread_tags (thread_id, user_id, tag, position)
         select $1, $2, wanted.tag, wanted.position - 1
         from unnest($3::text[]) with ordinality as wanted (tag, position)
         order by wanted.position
         on conflict (thread_id, tag) do nothing",
    )
    .bind(thread)
    .bind(user)
    .bind(tags)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

#[async_trait]
impl Store for Postgres {
    fn backend(&self) -> &'static str {
        "postgres"
    }

    fn pool_use(&self) -> Vec<(&'static str, super::PoolUse)> {
        let state = |pool: &PgPool| super::PoolUse {
            size: pool.size(),
            idle: u32::try_from(pool.num_idle()).unwrap_or(u32::MAX),
        };
        vec![("main", state(&self.pool)), ("rate_limits", state(&self.limits))]
    }

    fn shared_limits(&self) -> Option<Arc<dyn super::SharedLimits>> {
        Some(Arc::new(self.clone()))
    }

    fn shared_changes(&self) -> Option<Arc<dyn super::SharedChanges>> {
        Some(Arc::new(self.clone()))
    }

    async fn ready(&self) -> Result<bool> {
        let applied: Option<i64> =
            sqlx::query_scalar("select max(version) from _sqlx_migrations where success").fetch_one(&self.pool).await?;
        Ok(super::migrations_current(applied, &MIGRATOR))
    }
}

/// How an import's rows are cut into statements (in one transaction: the groups do not matter).
const IMPORT_STATEMENTS: super::history::Budget =
    super::history::Budget { rows: usize::MAX, bytes: 4 * 1024 * 1024, rows_per_statement: 500 };

async fn write_import_part(
    tx: &mut sqlx::PgConnection,
    user: Uuid,
    prepared: &[super::history::Prepared<'_>],
    part: &super::history::Part,
) -> Result<()> {
    match part {
        super::history::Part::Thread(t) => {
            let p = &prepared[*t];
            sqlx::query(
                "insert into threads (id, user_id, title, pinned, archived, message_count, last_seq, created_at, updated_at,
                 active_id) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            )
            .bind(p.id)
            .bind(user)
            .bind(&p.thread.title)
            .bind(p.thread.pinned)
            .bind(p.thread.archived)
            .bind(p.thread.messages.len() as i64)
            .bind(p.last_seq())
            .bind(p.thread.created_at)
            .bind(p.updated_at())
            .bind(p.active())
            .execute(&mut *tx)
            .await?;
            write_tags(tx, user, p.id, &p.thread.tags).await?;
        }
        super::history::Part::Messages(t, range) => {
            Shared::insert_imported_messages(tx, user, &prepared[*t], range.clone()).await?
        }
        super::history::Part::Artifacts(t, range) => {
            Shared::insert_imported_artifacts(tx, user, &prepared[*t], range.clone()).await?
        }
        super::history::Part::Versions(t, range) => {
            Shared::insert_imported_versions(tx, user, &prepared[*t], range.clone()).await?
        }
        super::history::Part::Requirements(t, range) => {
            Shared::insert_imported_requirements(tx, user, &prepared[*t], range.clone()).await?
        }
        super::history::Part::Revisions(t, range) => {
            Shared::insert_imported_revisions(tx, user, &prepared[*t], range.clone()).await?
        }
        super::history::Part::Citations(t, range) => {
            Shared::insert_imported_citations(tx, &prepared[*t], range.clone()).await?
        }
    }
    Ok(())
}

/// Takes a thread for a turn (see [`take_thread`]): binds the turn, the thread, its author, the time, the
/// message's id and columns, [`MAX_SEQ`], the quote, the sender (who must write in the thread: its author or an
/// editor of its project) and the message's author when not the thread's.
static TAKE_THREAD: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "with stamp as (
             select context_version, last_seq, active_id from threads where id = $2 and user_id = $3
         ), taken as (
             insert into turns (id, thread_id, user_id, sender_id, status, started_at, heartbeat_at)
             select $1, $2, $3, $15, 'running', $4, $4
             where exists (select 1 from threads t where t.id = $2 and t.user_id = $3 and {})
             and ($13::uuid is null or exists (select 1 from artifacts where id = $13 and thread_id = $2 and user_id = $3))
             returning thread_id
         ), previous as (
             select id, active_id from threads where id = $2 and user_id = $3 and $5::uuid is not null for update
         ), counted as (
             update threads t set message_count = t.message_count + 1, last_seq = t.last_seq + 1,
             updated_at = greatest(t.updated_at, $4), active_id = $5
             from previous p
             where p.id = t.id and t.id = (select thread_id from taken) and t.user_id = $3 and t.last_seq < $12
             returning t.id, t.user_id, t.last_seq, p.active_id as parent_id, t.context_version
         ), saved as (
             insert into messages (id, thread_id, user_id, seq, role, content, status, input_tokens, output_tokens,
             model, created_at, writing, quote_artifact_id, quote_text, author_id, parent_id)
             select $5, id, user_id, last_seq, $6, $7, $8, $9, $10, $11, $4, false, $13, $14, $16, parent_id
             from counted
             returning seq, parent_id
         )
         select (select count(*) from taken) as taken, (select seq from saved) as seq,
             (select parent_id from saved) as parent, (select context_version from counted) as version,
             (select context_version from stamp) as read_version, (select last_seq from stamp) as read_last_seq,
             (select active_id from stamp) as read_active",
        crate::projects::thread_row_access("t", "$15::uuid", wire::ProjectRole::Editor)
    )
});

/// Marks the turn running, which also checks the thread's owner, and saves the person's message if there is
/// one, with the thread's next number: one statement, so one round trip. The new turn's foreign key locks the
/// thread's row (`for key share`) until the commit, and every change of a thread's messages locks that row `for
/// update` before asking whether a turn runs: such a change either sees this turn or is waited for. `NotFound` when the thread is missing
/// or another person's; a unique violation when another turn is marked running in it.
async fn take_thread<'c>(
    conn: impl sqlx::PgExecutor<'c>,
    user: Uuid,
    sender: Uuid,
    thread: Uuid,
    turn: Uuid,
    now: DateTime<Utc>,
    request: Option<(Uuid, &NewMessage)>,
) -> Result<(Option<Message>, ThreadStamp)> {
    let id = request.map(|(id, _)| id);
    let request = request.map(|(_, message)| message);
    /// What the statement below did: turns taken (0 or 1), the message saved and the thread's version after it,
    /// and the thread's stamp in the statement's snapshot.
    #[derive(sqlx::FromRow)]
    struct Taken {
        taken: i64,
        seq: Option<i64>,
        parent: Option<Uuid>,
        version: Option<i64>,
        read_version: Option<i64>,
        read_last_seq: Option<i64>,
        read_active: Option<Uuid>,
    }
    let Taken { taken, seq, parent, version, read_version, read_last_seq, read_active } = sqlx::query_as(&TAKE_THREAD)
        .bind(turn)
        .bind(thread)
        .bind(user)
        .bind(now)
        .bind(id)
        .bind(request.map(|m| m.role.as_str()))
        .bind(request.map(|m| m.content.as_str()))
        .bind(request.map(|m| m.status.as_str()))
        .bind(request.map(|m| m.usage.input_tokens as i64))
        .bind(request.map(|m| m.usage.output_tokens as i64))
        .bind(request.and_then(|m| m.model.as_deref()))
        .bind(MAX_SEQ)
        .bind(request.and_then(|m| m.quote.as_ref()).map(|q| q.artifact_id))
        .bind(request.and_then(|m| m.quote.as_ref()).map(|q| q.text.as_str()))
        .bind(sender)
        .bind(request.and_then(|m| m.author))
        .fetch_one(conn)
        .await?;
    let (true, Some(read_version), Some(read_last_seq)) = (taken > 0, read_version, read_last_seq) else {
        return Err(StoreError::NotFound);
    };
    Ok(match (request, id, seq, version) {
        (Some(message), Some(id), Some(seq), Some(version)) => {
            // The thread's stamp before the message, from the row the update locked and wrote (the newest: `stamp`
            // reads the statement's snapshot, which a write committed while the update waited is not in). The
            // message became the active one: one change counted.
            let before = ThreadStamp { version: version - 1, last_seq: seq - 1, active: parent };
            (Some(message.clone().saved(id, Place { seq, parent }, now)), before)
        }
        // No message (a silent generation): the snapshot's stamp.
        _ => (None, ThreadStamp { version: read_version, last_seq: read_last_seq, active: read_active }),
    })
}

/// A message saved whole (see [`insert_message`]).
async fn insert_new_message(
    conn: &mut sqlx::PgConnection,
    user: Uuid,
    id: Uuid,
    message: &NewMessage,
    created: DateTime<Utc>,
) -> Result<Option<Place>> {
    insert_message(conn, user, id, message, created, false, None).await
}

/// Inserts a message under `id` with the thread's next number, after `after` or the active message, and bumps
/// the thread's count; `None` when the thread is missing or another user's, or `after` is gone. The update locks
/// the thread row until commit, so concurrent appends take consecutive numbers. A message inserted as `writing`
/// has no search vector. A thread whose count reached [`MAX_SEQ`] is numbered again first.
async fn insert_message(
    conn: &mut sqlx::PgConnection,
    user: Uuid,
    id: Uuid,
    message: &NewMessage,
    created: DateTime<Utc>,
    writing: bool,
    after: Option<Uuid>,
) -> Result<Option<Place>> {
    let thread = message.thread_id;
    let quoted = message.quote.as_ref().map(|q| q.artifact_id);
    let place = match count_message(&mut *conn, user, thread, id, created, after, quoted).await? {
        Some(place) => place,
        None if Shared::renumber_if_full(&mut *conn, user, thread).await? => {
            count_message(&mut *conn, user, thread, id, created, after, quoted).await?.ok_or(StoreError::NotFound)?
        }
        None => return Ok(None),
    };
    sqlx::query(
        "insert into messages (id, thread_id, user_id, seq, role, content, status, input_tokens, output_tokens,
         model, created_at, writing, parent_id, quote_artifact_id, quote_text, author_id)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
    )
    .bind(id)
    .bind(message.thread_id)
    .bind(user)
    .bind(place.seq)
    .bind(message.role.as_str())
    .bind(&message.content)
    .bind(message.status.as_str())
    .bind(message.usage.input_tokens as i64)
    .bind(message.usage.output_tokens as i64)
    .bind(&message.model)
    .bind(created)
    .bind(writing)
    .bind(place.parent)
    .bind(quoted)
    .bind(message.quote.as_ref().map(|q| q.text.as_str()))
    .bind(message.author)
    .execute(&mut *conn)
    .await?;
    Ok(Some(place))
}

/// Counts one more message in `user`'s `thread`; where the message goes (its number, after `after` or else the
/// active message), which it becomes the active message after; `None` when the thread is missing, `after` is
/// gone, `quoted` is not a document of the thread or the count reached [`MAX_SEQ`].
async fn count_message(
    conn: &mut sqlx::PgConnection,
    user: Uuid,
    thread: Uuid,
    id: Uuid,
    at: DateTime<Utc>,
    after: Option<Uuid>,
    quoted: Option<Uuid>,
) -> Result<Option<Place>> {
    let row: Option<(i64, Option<Uuid>)> = sqlx::query_as(
        "with previous as (select id, active_id from threads where id = $2 and user_id = $3 for update)
         update threads t set message_count = t.message_count + 1, last_seq = t.last_seq + 1,
         updated_at = greatest(t.updated_at, $1),
         active_id = case when p.active_id is not distinct from coalesce($6, p.active_id) then $5 else t.active_id end
         from previous p where t.id = p.id and t.last_seq < $4
         and ($6::uuid is null or exists (select 1 from messages m where m.id = $6 and m.thread_id = t.id))
         and ($7::uuid is null or exists (select 1 from artifacts a
             where a.id = $7 and a.thread_id = t.id and a.user_id = t.user_id))
         returning t.last_seq, coalesce($6, p.active_id)",
    )
    .bind(at)
    .bind(thread)
    .bind(user)
    .bind(MAX_SEQ)
    .bind(id)
    .bind(after)
    .bind(quoted)
    .fetch_optional(conn)
    .await?;
    Ok(row.map(|(seq, parent)| Place { seq, parent }))
}

/// Saves an answer's state: rewrites it, or creates it at its first save. `false` when its thread is gone
/// (deleted meanwhile): there is nothing to keep it in.
async fn save_answer(conn: &mut sqlx::PgConnection, user: Uuid, answer: &super::AnswerDraft) -> Result<bool> {
    if Shared::rewrite_message(conn, user, answer.id, &answer.update, answer.writing).await? {
        return Ok(true);
    }
    // Inserted as being written, so a finished answer's search vector is computed once, with the rewrite.
    if insert_message(conn, user, answer.id, &answer.first_save(), now(), true, answer.question).await?.is_none() {
        return Ok(false);
    }
    Shared::rewrite_message(conn, user, answer.id, &answer.update, answer.writing).await
}

/// Adds spent tokens to the thread's totals and to its payer's ledger for today and the model.
async fn add_usage(conn: &mut sqlx::PgConnection, spent: &super::SpentTokens) -> Result<()> {
    let super::SpentTokens { user, payer, thread, ref model, usage, counted_tokens } = *spent;
    sqlx::query(
        "update threads set input_tokens = input_tokens + $1, output_tokens = output_tokens + $2
         where id = $3 and user_id = $4",
    )
    .bind(usage.input_tokens as i64)
    .bind(usage.output_tokens as i64)
    .bind(thread)
    .bind(user)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "insert into usage_ledger (user_id, day, model, input_tokens, output_tokens, counted_tokens)
         values ($1, $2, $3, $4, $5, $6)
         on conflict (user_id, day, model) do update
         set input_tokens = usage_ledger.input_tokens + excluded.input_tokens,
             output_tokens = usage_ledger.output_tokens + excluded.output_tokens,
             counted_tokens = usage_ledger.counted_tokens + excluded.counted_tokens",
    )
    .bind(payer)
    // The UTC day, as SQLite stores it; `current_date` would follow the session's time zone.
    .bind(Utc::now().date_naive())
    .bind(model)
    .bind(usage.input_tokens as i64)
    .bind(usage.output_tokens as i64)
    .bind(i64::try_from(counted_tokens).unwrap_or(i64::MAX))
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Stores a turn's events in one statement. Skipped when the turn is gone (its thread was deleted meanwhile); a
/// number already stored keeps its first event.
async fn insert_turn_events(conn: &mut sqlx::PgConnection, turn: Uuid, events: &[EventRun]) -> Result<()> {
    insert_events(conn, &events.iter().map(|e| (turn, e)).collect::<Vec<_>>()).await
}

/// Stores events of turns in one statement, a row per run (see [`EventRun`]). Events of a turn that no longer
/// exists (its thread was deleted meanwhile) are skipped; a number already stored keeps its first event.
async fn insert_events(conn: &mut sqlx::PgConnection, events: &[(Uuid, &EventRun)]) -> Result<()> {
    if events.is_empty() {
        return Ok(());
    }
    let turns: Vec<Uuid> = events.iter().map(|(turn, _)| *turn).collect();
    let seqs: Vec<i64> = events.iter().map(|(_, e)| e.seq).collect();
    let last_seqs: Vec<i64> = events.iter().map(|(_, e)| e.last_seq).collect();
    let names: Vec<&str> = events.iter().map(|(_, e)| e.name.as_str()).collect();
    let data: Vec<&str> = events.iter().map(|(_, e)| e.data.as_str()).collect();
    sqlx::query(
        "insert into turn_events (turn_id, seq, last_seq, name, data)
         select e.turn_id, e.seq, e.last_seq, e.name, e.data
         from unnest($1::uuid[], $2::bigint[], $3::bigint[], $4::text[], $5::text[])
             as e (turn_id, seq, last_seq, name, data)
         where exists (select 1 from turns where id = e.turn_id)
         on conflict (turn_id, seq) do nothing",
    )
    .bind(&turns)
    .bind(&seqs)
    .bind(&last_seqs)
    .bind(&names)
    .bind(&data)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Answer drafts as columns, one array each, for statements that `unnest` them.
struct DraftColumns<'a> {
    ids: Vec<Uuid>,
    users: Vec<Uuid>,
    threads: Vec<Uuid>,
    contents: Vec<&'a str>,
    statuses: Vec<&'a str>,
    inputs: Vec<i64>,
    outputs: Vec<i64>,
    models: Vec<Option<&'a str>>,
    contexts: Vec<Option<&'a serde_json::Value>>,
    writing: Vec<bool>,
}

impl<'a> DraftColumns<'a> {
    /// Binds `$1` to `$10`: ids, owners, threads, contents, statuses, input and output tokens, models, context
    /// records, whether still being written.
    fn bind<'q>(
        &'q self,
        query: sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>,
    ) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
        query
            .bind(&self.ids)
            .bind(&self.users)
            .bind(&self.threads)
            .bind(&self.contents)
            .bind(&self.statuses)
            .bind(&self.inputs)
            .bind(&self.outputs)
            .bind(&self.models)
            .bind(&self.contexts)
            .bind(&self.writing)
    }

    fn of(drafts: &[(Uuid, &'a super::AnswerDraft)]) -> Self {
        Self {
            ids: drafts.iter().map(|(_, d)| d.id).collect(),
            users: drafts.iter().map(|(user, _)| *user).collect(),
            threads: drafts.iter().map(|(_, d)| d.thread_id).collect(),
            contents: drafts.iter().map(|(_, d)| d.update.content.as_str()).collect(),
            statuses: drafts.iter().map(|(_, d)| d.update.status.as_str()).collect(),
            inputs: drafts.iter().map(|(_, d)| d.update.usage.input_tokens as i64).collect(),
            outputs: drafts.iter().map(|(_, d)| d.update.usage.output_tokens as i64).collect(),
            models: drafts.iter().map(|(_, d)| d.update.model.as_deref()).collect(),
            contexts: drafts.iter().map(|(_, d)| d.update.context.as_ref()).collect(),
            writing: drafts.iter().map(|(_, d)| d.writing).collect(),
        }
    }
}

/// Inserts answers at their first save, all in one statement, each with its thread's next number (their
/// threads distinct, as a batch of running turns' progress has them: one running turn per thread); an answer
/// whose thread is gone is left out. Drafts of one thread twice go one by one instead.
async fn insert_first_drafts(conn: &mut sqlx::PgConnection, drafts: &[(Uuid, &super::AnswerDraft)]) -> Result<()> {
    if drafts.is_empty() {
        return Ok(());
    }
    let threads: std::collections::HashSet<Uuid> = drafts.iter().map(|(_, d)| d.thread_id).collect();
    if threads.len() != drafts.len() {
        for (user, draft) in drafts {
            save_answer(conn, *user, draft).await?;
        }
        return Ok(());
    }
    let c = DraftColumns::of(drafts);
    // The search vector is computed from the values inserted, so a finished one enters the index once here.
    c.bind(sqlx::query(
        "with v as (
             select * from unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::bigint[],
                                  $7::bigint[], $8::text[], $9::jsonb[], $10::bool[], $13::uuid[])
             as v (id, user_id, thread_id, content, status, input_tokens, output_tokens, model, context, writing,
                   after)
         ), previous as (
             select id, active_id from threads where id in (select thread_id from v) for update
         ), counted as (
             update threads t set message_count = t.message_count + 1, last_seq = t.last_seq + 1,
             updated_at = greatest(t.updated_at, $11),
             active_id = case when p.active_id is not distinct from coalesce(v.after, p.active_id) then v.id
                         else t.active_id end
             from v, previous p where t.id = v.thread_id and t.user_id = v.user_id and p.id = t.id
             and not exists (select 1 from messages m where m.id = v.id)
             and (v.after is null or exists (select 1 from messages q where q.id = v.after and q.thread_id = t.id))
             returning t.id, t.last_seq, coalesce(v.after, p.active_id) as parent_id
         )
         insert into messages (id, thread_id, user_id, seq, role, content, status, input_tokens, output_tokens, model,
         context, created_at, writing, parent_id)
         select v.id, v.thread_id, v.user_id, c.last_seq, $12, v.content, v.status, v.input_tokens, v.output_tokens,
         v.model, v.context, $11, v.writing, c.parent_id
         from v join counted c on c.id = v.thread_id",
    ))
    .bind(now())
    .bind(wire::Role::Assistant.as_str())
    .bind(drafts.iter().map(|(_, d)| d.question).collect::<Vec<_>>())
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Rewrites answer drafts saved before, all in one statement, as [`Shared::rewrite_message`] does one by one
/// (their ids distinct); gives back the drafts that matched no message of their user (first saves, and answers
/// whose thread is gone).
async fn rewrite_drafts<'a>(
    conn: &mut sqlx::PgConnection,
    drafts: &[(Uuid, &'a super::AnswerDraft)],
) -> Result<Vec<(Uuid, &'a super::AnswerDraft)>> {
    if drafts.is_empty() {
        return Ok(Vec::new());
    }
    let c = DraftColumns::of(drafts);
    let rewritten = c
        .bind(sqlx::query(
            "update messages m set content = v.content, status = v.status, input_tokens = v.input_tokens,
             output_tokens = v.output_tokens, model = coalesce(v.model, m.model),
             context = coalesce(v.context, m.context), writing = v.writing
             from unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::bigint[], $7::bigint[],
                         $8::text[], $9::jsonb[], $10::bool[])
                  as v (id, user_id, thread_id, content, status, input_tokens, output_tokens, model, context, writing)
             where m.id = v.id and m.user_id = v.user_id
             returning m.id",
        ))
        .fetch_all(&mut *conn)
        .await?
        .iter()
        .map(|row| row.try_get("id"))
        .collect::<std::result::Result<std::collections::HashSet<Uuid>, _>>()?;
    Ok(drafts.iter().filter(|(_, d)| !rewritten.contains(&d.id)).copied().collect())
}
