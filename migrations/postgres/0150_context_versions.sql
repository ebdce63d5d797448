-- What the model's view of a conversation is made from (its messages, which of them is active, the documents and
-- the requests they answer) changes only in ways a conversation's `context_version` and `last_seq` show
-- together: a new message raises `last_seq` (and, as it becomes the active message, counts here), and every other
-- change counts here. A turn keeps the conversation's context in memory for its next turn under these three and
-- reuses it only while they are unchanged (see `chat::context`), so nothing another instance writes is missed.
--
-- The text of an answer still being written (`writing`) changes without counting, while its turn holds the
-- conversation and knows what it writes; the save that finishes it (or finds it cut off) counts. Rows removed by a cascade (`pg_trigger_depth() > 0`) do not
-- count either: the change that removed them counted already, or took their conversation with it.
alter table threads add column context_version bigint not null default 0;

create function context_version_count() returns trigger language plpgsql as $$
declare
    before_change uuid;
    after_change uuid;
begin
    -- The conversation the row was in and the one it is in now (the same but for a move; null when none).
    if tg_table_name in ('messages', 'artifacts') then
        if tg_op <> 'INSERT' then before_change := old.thread_id; end if;
        if tg_op <> 'DELETE' then after_change := new.thread_id; end if;
    else
        -- artifact_versions and artifact_requests: the conversation of their document.
        if tg_op <> 'INSERT' then
            select thread_id into before_change from artifacts where id = old.artifact_id;
        end if;
        if tg_op <> 'DELETE' then
            select thread_id into after_change from artifacts where id = new.artifact_id;
        end if;
    end if;
    update threads set context_version = context_version + 1 where id in (before_change, after_change);
    return null;
end
$$;

create function context_version_active() returns trigger language plpgsql as $$
begin
    new.context_version := old.context_version + 1;
    return new;
end
$$;

create trigger context_version_active before update of active_id on threads
    for each row when (old.active_id is distinct from new.active_id) execute function context_version_active();
create trigger context_version_message_update after update on messages
    for each row when (not old.writing or not new.writing) execute function context_version_count();
create trigger context_version_message_delete after delete on messages
    for each row when (pg_trigger_depth() = 0) execute function context_version_count();
create trigger context_version_artifacts after insert or update or delete on artifacts
    for each row when (pg_trigger_depth() = 0) execute function context_version_count();
create trigger context_version_artifact_versions after insert or update or delete on artifact_versions
    for each row when (pg_trigger_depth() = 0) execute function context_version_count();
create trigger context_version_artifact_requests after insert or update or delete on artifact_requests
    for each row when (pg_trigger_depth() = 0) execute function context_version_count();
