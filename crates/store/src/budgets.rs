//! Token budgets and the cap on a person's running turns: what a turn's start checks, in the same write that
//! takes its conversation, so two starts at once never both pass. Both backends implement it
//! (`sqlite/budgets.rs`, `postgres/budgets.rs`). Days are UTC days, as the usage ledger records them.

use async_trait::async_trait;
use chrono::{DateTime, Days, NaiveTime, Utc};
use uuid::Uuid;

use super::columns::{shared_sql, Dialect};
use super::threads::found;
use super::{now, Result, StoreError};

/// What a person may spend and run, as configured; 0 turns a limit off.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TurnLimits {
    /// Tokens one person may spend in a UTC day, unless they have a budget of their own.
    pub user_daily_tokens: u64,
    /// Tokens everyone together may spend in a UTC day.
    pub daily_tokens: u64,
    /// Turns one person may have running at once, across all their conversations.
    pub concurrent_turns: u32,
    /// Most tokens one turn may spend while a budget applies (0 = no such bound): what it reserves as it starts
    /// when that much remains.
    pub turn_tokens: u64,
}

/// Today's spending as the budgets see it, and the person's running turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct Spending {
    /// Tokens the person spent today (input and output).
    pub user_used: i64,
    /// Tokens everyone spent today; 0 when no global budget asked for it.
    pub everyone_used: i64,
    /// The person's own daily budget, set by an administrator (0 = none); `None` follows the configuration.
    pub own_budget: Option<i64>,
    /// The person's turns running now (heard from recently).
    pub running: i64,
    /// Tokens the person's running turns hold (see [`Spending::allowance`]).
    pub user_reserved: i64,
    /// Tokens everyone's running turns hold; 0 when no global budget asked for it.
    pub everyone_reserved: i64,
}

/// The person's spending today (UTC), running turns and what they hold, and everyone's spending and holdings
/// when asked (it reads every person's ledger rows of the day); a turn that ended or went quiet holds nothing
/// (its end wrote what it spent into the ledger; a dead one's is lost with its instance). Its values, each named once and in order (so that SQLite's writer can run
/// it in a script), are [`spending_values`]'.
pub(crate) const SPENDING: &str = "with asked (user_id, day, everyone, stale_before) as (select $1, $2, $3, $4)
 select
   (select cast(coalesce(sum(input_tokens + output_tokens), 0) as bigint) from usage_ledger l
     where l.user_id = asked.user_id and l.day = asked.day) as user_used,
   case when asked.everyone then (select cast(coalesce(sum(input_tokens + output_tokens), 0) as bigint)
     from usage_ledger l where l.day = asked.day) else cast(0 as bigint) end as everyone_used,
   (select daily_token_budget from users where id = asked.user_id) as own_budget,
   (select count(*) from turns t where t.sender_id = asked.user_id and t.status = 'running'
     and t.heartbeat_at >= asked.stale_before) as running,
   (select cast(coalesce(sum(reserved_tokens), 0) as bigint) from turns t where t.sender_id = asked.user_id
     and t.status = 'running' and t.heartbeat_at >= asked.stale_before) as user_reserved,
   case when asked.everyone then (select cast(coalesce(sum(reserved_tokens), 0) as bigint) from turns t
     where t.status = 'running' and t.heartbeat_at >= asked.stale_before) else cast(0 as bigint) end
     as everyone_reserved
 from asked";

/// The values of [`SPENDING`], in order: the person, today, whether everyone's spending is read, and the time
/// before which a running turn's last heartbeat makes it dead.
pub(crate) fn spending_values<D: Dialect>(
    user: Uuid,
    stale_after_ms: i64,
    everyone: bool,
) -> (D::Id, D::Day, bool, D::Time) {
    let stale_before = now() - chrono::Duration::milliseconds(stale_after_ms);
    (D::id(user), D::day(Utc::now().date_naive()), everyone, D::time(stale_before))
}

