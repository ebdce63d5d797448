//! `GET /api/stats`: how much the caller has talked (or a project's members have), about what, at what cost in
//! tokens, and what is left of the caller's daily token budget.

use axum::{extract::State, routing::get, Router};
use chrono::Utc;
use wire::{HistoryStats, TokenBudget};

use super::error::Result;
use super::extract::{AuthUser, Json, Query};
use super::projects::InProject;
use crate::chat::turn::STALE_AFTER_MS;
use crate::AppState;
use store::budgets::budget_resets_at;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/stats", get(stats))
}

/// `GET /api/stats`: the caller's statistics, or a project's (its conversations, whoever wrote them); the budget is
/// the caller's own either way.
#[utoipa::path(get, path = "/api/stats", tag = "history", security(("session" = []), ("bearer" = [])), params(InProject),
    responses((status = 200, body = wire::HistoryStats), (status = 400, body = wire::ErrorBody, description = "A malformed parameter"),
        (status = 401, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody, description = "Not a member of the project")))]
pub async fn stats(
    State(state): State<AppState>,
    user: AuthUser,
    Query(params): Query<InProject>,
) -> Result<Json<HistoryStats>> {
    // Days are UTC days, as the usage ledger records them.
    let now = Utc::now();
    let personal = store::TurnLimits { daily_tokens: 0, ..state.config.turn_limits() };
    let (mut stats, spending) = tokio::try_join!(
        state.store.history_stats(user.id, params.scope(), now.date_naive()),
        state.store.spending(user.id, STALE_AFTER_MS, &personal),
    )?;
    stats.budget = spending.user_budget(&personal).map(|limit| {
        let used_today = spending.user_used.max(0) as u64;
        TokenBudget { limit, used_today, left: limit.saturating_sub(used_today), resets_at: budget_resets_at(now) }
    });
    Ok(Json(stats))
}
