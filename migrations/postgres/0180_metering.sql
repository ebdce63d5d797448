-- What a running turn may still spend, held against the budgets while it runs, so that turns started together
-- cannot each take the whole remainder; it counts only while the turn runs and is heard from.
alter table turns add column reserved_tokens bigint not null default 0 check (reserved_tokens >= 0);
-- Of a day's tokens, those Quire counted itself because the provider reported none for their call (stopped,
-- failed or timed out before its report).
alter table usage_ledger add column counted_tokens bigint not null default 0 check (counted_tokens >= 0);
