//! The writes of conversations' turns on SQLite: starts, ends and the answers' drafts.
//!
//! Every statement sent to a SQLite connection is a round trip to the connection's own thread, and the
//! writer's round trips are what every conversation's start and end wait for; on a busy machine a round trip
//! (waking that thread, then the task waiting for its answer) costs more than the statement. So each of these
//! writes is a [`Script`]: sqlx hands the whole text over at once and the connection's thread runs its
//! statements one after the other. Whatever a statement needs to know of an earlier one (whether the thread
//! was there, whether the answer was saved) it asks the database itself. A script's text depends only on which
//! parts a write has, so each is prepared once and kept (preparing the statements anew each time, which
//! writing a whole group of starts or ends as one script would take, measured slower than the round trips it
//! saves).

use chrono::{DateTime, Utc};
use sqlx::{
    sqlite::{SqliteArguments, SqliteRow},
    Arguments, Encode, FromRow, Row, Sqlite as Db, SqliteConnection, Type,
};
use uuid::Uuid;

use super::{is_unique_violation, Shared};
use crate::budgets::{spending_values, SPENDING};
use crate::columns::{Dialect, Stored};
use crate::messages::STAMP_COLUMNS;
use crate::turns::WRITE_TRACE;
use crate::{
    now, AnswerDraft, EventRun, NewMessage, Place, Result, Spending, SpentTokens, Started, StoreError, ThreadStamp,
    TurnEnd, TurnLimits, TurnStart, MAX_SEQ,
};
use wire::{Role, Usage};

/// Statements run in one round trip to the connection's thread. sqlx binds the `?` of all of them, in order,
/// to the values added; a statement that writes and should say so ends in `returning`.
#[derive(Default)]
pub(super) struct Script<'q> {
    sql: String,
    args: SqliteArguments<'q>,
    /// `?` written and values added so far: they must match (SQLite would take a missing value as null).
    parameters: usize,
    values: usize,
    error: Option<sqlx::error::BoxDynError>,
}

impl<'q> Script<'q> {
    /// Appends a statement; its `?` take the next values [`bind`](Self::bind) adds.
    pub(super) fn statement(&mut self, sql: &str) -> &mut Self {
        if !self.sql.is_empty() {
            self.sql.push_str(";\n");
        }
        self.sql.push_str(sql);
        self.parameters += sql.matches('?').count();
        self
    }

    /// Appends a statement written for both backends, with numbered parameters (`$1`, `$2`, ...) that each
    /// stand once and in their order, so they take the next values as `?` would. (sqlx binds a numbered
    /// parameter to that place among all of a script's values, not the statement's.) Its text must hold no `$`
    /// or `?` in a literal.
    pub(super) fn shared_statement(&mut self, sql: &str) -> &mut Self {
        let mut next = 1;
        let anonymous = lazy_regex::regex_replace_all!(r"\$([0-9]+)", sql, |_, n: &str| {
            if n.parse() != Ok(next) {
                self.error.get_or_insert(format!("parameter ${n} stands where ${next} should").into());
            }
            next += 1;
            "?"
        });
        self.statement(&anonymous)
    }

    /// The value of the next `?`.
    pub(super) fn bind<T: Encode<'q, Db> + Type<Db> + 'q>(&mut self, value: T) -> &mut Self {
        if let Err(e) = self.args.add(value) {
            self.error.get_or_insert(e);
        }
        self.values += 1;
        self
    }

    fn is_empty(&self) -> bool {
        self.sql.is_empty()
    }

    /// Runs it; the rows of its `returning` statements, in order.
    pub(super) async fn fetch_all(self, conn: &mut SqliteConnection) -> Result<Vec<SqliteRow>> {
        if self.is_empty() {
            return Ok(Vec::new());
        }
        if let Some(e) = self.error {
            return Err(StoreError::Database(sqlx::Error::Encode(e)));
        }
        if self.parameters != self.values {
            return Err(StoreError::Corrupt(format!(
                "a script of {} parameters was given {} values",
                self.parameters, self.values
            )));
        }
        Ok(sqlx::query_with(&self.sql, self.args).fetch_all(conn).await?)
    }
}

