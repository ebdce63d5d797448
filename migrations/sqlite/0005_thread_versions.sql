-- How each conversation looked in the listing (title, pin, archive, activity time, tags) before every change,
-- so a walk through the pages of GET /api/threads keeps placing conversations where they were when the walk
-- began: each one comes exactly once, however many change between pages.
--
-- `id` only grows (autoincrement: a deleted row's id is never reused), so "changed after the walk began"
-- is "a version with an id above the highest one the first page saw".
create table thread_versions (
    id         integer primary key autoincrement,
    thread_id  text not null references threads (id) on delete cascade,
    user_id    text not null,
    -- 0 when this change created the conversation: it did not exist before
    existed    integer not null,
    title      text,
    pinned     integer,
    archived   integer,
    updated_at integer,
    -- JSON array of the tags then
    tags       text,
    -- wall-clock microseconds, for pruning only
    changed_at integer not null
);
create index thread_versions_user on thread_versions (user_id, id);
create index thread_versions_changed on thread_versions (changed_at);

create trigger thread_versions_on_insert after insert on threads
begin
    -- Walks older than two days have expired (their cursors are refused), so their history can go.
    delete from thread_versions where changed_at < cast(unixepoch('subsec') * 1000000 as integer) - 172800000000;
    insert into thread_versions (thread_id, user_id, existed, changed_at)
    values (new.id, new.user_id, 0, cast(unixepoch('subsec') * 1000000 as integer));
end;

-- Every statement that sets one of these columns records the state before it; tags are written after the
-- thread row in the same transaction, so the old tags are still there to copy.
create trigger thread_versions_on_update after update of title, pinned, archived, updated_at on threads
begin
    insert into thread_versions (thread_id, user_id, existed, title, pinned, archived, updated_at, tags, changed_at)
    values (old.id, old.user_id, 1, old.title, old.pinned, old.archived, old.updated_at,
        (select json_group_array(tag) from thread_tags where thread_id = old.id),
        cast(unixepoch('subsec') * 1000000 as integer));
end;
