//! SQLite's only writer. A database file has one writer at a time, so one task owns the write connections and
//! takes every write from one channel. What waits is served most urgent first: a chat turn's start (someone
//! watches for the first words), then a turn's end and every other write someone waits for, then background
//! work (running turns' progress, heartbeats, the parts of an import); among equals, in order of arrival.
//!
//! Writes of one urgency that wait together run in one transaction (one commit for many starts), each in a
//! savepoint of its own, so one write's failure rolls back only its own; each caller hears its outcome once the
//! transaction is committed. A transaction is cut short when a more urgent write arrives or it grows past
//! [`BATCH_TIME`], so a start waits for at most one short transaction.
//!
//! A savepoint's journal (the pages it changed, as they were) is kept where the write's [`Journal`] says: in
//! memory for a chat turn's start and end, which the message's or the answer's size bounds (with the share of
//! the search index's merging a document's or a title's text sets off: FTS5 merges in steps in proportion to
//! what is written, and only a rare "crisis" merge of a whole level of its index is larger; messages are indexed
//! in batches of their own, see `index.rs`), and in a temporary file for every other
//! write in a savepoint, which can be as large as all a person owns (deleting an account). SQLite keeps it in
//! memory up to 64 KiB either way; past that, a file is created, written and deleted again for every
//! transaction, which a turn's end outgrows: that cost a fifth of a chat's fixed CPU (BENCHMARKS.md, "Relay
//! overhead"). The writer owns two connections, one for each place (SQLite's `temp_store`, set when each was
//! opened), and a transaction holds writes of one place only.
//!
//! Running turns hand their progress over through the same channel and never wait. The writer keeps it, one
//! entry per turn, and writes the answers so far in background batches (so a crash keeps partial answers);
//! their events stay here until the turn ends, since one process owns the database and follows its running
//! turns in memory. A turn's end takes whatever of its progress is still here into its own transaction: nothing
//! of a turn can land after its end, and an end never waits for progress. A turn that can no longer end (its
//! task panicked or was dropped) is abandoned: what it left here is written as it stands and let go.

use std::{
    collections::VecDeque,
    panic::AssertUnwindSafe,
    sync::atomic::{AtomicI64, Ordering},
    time::Duration,
};

use futures::{future::BoxFuture, FutureExt};
use sqlx::SqliteConnection;
use tokio::{
    sync::{mpsc, oneshot},
    time::Instant,
};
use uuid::Uuid;

use super::turn_writes;
use crate::{Result, StoreError, ThreadStamp, TurnEnd, TurnProgress};

/// Writes of one urgency in one transaction, at most.
const STARTS_TOGETHER: usize = 64;
/// Ends write much more than starts (the answer, its events and documents): a start arriving meanwhile waits for
/// the whole transaction.
const WAITED_TOGETHER: usize = 8;
const BACKGROUND_TOGETHER: usize = 8;
/// Running turns whose answers one progress transaction saves, at most.
const TURNS_PER_COMMIT: usize = 32;
/// A transaction takes no further write once it has run this long.
const BATCH_TIME: Duration = Duration::from_millis(10);
/// After progress was written, how long more gathers before the next batch.
const GATHER: Duration = Duration::from_millis(20);
/// After a failed progress batch, how long before it is tried again.
const RETRY_AFTER: Duration = Duration::from_millis(500);

/// How urgent a write is, most urgent first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Urgency {
    /// A chat turn's start: its first words wait for it.
    Start = 0,
    /// A chat turn's end, and every write a request waits for.
    Waited = 1,
    /// Work no one waits for at once: heartbeats, sweeps, the parts of an import, batches saved on request.
    Background = 2,
}

/// Where a write's savepoint keeps its journal (SQLite's `temp_store`; see the module's description).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Journal {
    /// For writes whose size a message bounds.
    Memory,
    /// For every other write.
    File,
}

/// The write connections and what the writer keeps of running turns.
pub(super) struct Owned {
    /// The connection writing now, whose savepoints keep their journal as `journal` says.
    conn: SqliteConnection,
    journal: Journal,
    /// The other connection, for the other place.
    other: SqliteConnection,
    /// Handed over by running turns and not written yet, one entry per turn.
    progress: Progress,
}

