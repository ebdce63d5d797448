//! Turns, idempotency keys and traces on SQLite: see [`crate::Turns`].

use async_trait::async_trait;
use tracing::instrument;
use uuid::Uuid;

use super::writer::Urgency;
use super::{turn_writes, write_progress, IdempotencyClaim, Shared, Sqlite, StoredEvent, TurnRecord, Turns};
use crate::turns::TurnRow;
use crate::{EventRun, Result, Started, ThreadStamp, TurnEnd, TurnLimits, TurnProgress, TurnStart};

#[async_trait]
impl Turns for Sqlite {
    #[instrument(skip(self, key, fingerprint))]
    async fn claim_idempotency_key(
        &self,
        user: Uuid,
        key: &str,
        fingerprint: &str,
        ttl_secs: i64,
    ) -> Result<IdempotencyClaim> {
        let (key, fingerprint) = (key.to_owned(), fingerprint.to_owned());
        self.write(move |tx| {
            Box::pin(async move { Shared::claim_idempotency_key(tx, user, &key, &fingerprint, ttl_secs).await })
        })
        .await
    }

    #[instrument(skip(self, key, response))]
    async fn complete_idempotency_key(&self, user: Uuid, key: &str, response: &str) -> Result<()> {
        let complete = sqlx::query("update idempotency_keys set response = ? where user_id = ? and key = ?");
        self.execute(complete.bind(response.to_owned()).bind(user.to_string()).bind(key.to_owned())).await?;
        Ok(())
    }

    #[instrument(skip(self, key))]
    async fn release_idempotency_key(&self, user: Uuid, key: &str) -> Result<()> {
        let release = sqlx::query("delete from idempotency_keys where user_id = ? and key = ? and response is null");
        self.execute(release.bind(user.to_string()).bind(key.to_owned())).await?;
        Ok(())
    }

    #[instrument(skip(self, start), fields(thread = %start.thread, turn = %start.turn))]
    async fn start_turn_stamped(&self, start: TurnStart, limits: &TurnLimits) -> Result<Started> {
        // One writer makes every start, so the check, made in the start's own write, sees every turn started
        // before it. Turns starting while the writer is busy start together, in one transaction.
        let limits = *limits;
        self.writer
            .write_bounded(Urgency::Start, move |conn| {
                Box::pin(async move { turn_writes::start_turn(conn, &start, &limits).await })
            })
            .await
    }

    #[instrument(skip_all, fields(turns = turns.len()))]
    async fn heartbeat_turns(&self, turns: &[Uuid]) -> Result<Vec<Uuid>> {
        let turns = turns.to_vec();
        self.writer
            .write(Urgency::Background, move |conn| {
                Box::pin(async move { Shared::heartbeat_turns(conn, &turns).await })
            })
            .await
    }

    #[instrument(skip(self))]
    async fn request_stop(&self, user: Uuid, thread: Uuid) -> Result<bool> {
        let stop = "update turns set stop_requested = 1 where thread_id = ? and user_id = ? and status = 'running'";
        let stopped = self.execute(sqlx::query(stop).bind(thread.to_string()).bind(user.to_string())).await?;
        Ok(stopped.rows_affected() > 0)
    }

    #[instrument(skip(self, end))]
    async fn finish_turn_stamped(&self, turn: Uuid, end: TurnEnd) -> Result<Option<ThreadStamp>> {
        // Turns ending while the writer is busy end together, in one transaction.
        self.writer.finish(turn, end).await
    }

    #[instrument(skip(self))]
    async fn latest_turn(&self, user: Uuid, thread: Uuid) -> Result<Option<TurnRecord>> {
        let sql = format!(
            "select id, thread_id, status, stop_requested, heartbeat_at from turns
             where thread_id = $1 and {} order by started_at desc, rowid desc limit 1",
            crate::projects::readable("$1", "$2")
        );
        let row: Option<TurnRow<String, i64>> =
            sqlx::query_as(&sql).bind(thread.to_string()).bind(user.to_string()).fetch_optional(&self.reader).await?;
        row.map(TurnRecord::try_from).transpose()
    }

    #[instrument(skip(self, events))]
    async fn append_turn_events(&self, turn: Uuid, events: &[EventRun]) -> Result<()> {
        let events = events.to_vec();
        if events.is_empty() {
            return Ok(());
        }
        self.write(move |tx| {
            Box::pin(async move {
                let events: Vec<_> = events.iter().map(|e| (turn, e)).collect();
                turn_writes::insert_turn_events(tx, &events).await
            })
        })
        .await
    }

    fn submit_progress(&self, progress: TurnProgress) {
        self.writer.submit(progress);
    }

    fn abandon_progress(&self, turn: Uuid) {
        self.writer.abandon(turn);
    }

    #[instrument(skip_all, fields(turns = progress.len()))]
    async fn save_progress(&self, progress: &[TurnProgress]) -> Result<()> {
        if progress.is_empty() {
            return Ok(());
        }
        let progress = progress.to_vec();
        self.writer
            .write(Urgency::Background, move |conn| Box::pin(async move { write_progress(conn, &progress).await }))
            .await
    }

    #[instrument(skip(self))]
    async fn release_abandoned_answers(&self, stale_after_ms: i64) -> Result<u64> {
        self.writer
            .write(Urgency::Background, move |conn| {
                Box::pin(async move { Shared::release_abandoned_answers(conn, stale_after_ms).await })
            })
            .await
    }

    #[instrument(skip(self))]
    async fn turn_events_after(&self, turn: Uuid, after_seq: i64) -> Result<Vec<StoredEvent>> {
        Shared::turn_events_after(&mut *self.reader.acquire().await?, turn, after_seq).await
    }
}

crate::turns::traces_for!(Sqlite);

crate::approvals::approvals_for!(Sqlite);
