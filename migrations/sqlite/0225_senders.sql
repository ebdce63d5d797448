-- Editors of a project write in its conversations too. A turn keeps its conversation's author as `user_id` (every
-- write of the turn is the author's conversation's) and the person who started it as `sender_id`: the one whose
-- budget and running-turn cap it counts against (null: the author, for turns from before).
alter table turns add column sender_id text references users (id) on delete set null;
update turns set sender_id = user_id where status = 'running';
drop index turns_running_by_user;
create index turns_running_by_sender on turns (sender_id) where status = 'running';
-- Who wrote a person's message, when it was not the conversation's author (null: the author). No foreign key: a
-- message of a member whose account is gone still says it was not the author's.
alter table messages add column author_id text;