impl Owned {
    /// Makes the connection for `journal` the one writing.
    fn use_journal(&mut self, journal: Journal) {
        if self.journal != journal {
            std::mem::swap(&mut self.conn, &mut self.other);
            self.journal = journal;
        }
    }
}

/// A write: runs on the connection inside its savepoint, says whether it succeeded, and gives what answers its
/// caller once the transaction is over (committed: `None`; or the commit's failure).
struct Job {
    journal: Journal,
    run: Run,
}
type Run = Box<dyn for<'c> FnOnce(&'c mut Owned) -> BoxFuture<'c, (bool, Answer)> + Send>;
type Answer = Box<dyn FnOnce(Option<&StoreError>) + Send>;

enum Message {
    Write(Urgency, Job),
    Progress(TurnProgress),
    /// A turn that will not end: its progress still here is written in the background and let go.
    Abandon(Uuid),
}

/// Whether the store is still open (see [`Writer::alive`]).
pub(super) struct Alive(mpsc::WeakUnboundedSender<Message>);

impl Alive {
    pub(super) fn is_open(&self) -> bool {
        self.0.upgrade().is_some()
    }

    /// The writer, while the store is open; holding it keeps it open.
    pub(super) fn writer(&self) -> Option<Writer> {
        self.0.upgrade().map(|line| Writer { line })
    }
}

/// Writes waiting for the writer, across every SQLite store of the process (the `sqlite_writes_waiting` gauge).
static WRITES_WAITING: AtomicI64 = AtomicI64::new(0);

/// How many writes wait for SQLite's writer now.
pub fn writes_waiting() -> i64 {
    WRITES_WAITING.load(Ordering::Relaxed).max(0)
}

/// A write in the writer's line, counted in the `sqlite_writes_waiting` gauge for as long as it lives.
struct Waiting;

impl Waiting {
    fn new() -> Self {
        WRITES_WAITING.fetch_add(1, Ordering::Relaxed);
        Waiting
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        WRITES_WAITING.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The writer's address; the writer stops when every copy is gone.
#[derive(Debug, Clone)]
pub(super) struct Writer {
    line: mpsc::UnboundedSender<Message>,
}

impl Writer {
    /// Starts the writer on the current runtime with the two connections it owns: `file` keeps savepoints'
    /// journals as SQLite does by default (a file past 64 KiB), `memory` was opened with `temp_store = memory`
    /// (see [`Journal`]).
    pub(super) fn start(file: SqliteConnection, memory: SqliteConnection) -> Self {
        let (line, arrivals) = mpsc::unbounded_channel();
        let owned = Owned { conn: file, journal: Journal::File, other: memory, progress: Progress::default() };
        tokio::spawn(run(arrivals, owned));
        Self { line }
    }

    /// What tells whether the store is still open, without keeping it open.
    pub(super) fn alive(&self) -> Alive {
        Alive(self.line.downgrade())
    }

    /// Runs `write` in the writer's transaction; its outcome once committed. A caller that went away before its
    /// write ran has it skipped.
    pub(super) async fn write<R, F>(&self, urgency: Urgency, write: F) -> Result<R>
    where
        R: Send + 'static,
        F: for<'c> FnOnce(&'c mut SqliteConnection) -> BoxFuture<'c, Result<R>> + Send + 'static,
    {
        self.job(urgency, Journal::File, move |owned| write(&mut owned.conn)).await
    }

    /// [`Writer::write`] for a write whose size a message bounds (a chat turn's start): its savepoint's journal
    /// stays in memory.
    pub(super) async fn write_bounded<R, F>(&self, urgency: Urgency, write: F) -> Result<R>
    where
        R: Send + 'static,
        F: for<'c> FnOnce(&'c mut SqliteConnection) -> BoxFuture<'c, Result<R>> + Send + 'static,
    {
        self.job(urgency, Journal::Memory, move |owned| write(&mut owned.conn)).await
    }

