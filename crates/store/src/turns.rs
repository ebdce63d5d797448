//! Chat turns: who holds a conversation, their progress, end and events, and idempotent requests; the steps
//! each took. The storage interfaces both backends implement, and what both read of a turn's rows.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;
use wire::{Message, Trace, TraceStep, Usage};

use super::columns::{convert, shared_sql, stored_row, Stored};
use super::{now, AnswerDraft, NewMessage, Result, StoreError, ThreadStamp, TurnLimits};

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

/// One stored event of a turn; its data is JSON text.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    pub seq: i64,
    pub name: String,
    pub data: String,
}

/// A stored event is a run of one.
impl From<StoredEvent> for EventRun {
    fn from(event: StoredEvent) -> Self {
        EventRun { seq: event.seq, last_seq: event.seq, name: event.name, data: event.data }
    }
}

/// Events of a turn as they are stored: one event, or a run of events of one name that came one after another
/// (numbered `seq` to `last_seq`), kept as one row whose data is a JSON array of each event's data. A turn's text
/// comes as hundreds of deltas: stored one row each, they were most of what a turn's end wrote.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct EventRun {
    pub seq: i64,
    pub last_seq: i64,
    pub name: String,
    pub data: String,
}

impl EventRun {
    /// One event.
    pub fn single(seq: i64, name: &str, data: String) -> Self {
        Self { seq, last_seq: seq, name: name.to_string(), data }
    }

    /// The events named `name` whose data are `data`, in order, the first numbered `seq`.
    pub fn of<'a>(seq: i64, name: &str, data: impl ExactSizeIterator<Item = &'a str>) -> Self {
        let count = data.len() as i64;
        debug_assert!(count > 0, "a run of no events");
        let data = match count {
            1 => data.collect(),
            _ => {
                let mut joined = String::from("[");
                for (i, item) in data.enumerate() {
                    if i > 0 {
                        joined.push(',');
                    }
                    joined.push_str(item);
                }
                joined.push(']');
                joined
            }
        };
        Self { seq, last_seq: seq + count.max(1) - 1, name: name.to_string(), data }
    }

    /// The events' data separated by commas (what the JSON array holds).
    fn items(&self) -> &str {
        match self.last_seq > self.seq {
            true => self.data.get(1..self.data.len().saturating_sub(1)).unwrap_or(""),
            false => &self.data,
        }
    }

    /// Adds `run` after the last of `runs`, into it when it goes on where that one ends and has its name.
    pub fn push_merged(runs: &mut Vec<EventRun>, run: EventRun) {
        match runs.last_mut() {
            // Appended in place: a turn's text handed over in many pieces costs in proportion to its length.
            Some(last) if last.name == run.name && last.last_seq + 1 == run.seq => {
                match last.last_seq > last.seq {
                    true => {
                        last.data.pop();
                    }
                    false => last.data.insert(0, '['),
                }
                last.data.push(',');
                last.data.push_str(run.items());
                last.data.push(']');
                last.last_seq = run.last_seq;
            }
            _ => runs.push(run),
        }
    }

    /// The run's events numbered after `after`, in order. A run whose data is not an array of its events' data
    /// (Quire never stores one) gives none.
    pub fn events_after(self, after: i64) -> Vec<StoredEvent> {
        if self.last_seq <= after {
            return Vec::new();
        }
        if self.last_seq == self.seq {
            return vec![StoredEvent { seq: self.seq, name: self.name, data: self.data }];
        }
        let items: Vec<&serde_json::value::RawValue> = match serde_json::from_str(&self.data) {
            Ok(items) => items,
            Err(_) => return Vec::new(),
        };
        if items.len() as i64 != self.last_seq - self.seq + 1 {
            return Vec::new();
        }
        (self.seq..)
            .zip(items)
            .filter(|(seq, _)| *seq > after)
            .map(|(seq, data)| StoredEvent { seq, name: self.name.clone(), data: data.get().to_string() })
            .collect()
    }
}