/// Takes the thread for one new turn and saves the person's message that starts it, unless `limits` refuse the
/// turn (a budget used up, too many turns running): then the writer rolls back what the script wrote. A refusal
/// answers before a conversation that is missing or busy.
pub(super) async fn start_turn(conn: &mut SqliteConnection, start: &TurnStart, limits: &TurnLimits) -> Result<Started> {
    let created = now();
    // The common case (no other turn marked running) is one script. Only a conflict looks at the running turn,
    // taken over if its heartbeat went quiet.
    let (taken, spending) = match take_thread(conn, start, limits, created).await {
        Err(StoreError::Database(e)) if is_unique_violation(&e) => {
            // The script's spending went with its failure: read again, so that a refusal answers before a busy
            // conversation does, as when nothing conflicts (and on PostgreSQL).
            let spending = Shared::spending(conn, start.sender, start.stale_after_ms, limits.daily_tokens > 0).await?;
            if let Some(refusal) = spending.refusal(limits, created) {
                return Err(refusal);
            }
            // Turns carry their thread's owner, so another person's thread matches nothing here.
            let taken_over = sqlx::query(
                "update turns set status = 'done'
                 where thread_id = ?1 and user_id = ?2 and status = 'running' and heartbeat_at < ?3",
            )
            .bind(start.thread.to_string())
            .bind(start.user.to_string())
            .bind(created.timestamp_micros() - start.stale_after_ms * 1000)
            .execute(&mut *conn)
            .await?
            .rows_affected()
                > 0;
            if !taken_over {
                return Err(StoreError::thread_busy());
            }
            // The dead turn's answer, still marked as being written, was cut off.
            sqlx::query("update messages set writing = 0 where thread_id = ? and writing = 1")
                .bind(start.thread.to_string())
                .execute(&mut *conn)
                .await?;
            match take_thread(conn, start, limits, created).await {
                Err(StoreError::Database(e)) if is_unique_violation(&e) => return Err(StoreError::thread_busy()),
                other => other?,
            }
        }
        other => other?,
    };
    if let Some(refusal) = spending.refusal(limits, created) {
        return Err(refusal);
    }
    // The writer runs one start at a time: the spending read above is still the whole story.
    let allowance = spending.allowance(limits);
    if let Some(reserved) = allowance.filter(|&tokens| tokens > 0) {
        sqlx::query("update turns set reserved_tokens = ? where id = ?")
            .bind(i64::try_from(reserved).unwrap_or(i64::MAX))
            .bind(start.turn.to_string())
            .execute(&mut *conn)
            .await?;
    }
    // A thread numbered up to `MAX_SEQ` saved nothing: numbered again, it has room for this turn's messages.
    let taken = match taken {
        Taken::Taken { message: None, .. } if Shared::renumber_if_full(conn, start.user, start.thread).await? => {
            match &start.request {
                Some(request) => {
                    let id = start.message_id;
                    let place =
                        insert_message(conn, start.user, id, request, created).await?.ok_or(StoreError::NotFound)?;
                    Taken::Taken { message: Some((id, place)), before: None }
                }
                None => Taken::Taken { message: None, before: None },
            }
        }
        other => other,
    };
    started(start, taken, created, allowance)
}

/// What [`take_thread`] did.
#[derive(Debug)]
enum Taken {
    /// The thread is missing or another person's: nothing was written.
    Missing,
    /// The turn is marked running; the person's message, if any, was saved under this id and there. The
    /// thread's stamp before (`None` once its messages were numbered again).
    Taken { message: Option<(Uuid, Place)>, before: Option<ThreadStamp> },
}

fn started(start: &TurnStart, taken: Taken, created: DateTime<Utc>, allowance: Option<u64>) -> Result<Started> {
    match (taken, &start.request) {
        (Taken::Missing, _) => Err(StoreError::NotFound),
        (Taken::Taken { message: Some((id, place)), before }, Some(request)) => {
            Ok(Started { message: Some(request.clone().saved(id, place, created)), before, allowance })
        }
        (Taken::Taken { before, .. }, _) => Ok(Started { message: None, before, allowance }),
    }
}

