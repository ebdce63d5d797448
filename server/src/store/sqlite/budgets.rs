//! sqlite: see [`crate::store::Budgets`]; a turn's start checks them in its own write (`turns.rs`).

use sqlx::SqliteConnection;

use super::*;
use crate::store::{Budgets, Spending, TurnLimits};
use tracing::instrument;

/// The person's spending today and running turns; everyone's spending only when `everyone` is set (it reads
/// every person's ledger rows of the day).
pub(super) async fn spending_in(
    conn: &mut SqliteConnection,
    user: Uuid,
    stale_after_ms: i64,
    everyone: bool,
) -> Result<Spending> {
    Ok(sqlx::query_as(
        "select
           (select coalesce(sum(input_tokens + output_tokens), 0) from usage_ledger where user_id = ?1 and day = ?2)
             as user_used,
           case when ?3 then (select coalesce(sum(input_tokens + output_tokens), 0) from usage_ledger where day = ?2)
             else 0 end as everyone_used,
           (select daily_token_budget from users where id = ?1) as own_budget,
           (select count(*) from turns where user_id = ?1 and status = 'running' and heartbeat_at >= ?4) as running",
    )
    .bind(user.to_string())
    .bind(today())
    .bind(everyone)
    .bind(now().timestamp_micros() - stale_after_ms * 1000)
    .fetch_one(conn)
    .await?)
}

#[async_trait]
impl Budgets for Sqlite {
    #[instrument(skip(self))]
    async fn spending(&self, user: Uuid, stale_after_ms: i64, limits: &TurnLimits) -> Result<Spending> {
        let mut conn = self.reader.acquire().await?;
        spending_in(&mut conn, user, stale_after_ms, limits.daily_tokens > 0).await
    }

    #[instrument(skip(self))]
    async fn set_daily_token_budget(&self, user: Uuid, budget: Option<u64>) -> Result<()> {
        let budget = budget.map(|b| i64::try_from(b).unwrap_or(i64::MAX));
        let updated = self
            .writer
            .write(Urgency::Waited, move |conn| {
                Box::pin(async move {
                    Ok(sqlx::query("update users set daily_token_budget = ? where id = ?")
                        .bind(budget)
                        .bind(user.to_string())
                        .execute(conn)
                        .await?)
                })
            })
            .await?;
        if updated.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }
}