    /// Hands over a running turn's progress. Never waits.
    pub(super) fn submit(&self, progress: TurnProgress) {
        let _ = self.line.send(Message::Progress(progress));
    }

    /// Lets go of what a turn that will not end handed over: whatever of it is still here is written in the
    /// background (its answer so far stays `interrupted`). Nothing is left of a turn that ended. Never waits.
    pub(super) fn abandon(&self, turn: Uuid) {
        let _ = self.line.send(Message::Abandon(turn));
    }

    /// Closes a turn with what it leaves, together with its progress not written yet (its events first).
    pub(super) async fn finish(&self, turn: Uuid, mut end: TurnEnd) -> Result<Option<ThreadStamp>> {
        self.job(Urgency::Waited, Journal::Memory, move |owned| {
            Box::pin(async move {
                let taken = owned.progress.take(turn);
                if let Some(taken) = &taken {
                    // The runs handed over one after another, and the end's, stored as few rows: the text
                    // deltas of a whole answer as one.
                    let mut events = Vec::new();
                    for run in taken.events.iter().cloned().chain(std::mem::take(&mut end.events)) {
                        crate::EventRun::push_merged(&mut events, run);
                    }
                    end.events = events;
                }
                let ended = turn_writes::end_turn(&mut owned.conn, turn, &end).await;
                if ended.is_err() {
                    // Back for the turn's next attempt to close itself.
                    if let Some(taken) = taken {
                        owned.progress.put_back(taken);
                    }
                }
                ended
            })
        })
        .await
    }

    async fn job<R, F>(&self, urgency: Urgency, journal: Journal, write: F) -> Result<R>
    where
        R: Send + 'static,
        F: for<'c> FnOnce(&'c mut Owned) -> BoxFuture<'c, Result<R>> + Send + 'static,
    {
        let (reply, outcome) = oneshot::channel::<Result<R>>();
        // Counted as waiting (metrics) until the writer takes it up, or its caller goes away.
        let waiting = Waiting::new();
        let run: Run = Box::new(move |owned| {
            Box::pin(async move {
                drop(waiting);
                if reply.is_closed() {
                    let skipped: Answer = Box::new(|_| ());
                    return (true, skipped);
                }
                let done = write(owned).await;
                let ok = done.is_ok();
                let answer: Answer = Box::new(move |failed_commit| {
                    let _ = reply.send(match failed_commit {
                        Some(e) if ok => Err(StoreError::Database(sqlx::Error::Protocol(format!(
                            "the transaction was not committed: {e}"
                        )))),
                        _ => done,
                    });
                });
                (ok, answer)
            })
        });
        if self.line.send(Message::Write(urgency, Job { journal, run })).is_err() {
            return Err(StoreError::Database(sqlx::Error::WorkerCrashed));
        }
        outcome.await.unwrap_or_else(|_| Err(StoreError::Database(sqlx::Error::WorkerCrashed)))
    }
}

/// Progress handed over and not written yet.
#[derive(Default)]
struct Progress {
    turns: std::collections::HashMap<Uuid, TurnProgress>,
    /// Turns with an answer not written yet, in order of hand-over (some may have ended since).
    unsaved: VecDeque<Uuid>,
    /// Of `unsaved`, how many are still to be written before progress gathers again: a round takes what was
    /// there when it began, in batches written one after another.
    round: usize,
}