/// Marks a turn running in its thread, where the thread is its author's (bound twice) and the sender (bound
/// twice) may write in it, and a quoted document (bound three times) is one of the thread's.
static TAKE_TURN: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "insert into turns (id, thread_id, user_id, sender_id, status, started_at, heartbeat_at)
         select ?, ?, ?, ?, 'running', ?, ? where exists (select 1 from threads t where t.id = ? and t.user_id = ?
         and {})
         and (? is null or exists (select 1 from artifacts where id = ? and thread_id = ? and user_id = ?))
         returning null",
        crate::projects::thread_row_access("t", "?", wire::ProjectRole::Editor)
    )
});

/// Marks the turn running, which also checks the thread's owner and that the sender may write in it, and saves
/// the person's message if there is one, with the thread's next number; and reads what the sender spent and
/// runs, for `limits` to judge. The
/// spending and the thread's stamp are read first; then each statement that writes returns a row: the turn's,
/// then the message's number.
async fn take_thread(
    conn: &mut SqliteConnection,
    start: &TurnStart,
    limits: &TurnLimits,
    created: DateTime<Utc>,
) -> Result<(Taken, Spending)> {
    let at = created.timestamp_micros();
    let (thread, user) = (start.thread.to_string(), start.user.to_string());
    let mut script = Script::default();
    let (user_id, day, everyone, stale_before) =
        spending_values::<Db>(start.sender, start.stale_after_ms, limits.daily_tokens > 0);
    script.shared_statement(SPENDING).bind(user_id).bind(day).bind(everyone).bind(stale_before);
    push_stamp(&mut script, thread.clone(), user.clone());
    // A quote of a document that is not the thread's refuses the start, as a missing thread does.
    let quoted = start.request.as_ref().and_then(|m| m.quote.as_ref()).map(|q| q.artifact_id.to_string());
    let sender = start.sender.to_string();
    script
        .statement(&TAKE_TURN)
        .bind(start.turn.to_string())
        .bind(thread.clone())
        .bind(user.clone())
        .bind(sender.clone())
        .bind(at)
        .bind(at)
        .bind(thread.clone())
        .bind(user.clone())
        // The author, or an editor of the thread's project (`thread_row_access` names the sender twice).
        .bind(sender.clone())
        .bind(sender)
        .bind(quoted.clone())
        .bind(quoted)
        .bind(thread.clone())
        .bind(user.clone());
    let id = start.message_id;
    if let Some(message) = &start.request {
        // A missing thread matches nothing here either.
        push_new_message(&mut script, &id.to_string(), &thread, &user, NewRow::of(message), at, false);
    }
    let rows = script.fetch_all(conn).await?;
    let Some((spending, rows)) = rows.split_first() else {
        return Err(StoreError::Corrupt("a turn's start read no spending".into()));
    };
    let taken = match rows {
        [] | [_] => Taken::Missing,
        [stamp, _turn] => Taken::Taken { message: None, before: Some(stamp_of(stamp)?) },
        [stamp, _turn, message, ..] => {
            Taken::Taken { message: Some((id, place_of(message)?)), before: Some(stamp_of(stamp)?) }
        }
    };
    Ok((taken, Spending::from_row(spending)?))
}

