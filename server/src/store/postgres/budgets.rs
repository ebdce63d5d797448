//! postgres: see [`crate::store::Budgets`]. Instances share the database, so a start takes a lock of its
//! person (a transaction-scoped advisory lock) before it counts: starts of one person, on any instance, are
//! counted and made one after the other.

use sqlx::PgConnection;

use super::turns::take_over_thread;
use super::*;
use crate::store::{Budgets, Spending, TurnLimits};
use tracing::instrument;

/// The first key of the advisory locks taken per person for a turn's start; the second is their id's hash.
const TURN_START_LOCKS: i32 = 0x5175_6972; // "Quir"

/// The person's spending today (UTC) and running turns; everyone's spending only when `everyone` is set.
async fn spending_in(conn: &mut PgConnection, user: Uuid, stale_after_ms: i64, everyone: bool) -> Result<Spending> {
    Ok(sqlx::query_as(
        "select
           (select coalesce(sum(input_tokens + output_tokens), 0)::bigint from usage_ledger
             where user_id = $1 and day = $2) as user_used,
           case when $3 then (select coalesce(sum(input_tokens + output_tokens), 0)::bigint from usage_ledger
             where day = $2) else 0::bigint end as everyone_used,
           (select daily_token_budget from users where id = $1) as own_budget,
           (select count(*) from turns where user_id = $1 and status = 'running' and heartbeat_at >= $4) as running",
    )
    .bind(user)
    .bind(Utc::now().date_naive())
    .bind(everyone)
    .bind(now() - chrono::Duration::milliseconds(stale_after_ms))
    .fetch_one(conn)
    .await?)
}

#[async_trait]
impl Budgets for Postgres {
    #[instrument(skip(self, request))]
    async fn begin_turn_within(
        &self,
        user: Uuid,
        thread: Uuid,
        turn: Uuid,
        stale_after_ms: i64,
        request: Option<NewMessage>,
        limits: &TurnLimits,
    ) -> Result<Option<Message>> {
        let now = now();
        let mut tx = self.pool.begin().await?;
        // Held until the commit, which makes this start's turn visible to the next start of the person.
        sqlx::query("select pg_advisory_xact_lock($1, hashtext($2))")
            .bind(TURN_START_LOCKS)
            .bind(user.to_string())
            .execute(&mut *tx)
            .await?;
        let spending = spending_in(&mut tx, user, stale_after_ms, limits.daily_tokens > 0).await?;
        if let Some(refusal) = spending.refusal(limits, now) {
            return Err(refusal);
        }
        // The common case takes the thread at once; a turn marked running in it fails the attempt (and only
        // the attempt: it has a savepoint of its own), then is taken over if it died.
        let mut attempt = sqlx::Acquire::begin(&mut *tx).await?;
        let saved = match take_thread(&mut *attempt, user, thread, turn, now, request.as_ref()).await {
            Err(StoreError::Database(e)) if is_unique_violation(&e) => {
                attempt.rollback().await?;
                take_over_thread(&mut tx, user, thread, turn, stale_after_ms, now, request.as_ref()).await?
            }
            other => {
                let saved = other?;
                attempt.commit().await?;
                saved
            }
        };
        tx.commit().await?;
        match saved {
            None if request.is_some() => self.save_request(user, request.as_ref(), now).await,
            saved => Ok(saved),
        }
    }

    #[instrument(skip(self))]
    async fn spending(&self, user: Uuid, stale_after_ms: i64, limits: &TurnLimits) -> Result<Spending> {
        let mut conn = self.pool.acquire().await?;
        spending_in(&mut conn, user, stale_after_ms, limits.daily_tokens > 0).await
    }

    #[instrument(skip(self))]
    async fn set_daily_token_budget(&self, user: Uuid, budget: Option<u64>) -> Result<()> {
        let budget = budget.map(|b| i64::try_from(b).unwrap_or(i64::MAX));
        let updated = sqlx::query("update users set daily_token_budget = $1 where id = $2")
            .bind(budget)
            .bind(user)
            .execute(&self.pool)
            .await?;
        if updated.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }
}
