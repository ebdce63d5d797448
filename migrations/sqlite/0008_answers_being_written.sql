-- An answer is saved again and again while it is written (every 250 ms); re-indexing its whole growing text each
-- time cost more than anything else its saves do. A message marked `writing` stays out of the search index and
-- enters it once, when it is saved as finished (or found cut off: see `Sqlite::connect`, and `begin_turn_with`,
-- `finish_turn` and `release_abandoned_answers` in the store).
alter table messages add column writing integer not null default 0 check (writing in (0, 1));

-- The answers still being written: a few at any time, found without reading the others.
create index messages_writing on messages (thread_id) where writing = 1;

drop trigger messages_fts_insert;
drop trigger messages_fts_update;

create trigger messages_fts_insert after insert on messages when new.writing = 0 begin
    insert into messages_fts (rowid, owner, body) values (new.pk, 'u' || replace(new.user_id, '-', ''), new.content);
end;
-- A message is in the index exactly when it is not being written, so rewriting a draft (written before and
-- after) touches the index not at all.
create trigger messages_fts_update after update of content, writing on messages
when old.writing = 0 or new.writing = 0 begin
    delete from messages_fts where rowid = old.pk;
    insert into messages_fts (rowid, owner, body)
    select new.pk, 'u' || replace(new.user_id, '-', ''), new.content where new.writing = 0;
end;
