-- Every message's number, role and id for one thread without reading the rows: the context of a long thread
-- reads the texts of its newest messages only.
create index messages_heads on messages (thread_id, seq, user_id, role, id);