shared_sql! {
    rows(EventRun, TraceRow<D::Id, D::Json>);
    /// The events of `turn` after `after_seq`, in order. (A row stored before runs were has no `last_seq`.)
    pub(crate) async fn turn_events_after(
        conn: &mut D::Connection,
        turn: Uuid,
        after_seq: i64,
    ) -> Result<Vec<StoredEvent>> {
        let runs: Vec<EventRun> = sqlx::query_as(
            "select seq, coalesce(last_seq, seq) as last_seq, name, data from turn_events
             where turn_id = $1 and coalesce(last_seq, seq) > $2 order by seq",
        )
        .bind(D::id(turn))
        .bind(after_seq)
        .fetch_all(conn)
        .await?;
        Ok(runs.into_iter().flat_map(|run| run.events_after(after_seq)).collect())
    }

    /// The person's trace found by `key`.
    pub(crate) async fn trace(conn: &mut D::Connection, user: Uuid, key: TraceKey) -> Result<Option<Trace>> {
        let (column, id) = key.column();
        let sql = format!(
            "select {TRACE_COLUMNS} from turn_traces where {column} = $1 and {}",
            crate::projects::readable("turn_traces.thread_id", "$2")
        );
        let row: Option<TraceRow<D::Id, D::Json>> =
            sqlx::query_as(&sql).bind(D::id(id)).bind(D::id(user)).fetch_optional(conn).await?;
        row.map(Trace::try_from).transpose()
    }

    /// The person's traces of `thread`, oldest first.
    pub(crate) async fn thread_traces(conn: &mut D::Connection, user: Uuid, thread: Uuid) -> Result<Vec<Trace>> {
        let sql = format!(
            "select {TRACE_COLUMNS} from turn_traces where thread_id = $1 and {} order by created_at, turn_id",
            crate::projects::readable("$1", "$2")
        );
        let rows: Vec<TraceRow<D::Id, D::Json>> =
            sqlx::query_as(&sql).bind(D::id(thread)).bind(D::id(user)).fetch_all(conn).await?;
        convert(rows)
    }

    /// Stores a turn's trace (see [`WRITE_TRACE`]); whether it was stored.
    pub(crate) async fn write_trace(
        conn: &mut D::Connection,
        turn: Uuid,
        trace: &TurnTrace,
        message: Option<Uuid>,
    ) -> Result<bool> {
        let written = sqlx::query(WRITE_TRACE)
            .bind(D::id(turn))
            .bind(message.map(D::id))
            .bind(D::json(&trace.steps)?)
            .bind(D::time(now()))
            .bind(D::id(trace.thread))
            .bind(D::id(trace.user))
            .execute(conn)
            .await?;
        Ok(D::rows_affected(&written) > 0)
    }

    /// See [`Turns::claim_idempotency_key`]; its statements must run in one transaction.
    pub(crate) async fn claim_idempotency_key(
        conn: &mut D::Connection,
        user: Uuid,
        key: &str,
        fingerprint: &str,
        ttl_secs: i64,
    ) -> Result<IdempotencyClaim> {
        let now = now();
        sqlx::query("delete from idempotency_keys where user_id = $1 and key = $2 and expires_at < $3")
            .bind(D::id(user))
            .bind(key)
            .bind(D::time(now))
            .execute(&mut *conn)
            .await?;
        let inserted = sqlx::query(
            "insert into idempotency_keys (user_id, key, fingerprint, created_at, expires_at)
             values ($1, $2, $3, $4, $5) on conflict (user_id, key) do nothing",
        )
        .bind(D::id(user))
        .bind(key)
        .bind(fingerprint)
        .bind(D::time(now))
        .bind(D::time(now + chrono::Duration::seconds(ttl_secs)))
        .execute(&mut *conn)
        .await?;
        if D::rows_affected(&inserted) == 1 {
            return Ok(IdempotencyClaim::Fresh);
        }
        let (fingerprint, response) =
            sqlx::query_as("select fingerprint, response from idempotency_keys where user_id = $1 and key = $2")
                .bind(D::id(user))
                .bind(key)
                .fetch_one(conn)
                .await?;
        Ok(IdempotencyClaim::Existing { fingerprint, response })
    }

    /// Refreshes the heartbeat of those of `turns` still running; those that must stop (see [`to_stop`]): a
    /// turn started by a member of the conversation's project stops too once they may no longer write in it
    /// (removed, or lowered to viewer).
    pub(crate) async fn heartbeat_turns(conn: &mut D::Connection, turns: &[Uuid]) -> Result<Vec<Uuid>> {
        if turns.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "update turns set heartbeat_at = $1 where {} and status = 'running'
             returning id, stop_requested or (sender_id is not null and sender_id <> user_id and not {})",
            D::in_ids("id", "$2"),
            crate::projects::thread_access("turns.thread_id", "turns.sender_id", wire::ProjectRole::Editor)
        );
        let beaten: Vec<(D::Id, bool)> =
            sqlx::query_as(&sql).bind(D::time(now())).bind(D::ids(turns)).fetch_all(conn).await?;
        to_stop(turns, beaten)
    }

    /// See [`Turns::release_abandoned_answers`].
    pub(crate) async fn release_abandoned_answers(conn: &mut D::Connection, stale_after_ms: i64) -> Result<u64> {
        let released = sqlx::query(
            "update messages set writing = false where writing and not exists (select 1 from turns t
             where t.thread_id = messages.thread_id and t.status = 'running' and t.heartbeat_at >= $1)",
        )
        .bind(D::time(now() - chrono::Duration::milliseconds(stale_after_ms)))
        .execute(conn)
        .await?;
        Ok(D::rows_affected(&released))
    }
}