/// Stores what a turn leaves and closes it (see `Store::finish_turn`): one script for its answer, the tokens it
/// spent, its events, its trace and its closing; then the answer's documents. A turn
/// whose thread was deleted meanwhile keeps nothing but its tokens on the ledger.
pub(super) async fn end_turn(conn: &mut SqliteConnection, id: Uuid, end: &TurnEnd) -> Result<Option<ThreadStamp>> {
    let at = now().timestamp_micros();
    let turn = id.to_string();
    let mut closing = Script::default();
    let answer = end.answer.as_ref();
    if let Some(answer) = answer {
        push_save_answer(&mut closing, answer.user, &answer.draft, at);
    }
    if let Some(spent) = &end.usage {
        push_usage(&mut closing, spent);
    }
    push_turn_events(&mut closing, &end.events.iter().map(|e| (id, e)).collect::<Vec<_>>());
    if let Some(trace) = &end.trace {
        // After the answer's save, so the trace can name it.
        closing
            .shared_statement(WRITE_TRACE)
            .bind(turn.clone())
            .bind(answer.map(|a| a.draft.id.to_string()))
            .bind(Db::json(&trace.steps)?)
            .bind(at)
            .bind(trace.thread.to_string())
            .bind(trace.user.to_string());
    }
    closing
        // A turn saves one answer: saved, it left nothing else being written in the thread; otherwise whatever
        // it left is cut off. Only while it still holds the thread: a turn taken over (its heartbeat had gone
        // quiet) leaves the newer turn's answer alone.
        .statement(
            "update messages set writing = 0 where writing = 1
             and thread_id = (select thread_id from turns where id = ? and status = 'running')
             and not exists (select 1 from messages where id = ? and user_id = ?)",
        )
        .bind(turn.clone())
        .bind(answer.map(|a| a.draft.id.to_string()))
        .bind(answer.map(|a| a.user.to_string()))
        .statement("update turns set status = 'done' where id = ?")
        .bind(turn.clone())
        // Only the thread's newest turn keeps its events, as `latest_turn` finds it: this one's, or after a
        // take-over the newer turn's (and then this one's go at once).
        .statement(
            "delete from turn_events where turn_id in (select t.id from turns t join
             (select id, thread_id from turns where thread_id = (select thread_id from turns where id = ?)
              order by started_at desc, rowid desc limit 1) newest
             on t.thread_id = newest.thread_id and t.id <> newest.id)",
        )
        .bind(turn);
    // The thread's stamp after the end, read by the same script unless documents are still to be linked to the
    // answer (which changes the stamp): one round trip less for most ends.
    let stamped =
        answer.filter(|a| a.artifacts.is_empty()).map(|a| (a.user.to_string(), a.draft.thread_id.to_string()));
    if let Some((user, thread)) = stamped.clone() {
        push_stamp(&mut closing, thread, user);
    }
    let rows = closing.fetch_all(conn).await?;
    // Only the answer's save returns rows besides the stamp's: saved, the answer stands in its thread, whose
    // stamp then came last.
    let saved = rows.len() > usize::from(stamped.is_some());
    let Some(answer) = answer.filter(|_| saved) else { return Ok(None) };
    if stamped.is_some() {
        return rows.last().map(stamp_of).transpose();
    }
    Shared::link_artifacts_to(conn, answer.user, &answer.artifacts, answer.draft.id).await?;
    Shared::stamp(conn, answer.user, answer.draft.thread_id).await
}

/// Saves an answer's state in one round trip (see [`push_save_answer`]); `false` when its thread is gone.
pub(super) async fn save_answer(conn: &mut SqliteConnection, user: Uuid, answer: &AnswerDraft) -> Result<bool> {
    let mut script = Script::default();
    push_save_answer(&mut script, user, answer, now().timestamp_micros());
    Ok(!script.fetch_all(conn).await?.is_empty())
}

/// Saves an answer's state: rewrites it, or creates it at its first save; returns rows unless its thread is
/// gone (deleted meanwhile: there is nothing to keep it in). A first save inserts the answer as being written
/// and the rewrite after it says whether it still is, so a finished answer enters the search index once.
pub(super) fn push_save_answer<'q>(script: &mut Script<'q>, user: Uuid, answer: &'q AnswerDraft, at: i64) {
    let (id, user, thread) = (answer.id.to_string(), user.to_string(), answer.thread_id.to_string());
    let update = &answer.update;
    let row = NewRow {
        role: Role::Assistant.as_str(),
        content: &update.content,
        status: update.status.as_str(),
        usage: update.usage,
        model: update.model.as_deref(),
        after: answer.question.map(|q| q.to_string()),
        quote_artifact: None,
        quote_text: None,
        author: None,
    };
    push_new_message(script, &id, &thread, &user, row, at, true);
    script
        .statement(
            "update messages set content = ?, status = ?, input_tokens = ?, output_tokens = ?, writing = ?,
             model = coalesce(?, model), context = coalesce(?, context) where id = ? and user_id = ? returning id",
        )
        .bind(update.content.as_str())
        .bind(update.status.as_str())
        .bind(update.usage.input_tokens as i64)
        .bind(update.usage.output_tokens as i64)
        .bind(answer.writing)
        .bind(update.model.as_deref())
        .bind(update.context.as_ref().map(|c| c.to_string()))
        .bind(id)
        .bind(user);
}

