//! Turns, idempotency keys and traces on PostgreSQL: see [`crate::Turns`].

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tracing::instrument;
use uuid::Uuid;
use wire::Message;

use super::{
    end_turn, insert_turn_events, is_unique_violation, take_thread, write_progress, IdempotencyClaim, Postgres, Shared,
    TurnRecord, Turns,
};
use crate::turns::TurnRow;
use crate::{
    now, EventRun, NewMessage, Result, Started, StoreError, StoredEvent, ThreadStamp, TurnEnd, TurnLimits,
    TurnProgress, TurnStart,
};

/// The first key of the advisory locks taken per person for a turn's start; the second is their id's hash.
const TURN_START_LOCKS: i32 = 0x5175_6972; // "Quir"

#[async_trait]
impl Turns for Postgres {
    #[instrument(skip(self, key, fingerprint))]
    async fn claim_idempotency_key(
        &self,
        user: Uuid,
        key: &str,
        fingerprint: &str,
        ttl_secs: i64,
    ) -> Result<IdempotencyClaim> {
        let mut tx = self.pool.begin().await?;
        let claim = Shared::claim_idempotency_key(&mut tx, user, key, fingerprint, ttl_secs).await?;
        tx.commit().await?;
        Ok(claim)
    }

    #[instrument(skip(self, key, response))]
    async fn complete_idempotency_key(&self, user: Uuid, key: &str, response: &str) -> Result<()> {
        let complete = sqlx::query("update idempotency_keys set response = $1 where user_id = $2 and key = $3");
        complete.bind(response).bind(user).bind(key).execute(&self.pool).await?;
        Ok(())
    }

    #[instrument(skip(self, key))]
    async fn release_idempotency_key(&self, user: Uuid, key: &str) -> Result<()> {
        let release = sqlx::query("delete from idempotency_keys where user_id = $1 and key = $2 and response is null");
        release.bind(user).bind(key).execute(&self.pool).await?;
        Ok(())
    }