/// Stores a turn's trace, replacing one of the same turn and owner, with the answer it kept if that is a message
/// of its thread; stores nothing for a thread missing or another user's. Binds the turn, its answer, the steps
/// as JSON, the time, the thread and its owner.
pub(crate) const WRITE_TRACE: &str =
    "insert into turn_traces (turn_id, thread_id, user_id, message_id, steps, created_at)
    select $1, t.id, t.user_id, (select m.id from messages m where m.id = $2 and m.thread_id = t.id), $3, $4
    from threads t where t.id = $5 and t.user_id = $6
    on conflict (turn_id) do update set message_id = excluded.message_id, steps = excluded.steps
    where turn_traces.user_id = excluded.user_id";

/// The columns a [`TraceRow`] reads.
const TRACE_COLUMNS: &str = "turn_id, thread_id, message_id, steps";

stored_row! {
    /// A trace's row, its steps as the backend keeps JSON (`J`).
    TraceRow<I, J> -> Trace {
        turn_id: I,
        thread_id: I,
        message_id: Option<I>,
    } with {
        steps: J,
    } => {
        steps: serde_json::from_value(steps.read("steps")?)
            .map_err(|e| StoreError::Corrupt(format!("trace steps: {e}")))?,
    }
}

/// What a turn leaves behind, stored by [`Turns::finish_turn`] in the transaction that closes it.
#[derive(Debug, Default, Clone)]
pub struct TurnEnd {
    /// Its last events; the final one says how it ended.
    pub events: Vec<EventRun>,
    /// The answer's final state, if one is kept.
    pub answer: Option<FinalAnswer>,
    /// The tokens it spent.
    pub usage: Option<SpentTokens>,
    /// The steps it took, kept under the turn's id and, when it kept one, its answer's.
    pub trace: Option<TurnTrace>,
}

/// A turn's steps as [`Turns::finish_turn`] stores them.
#[derive(Debug, Clone)]
pub struct TurnTrace {
    pub user: Uuid,
    pub thread: Uuid,
    pub steps: Vec<TraceStep>,
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
    /// The thread's author: the thread's totals are theirs.
    pub user: Uuid,
    /// Whose ledger (and so budget) the tokens go on: who started the turn (the author, or an editor of the
    /// thread's project).
    pub payer: Uuid,
    pub thread: Uuid,
    pub model: String,
    pub usage: Usage,
    /// Of `usage`, the tokens Quire counted itself: their calls ended before the provider reported them.
    pub counted_tokens: u64,
}

/// What one running turn produced since its progress was last saved: its new events and, for a typed turn,
/// the answer as it stands.
#[derive(Debug, Clone)]
pub struct TurnProgress {
    pub turn: Uuid,
    pub user: Uuid,
    pub events: Vec<EventRun>,
    pub answer: Option<AnswerDraft>,
}

impl TurnProgress {
    /// Adds what the turn handed over later: events after the earlier ones, the newer answer instead of the
    /// older (keeping the older's context record if the newer carries none, as it is sent only once).
    pub fn merge(&mut self, newer: TurnProgress) {
        // Runs are kept as handed over: one that was written already is written again as it was (the same first
        // number), so a repeated write keeps its first events (see `Turns::append_turn_events`).
        self.events.extend(newer.events);
        if let Some(mut answer) = newer.answer {
            if answer.update.context.is_none() {
                answer.update.context = self.answer.take().and_then(|a| a.update.context);
            }
            self.answer = Some(answer);
        }
    }
}

/// How a trace is found: by the answer its turn wrote, or by its turn.
#[derive(Debug, Clone, Copy)]
pub enum TraceKey {
    Answer(Uuid),
    Turn(Uuid),
}

