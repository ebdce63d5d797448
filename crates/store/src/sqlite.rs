//! The embedded backend: one SQLite file in WAL mode, owned by one Quire process. Every write goes through
//! one writer that owns the only write connection (see [`writer`]), so writes queue inside Quire, most urgent
//! first, instead of failing with "database is locked"; reads use a pool of their own.

use std::{str::FromStr, time::Duration};

use async_trait::async_trait;
use chrono::{NaiveDate, Utc};
use sqlx::{
    sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteRow, SqliteSynchronous},
    ConnectOptions, FromRow, SqliteConnection, SqlitePool,
};
use uuid::Uuid;
use wire::{AttachmentMeta, HistoryStats, Thread};

use super::threads::{found, ThreadRow};
use super::{
    history::ImportThread, search_query, History, IdempotencyClaim, NewUser, Result, Search, SearchPage, Store,
    StoreError, StoredEvent, TurnRecord, Turns,
};
use futures::future::BoxFuture;
use writer::{Urgency, Writer};

/// How often the write-ahead log is copied back into the database file.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(500);

/// The statements both backends run alike, bound the SQLite way.
type Shared = super::columns::Sql<sqlx::Sqlite>;

mod accounts;
mod admin;
mod artifacts;
mod attachments;
mod budgets;
mod history;
mod import;
mod index;
mod messages;
mod search;
mod settings;
mod summaries;
mod threads;
mod turn_writes;
mod turns;
mod writer;

pub use writer::writes_waiting;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/sqlite");

/// SQLite storage.
#[derive(Debug, Clone)]
pub struct Sqlite {
    writer: Writer,
    reader: SqlitePool,
}

impl Sqlite {
    /// Runs one statement, whose values it owns, through the writer with the writes someone waits for.
    pub(super) async fn execute(
        &self,
        statement: sqlx::query::Query<'static, sqlx::Sqlite, sqlx::sqlite::SqliteArguments<'static>>,
    ) -> Result<sqlx::sqlite::SqliteQueryResult> {
        self.writer
            .write(Urgency::Waited, move |conn| Box::pin(async move { Ok(statement.execute(conn).await?) }))
            .await
    }
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
        let mut writer = options.connect().await?;
        MIGRATOR.run(&mut writer).await?;
        // One process owns a SQLite database: a turn still marked running was cut off when the last one
        // stopped (its partial answer is saved as `interrupted`), so its conversation is free again at once, and
        // its answer is searchable.
        let mut tx = sqlx::Connection::begin(&mut writer).await?;
        sqlx::query("update turns set status = 'done' where status = 'running'").execute(&mut *tx).await?;
        sqlx::query("update messages set writing = 0 where writing = 1").execute(&mut *tx).await?;
        // An import cut off part way goes whole (see `import`).
        sqlx::query("delete from threads where import_id is not null").execute(&mut *tx).await?;
        tx.commit().await?;
        let writer = Writer::start(writer, options.clone().pragma("temp_store", "memory").connect().await?);
        tokio::spawn(checkpoint_in_background(options.clone().connect().await?, writer.alive()));
        // A connection to a file in this process cannot go stale, so none is pinged before use: with the
        // default check, every query paid a second round trip to its connection's thread.
        let reader = SqlitePoolOptions::new()
            .max_connections(8)
            .test_before_acquire(false)
            .connect_with(options.read_only(true))
            .await?;
        tokio::spawn(index::index_in_background(reader.clone(), writer.alive()));
        Ok(Self { writer, reader })
    }

    /// Runs `write` through the writer (see [`writer`]) with the other writes someone waits for.
    async fn write<R, F>(&self, write: F) -> Result<R>
    where
        R: Send + 'static,
        F: for<'c> FnOnce(&'c mut SqliteConnection) -> BoxFuture<'c, Result<R>> + Send + 'static,
    {
        self.writer.write(Urgency::Waited, write).await
    }

    /// A connection of the read pool.
    async fn read(&self) -> Result<sqlx::pool::PoolConnection<sqlx::Sqlite>> {
        Ok(self.reader.acquire().await?)
    }

    /// Runs writes that must agree: [`Sqlite::write`], as the writer runs each write in its transaction.
    async fn write_together<R, F>(&self, write: F) -> Result<R>
    where
        R: Send + 'static,
        F: for<'c> FnOnce(&'c mut SqliteConnection) -> BoxFuture<'c, Result<R>> + Send + 'static,
    {
        self.write(write).await
    }

    /// Nothing to do: a document enters the full-text index in its save (the `artifacts_fts` triggers).
    fn saved_documents(&self, _documents: impl IntoIterator<Item = Uuid>) {}

    /// Whether a row with this id and owner exists in `table` (`threads` or `messages`). Used when a listing
    /// comes back empty, to tell an empty thread from one that is missing or another user's.
    async fn owns(&self, table: &str, user: Uuid, id: Uuid) -> Result<bool> {
        Shared::owns(&mut *self.reader.acquire().await?, table, user, id).await
    }

    /// Whether the person reads the thread: theirs, or in a project of theirs. Used when a listing a member may
    /// read comes back empty, as [`owns`](Self::owns) is.
    async fn reads_thread(&self, user: Uuid, thread: Uuid) -> Result<bool> {
        Shared::reads_thread(&mut *self.reader.acquire().await?, user, thread).await
    }

    /// Runs a delete scoped to its owner through the writer, binding `ids` in order; `NotFound` when it removed
    /// nothing.
    async fn delete(&self, sql: &'static str, ids: &[Uuid]) -> Result<()> {
        let ids = ids.to_vec();
        let deleted = self
            .write(move |conn| {
                Box::pin(async move {
                    let query = ids.iter().fold(sqlx::query(sql), |query, id| query.bind(id.to_string()));
                    Ok(query.execute(conn).await?.rows_affected())
                })
            })
            .await?;
        found(deleted > 0)
    }

    /// Runs `PRAGMA integrity_check` (used by the crash tests).
    pub async fn integrity_check(&self) -> Result<String> {
        Ok(sqlx::query_scalar("pragma integrity_check").fetch_one(&self.reader).await?)
    }
}

