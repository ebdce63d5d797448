-- Quire schema, PostgreSQL dialect (15 or newer, core only: no extensions). The same tables as the SQLite
-- schema of the same name, with native types: uuid ids, timestamptz times (microsecond resolution, the
-- resolution the server keeps), boolean flags and jsonb for structured values.
--
-- Full-text search uses stored generated tsvector columns with the 'simple' configuration (lower-casing, no
-- stemming, no stop words), the closest match to the SQLite unicode61 tokenizer. Only the first 250,000
-- characters of a text are indexed: a tsvector holds at most 1 MB of lexemes, and a longer text would make
-- the insert itself fail instead of merely being searchable in part.

create table users (
    id            uuid primary key,
    email         text not null,
    password_hash text not null,
    display_name  text not null default '',
    created_at    timestamptz not null
);
create unique index users_email_lower on users (lower(email));

-- Tokens ended by a logout, kept until they would have expired anyway.
create table revoked_tokens (
    jti        text primary key,
    expires_at timestamptz not null
);

create table threads (
    id            uuid primary key,
    user_id       uuid not null references users (id) on delete cascade,
    title         text not null check (char_length(title) <= 500),
    pinned        boolean not null default false,
    archived      boolean not null default false,
    summary       text,
    message_count bigint not null default 0 check (message_count >= 0),
    last_seq      bigint not null default 0,
    input_tokens  bigint not null default 0,
    output_tokens bigint not null default 0,
    created_at    timestamptz not null,
    updated_at    timestamptz not null,
    search        tsvector generated always as (to_tsvector('simple', left(title, 250000))) stored,
    check (updated_at >= created_at)
);
create index threads_user_updated on threads (user_id, updated_at desc, id);
create index threads_user_created on threads (user_id, created_at desc, id);
create index threads_search on threads using gin (search);

create table thread_tags (
    thread_id uuid not null references threads (id) on delete cascade,
    user_id   uuid not null,
    tag       text not null check (char_length(tag) between 1 and 50),
    position  bigint not null,
    primary key (thread_id, tag)
);
create index thread_tags_user_tag on thread_tags (user_id, tag);

create table messages (
    id            uuid primary key,
    thread_id     uuid not null references threads (id) on delete cascade,
    user_id       uuid not null,
    seq           bigint not null,
    role          text not null check (role in ('user', 'assistant')),
    content       text not null,
    status        text not null check (status in ('complete', 'interrupted', 'stopped', 'error')),
    input_tokens  bigint not null default 0,
    output_tokens bigint not null default 0,
    model         text,
    context       jsonb,
    created_at    timestamptz not null,
    search        tsvector generated always as (to_tsvector('simple', left(content, 250000))) stored,
    unique (thread_id, seq)
);
create index messages_user on messages (user_id);
create index messages_search on messages using gin (search);

create table artifacts (
    -- insertion order, the tie-breaker of artifacts created in the same microsecond
    pk                   bigint generated always as identity unique,
    id                   uuid primary key,
    thread_id            uuid not null references threads (id) on delete cascade,
    user_id              uuid not null,
    artifact_type        text not null,
    title                text not null,
    content              text not null,
    version              bigint not null default 1,
    request_message_id   uuid references messages (id) on delete set null,
    assistant_message_id uuid references messages (id) on delete set null,
    created_at           timestamptz not null,
    updated_at           timestamptz not null,
    search               tsvector generated always as
                             (to_tsvector('simple', left(title || E'\n' || content, 250000))) stored,
    check (updated_at >= created_at)
);
create index artifacts_thread on artifacts (thread_id, created_at);
create index artifacts_request on artifacts (request_message_id);
-- PostgreSQL does not index the referencing side of a foreign key; without this, deleting a message scans.
create index artifacts_assistant on artifacts (assistant_message_id);
create index artifacts_user on artifacts (user_id);
create index artifacts_search on artifacts using gin (search);

create table artifact_versions (
    artifact_id uuid not null references artifacts (id) on delete cascade,
    version     bigint not null,
    title       text not null,
    content     text not null,
    created_at  timestamptz not null,
    primary key (artifact_id, version)
);

-- What happened while an answer was written: tool calls, their input, result, timing, errors.
create table traces (
    message_id  uuid not null references messages (id) on delete cascade,
    step        bigint not null,
    kind        text not null,
    tool        text,
    input       jsonb,
    result      text,
    error       text,
    started_at  timestamptz not null,
    duration_ms bigint not null default 0,
    primary key (message_id, step)
);

create table attachments (
    id           uuid primary key,
    thread_id    uuid not null references threads (id) on delete cascade,
    user_id      uuid not null,
    filename     text not null,
    content_type text not null,
    size         bigint not null,
    created_at   timestamptz not null
);
create index attachments_thread on attachments (thread_id);

create table attachment_chunks (
    id            bigint generated always as identity primary key,
    attachment_id uuid not null references attachments (id) on delete cascade,
    thread_id     uuid not null,
    seq           bigint not null,
    content       text not null,
    search        tsvector generated always as (to_tsvector('simple', left(content, 250000))) stored
);
create index attachment_chunks_attachment on attachment_chunks (attachment_id);
create index attachment_chunks_search on attachment_chunks using gin (search);

create table idempotency_keys (
    user_id     uuid not null,
    key         text not null,
    fingerprint text not null,
    response    text,
    created_at  timestamptz not null,
    expires_at  timestamptz not null,
    primary key (user_id, key)
);

create table usage_ledger (
    user_id       uuid not null references users (id) on delete cascade,
    day           date not null,
    model         text not null,
    input_tokens  bigint not null default 0,
    output_tokens bigint not null default 0,
    primary key (user_id, day, model)
);

-- One row per chat turn; a running turn holds its thread (one at a time) and is kept alive by heartbeats.
create table turns (
    -- insertion order, the tie-breaker of turns started in the same microsecond
    pk             bigint generated always as identity unique,
    id             uuid primary key,
    thread_id      uuid not null references threads (id) on delete cascade,
    user_id        uuid not null,
    status         text not null check (status in ('running', 'done')),
    stop_requested boolean not null default false,
    started_at     timestamptz not null,
    heartbeat_at   timestamptz not null
);
create unique index turns_one_running on turns (thread_id) where status = 'running';
create index turns_thread on turns (thread_id, started_at desc);

-- The events of a turn, in order, so a client can re-attach from any instance and miss nothing.
create table turn_events (
    turn_id uuid not null references turns (id) on delete cascade,
    seq     bigint not null,
    name    text not null,
    data    text not null,
    primary key (turn_id, seq)
);