impl Progress {
    fn add(&mut self, progress: TurnProgress) {
        if progress.answer.is_some() && self.turns.get(&progress.turn).is_none_or(|held| held.answer.is_none()) {
            self.unsaved.push_back(progress.turn);
        }
        match self.turns.entry(progress.turn) {
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(progress);
            }
            std::collections::hash_map::Entry::Occupied(mut slot) => slot.get_mut().merge(progress),
        }
    }

    fn take(&mut self, turn: Uuid) -> Option<TurnProgress> {
        self.turns.remove(&turn)
    }

    /// Puts back what was taken, before whatever came since.
    fn put_back(&mut self, mut older: TurnProgress) {
        if let Some(newer) = self.turns.remove(&older.turn) {
            older.merge(newer);
        }
        self.add(older);
    }

    fn has_unsaved(&self) -> bool {
        !self.unsaved.is_empty()
    }

    /// The answers of up to [`TURNS_PER_COMMIT`] turns, taken to be written; their events stay.
    fn take_answers(&mut self) -> Vec<TurnProgress> {
        if self.round == 0 {
            self.round = self.unsaved.len();
        }
        let mut batch = Vec::new();
        while batch.len() < TURNS_PER_COMMIT && self.round > 0 {
            self.round -= 1;
            let Some(turn) = self.unsaved.pop_front() else { break };
            if let Some(held) = self.turns.get_mut(&turn) {
                if let Some(answer) = held.answer.take() {
                    batch.push(TurnProgress { turn, user: held.user, events: Vec::new(), answer: Some(answer) });
                }
            }
        }
        batch
    }

    /// Puts back answers whose batch failed; a newer one handed over since stays (with the older's context).
    fn put_back_answers(&mut self, batch: Vec<TurnProgress>) {
        for older in batch {
            let Some(held) = self.turns.get_mut(&older.turn) else { continue };
            match held.answer.as_mut() {
                Some(newer) if newer.update.context.is_none() => {
                    newer.update.context = older.answer.and_then(|a| a.update.context);
                }
                Some(_) => {}
                None => {
                    held.answer = older.answer;
                    self.unsaved.push_back(older.turn);
                }
            }
        }
    }
}

/// The writes waiting, one line per urgency.
#[derive(Default)]
struct Lines([VecDeque<Job>; 3]);

impl Lines {
    fn put(&mut self, message: Message, progress: &mut Progress) {
        match message {
            Message::Write(urgency, job) => self.0[urgency as usize].push_back(job),
            Message::Progress(p) => progress.add(p),
            Message::Abandon(turn) => {
                if let Some(left) = progress.take(turn) {
                    self.0[Urgency::Background as usize].push_back(write_left(left));
                }
            }
        }
    }

    fn most_urgent(&self) -> Option<Urgency> {
        [Urgency::Start, Urgency::Waited, Urgency::Background].into_iter().find(|u| !self.0[*u as usize].is_empty())
    }

    /// The next write of `urgency`, if its journal is kept as `journal`'s.
    fn next(&mut self, urgency: Urgency, journal: Journal) -> Option<Run> {
        let line = &mut self.0[urgency as usize];
        if line.front()?.journal != journal {
            return None;
        }
        line.pop_front().map(|job| job.run)
    }
}

async fn run(mut arrivals: mpsc::UnboundedReceiver<Message>, mut owned: Owned) {
    let mut lines = Lines::default();
    let mut progress_due = Instant::now();
    loop {
        // Waits for work: a write, or progress once it has gathered.
        if lines.most_urgent().is_none() {
            let arrived = if owned.progress.has_unsaved() {
                tokio::select! {
                    message = arrivals.recv() => Some(message),
                    () = tokio::time::sleep_until(progress_due) => None,
                }
            } else {
                Some(arrivals.recv().await)
            };
            match arrived {
                // Every address is gone: the store is closed.
                Some(None) => return,
                Some(Some(message)) => lines.put(message, &mut owned.progress),
                None => {}
            }
        }
        while let Ok(message) = arrivals.try_recv() {
            lines.put(message, &mut owned.progress);
        }
        match lines.most_urgent() {
            Some(Urgency::Background) if owned.progress.has_unsaved() && Instant::now() >= progress_due => {
                progress_due = save_progress(&mut owned).await;
            }
            Some(urgency) => run_batch(&mut owned, &mut lines, &mut arrivals, urgency).await,
            None if owned.progress.has_unsaved() && Instant::now() >= progress_due => {
                progress_due = save_progress(&mut owned).await;
            }
            None => {}
        }
    }
}