fn owner_token(user: Uuid) -> String {
    format!("u{}", user.simple())
}

const THREAD_COLUMNS: &str = "t.id, t.title, t.model, t.mcp_servers, t.project_id, t.pinned, t.archived, t.message_count, t.created_at, t.updated_at,
    (select json_group_array(tag) from (select tag from thread_tags g where g.thread_id = t.id order by position)) as tags,
    (select substr(m.content, 1, 200) from messages m where m.thread_id = t.id and m.role = 'user' order by m.seq limit 1) as first_message";

/// A thread read by a statement that selects [`THREAD_COLUMNS`].
fn thread_from_row(row: &SqliteRow) -> Result<Thread> {
    ThreadRow::<String, i64, String>::from_row(row)?.try_into()
}

fn is_unique_violation(err: &sqlx::Error) -> bool {
    matches!(err, sqlx::Error::Database(db) if db.is_unique_violation())
}

fn today() -> String {
    Utc::now().format("%Y-%m-%d").to_string()
}

/// Answer drafts per update statement (nine parameters each).
const DRAFT_ROWS_PER_STATEMENT: usize = 100;

/// Rewrites answer drafts saved before, many per statement, as [`Shared::rewrite_message`] does one by one;
/// gives back the drafts that matched no message of their user (first saves, and answers whose thread is gone).
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

/// Saves a batch of running turns' progress: their events in one statement, the answers saved before many per
/// statement, and first saves one by one.
async fn write_progress(conn: &mut SqliteConnection, progress: &[super::TurnProgress]) -> Result<()> {
    let (events, answers) = super::progress_parts(progress);
    turn_writes::insert_turn_events(conn, &events).await?;
    let unsaved = match answers {
        Ok(answers) => rewrite_drafts(conn, &answers).await?,
        Err(in_order) => in_order,
    };
    for (user, answer) in unsaved {
        turn_writes::save_answer(conn, user, answer).await?;
    }
    Ok(())
}

/// Copies the write-ahead log back into the database file every [`CHECKPOINT_EVERY`], on a connection of its
/// own, for as long as the store is open (`alive`). Left to SQLite, a checkpoint runs inside whichever commit
/// fills the log past 1,000 pages: that commit (usually a turn's end, the largest write) then held the only
/// writer while it copied about 4 MB and synced the file, and every start and end waited behind it. A passive
/// checkpoint takes no write lock: it copies what no reader still needs, and the next one the rest.
async fn checkpoint_in_background(mut conn: SqliteConnection, alive: writer::Alive) {
    let mut every = tokio::time::interval(CHECKPOINT_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        if !alive.is_open() {
            return;
        }
        if let Err(e) = sqlx::query("pragma wal_checkpoint(passive)").execute(&mut conn).await {
            tracing::warn!(error = %e, "copying the write-ahead log into the database failed");
        }
    }
}