impl TraceKey {
    /// The `turn_traces` column the key is kept in, and its value.
    pub(crate) fn column(self) -> (&'static str, Uuid) {
        match self {
            Self::Answer(message) => ("message_id", message),
            Self::Turn(turn) => ("turn_id", turn),
        }
    }
}

/// A turn's start: its conversation's author and the person who starts it, thread and id, how long a running turn
/// may stay silent before it counts as dead, and the person's message that starts it (none for a silent
/// generation or a retry).
#[derive(Debug, Clone)]
pub struct TurnStart {
    /// The conversation's author: every row the turn writes is theirs.
    pub user: Uuid,
    /// Who starts it: the author, or an editor of the conversation's project. The start is refused (as for a
    /// missing conversation) unless they may write in it, and counts against their budgets and caps.
    pub sender: Uuid,
    pub thread: Uuid,
    pub turn: Uuid,
    pub stale_after_ms: i64,
    pub request: Option<NewMessage>,
    /// The id `request` is saved under: chosen by the caller, which may read the conversation while the start
    /// commits and must tell this message apart.
    pub message_id: Uuid,
}

/// A started turn: the person's message as saved, and the thread's stamp right before the start saved it (read
/// where no other write can land before the start's own; `None` when the start had to number the thread's
/// messages again: they all changed).
#[derive(Debug, Clone)]
pub struct Started {
    pub message: Option<Message>,
    pub before: Option<ThreadStamp>,
    /// What the turn may spend, reserved against the budgets until it ends (see
    /// [`Spending::allowance`](super::Spending::allowance)); `None` when no budget applies.
    pub allowance: Option<u64>,
}

stored_row! {
    /// A turn as stored, with the backend's id (`I`) and time (`T`) columns (see [`Stored`]).
    TurnRow<I, T> -> TurnRecord {
        id: I,
        thread_id: I,
        stop_requested: bool,
        heartbeat_at: T,
    } with {
        status: String,
    } => {
        running: status == "running",
    }
}

/// The turns a heartbeat asked about that must stop: those it reached (still running) for which a stop was
/// requested, and those it did not reach, which no longer hold their conversation: taken over by a newer turn
/// once their heartbeat had gone quiet, or deleted with their conversation.
pub(crate) fn to_stop<I: Stored<Uuid>>(asked: &[Uuid], beaten: Vec<(I, bool)>) -> Result<Vec<Uuid>> {
    let mut going_on = std::collections::HashSet::with_capacity(beaten.len());
    for (id, stop) in beaten {
        if !stop {
            going_on.insert(id.read("turn id")?);
        }
    }
    Ok(asked.iter().filter(|id| !going_on.contains(id)).copied().collect())
}

