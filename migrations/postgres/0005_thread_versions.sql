-- How each conversation looked in the listing (title, pin, archive, activity time, tags) before every change,
-- so a walk through the pages of GET /api/threads keeps placing conversations where they were when the walk
-- began: each one comes exactly once, however many change between pages.
--
-- "Changed after the walk began" is "written by a transaction the first page's snapshot could not see"
-- (pg_visible_in_snapshot), which stays exact with concurrent writers and several instances. Changes to one
-- conversation are serialised by its row lock, so among them the smallest `id` is the earliest.
create table thread_versions (
    id         bigint generated always as identity primary key,
    thread_id  uuid not null references threads (id) on delete cascade,
    user_id    uuid not null,
    xid        xid8 not null default pg_current_xact_id(),
    -- false when this change created the conversation: it did not exist before
    existed    boolean not null,
    title      text,
    pinned     boolean,
    archived   boolean,
    updated_at timestamptz,
    tags       text[],
    -- for pruning only
    changed_at timestamptz not null default clock_timestamp()
);
create index thread_versions_user on thread_versions (user_id, xid);
create index thread_versions_changed on thread_versions (changed_at);

create function thread_versions_record() returns trigger language plpgsql as $$
begin
    if tg_op = 'INSERT' then
        -- Walks older than two days have expired (their cursors are refused), so their history can go.
        delete from thread_versions where changed_at < now() - interval '2 days';
        insert into thread_versions (thread_id, user_id, existed) values (new.id, new.user_id, false);
    else
        -- Tags are written after the thread row in the same transaction: the old ones are still there.
        insert into thread_versions (thread_id, user_id, existed, title, pinned, archived, updated_at, tags)
        values (old.id, old.user_id, true, old.title, old.pinned, old.archived, old.updated_at,
            array(select g.tag from thread_tags g where g.thread_id = old.id));
    end if;
    return null;
end
$$;

create trigger thread_versions_record after insert or update of title, pinned, archived, updated_at on threads
    for each row execute function thread_versions_record();
