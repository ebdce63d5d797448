-- An answer is saved again and again while it is written (every 250 ms); recomputing the search vector of its
-- whole growing text (and its GIN entries) each time cost more than anything else its saves do. A message marked
-- `writing` has no search vector and enters the index once, when it is saved as finished (or found cut off: see
-- `begin_turn_with`, `finish_turn` and `release_abandoned_answers` in the store). The vector of a message not
-- being written is what it was before.
alter table messages add column writing boolean not null default false;

-- A generated column's expression cannot be changed in place (PostgreSQL 15): the column and its index are made
-- again, which computes every message's vector once more.
alter table messages drop column search;
alter table messages add column search tsvector generated always as
    (case when writing then null else to_tsvector('simple', left(content, 250000)) end) stored;
create index messages_search on messages using gin (search);

-- The answers still being written: a few at any time, found without reading the others.
create index messages_writing on messages (thread_id) where writing;