/// Chat turns: who holds a conversation, their progress, end and events, and idempotent requests.
#[async_trait]
pub trait Turns: Send + Sync {
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
    /// Starts a turn (see [`TurnStart`]): takes its thread, `Conflict` while another live turn holds it (a turn
    /// whose heartbeat is older than `stale_after_ms` is considered dead and released, and its answer, left
    /// marked as being written, is let into the search index), and appends the person's message that starts it,
    /// returned as saved: one commit where a turn starts. Refused with [`StoreError::BudgetExceeded`] or
    /// [`StoreError::TooManyTurns`] when the person (or everyone) spent today's budget or already has
    /// `limits.concurrent_turns` running; the check and the start are one atomic step, so starts of one person at
    /// once, on any instance, are counted one after the other (and, under a global budget, everyone's starts).
    /// When a budget applies, the turn reserves what it may spend ([`Started::allowance`]) in the same step: the
    /// starts after it count it as spent until it ends.
    async fn start_turn(&self, start: TurnStart, limits: &TurnLimits) -> Result<Option<Message>> {
        self.start_turn_stamped(start, limits).await.map(|started| started.message)
    }
    /// [`start_turn`](Self::start_turn), with the thread's stamp as the start found it (see [`Started`]).
    async fn start_turn_stamped(&self, start: TurnStart, limits: &TurnLimits) -> Result<Started>;
    /// A turn's start with no message and no limits (see [`start_turn`](Self::start_turn)).
    async fn begin_turn(&self, user: Uuid, thread: Uuid, turn: Uuid, stale_after_ms: i64) -> Result<()> {
        let start =
            TurnStart { user, sender: user, thread, turn, stale_after_ms, request: None, message_id: Uuid::now_v7() };
        self.start_turn(start, &TurnLimits::default()).await.map(drop)
    }
    /// Keeps these turns alive, in one statement; returns those of them that must stop (see [`to_stop`]): a stop
    /// was requested, or they no longer hold their conversation.
    async fn heartbeat_turns(&self, turns: &[Uuid]) -> Result<Vec<Uuid>>;
    async fn request_stop(&self, user: Uuid, thread: Uuid) -> Result<bool>;
    /// Closes a turn in one transaction with what it leaves (see [`TurnEnd`]): whoever sees it closed can read
    /// all of it. An answer of its thread still marked as being written (a turn ending without a final answer) is
    /// let into the search index. The events of the thread's earlier turns are dropped: only the newest turn's
    /// are kept for re-attaching. What the turn handed over (see [`submit_progress`](Self::submit_progress)) and
    /// is not written yet goes into the same commit, its events before `end`'s: nothing of the turn is written
    /// after it, and the end never waits for a batch of progress it is not in.
    async fn finish_turn(&self, turn: Uuid, end: TurnEnd) -> Result<()> {
        self.finish_turn_stamped(turn, end).await.map(drop)
    }
    /// [`finish_turn`](Self::finish_turn); when it saved an answer, the thread's stamp right after, read in the
    /// same transaction.
    async fn finish_turn_stamped(&self, turn: Uuid, end: TurnEnd) -> Result<Option<ThreadStamp>>;
    /// The newest turn of a thread.
    async fn latest_turn(&self, user: Uuid, thread: Uuid) -> Result<Option<TurnRecord>>;
    async fn append_turn_events(&self, turn: Uuid, events: &[EventRun]) -> Result<()>;
    /// Hands over what a running turn produced since it last did; it is written with a later batch, so a crash
    /// keeps the answer so far. Never waits. Where one process owns the store (SQLite) and follows its running
    /// turns in memory, the events wait for the turn's end; where several instances share it (PostgreSQL), they
    /// are stored as they come, for a listener on another instance.
    fn submit_progress(&self, progress: TurnProgress);
    /// Says that `turn` will not end (its task panicked or was dropped): what it handed over and the store still
    /// holds is saved as it stands (the answer so far stays `interrupted`) and let go. Does nothing for a turn
    /// that ended. Never waits.
    fn abandon_progress(&self, turn: Uuid);
    /// Saves the progress of several turns in one transaction now (events already stored are kept). Events of
    /// a turn that is gone and answers whose thread is gone (deleted while the turn ran) are skipped.
    async fn save_progress(&self, progress: &[TurnProgress]) -> Result<()>;
    /// Lets into the search index every answer still marked as being written whose conversation has no running
    /// turn heard from within `stale_after_ms`: its turn died, or ended without saving its final state. Returns
    /// how many there were.
    async fn release_abandoned_answers(&self, stale_after_ms: i64) -> Result<u64>;
    async fn turn_events_after(&self, turn: Uuid, after_seq: i64) -> Result<Vec<StoredEvent>>;
}

/// The steps each turn took.
#[async_trait]
pub trait Traces: Send + Sync {
    /// Stores a turn's trace, replacing one kept under the same turn; `NotFound` when its thread is missing or
    /// another user's, or its answer is not a message of that thread.
    async fn save_trace(&self, user: Uuid, trace: &Trace) -> Result<()>;
    /// The trace found by `key`; `NotFound` when there is none of `user`'s.
    async fn trace_by(&self, user: Uuid, key: TraceKey) -> Result<Trace>;
    /// The trace of the turn that wrote an answer; `NotFound` when the message is missing, another user's or
    /// has none (a person's message, an imported answer).
    async fn trace(&self, user: Uuid, message: Uuid) -> Result<Trace> {
        self.trace_by(user, TraceKey::Answer(message)).await
    }
    /// A turn's trace; `NotFound` when there is none or it is another user's.
    async fn turn_trace(&self, user: Uuid, turn: Uuid) -> Result<Trace> {
        self.trace_by(user, TraceKey::Turn(turn)).await
    }
    /// The traces of a thread's turns, oldest first; `NotFound` when the thread is missing or another user's.
    async fn thread_traces(&self, user: Uuid, thread: Uuid) -> Result<Vec<Trace>>;
}

