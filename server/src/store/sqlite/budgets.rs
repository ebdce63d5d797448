//! sqlite: see [`crate::store::Budgets`]; a turn's start checks them in its own write (`turns.rs`).

use super::*;
use crate::store::{Budgets, Spending, TurnLimits};
use tracing::instrument;

#[async_trait]
impl Budgets for Sqlite {
    #[instrument(skip(self))]
    async fn spending(&self, user: Uuid, stale_after_ms: i64, limits: &TurnLimits) -> Result<Spending> {
        let mut conn = self.reader.acquire().await?;
        Shared::spending(&mut conn, user, stale_after_ms, limits.daily_tokens > 0).await
    }

    #[instrument(skip(self))]
    async fn set_daily_token_budget(&self, user: Uuid, budget: Option<u64>) -> Result<()> {
        self.writer
            .write(Urgency::Waited, move |conn| Box::pin(Shared::set_daily_token_budget(conn, user, budget)))
            .await
    }
}