shared_sql! {
    rows(Spending);
    /// The person's spending today (UTC) and running turns (see [`SPENDING`]).
    pub(crate) async fn spending(
        conn: &mut D::Connection,
        user: Uuid,
        stale_after_ms: i64,
        everyone: bool,
    ) -> Result<Spending> {
        let (user, day, everyone, stale_before) = spending_values::<D>(user, stale_after_ms, everyone);
        Ok(sqlx::query_as(SPENDING).bind(user).bind(day).bind(everyone).bind(stale_before).fetch_one(conn).await?)
    }

    /// Sets or clears a person's own daily budget; `NotFound` for an unknown person.
    pub(crate) async fn set_daily_token_budget(
        conn: &mut D::Connection,
        user: Uuid,
        budget: Option<u64>,
    ) -> Result<()> {
        let budget = budget.map(|b| i64::try_from(b).unwrap_or(i64::MAX));
        let updated = sqlx::query("update users set daily_token_budget = $1 where id = $2")
            .bind(budget)
            .bind(D::id(user))
            .execute(conn)
            .await?;
        found(D::rows_affected(&updated) > 0)
    }
}

impl Spending {
    /// The person's daily budget: their own, else the configured one; `None` when they have none.
    pub fn user_budget(&self, limits: &TurnLimits) -> Option<u64> {
        let budget = self.own_budget.map_or(limits.user_daily_tokens, |own| own.max(0) as u64);
        (budget > 0).then_some(budget)
    }

    /// What is left of each budget that applies (the person's, everyone's), once the ledger and the running
    /// turns' reservations are taken off.
    fn left(&self, limits: &TurnLimits) -> impl Iterator<Item = u64> {
        let left = |budget: Option<u64>, used: i64, reserved: i64| {
            budget.map(|b| b.saturating_sub((used.max(0) as u64).saturating_add(reserved.max(0) as u64)))
        };
        let everyone = (limits.daily_tokens > 0).then_some(limits.daily_tokens);
        [
            left(self.user_budget(limits), self.user_used, self.user_reserved),
            left(everyone, self.everyone_used, self.everyone_reserved),
        ]
        .into_iter()
        .flatten()
    }

    /// What a turn starting now may spend and reserves: the least that is left of the budgets that apply, at
    /// most [`TurnLimits::turn_tokens`]; `None` when no budget applies (nothing is reserved).
    pub fn allowance(&self, limits: &TurnLimits) -> Option<u64> {
        let left = self.left(limits).min()?;
        Some(if limits.turn_tokens > 0 { left.min(limits.turn_tokens) } else { left })
    }

    /// Why a new turn may not start now, if it may not: a budget used up (spent, or held by running turns) or
    /// too many turns running.
    pub fn refusal(&self, limits: &TurnLimits, now: DateTime<Utc>) -> Option<StoreError> {
        if self.left(limits).any(|left| left == 0) {
            return Some(StoreError::BudgetExceeded { resets_at: budget_resets_at(now) });
        }
        if limits.concurrent_turns > 0 && self.running >= i64::from(limits.concurrent_turns) {
            return Some(StoreError::TooManyTurns);
        }
        None
    }
}

/// When today's budgets start again: the next midnight, UTC.
pub fn budget_resets_at(now: DateTime<Utc>) -> DateTime<Utc> {
    let tomorrow = now.date_naive().checked_add_days(Days::new(1)).unwrap_or(now.date_naive());
    tomorrow.and_time(NaiveTime::MIN).and_utc()
}

/// Budgets and caps of chat turns (checked where a turn starts: [`Turns::start_turn`](super::Turns::start_turn)).
#[async_trait]
pub trait Budgets: Send + Sync {
    /// The person's spending today and running turns (`everyone_used` only when `limits` has a global budget).
    async fn spending(&self, user: Uuid, stale_after_ms: i64, limits: &TurnLimits) -> Result<Spending>;
    /// Gives the person a daily token budget of their own (0 = none), or `None` to follow the configuration;
    /// `NotFound` for an unknown person.
    async fn set_daily_token_budget(&self, user: Uuid, budget: Option<u64>) -> Result<()>;
}