/// Runs the writes waiting in one line in one transaction, until the line is empty, the transaction is full or
/// long enough, a more urgent write arrives, or the next write keeps its journal elsewhere.
async fn run_batch(
    owned: &mut Owned,
    lines: &mut Lines,
    arrivals: &mut mpsc::UnboundedReceiver<Message>,
    urgency: Urgency,
) {
    let at_most = match urgency {
        Urgency::Start => STARTS_TOGETHER,
        Urgency::Waited => WAITED_TOGETHER,
        Urgency::Background => BACKGROUND_TOGETHER,
    };
    let Some(journal) = lines.0[urgency as usize].front().map(|job| job.journal) else { return };
    let began = Instant::now();
    owned.use_journal(journal);
    // The first write's savepoint opens with the transaction, in one round trip. `immediate`: the write lock is
    // taken (or waited for) at once, never by a statement that has read already, which SQLite would refuse at
    // once rather than wait should anything else hold the lock.
    if let Err(e) = exec(&mut owned.conn, "begin immediate; savepoint w").await {
        tracing::error!(error = %e, "the writer could not begin a transaction");
        // Whatever either connection left open is rolled back: a transaction still open on the other one (after
        // a commit that failed) holds the write lock this one waits for.
        let _ = exec(&mut owned.conn, "rollback").await;
        let _ = exec(&mut owned.other, "rollback").await;
        tokio::time::sleep(RETRY_AFTER).await;
        return;
    }
    let mut answers: Vec<Answer> = Vec::new();
    let mut first = true;
    while let Some(run) = lines.next(urgency, journal) {
        let mut ok = std::mem::take(&mut first) || exec(&mut owned.conn, "release w; savepoint w").await.is_ok();
        if ok {
            match AssertUnwindSafe(run(owned)).catch_unwind().await {
                Ok((done, answer)) => {
                    ok = done;
                    answers.push(answer);
                }
                Err(_) => {
                    tracing::error!("a write panicked");
                    ok = false;
                }
            }
        }
        if !ok {
            if let Err(e) = exec(&mut owned.conn, "rollback to w").await {
                tracing::error!(error = %e, "rolling a failed write back failed");
                let _ = exec(&mut owned.conn, "rollback").await;
                let e = StoreError::Database(e);
                answers.into_iter().for_each(|answer| answer(Some(&e)));
                return;
            }
        }
        if answers.len() >= at_most || began.elapsed() >= BATCH_TIME {
            break;
        }
        while let Ok(message) = arrivals.try_recv() {
            lines.put(message, &mut owned.progress);
        }
        if lines.most_urgent().is_some_and(|first| (first as usize) < urgency as usize) {
            break;
        }
    }
    let committed = match exec(&mut owned.conn, "commit").await {
        Ok(_) => None,
        Err(e) => {
            tracing::error!(error = %e, writes = answers.len(), "committing writes failed");
            let _ = exec(&mut owned.conn, "rollback").await;
            Some(StoreError::Database(e))
        }
    };
    for answer in answers {
        answer(committed.as_ref());
    }
}

/// A write no one waits for: what an abandoned turn left.
fn write_left(left: TurnProgress) -> Job {
    let run: Run = Box::new(move |owned| {
        Box::pin(async move {
            let written = super::write_progress(&mut owned.conn, std::slice::from_ref(&left)).await;
            if let Err(e) = &written {
                tracing::warn!(error = %e, turn = %left.turn, "saving what an abandoned turn left failed");
            }
            let nobody: Answer = Box::new(|_| ());
            (written.is_ok(), nobody)
        })
    });
    // A turn's answer so far, which a message's size bounds.
    Job { journal: Journal::Memory, run }
}