/// A message to insert.
struct NewRow<'q> {
    role: &'static str,
    content: &'q str,
    status: &'static str,
    usage: Usage,
    model: Option<&'q str>,
    /// The message it goes after (see [`AnswerDraft::question`]); `None`: the active one.
    after: Option<String>,
    /// The document of the thread it quotes, and the passage.
    quote_artifact: Option<String>,
    quote_text: Option<&'q str>,
    /// Who wrote it when not the thread's author.
    author: Option<String>,
}

impl<'q> NewRow<'q> {
    fn of(message: &'q NewMessage) -> Self {
        Self {
            role: message.role.as_str(),
            content: &message.content,
            status: message.status.as_str(),
            usage: message.usage,
            model: message.model.as_deref(),
            after: None,
            quote_artifact: message.quote.as_ref().map(|q| q.artifact_id.to_string()),
            quote_text: message.quote.as_ref().map(|q| q.text.as_str()),
            author: message.author.map(|a| a.to_string()),
        }
    }
}

/// Inserts a message under `id` with the thread's next number, after its active message, and counts it in the
/// thread; where it went, `None` when the thread is missing or another person's. One round trip.
pub(super) async fn insert_message(
    conn: &mut SqliteConnection,
    user: Uuid,
    id: Uuid,
    message: &NewMessage,
    created: DateTime<Utc>,
) -> Result<Option<Place>> {
    let (id, thread, owner) = (id.to_string(), message.thread_id.to_string(), user.to_string());
    let mut renumbered = false;
    loop {
        let mut script = Script::default();
        push_new_message(&mut script, &id, &thread, &owner, NewRow::of(message), created.timestamp_micros(), false);
        let rows = script.fetch_all(conn).await?;
        if let Some(row) = rows.first() {
            return place_of(row).map(Some);
        }
        if renumbered || !Shared::renumber_if_full(conn, user, message.thread_id).await? {
            return Ok(None);
        }
        renumbered = true;
    }
}

/// Counts a new message in its thread and inserts it with the thread's next number, which it returns; nothing
/// when the thread is missing or another person's, a message with this id exists already, the message it goes
/// after is gone, or the thread's count reached [`MAX_SEQ`] (see `Shared::renumber_if_full`).
fn push_new_message<'q>(
    script: &mut Script<'q>,
    id: &str,
    thread: &str,
    user: &str,
    row: NewRow<'q>,
    at: i64,
    writing: bool,
) {
    script
        .statement(
            "update threads set message_count = message_count + 1, last_seq = last_seq + 1,
             updated_at = max(updated_at, ?)
             where id = ? and user_id = ? and last_seq < ? and not exists (select 1 from messages where id = ?)
             and (? is null or exists (select 1 from messages where id = ? and thread_id = threads.id))
             and (? is null or exists (select 1 from artifacts a
                 where a.id = ? and a.thread_id = threads.id and a.user_id = threads.user_id))",
        )
        .bind(at)
        .bind(thread.to_string())
        .bind(user.to_string())
        .bind(MAX_SEQ)
        .bind(id.to_string())
        .bind(row.after.clone())
        .bind(row.after.clone())
        .bind(row.quote_artifact.clone())
        .bind(row.quote_artifact.clone())
        // Only when the count above was taken (`changes()`: the rows the statement before changed). The message
        // follows the one it answers or the conversation's active message, and becomes the active one if that
        // one still is.
        .statement(
            "insert into messages (id, thread_id, user_id, seq, role, content, status, input_tokens, output_tokens,
             model, created_at, writing, quote_artifact_id, quote_text, author_id, parent_id)
             select ?, id, user_id, last_seq, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, coalesce(?, active_id) from threads
             where id = ? and user_id = ? and changes() = 1 and not exists (select 1 from messages where id = ?)
             returning seq, parent_id",
        )
        .bind(id.to_string())
        .bind(row.role)
        .bind(row.content)
        .bind(row.status)
        .bind(row.usage.input_tokens as i64)
        .bind(row.usage.output_tokens as i64)
        .bind(row.model)
        .bind(at)
        .bind(writing)
        .bind(row.quote_artifact)
        .bind(row.quote_text)
        .bind(row.author)
        .bind(row.after.clone())
        .bind(thread.to_string())
        .bind(user.to_string())
        .bind(id.to_string())
        .statement(
            "update threads set active_id = ? where id = ? and changes() = 1 and active_id is coalesce(?, active_id)",
        )
        .bind(id.to_string())
        .bind(thread.to_string())
        .bind(row.after);
}