/// Implements [`Traces`] for a backend, written once for both, as [`accounts_for`](super::accounts::accounts_for)
/// does. The module it is used in has the backend's `Shared` statements; the backend has `read` (a connection
/// for reads), `write_together` (a write in one transaction) and `owns` (whether a person owns a row).
macro_rules! traces_for {
    ($backend:ty) => {
        const _: () = {
            use tracing::instrument;
            use uuid::Uuid;
            use wire::Trace;
            use $crate::threads::{found, listing};
            use $crate::{Result, StoreError, TraceKey, Traces, TurnTrace};

            #[async_trait::async_trait]
            impl Traces for $backend {
                #[instrument(skip(self, trace), fields(turn = %trace.turn_id))]
                async fn save_trace(&self, user: Uuid, trace: &Trace) -> Result<()> {
                    let trace = trace.clone();
                    self.write_together(move |tx| {
                        Box::pin(async move {
                            if let Some(message) = trace.message_id {
                                Shared::must_be_in_thread(&mut *tx, user, trace.thread_id, message).await?;
                            }
                            let turn = TurnTrace { user, thread: trace.thread_id, steps: trace.steps };
                            found(Shared::write_trace(tx, trace.turn_id, &turn, trace.message_id).await?)
                        })
                    })
                    .await
                }

                #[instrument(skip(self))]
                async fn trace_by(&self, user: Uuid, key: TraceKey) -> Result<Trace> {
                    Shared::trace(&mut *self.read().await?, user, key).await?.ok_or(StoreError::NotFound)
                }

                #[instrument(skip(self))]
                async fn thread_traces(&self, user: Uuid, thread: Uuid) -> Result<Vec<Trace>> {
                    let traces = Shared::thread_traces(&mut *self.read().await?, user, thread).await?;
                    listing(traces, self.reads_thread(user, thread)).await
                }
            }
        };
    };
}
pub(crate) use traces_for;

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: i64, data: &str) -> StoredEvent {
        StoredEvent { seq, name: "text_delta".into(), data: data.into() }
    }

    #[test]
    fn runs_give_back_their_events_from_any_point() {
        let data = [r#"{"text":"a"}"#, r#"{"text":"\"],["}"#, "[1,2]", r#"{"text":"✓\n"}"#];
        let run = EventRun::of(5, "text_delta", data.iter().copied());
        assert_eq!((run.seq, run.last_seq), (5, 8));
        let all: Vec<StoredEvent> = (5..).zip(data).map(|(seq, d)| event(seq, d)).collect();
        for after in 0..=9 {
            let expected: Vec<StoredEvent> = all.iter().filter(|e| e.seq > after).cloned().collect();
            assert_eq!(run.clone().events_after(after), expected, "after {after}");
        }
        // One event keeps its data as it is, an array included.
        assert_eq!(EventRun::of(3, "text_delta", ["[1,2]"].into_iter()).events_after(0), vec![event(3, "[1,2]")]);
        // Data that is not an array of its events' data gives nothing rather than wrong events.
        let broken = EventRun { seq: 1, last_seq: 3, name: "text_delta".into(), data: "[1,2]".into() };
        assert!(broken.events_after(0).is_empty());
    }

    #[test]
    fn runs_that_go_on_one_another_are_merged_in_place() {
        let mut runs = Vec::new();
        EventRun::push_merged(&mut runs, EventRun::single(1, "thread_name", "{}".into()));
        EventRun::push_merged(&mut runs, EventRun::single(2, "text_delta", "1".into()));
        EventRun::push_merged(&mut runs, EventRun::of(3, "text_delta", ["2", "3"].into_iter()));
        EventRun::push_merged(&mut runs, EventRun::single(5, "text_delta", "4".into()));
        // A gap in the numbers, or another name, starts a run of its own.
        EventRun::push_merged(&mut runs, EventRun::single(7, "text_delta", "6".into()));
        EventRun::push_merged(&mut runs, EventRun::single(8, "message_complete", "{}".into()));
        let shape: Vec<(i64, i64, &str, &str)> =
            runs.iter().map(|r| (r.seq, r.last_seq, r.name.as_str(), r.data.as_str())).collect();
        assert_eq!(
            shape,
            [
                (1, 1, "thread_name", "{}"),
                (2, 5, "text_delta", "[1,2,3,4]"),
                (7, 7, "text_delta", "6"),
                (8, 8, "message_complete", "{}")
            ]
        );
        let events: Vec<i64> = runs.into_iter().flat_map(|r| r.events_after(3)).map(|e| e.seq).collect();
        assert_eq!(events, [4, 5, 7, 8]);
    }
}
