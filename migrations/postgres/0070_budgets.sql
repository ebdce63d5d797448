-- A person's own daily token budget, set by an administrator: null follows `QUIRE_USER_DAILY_TOKENS`, 0 is none.
alter table users add column daily_token_budget bigint check (daily_token_budget >= 0);
-- Budgets add up a day's tokens for everyone; caps count a person's running turns.
create index usage_ledger_day on usage_ledger (day);
create index turns_running_by_user on turns (user_id) where status = 'running';