/// Implements [`Budgets`] for a backend, written once for both, as
/// [`accounts_for`](super::accounts::accounts_for) does.
macro_rules! budgets_for {
    ($backend:ty) => {
        const _: () = {
            use tracing::instrument;
            use uuid::Uuid;
            use $crate::{Budgets, Result, Spending, TurnLimits};

            #[async_trait::async_trait]
            impl Budgets for $backend {
                #[instrument(skip(self))]
                async fn spending(&self, user: Uuid, stale_after_ms: i64, limits: &TurnLimits) -> Result<Spending> {
                    let mut conn = self.read().await?;
                    Shared::spending(&mut conn, user, stale_after_ms, limits.daily_tokens > 0).await
                }

                #[instrument(skip(self))]
                async fn set_daily_token_budget(&self, user: Uuid, budget: Option<u64>) -> Result<()> {
                    self.write(move |conn| Box::pin(Shared::set_daily_token_budget(conn, user, budget))).await
                }
            }
        };
    };
}
pub(crate) use budgets_for;

#[cfg(test)]
mod tests {
    use super::*;

    fn spending(user_used: i64, everyone_used: i64, own_budget: Option<i64>, running: i64) -> Spending {
        Spending { user_used, everyone_used, own_budget, running, user_reserved: 0, everyone_reserved: 0 }
    }

    #[test]
    fn budgets_reset_at_the_next_utc_midnight() {
        let now = "2026-03-31T23:59:59Z".parse::<DateTime<Utc>>().unwrap();
        assert_eq!(budget_resets_at(now), "2026-04-01T00:00:00Z".parse::<DateTime<Utc>>().unwrap());
        let midnight = "2026-04-01T00:00:00Z".parse::<DateTime<Utc>>().unwrap();
        assert_eq!(budget_resets_at(midnight), "2026-04-02T00:00:00Z".parse::<DateTime<Utc>>().unwrap());
    }

    #[test]
    fn a_turn_is_refused_once_a_budget_is_spent_or_the_cap_is_reached() {
        let now = Utc::now();
        let limits = TurnLimits { user_daily_tokens: 100, daily_tokens: 1_000, concurrent_turns: 3, turn_tokens: 0 };
        assert!(spending(99, 999, None, 2).refusal(&limits, now).is_none());
        assert!(matches!(spending(100, 0, None, 0).refusal(&limits, now), Some(StoreError::BudgetExceeded { .. })));
        assert!(matches!(spending(0, 1_000, None, 0).refusal(&limits, now), Some(StoreError::BudgetExceeded { .. })));
        assert!(matches!(spending(0, 0, None, 3).refusal(&limits, now), Some(StoreError::TooManyTurns)));
        // A person's own budget stands in for the configured one; 0 means none.
        assert!(spending(150, 0, Some(200), 0).refusal(&limits, now).is_none());
        assert!(matches!(spending(50, 0, Some(40), 0).refusal(&limits, now), Some(StoreError::BudgetExceeded { .. })));
        assert!(spending(5_000, 0, Some(0), 0).refusal(&limits, now).is_none());
        assert!(spending(i64::MAX, i64::MAX, None, i64::MAX).refusal(&TurnLimits::default(), now).is_none());
    }

    #[test]
    fn running_turns_hold_what_they_reserved_and_a_turn_may_spend_what_is_left() {
        let now = Utc::now();
        let limits = TurnLimits { user_daily_tokens: 100, daily_tokens: 1_000, concurrent_turns: 0, turn_tokens: 30 };
        let held = |user_reserved, everyone_reserved| Spending {
            user_reserved,
            everyone_reserved,
            ..spending(60, 900, None, 1)
        };
        // 40 left of the person's budget, at most 30 for one turn.
        assert_eq!(held(0, 0).allowance(&limits), Some(30));
        // Another of their turns holds 25: 15 left, the least of both budgets.
        assert_eq!(held(25, 25).allowance(&limits), Some(15));
        // Everyone's turns hold 95 of the 100 left there.
        assert_eq!(held(0, 95).allowance(&limits), Some(5));
        // What running turns hold is as good as spent: none may start on it.
        assert!(matches!(held(40, 40).refusal(&limits, now), Some(StoreError::BudgetExceeded { .. })));
        assert!(matches!(held(0, 100).refusal(&limits, now), Some(StoreError::BudgetExceeded { .. })));
        assert!(held(39, 39).refusal(&limits, now).is_none());
        // No budget: nothing to reserve, no bound.
        assert_eq!(held(10, 10).allowance(&TurnLimits::default()), None);
        let unbounded = TurnLimits { turn_tokens: 0, ..limits };
        assert_eq!(held(0, 0).allowance(&unbounded), Some(40));
    }
}
