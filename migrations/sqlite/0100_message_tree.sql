-- Conversations are trees: every message has a parent (none for a first message), and a conversation shows and
-- sends to the model one path, from a first message to its active leaf. An edit or a new answer to the same
-- message is a sibling; the branch left stays.
alter table messages add column parent_id text;
alter table threads add column active_id text;

-- Conversations written before are one path each: every message's parent is the message before it.
update messages set parent_id = chain.previous
from (select id, lag(id) over (partition by thread_id order by seq) as previous from messages) as chain
where messages.id = chain.id and chain.previous is not null;

update threads set active_id = newest.id
from (select thread_id, id, row_number() over (partition by thread_id order by seq desc) as n from messages) as newest
where threads.id = newest.thread_id and newest.n = 1;

-- The shape of a conversation (numbers, roles, ids and parents) read from the index alone.
drop index messages_heads;
create index messages_heads on messages (thread_id, seq, user_id, role, id, parent_id);
