-- Messages enter the search index in batches, outside the transactions that save them: indexing one message
-- at a time made the index write a new segment (and its prefix indexes) in every chat's start and end, about a
-- fifth of a chat's fixed cost. A message saved or changed is queued here by its row; the store indexes the
-- queue in the background and before any search, so every search still finds all that was saved before it.
create table messages_to_index (pk integer primary key);

drop trigger messages_fts_insert;
drop trigger messages_fts_update;
drop trigger messages_fts_delete;

create trigger messages_fts_insert after insert on messages when new.writing = 0 begin
    insert or ignore into messages_to_index (pk) values (new.pk);
end;
-- A message is in the index exactly when it is not being written, so rewriting a draft (written before and
-- after) queues nothing.
create trigger messages_fts_update after update of content, writing on messages
when old.writing = 0 or new.writing = 0 begin
    insert or ignore into messages_to_index (pk) values (new.pk);
end;
create trigger messages_fts_delete after delete on messages begin
    delete from messages_fts where rowid = old.pk;
    delete from messages_to_index where pk = old.pk;
end;
