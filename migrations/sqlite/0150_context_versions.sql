-- What the model's view of a conversation is made from (its messages, which of them is active, the documents and
-- the requests they answer) changes only in ways a conversation's `context_version` and `last_seq` show
-- together: a new message raises `last_seq` (and, as it becomes the active message, counts here), and every other
-- change counts here. A turn keeps the conversation's context in memory for its next turn under these three and
-- reuses it only while they are unchanged (see `chat::context`), so nothing another process writes is missed.
--
-- The text of an answer still being written (`writing`) changes without counting, while its turn holds the
-- conversation and knows what it writes; the save that finishes it (or finds it cut off) counts.
alter table threads add column context_version integer not null default 0;

create trigger context_version_active after update of active_id on threads
    when old.active_id is not new.active_id
begin
    update threads set context_version = context_version + 1 where id = new.id;
end;

create trigger context_version_message_update after update on messages when old.writing = 0 or new.writing = 0
begin
    update threads set context_version = context_version + 1 where id = old.thread_id;
end;

create trigger context_version_message_delete after delete on messages
begin
    update threads set context_version = context_version + 1 where id = old.thread_id;
end;

create trigger context_version_artifact_insert after insert on artifacts
begin
    update threads set context_version = context_version + 1 where id = new.thread_id;
end;

create trigger context_version_artifact_update after update on artifacts
begin
    update threads set context_version = context_version + 1 where id in (old.thread_id, new.thread_id);
end;

create trigger context_version_artifact_delete after delete on artifacts
begin
    update threads set context_version = context_version + 1 where id = old.thread_id;
end;

create trigger context_version_version_insert after insert on artifact_versions
begin
    update threads set context_version = context_version + 1
    where id = (select thread_id from artifacts where id = new.artifact_id);
end;

create trigger context_version_version_update after update on artifact_versions
begin
    update threads set context_version = context_version + 1
    where id in (select thread_id from artifacts where id in (old.artifact_id, new.artifact_id));
end;

create trigger context_version_version_delete after delete on artifact_versions
begin
    update threads set context_version = context_version + 1
    where id = (select thread_id from artifacts where id = old.artifact_id);
end;

create trigger context_version_request_insert after insert on artifact_requests
begin
    update threads set context_version = context_version + 1
    where id = (select thread_id from artifacts where id = new.artifact_id);
end;

create trigger context_version_request_update after update on artifact_requests
begin
    update threads set context_version = context_version + 1
    where id in (select thread_id from artifacts where id in (old.artifact_id, new.artifact_id));
end;

create trigger context_version_request_delete after delete on artifact_requests
begin
    update threads set context_version = context_version + 1
    where id = (select thread_id from artifacts where id = old.artifact_id);
end;