/// Replaces a thread's tags, keeping their order; a repeated tag keeps its first position.
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

    async fn ready(&self) -> Result<bool> {
        let applied: Option<i64> = sqlx::query_scalar("select max(version) from _sqlx_migrations where success")
            .fetch_one(&self.reader)
            .await?;
        Ok(super::migrations_current(applied, &MIGRATOR))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SqliteSync;
    use crate::{Accounts, EventRun, MessageUpdate, Messages, NewMessage, Threads};
    use wire::MessageStatus;

    /// The URL of the database file `file` in `dir`.
    fn url_in(dir: &tempfile::TempDir, file: &str) -> String {
        format!("sqlite://{}", dir.path().join(file).display())
    }

    /// A finished message of the person's in `thread`.
    fn said(thread: Uuid, content: &str) -> NewMessage {
        NewMessage {
            thread_id: thread,
            role: wire::Role::User,
            content: content.into(),
            status: MessageStatus::Complete,
            usage: wire::Usage::default(),
            model: None,
            quote: None,
            author: None,
        }
    }

    /// A new account in `store`; its id.
    async fn account(store: &Sqlite) -> Uuid {
        let user = NewUser { email: "a@example.com".into(), password_hash: String::new(), display_name: "A".into() };
        store.create_user(user).await.expect("user").id
    }

    #[tokio::test]
    async fn commits_are_as_durable_as_configured() {
        let dir = tempfile::tempdir().expect("temp dir");
        for (sync, expected) in [(SqliteSync::Normal, 1), (SqliteSync::Full, 2)] {
            let url = url_in(&dir, "sync.db");
            let store = Sqlite::connect(&url, sync).await.expect("open");
            let level: i64 = sqlx::query_scalar("pragma synchronous").fetch_one(&store.reader).await.expect("pragma");
            assert_eq!(level, expected, "{sync:?}");
            let mode: String =
                sqlx::query_scalar("pragma journal_mode").fetch_one(&store.reader).await.expect("pragma");
            assert_eq!(mode, "wal");
        }
    }

    #[tokio::test]
    async fn an_import_cut_off_part_way_is_gone_after_a_restart() {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = url_in(&dir, "import.db");
        let store = Sqlite::connect(&url, SqliteSync::Normal).await.expect("open");
        let user = account(&store).await;
        let kept = store.create_thread(user, "kept", &[]).await.expect("thread");
        let cut_off = store.create_thread(user, "cut off", &[]).await.expect("thread");
        store.append_message(user, said(cut_off.id, "half an import")).await.expect("message");
        // What a process stopped in the middle of an import leaves: a conversation still marked as its.
        let id = cut_off.id.to_string();
        store
            .write(move |conn| {
                Box::pin(async move {
                    Ok(sqlx::query("update threads set import_id = 'an import' where id = ?")
                        .bind(id)
                        .execute(conn)
                        .await?)
                })
            })
            .await
            .expect("mark");
        drop(store);
        let store = Sqlite::connect(&url, SqliteSync::Normal).await.expect("open again");
        assert_eq!(store.all_thread_ids(user).await.expect("ids"), vec![kept.id]);
        assert_eq!(store.search(user, "import", 10, 0).await.expect("search").total, 0);
    }

    #[tokio::test]
    async fn messages_are_indexed_in_batches_and_a_search_finds_all_saved_before_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = url_in(&dir, "index.db");
        let store = Sqlite::connect(&url, SqliteSync::Normal).await.expect("open");
        let user = account(&store).await;
        let thread = store.create_thread(user, "birds", &[]).await.expect("thread").id;
        let found = |store: &Sqlite, word: &'static str| {
            let store = store.clone();
            async move { store.search(user, word, 10, 0).await.expect("search").total }
        };
        let queued = |store: &Sqlite| {
            let reader = store.reader.clone();
            async move {
                sqlx::query_scalar::<_, i64>("select count(*) from messages_to_index")
                    .fetch_one(&reader)
                    .await
                    .expect("queue")
            }
        };
        let indexed = |store: &Sqlite, word: &'static str| {
            let reader = store.reader.clone();
            async move {
                sqlx::query_scalar::<_, i64>("select count(*) from messages_fts where messages_fts match ?")
                    .bind(word)
                    .fetch_one(&reader)
                    .await
                    .expect("index")
            }
        };
        // Queued as it is saved, and still there after a restart.
        let pelican = store.append_message(user, said(thread, "a pelican over the harbour")).await.expect("message");
        drop(store);
        let store = Sqlite::connect(&url, SqliteSync::Normal).await.expect("open again");
        assert_eq!(found(&store, "pelican").await, 1);
        assert_eq!(queued(&store).await, 0, "the search indexed the queue");
        // A change replaces what the index holds of it; a delete takes it out.
        let update = MessageUpdate {
            content: "a heron over the harbour".into(),
            status: MessageStatus::Complete,
            usage: wire::Usage::default(),
            model: None,
            context: None,
        };
        store.update_message(user, pelican.id, &update).await.expect("update");
        assert_eq!((found(&store, "pelican").await, found(&store, "heron").await), (0, 1));
        store.delete_message(user, thread, pelican.id, None).await.expect("delete");
        assert_eq!((found(&store, "heron").await, found(&store, "harbour").await), (0, 0));
        // More than one write's worth, indexed in the background with no search asking.
        for n in 0..150 {
            store.append_message(user, said(thread, &format!("kingfisher number {n}"))).await.expect("message");
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while queued(&store).await > 0 {
            assert!(tokio::time::Instant::now() < deadline, "the queue was not indexed");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(indexed(&store, "kingfisher").await, 150);
        assert_eq!(found(&store, "kingfisher").await, 150);
    }

    #[tokio::test]
    async fn a_write_of_the_index_takes_a_bounded_text_and_a_search_only_its_persons_queue() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Sqlite::connect(&url_in(&dir, "batches.db"), SqliteSync::Normal).await.expect("open");
        let a = account(&store).await;
        let b = store
            .create_user(NewUser {
                email: "b@example.com".into(),
                password_hash: String::new(),
                display_name: "B".into(),
            })
            .await
            .expect("user")
            .id;
        let a_thread = store.create_thread(a, "long", &[]).await.expect("thread").id;
        let b_thread = store.create_thread(b, "short", &[]).await.expect("thread").id;
        // Queued and indexed in one write each, so the background's indexing cannot come in between.
        let steps = store
            .write(move |conn| {
                Box::pin(async move {
                    let long = "word ".repeat(4_000); // 20,000 bytes: two do not fit one write
                    for (n, (user, thread, text)) in
                        [(a, a_thread, long.as_str()), (a, a_thread, long.as_str()), (b, b_thread, "brief")]
                            .into_iter()
                            .enumerate()
                    {
                        sqlx::query(
                            "insert into messages (id, thread_id, user_id, seq, role, content, status, created_at)
                             values (?, ?, ?, ?, 'user', ?, 'complete', 0)",
                        )
                        .bind(Uuid::now_v7().to_string())
                        .bind(thread.to_string())
                        .bind(user.to_string())
                        .bind(n as i64 + 1)
                        .bind(text)
                        .execute(&mut *conn)
                        .await?;
                    }
                    let mut steps = Vec::new();
                    for _ in 0..3 {
                        let more = index::index_some(conn, i64::MAX, Some(a.to_string())).await?;
                        let queued: i64 =
                            sqlx::query_scalar("select count(*) from messages_to_index").fetch_one(&mut *conn).await?;
                        steps.push((more, queued));
                    }
                    Ok(steps)
                })
            })
            .await
            .expect("index");
        // One long message a write, the other person's left queued; the last write finds nothing of the person's.
        assert_eq!(steps, vec![(true, 2), (false, 1), (false, 1)]);
        assert_eq!(store.search(b, "brief", 10, 0).await.expect("search").total, 1);
    }

    #[tokio::test]
    async fn a_turn_that_will_not_end_leaves_its_answer_so_far_and_nothing_held() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Sqlite::connect(&url_in(&dir, "abandon.db"), SqliteSync::Normal).await.expect("open");
        let user = account(&store).await;
        let thread = store.create_thread(user, "abandoned", &[]).await.expect("thread").id;
        let turn = Uuid::now_v7();
        store.begin_turn(user, thread, turn, 30_000).await.expect("begin");
        let answer = Uuid::now_v7();
        store.submit_progress(super::super::TurnProgress {
            turn,
            user,
            events: vec![EventRun::single(1, "text_delta", r#"{"text":"Half"}"#.into())],
            answer: Some(super::super::AnswerDraft {
                id: answer,
                thread_id: thread,
                update: super::super::MessageUpdate {
                    content: "Half an answer".into(),
                    status: MessageStatus::Interrupted,
                    usage: wire::Usage::default(),
                    model: None,
                    context: None,
                },
                writing: true,
                question: None,
            }),
        });
        assert_eq!(store.writer.held_turns().await, vec![turn]);
        // Its task died without ending it.
        store.abandon_progress(turn);
        assert_eq!(store.writer.held_turns().await, Vec::<Uuid>::new());
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        // A progress batch may have saved the answer before; its events are kept here until the turn's end,
        // so what it left is saved once they are.
        loop {
            if !store.turn_events_after(turn, 0).await.expect("events").is_empty() {
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "the events so far were not saved");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(store.turn_events_after(turn, 0).await.expect("events").len(), 1);
        let kept = store.get_message(user, answer).await.expect("the answer so far");
        assert_eq!((kept.content.as_str(), kept.status), ("Half an answer", MessageStatus::Interrupted));
        // A turn that ended leaves nothing to let go of.
        store.abandon_progress(turn);
        assert_eq!(store.writer.held_turns().await, Vec::<Uuid>::new());
    }

    #[tokio::test]
    async fn the_log_reaches_the_database_file_without_a_commit_copying_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("checkpoint.db");
        let store = Sqlite::connect(&format!("sqlite://{}", path.display()), SqliteSync::Normal).await.expect("open");
        let every: i64 =
            sqlx::query_scalar("pragma wal_autocheckpoint").fetch_one(&store.reader).await.expect("pragma");
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
