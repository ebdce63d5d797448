-- Search ranks a person's newest hits of a common word (see `Search` in the store): their messages and documents
-- are walked newest first from these indexes, which also serve every lookup by owner alone, so they replace the
-- indexes on the owner only.
create index messages_user_created on messages (user_id, created_at, id);
drop index messages_user;
create index artifacts_user_created on artifacts (user_id, created_at, id);
drop index artifacts_user;