/// Reads the thread's stamp (a row, read by [`stamp_of`], unless the thread is missing or another person's).
fn push_stamp(script: &mut Script<'_>, thread: String, user: String) {
    script
        .statement(&format!("select {STAMP_COLUMNS} from threads where id = ? and user_id = ?"))
        .bind(thread)
        .bind(user);
}

/// A thread's stamp from a row of [`STAMP_COLUMNS`].
fn stamp_of(row: &SqliteRow) -> Result<ThreadStamp> {
    let active: Option<String> = row.try_get(2)?;
    Ok(ThreadStamp { version: row.try_get(0)?, last_seq: row.try_get(1)?, active: active.read("active_id")? })
}

/// Where the message of a [`push_new_message`] went, from the row its insert returned.
fn place_of(row: &SqliteRow) -> Result<Place> {
    let parent: Option<String> = row.try_get(1)?;
    Ok(Place { seq: row.try_get(0)?, parent: parent.read("parent_id")? })
}

/// Adds spent tokens to the thread's totals and to its payer's ledger for today and the model.
fn push_usage<'q>(script: &mut Script<'q>, spent: &'q SpentTokens) {
    let (user, usage) = (spent.user.to_string(), spent.usage);
    script
        .statement(
            "update threads set input_tokens = input_tokens + ?, output_tokens = output_tokens + ?
             where id = ? and user_id = ?",
        )
        .bind(usage.input_tokens as i64)
        .bind(usage.output_tokens as i64)
        .bind(spent.thread.to_string())
        .bind(user)
        .statement(
            "insert into usage_ledger (user_id, day, model, input_tokens, output_tokens, counted_tokens)
             values (?, ?, ?, ?, ?, ?)
             on conflict (user_id, day, model) do update set input_tokens = input_tokens + excluded.input_tokens,
             output_tokens = output_tokens + excluded.output_tokens,
             counted_tokens = counted_tokens + excluded.counted_tokens",
        )
        .bind(spent.payer.to_string())
        .bind(super::today())
        .bind(spent.model.as_str())
        .bind(usage.input_tokens as i64)
        .bind(usage.output_tokens as i64)
        .bind(i64::try_from(spent.counted_tokens).unwrap_or(i64::MAX));
}

/// Stores events of turns in one statement of fixed text, a row per run (see [`EventRun`]), the rows passed as
/// one JSON array (a statement with a value per field would have a text for every number of rows, each prepared
/// anew). Events of a turn that no longer exists (its thread was deleted meanwhile) are skipped; a number already
/// stored keeps its first event.
fn push_turn_events(script: &mut Script<'_>, events: &[(Uuid, &EventRun)]) {
    if events.is_empty() {
        return;
    }
    // A turn's id goes in as it is stored, in its hyphenated text form.
    let rows: Vec<(Uuid, i64, i64, &str, &str)> =
        events.iter().map(|(turn, e)| (*turn, e.seq, e.last_seq, e.name.as_str(), e.data.as_str())).collect();
    let rows = serde_json::to_string(&rows).unwrap_or_else(|_| "[]".into());
    script
        .statement(
            "insert or ignore into turn_events (turn_id, seq, last_seq, name, data)
             select e.value ->> 0, e.value ->> 1, e.value ->> 2, e.value ->> 3, e.value ->> 4 from json_each(?) as e
             where exists (select 1 from turns where turns.id = e.value ->> 0)",
        )
        .bind(rows);
}

/// Stores events of turns in one round trip (see [`push_turn_events`]).
pub(super) async fn insert_turn_events(conn: &mut SqliteConnection, events: &[(Uuid, &EventRun)]) -> Result<()> {
    let mut script = Script::default();
    push_turn_events(&mut script, events);
    script.fetch_all(conn).await?;
    Ok(())
}

