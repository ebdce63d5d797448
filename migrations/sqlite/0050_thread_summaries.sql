-- The summary that stands in for the turns of a long conversation left out of the model's context. It covers the
-- messages numbered up to `covers_through` (of which there were `covered_count` when it was written, so a
-- deletion among them shows); the tokens every summary of the thread has cost are kept beside it (and counted in
-- the thread's totals and the owner's usage ledger).
create table thread_summaries (
    thread_id      text primary key references threads (id) on delete cascade,
    user_id        text not null,
    content        text not null,
    covers_through integer not null,
    covered_count  integer not null check (covered_count >= 0),
    model          text not null,
    input_tokens   integer not null default 0,
    output_tokens  integer not null default 0,
    updated_at     integer not null
) without rowid;
