//! postgres: see [`crate::store::Budgets`]; a turn's start checks them under a lock of its person
//! (`turns.rs`).

use sqlx::PgConnection;

use super::*;
use crate::store::{Budgets, Spending, TurnLimits};
use tracing::instrument;

/// The person's spending today (UTC) and running turns; everyone's spending only when `everyone` is set.
pub(super) async fn spending_in(
    conn: &mut PgConnection,
    user: Uuid,
    stale_after_ms: i64,
    everyone: bool,
) -> Result<Spending> {
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