/// Saves the answers of a batch of running turns; when the next batch is due.
async fn save_progress(owned: &mut Owned) -> Instant {
    let batch = owned.progress.take_answers();
    let next = if owned.progress.round > 0 { Instant::now() } else { Instant::now() + GATHER };
    if batch.is_empty() {
        return next;
    }
    let saved: BoxFuture<'_, Result<()>> = Box::pin(async {
        exec(&mut owned.conn, "begin immediate").await?;
        if let Err(e) = super::write_progress(&mut owned.conn, &batch).await {
            exec(&mut owned.conn, "rollback").await?;
            return Err(e);
        }
        Ok(exec(&mut owned.conn, "commit").await?)
    });
    match AssertUnwindSafe(saved).catch_unwind().await {
        Ok(Ok(())) => next,
        failed => {
            match failed {
                Ok(Err(e)) => tracing::warn!(error = %e, turns = batch.len(), "saving running turns' answers failed"),
                _ => tracing::error!(turns = batch.len(), "saving running turns' answers panicked"),
            }
            // Not left open after a commit that failed or a write that panicked (an error if nothing is open).
            let _ = exec(&mut owned.conn, "rollback").await;
            owned.progress.put_back_answers(batch);
            owned.progress.round = 0;
            Instant::now() + RETRY_AFTER
        }
    }
}

/// Runs statements without arguments.
fn exec<'c>(conn: &'c mut SqliteConnection, sql: &'static str) -> BoxFuture<'c, std::result::Result<(), sqlx::Error>> {
    Box::pin(async move { sqlx::query(sql).execute(conn).await.map(drop) })
}

#[cfg(test)]
impl Writer {
    /// The turns whose progress the writer holds.
    pub(super) async fn held_turns(&self) -> Vec<Uuid> {
        self.job(Urgency::Waited, Journal::File, |owned| {
            Box::pin(async move { Ok(owned.progress.turns.keys().copied().collect()) })
        })
        .await
        .expect("held turns")
    }
}

#[cfg(test)]
mod tests {
    use std::{
        str::FromStr,
        sync::{
            atomic::{AtomicUsize, Ordering},
            Arc, Mutex,
        },
    };

    use sqlx::{sqlite::SqliteConnectOptions, ConnectOptions};

    use super::*;

    /// The writer's two connections (journals in a file, in memory) to a database of their own, in memory.
    async fn connections() -> (SqliteConnection, SqliteConnection) {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let options =
            SqliteConnectOptions::from_str(&format!("sqlite:file:writer{n}?mode=memory&cache=shared")).unwrap();
        let mut file = options.connect().await.unwrap();
        sqlx::query("create table t (k text primary key)").execute(&mut file).await.unwrap();
        (file, options.pragma("temp_store", "memory").connect().await.unwrap())
    }

    async fn writer() -> Writer {
        let (file, memory) = connections().await;
        Writer::start(file, memory)
    }

    /// A write that inserts `key` and notes that it ran.
    fn insert(
        writer: &Writer,
        urgency: Urgency,
        key: &'static str,
        ran: &Arc<Mutex<Vec<&'static str>>>,
    ) -> tokio::task::JoinHandle<Result<()>> {
        let (writer, ran) = (writer.clone(), ran.clone());
        tokio::spawn(async move {
            writer
                .write(urgency, move |conn| {
                    Box::pin(async move {
                        ran.lock().unwrap().push(key);
                        sqlx::query("insert into t (k) values (?)").bind(key).execute(conn).await?;
                        Ok(())
                    })
                })
                .await
        })
    }

    /// A write that inserts `key` twice: the second insert fails (the key is taken) after the first went in.
    fn insert_twice(writer: &Writer, key: &'static str) -> tokio::task::JoinHandle<Result<()>> {
        let writer = writer.clone();
        tokio::spawn(async move {
            writer
                .write(Urgency::Waited, move |conn| {
                    Box::pin(async move {
                        for _ in 0..2 {
                            sqlx::query("insert into t (k) values (?)").bind(key).execute(&mut *conn).await?;
                        }
                        Ok(())
                    })
                })
                .await
        })
    }

    /// Holds the writer until the returned sender is dropped.
    async fn hold(writer: &Writer) -> oneshot::Sender<()> {
        let (release, released) = oneshot::channel::<()>();
        let (holding, held) = oneshot::channel();
        let writer = writer.clone();
        tokio::spawn(async move {
            writer
                .write(Urgency::Background, move |_| {
                    Box::pin(async move {
                        let _ = holding.send(());
                        let _ = released.await;
                        Ok(())
                    })
                })
                .await
        });
        held.await.unwrap();
        release
    }