/// Adds spent tokens to the thread's totals and to its owner's ledger, in one round trip (see [`push_usage`]).
pub(super) async fn add_usage(conn: &mut SqliteConnection, spent: &SpentTokens) -> Result<()> {
    let mut script = Script::default();
    push_usage(&mut script, spent);
    script.fetch_all(conn).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use sqlx::Connection;

    use super::*;

    async fn table() -> SqliteConnection {
        let mut conn = SqliteConnection::connect("sqlite::memory:").await.unwrap();
        sqlx::query("create table t (k text primary key, v integer)").execute(&mut conn).await.unwrap();
        conn
    }

    async fn everything(conn: &mut SqliteConnection) -> Vec<(String, i64)> {
        sqlx::query_as("select k, v from t order by k").fetch_all(conn).await.unwrap()
    }

    #[tokio::test]
    async fn a_script_runs_its_statements_in_order_each_with_its_values() {
        let mut conn = table().await;
        let mut script = Script::default();
        script
            .statement("insert into t (k, v) values (?, ?)")
            .bind("a")
            .bind(1_i64)
            .statement("update t set v = v + ? where k = ? returning v")
            .bind(10_i64)
            .bind("a")
            .statement("insert into t (k, v) select ?, v * ? from t where k = ? returning v")
            .bind("b")
            .bind(2_i64)
            .bind("a");
        let rows = script.fetch_all(&mut conn).await.unwrap();
        assert_eq!(rows.iter().map(|r| r.get::<i64, _>(0)).collect::<Vec<_>>(), vec![11, 22]);
        // Run again from the cache of prepared statements, with other values.
        let mut again = Script::default();
        again.statement("insert into t (k, v) values (?, ?)").bind("c").bind(3_i64);
        again.fetch_all(&mut conn).await.unwrap();
        assert_eq!(everything(&mut conn).await, vec![("a".into(), 11), ("b".into(), 22), ("c".into(), 3)]);
    }

    #[tokio::test]
    async fn a_script_with_values_missing_or_left_over_is_refused_before_it_runs() {
        let mut conn = table().await;
        let mut short = Script::default();
        short.statement("insert into t (k, v) values (?, ?)").bind("a").statement("delete from t");
        assert!(matches!(short.fetch_all(&mut conn).await, Err(StoreError::Corrupt(_))));
        let mut long = Script::default();
        long.statement("insert into t (k, v) values (?, ?)").bind("a").bind(1_i64).bind(2_i64);
        assert!(matches!(long.fetch_all(&mut conn).await, Err(StoreError::Corrupt(_))));
        assert!(everything(&mut conn).await.is_empty(), "nothing ran");
        assert!(Script::default().fetch_all(&mut conn).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_shared_statement_takes_its_values_in_turn_with_the_other_statements() {
        let mut conn = table().await;
        let mut script = Script::default();
        script
            .statement("insert into t (k, v) values (?, ?)")
            .bind("a")
            .bind(1_i64)
            .shared_statement(
                "with asked (k, plus) as (select $1, $2) select v + plus from t, asked where t.k = asked.k",
            )
            .bind("a")
            .bind(41_i64)
            .statement("insert into t (k, v) values (?, ?)")
            .bind("b")
            .bind(2_i64);
        let rows = script.fetch_all(&mut conn).await.unwrap();
        assert_eq!(rows.iter().map(|r| r.get::<i64, _>(0)).collect::<Vec<_>>(), vec![42]);
        assert_eq!(everything(&mut conn).await, vec![("a".into(), 1), ("b".into(), 2)]);

        // A parameter out of its order, or named twice, would take another's value: refused before anything runs.
        for sql in ["select $2, $1", "select $1, $1", "select $1, $3"] {
            let mut refused = Script::default();
            refused.statement("delete from t").shared_statement(sql).bind(1_i64).bind(2_i64);
            assert!(refused.fetch_all(&mut conn).await.is_err(), "{sql}");
        }
        assert_eq!(everything(&mut conn).await.len(), 2, "none ran");
    }
}
