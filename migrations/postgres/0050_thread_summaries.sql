-- The summary that stands in for the turns of a long conversation left out of the model's context. It covers the
-- messages numbered up to `covers_through` (of which there were `covered_count` when it was written, so a
-- deletion among them shows); the tokens every summary of the thread has cost are kept beside it (and counted in
-- the thread's totals and the owner's usage ledger).
create table thread_summaries (
    thread_id      uuid primary key references threads (id) on delete cascade,
    user_id        uuid not null,
    content        text not null,
    covers_through bigint not null,
    covered_count  bigint not null check (covered_count >= 0),
    model          text not null,
    input_tokens   bigint not null default 0,
    output_tokens  bigint not null default 0,
    updated_at     timestamptz not null
);