    async fn keys(writer: &Writer) -> Vec<String> {
        writer
            .write(Urgency::Waited, |conn| {
                Box::pin(async move { Ok(sqlx::query_scalar("select k from t order by k").fetch_all(conn).await?) })
            })
            .await
            .unwrap()
    }

    /// Puts the writes `send` sends in line while the writer is held, each in line before the next, then lets
    /// the writer go and waits until all succeeded.
    async fn in_line_while_held<T>(
        writer: &Writer,
        sent: impl IntoIterator<Item = T>,
        mut send: impl FnMut(T) -> tokio::task::JoinHandle<Result<()>>,
    ) {
        let release = hold(writer).await;
        let mut writes = Vec::new();
        for item in sent {
            writes.push(send(item));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        drop(release);
        for write in writes {
            write.await.unwrap().unwrap();
        }
    }

    #[tokio::test]
    async fn starts_go_first_then_waited_writes_then_the_rest_and_equals_in_order() {
        let writer = writer().await;
        let ran = Arc::new(Mutex::new(Vec::new()));
        let writes = [
            ("background", Urgency::Background),
            ("end", Urgency::Waited),
            ("start 1", Urgency::Start),
            ("start 2", Urgency::Start),
        ];
        in_line_while_held(&writer, writes, |(key, urgency)| insert(&writer, urgency, key, &ran)).await;
        assert_eq!(*ran.lock().unwrap(), vec!["start 1", "start 2", "end", "background"]);
    }

    /// A write that notes where its savepoint's journal is kept (`temp_store`: 0 is SQLite's default, a file
    /// past 64 KiB; 2 is memory).
    fn note_journal(
        name: &'static str,
        seen: Arc<Mutex<Vec<(&'static str, i64)>>>,
    ) -> impl for<'c> FnOnce(&'c mut SqliteConnection) -> BoxFuture<'c, Result<()>> + Send + 'static {
        move |conn| {
            Box::pin(async move {
                let place: i64 = sqlx::query_scalar("pragma temp_store").fetch_one(conn).await?;
                seen.lock().unwrap().push((name, place));
                Ok(())
            })
        }
    }

    #[tokio::test]
    async fn each_write_keeps_its_savepoints_journal_where_its_size_allows_and_equals_stay_in_order() {
        let writer = writer().await;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let writes = [("a", false), ("b", true), ("c", true), ("d", false)];
        in_line_while_held(&writer, writes, |(name, bounded)| {
            let (writer, seen) = (writer.clone(), seen.clone());
            tokio::spawn(async move {
                match bounded {
                    true => writer.write_bounded(Urgency::Waited, note_journal(name, seen)).await,
                    false => writer.write(Urgency::Waited, note_journal(name, seen)).await,
                }
            })
        })
        .await;
        assert_eq!(*seen.lock().unwrap(), vec![("a", 0), ("b", 2), ("c", 2), ("d", 0)]);
    }

    #[tokio::test]
    async fn a_failed_write_rolls_back_only_its_own() {
        let writer = writer().await;
        let ran = Arc::new(Mutex::new(Vec::new()));
        let release = hold(&writer).await;
        let first = insert(&writer, Urgency::Waited, "a", &ran);
        let failing = insert_twice(&writer, "b");
        tokio::time::sleep(Duration::from_millis(20)).await;
        let last = insert(&writer, Urgency::Waited, "c", &ran);
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(release);
        first.await.unwrap().unwrap();
        assert!(failing.await.unwrap().is_err());
        last.await.unwrap().unwrap();
        assert_eq!(keys(&writer).await, vec!["a", "c"]);
    }

    #[tokio::test]
    async fn a_transaction_whose_first_write_fails_keeps_the_others() {
        let writer = writer().await;
        let ran = Arc::new(Mutex::new(Vec::new()));
        let release = hold(&writer).await;
        let failing = insert_twice(&writer, "a");
        tokio::time::sleep(Duration::from_millis(20)).await;
        let kept = insert(&writer, Urgency::Waited, "b", &ran);
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(release);
        assert!(failing.await.unwrap().is_err());
        kept.await.unwrap().unwrap();
        assert_eq!(keys(&writer).await, vec!["b"]);
    }

    #[tokio::test]
    async fn a_start_arriving_cuts_a_transaction_of_other_writes_short() {
        let writer = writer().await;
        let ran = Arc::new(Mutex::new(Vec::new()));
        let release = hold(&writer).await;
        let mut writes = Vec::new();
        // The first background write sends a start while its transaction runs.
        {
            let (inner, noted) = (writer.clone(), ran.clone());
            let starts = Arc::new(Mutex::new(Vec::new()));
            let handle = starts.clone();
            writes.push(tokio::spawn(async move {
                inner
                    .clone()
                    .write(Urgency::Background, move |_| {
                        Box::pin(async move {
                            noted.lock().unwrap().push("background 1");
                            handle.lock().unwrap().push(insert(&inner, Urgency::Start, "start", &noted));
                            tokio::task::yield_now().await;
                            Ok(())
                        })
                    })
                    .await
            }));
            tokio::time::sleep(Duration::from_millis(20)).await;
            writes.push(insert(&writer, Urgency::Background, "background 2", &ran));
            tokio::time::sleep(Duration::from_millis(20)).await;
            drop(release);
            for write in writes {
                write.await.unwrap().unwrap();
            }
            let start = starts.lock().unwrap().pop().unwrap();
            start.await.unwrap().unwrap();
        }
        assert_eq!(*ran.lock().unwrap(), vec!["background 1", "start", "background 2"]);
    }

    #[tokio::test]
    async fn a_transaction_left_open_on_the_other_connection_is_rolled_back_and_the_write_runs_after() {
        // A database file (in memory, one connection's open transaction would make the other wait for good).
        let dir = tempfile::tempdir().unwrap();
        let options = SqliteConnectOptions::new()
            .filename(dir.path().join("writer.db"))
            .create_if_missing(true)
            .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
            .busy_timeout(Duration::from_millis(100));
        let mut file = options.connect().await.unwrap();
        sqlx::query("create table t (k text primary key)").execute(&mut file).await.unwrap();
        let mut memory = options.pragma("temp_store", "memory").connect().await.unwrap();
        // As after a commit that failed: the other connection still holds the write lock.
        exec(&mut memory, "begin immediate").await.unwrap();
        let mut owned = Owned { conn: file, journal: Journal::File, other: memory, progress: Progress::default() };
        let mut lines = Lines::default();
        let run: Run = Box::new(|owned| {
            Box::pin(async move {
                let inserted = sqlx::query("insert into t (k) values ('after')").execute(&mut owned.conn).await;
                let nobody: Answer = Box::new(|_| ());
                (inserted.is_ok(), nobody)
            })
        });
        lines.put(Message::Write(Urgency::Waited, Job { journal: Journal::File, run }), &mut owned.progress);
        let (_line, mut arrivals) = mpsc::unbounded_channel();
        // The first try cannot begin; the second can, and runs the write.
        for _ in 0..2 {
            run_batch(&mut owned, &mut lines, &mut arrivals, Urgency::Waited).await;
        }
        assert!(lines.most_urgent().is_none(), "the write ran");
        let keys: Vec<String> = sqlx::query_scalar("select k from t").fetch_all(&mut owned.conn).await.unwrap();
        assert_eq!(keys, vec!["after"]);
    }

    #[tokio::test]
    async fn a_caller_that_went_away_has_its_write_skipped() {
        let writer = writer().await;
        let ran = Arc::new(Mutex::new(Vec::new()));
        let release = hold(&writer).await;
        let gone = insert(&writer, Urgency::Waited, "gone", &ran);
        tokio::time::sleep(Duration::from_millis(20)).await;
        gone.abort();
        let kept = insert(&writer, Urgency::Waited, "kept", &ran);
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(release);
        kept.await.unwrap().unwrap();
        assert_eq!(keys(&writer).await, vec!["kept"]);
    }
}
