-- What a person sets on the settings page: standing instructions added to the model's system prompt (below
-- Quire's own rules) and the theme every device of theirs shows.
alter table users add column custom_instructions text not null default '';
alter table users add column theme text not null default 'system' check (theme in ('system', 'light', 'dark'));

-- Read-only snapshots of conversations, readable by anyone with the token's link (`/s/<token>`) until revoked
-- (the row is deleted). The snapshot is the shared page's JSON, written once when the link is made.
create table shares (
    id          text primary key,
    token       text not null unique,
    user_id     text not null references users (id) on delete cascade,
    thread_id   text not null references threads (id) on delete cascade,
    title       text not null,
    snapshot    text not null,
    created_at  integer not null
);
create index shares_by_user on shares (user_id, created_at);
create index shares_by_thread on shares (thread_id);
