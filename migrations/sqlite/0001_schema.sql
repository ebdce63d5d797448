-- Quire schema, SQLite dialect. Times are INTEGER microseconds since the Unix epoch (UTC); ids are UUID text.

create table users (
    id            text primary key,
    email         text not null,
    password_hash text not null,
    display_name  text not null default '',
    created_at    integer not null
);
create unique index users_email_lower on users (lower(email));

-- Tokens ended by a logout, kept until they would have expired anyway.
create table revoked_tokens (
    jti        text primary key,
    expires_at integer not null
);

create table threads (
    -- an explicit rowid, so VACUUM never renumbers the rows the search index points at
    pk integer primary key,
    id            text not null unique,
    user_id       text not null references users (id) on delete cascade,
    title         text not null check (length(title) <= 500),
    pinned        integer not null default 0,
    archived      integer not null default 0,
    summary       text,
    message_count integer not null default 0 check (message_count >= 0),
    last_seq      integer not null default 0,
    input_tokens  integer not null default 0,
    output_tokens integer not null default 0,
    created_at    integer not null,
    updated_at    integer not null,
    check (updated_at >= created_at)
);
create index threads_user_updated on threads (user_id, updated_at desc, id);
create index threads_user_created on threads (user_id, created_at desc, id);

create table thread_tags (
    thread_id text not null references threads (id) on delete cascade,
    user_id   text not null,
    tag       text not null check (length(tag) between 1 and 50),
    position  integer not null,
    primary key (thread_id, tag)
);
create index thread_tags_user_tag on thread_tags (user_id, tag);

create table messages (
    -- an explicit rowid, so VACUUM never renumbers the rows the search index points at
    pk integer primary key,
    id            text not null unique,
    thread_id     text not null references threads (id) on delete cascade,
    user_id       text not null,
    seq           integer not null,
    role          text not null check (role in ('user', 'assistant')),
    content       text not null,
    status        text not null check (status in ('complete', 'interrupted', 'stopped', 'error')),
    input_tokens  integer not null default 0,
    output_tokens integer not null default 0,
    model         text,
    context       text,
    created_at    integer not null,
    unique (thread_id, seq)
);
create index messages_user on messages (user_id);

create table artifacts (
    -- an explicit rowid, so VACUUM never renumbers the rows the search index points at
    pk integer primary key,
    id                   text not null unique,
    thread_id            text not null references threads (id) on delete cascade,
    user_id              text not null,
    artifact_type        text not null,
    title                text not null,
    content              text not null,
    version              integer not null default 1,
    request_message_id   text references messages (id) on delete set null,
    assistant_message_id text references messages (id) on delete set null,
    created_at           integer not null,
    updated_at           integer not null
);
create index artifacts_thread on artifacts (thread_id, created_at);
create index artifacts_request on artifacts (request_message_id);

create table artifact_versions (
    artifact_id text not null references artifacts (id) on delete cascade,
    version     integer not null,
    title       text not null,
    content     text not null,
    created_at  integer not null,
    primary key (artifact_id, version)
);

-- What happened while an answer was written: tool calls, their input, result, timing, errors.
create table traces (
    message_id  text not null references messages (id) on delete cascade,
    step        integer not null,
    kind        text not null,
    tool        text,
    input       text,
    result      text,
    error       text,
    started_at  integer not null,
    duration_ms integer not null default 0,
    primary key (message_id, step)
);

create table attachments (
    id           text primary key,
    thread_id    text not null references threads (id) on delete cascade,
    user_id      text not null,
    filename     text not null,
    content_type text not null,
    size         integer not null,
    created_at   integer not null
);
create index attachments_thread on attachments (thread_id);

create table attachment_chunks (
    id            integer primary key,
    attachment_id text not null references attachments (id) on delete cascade,
    thread_id     text not null,
    seq           integer not null,
    content       text not null
);
create index attachment_chunks_attachment on attachment_chunks (attachment_id);