    #[instrument(skip(self, start), fields(thread = %start.thread, turn = %start.turn))]
    async fn start_turn_stamped(&self, start: TurnStart, limits: &TurnLimits) -> Result<Started> {
        let TurnStart { user, sender, thread, turn, stale_after_ms, request, message_id } = start;
        let request = request.as_ref().map(|m| (message_id, m));
        let now = now();
        let mut tx = self.pool.begin().await?;
        // Instances share the database: the lock of the sender, held until the commit that makes this start's
        // turn visible, makes starts of one person on any instance count and start one after the other. Under a
        // global budget every start reserves from one remainder: they all take one lock instead.
        let whose = if limits.daily_tokens > 0 { String::new() } else { sender.to_string() };
        sqlx::query("select pg_advisory_xact_lock($1, hashtext($2))")
            .bind(TURN_START_LOCKS)
            .bind(whose)
            .execute(&mut *tx)
            .await?;
        let spending = Shared::spending(&mut tx, sender, stale_after_ms, limits.daily_tokens > 0).await?;
        if let Some(refusal) = spending.refusal(limits, now) {
            return Err(refusal);
        }
        let allowance = spending.allowance(limits);
        // The common case takes the thread at once; a turn marked running in it fails the attempt (and only
        // the attempt: it has a savepoint of its own), then is taken over if it died.
        let mut attempt = sqlx::Acquire::begin(&mut *tx).await?;
        let saved = match take_thread(&mut *attempt, user, sender, thread, turn, now, request).await {
            Err(StoreError::Database(e)) if is_unique_violation(&e) => {
                attempt.rollback().await?;
                take_over_thread(&mut tx, (user, sender), thread, turn, stale_after_ms, now, request).await?
            }
            other => {
                let saved = other?;
                attempt.commit().await?;
                saved
            }
        };
        if let Some(reserved) = allowance.filter(|&tokens| tokens > 0) {
            sqlx::query("update turns set reserved_tokens = $1 where id = $2")
                .bind(i64::try_from(reserved).unwrap_or(i64::MAX))
                .bind(turn)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        match saved {
            (None, _) if request.is_some() => {
                Ok(Started { message: self.save_request(user, request, now).await?, before: None, allowance })
            }
            (message, before) => Ok(Started { message, before: Some(before), allowance }),
        }
    }

    #[instrument(skip_all, fields(turns = turns.len()))]
    async fn heartbeat_turns(&self, turns: &[Uuid]) -> Result<Vec<Uuid>> {
        Shared::heartbeat_turns(&mut *self.pool.acquire().await?, turns).await
    }

    #[instrument(skip(self))]
    async fn request_stop(&self, user: Uuid, thread: Uuid) -> Result<bool> {
        let stop =
            "update turns set stop_requested = true where thread_id = $1 and user_id = $2 and status = 'running'";
        let stopped = sqlx::query(stop).bind(thread).bind(user).execute(&self.pool).await?;
        Ok(stopped.rows_affected() > 0)
    }

    #[instrument(skip(self, end))]
    async fn finish_turn_stamped(&self, turn: Uuid, mut end: TurnEnd) -> Result<Option<ThreadStamp>> {
        // What the turn handed over and is not written yet comes back (once no batch holding it is being
        // written) and goes first.
        let unwritten = self.progress.settle(turn).await;
        if let Some(unwritten) = &unwritten {
            end.events.splice(0..0, unwritten.events.iter().cloned());
        }
        let ended = end_turn(&self.pool, turn, &end).await;
        if let (Err(_), Some(unwritten)) = (&ended, unwritten) {
            // Back for the turn's next attempt to close itself.
            self.progress.submit(unwritten);
        }
        ended
    }

    #[instrument(skip(self))]
    async fn latest_turn(&self, user: Uuid, thread: Uuid) -> Result<Option<TurnRecord>> {
        let sql = format!(
            "select id, thread_id, status, stop_requested, heartbeat_at from turns
             where thread_id = $1 and {} order by started_at desc, pk desc limit 1",
            crate::projects::readable("$1", "$2")
        );
        let row: Option<TurnRow<Uuid, DateTime<Utc>>> =
            sqlx::query_as(&sql).bind(thread).bind(user).fetch_optional(&self.pool).await?;
        row.map(TurnRecord::try_from).transpose()
    }

    #[instrument(skip(self, events))]
    async fn append_turn_events(&self, turn: Uuid, events: &[EventRun]) -> Result<()> {
        let mut conn = self.pool.acquire().await?;
        insert_turn_events(&mut conn, turn, events).await
    }

    fn submit_progress(&self, progress: TurnProgress) {
        self.progress.submit(progress);
    }

    fn abandon_progress(&self, _turn: Uuid) {
        // Nothing is held back here: every batch writes all it was handed (events too) and keeps nothing of it,
        // so what an abandoned turn handed over is written with the next one.
    }

    #[instrument(skip_all, fields(turns = progress.len()))]
    async fn save_progress(&self, progress: &[TurnProgress]) -> Result<()> {
        write_progress(&self.pool, progress).await
    }

    #[instrument(skip(self))]
    async fn release_abandoned_answers(&self, stale_after_ms: i64) -> Result<u64> {
        Shared::release_abandoned_answers(&mut *self.pool.acquire().await?, stale_after_ms).await
    }

    #[instrument(skip(self))]
    async fn turn_events_after(&self, turn: Uuid, after_seq: i64) -> Result<Vec<StoredEvent>> {
        Shared::turn_events_after(&mut *self.pool.acquire().await?, turn, after_seq).await
    }
}

crate::turns::traces_for!(Postgres);

/// Takes the thread from its turn marked running, if that turn's heartbeat went quiet (`Conflict` while it is
/// alive), and starts the new turn in its place, in `tx`.
pub(super) async fn take_over_thread(
    tx: &mut sqlx::PgConnection,
    (user, sender): (Uuid, Uuid),
    thread: Uuid,
    turn: Uuid,
    stale_after_ms: i64,
    now: DateTime<Utc>,
    request: Option<(Uuid, &NewMessage)>,
) -> Result<(Option<Message>, ThreadStamp)> {
    // Turns carry their thread's owner: another person's thread matches nothing here, and is refused below.
    let taken_over = sqlx::query(
        "update turns set status = 'done'
         where thread_id = $1 and user_id = $2 and status = 'running' and heartbeat_at < $3",
    )
    .bind(thread)
    .bind(user)
    .bind(now - chrono::Duration::milliseconds(stale_after_ms))
    .execute(&mut *tx)
    .await?
    .rows_affected()
        > 0;
    if !taken_over {
        return Err(StoreError::thread_busy());
    }
    // The dead turn's answer, still marked as being written, was cut off.
    sqlx::query("update messages set writing = false where thread_id = $1 and writing")
        .bind(thread)
        .execute(&mut *tx)
        .await?;
    // A concurrent begin blocks on the partial unique index until the other commits, then fails.
    match take_thread(&mut *tx, user, sender, thread, turn, now, request).await {
        Err(StoreError::Database(e)) if is_unique_violation(&e) => Err(StoreError::thread_busy()),
        other => other,
    }
}

crate::approvals::approvals_for!(Postgres);
