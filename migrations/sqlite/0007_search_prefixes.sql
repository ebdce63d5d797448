-- Prefix searches (`pay*`) read a prefix index of two- and three-character prefixes instead of merging the
-- lists of every word that starts with them. FTS5 sets prefix indexes at creation only, so the message index is
-- rebuilt under its old name, and the triggers that keep it current are made again around the swap.
drop trigger messages_fts_insert;
drop trigger messages_fts_update;
drop trigger messages_fts_delete;

create virtual table messages_fts_prefixed using fts5(owner, body, tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3');
insert into messages_fts_prefixed (rowid, owner, body) select rowid, owner, body from messages_fts;
drop table messages_fts;
alter table messages_fts_prefixed rename to messages_fts;

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