create table idempotency_keys (
    user_id     text not null,
    key         text not null,
    fingerprint text not null,
    response    text,
    created_at  integer not null,
    expires_at  integer not null,
    primary key (user_id, key)
);

create table usage_ledger (
    user_id       text not null references users (id) on delete cascade,
    day           text not null,
    model         text not null,
    input_tokens  integer not null default 0,
    output_tokens integer not null default 0,
    primary key (user_id, day, model)
);

-- One row per chat turn; a running turn holds its thread (one at a time) and is kept alive by heartbeats.
create table turns (
    id             text primary key,
    thread_id      text not null references threads (id) on delete cascade,
    user_id        text not null,
    status         text not null check (status in ('running', 'done')),
    stop_requested integer not null default 0,
    started_at     integer not null,
    heartbeat_at   integer not null
);
create unique index turns_one_running on turns (thread_id) where status = 'running';
create index turns_thread on turns (thread_id, started_at desc);

-- The events of a turn, in order, so a client can re-attach from any instance and miss nothing.
create table turn_events (
    turn_id text not null references turns (id) on delete cascade,
    seq     integer not null,
    name    text not null,
    data    text not null,
    primary key (turn_id, seq)
);

-- Full-text search. Each index row carries its owner as a token, so a search is scoped to one user inside
-- the MATCH itself (a plain column filter after MATCH would scan every user's hits).
create virtual table messages_fts using fts5(owner, body, tokenize = 'unicode61 remove_diacritics 2');
create virtual table threads_fts using fts5(owner, body, tokenize = 'unicode61 remove_diacritics 2');
create virtual table artifacts_fts using fts5(owner, body, tokenize = 'unicode61 remove_diacritics 2');
create virtual table chunks_fts using fts5(owner, body, tokenize = 'unicode61 remove_diacritics 2');

create trigger messages_fts_insert after insert on messages begin
    insert into messages_fts (rowid, owner, body) values (new.pk, 'u' || replace(new.user_id, '-', ''), new.content);
end;
create trigger messages_fts_update after update of content on messages begin
    delete from messages_fts where rowid = old.pk;
    insert into messages_fts (rowid, owner, body) values (new.pk, 'u' || replace(new.user_id, '-', ''), new.content);
end;
create trigger messages_fts_delete after delete on messages begin
    delete from messages_fts where rowid = old.pk;
end;

create trigger threads_fts_insert after insert on threads begin
    insert into threads_fts (rowid, owner, body) values (new.pk, 'u' || replace(new.user_id, '-', ''), new.title);
end;
create trigger threads_fts_update after update of title on threads begin
    delete from threads_fts where rowid = old.pk;
    insert into threads_fts (rowid, owner, body) values (new.pk, 'u' || replace(new.user_id, '-', ''), new.title);
end;
create trigger threads_fts_delete after delete on threads begin
    delete from threads_fts where rowid = old.pk;
end;

create trigger artifacts_fts_insert after insert on artifacts begin
    insert into artifacts_fts (rowid, owner, body) values (new.pk, 'u' || replace(new.user_id, '-', ''), new.title || char(10) || new.content);
end;
create trigger artifacts_fts_update after update of title, content on artifacts begin
    delete from artifacts_fts where rowid = old.pk;
    insert into artifacts_fts (rowid, owner, body) values (new.pk, 'u' || replace(new.user_id, '-', ''), new.title || char(10) || new.content);
end;
create trigger artifacts_fts_delete after delete on artifacts begin
    delete from artifacts_fts where rowid = old.pk;
end;

create trigger chunks_fts_insert after insert on attachment_chunks begin
    insert into chunks_fts (rowid, owner, body) values (new.id, 't' || replace(new.thread_id, '-', ''), new.content);
end;
create trigger chunks_fts_delete after delete on attachment_chunks begin
    delete from chunks_fts where rowid = old.id;
end;
