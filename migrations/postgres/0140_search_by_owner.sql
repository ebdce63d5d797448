-- Search finds a word among one person's messages. With the words alone in the GIN index, the index answers with
-- every account's messages holding the word, and PostgreSQL fetches each from the table to keep the owner's; with
-- the owner in the index as well (btree_gin lets a GIN index hold a uuid), the index scan intersects the word's
-- entries with the owner's and yields only the owner's matches. Replaces the index on the words alone: every
-- search names its owner. btree_gin ships with PostgreSQL (contrib) and is
-- trusted: the owner of the database, or any role with the CREATE right on it, may install it without a superuser.
-- Building the index over a million messages took under 10 s on a small machine; messages wait for it meanwhile.
create extension if not exists btree_gin;
create index messages_user_search on messages using gin (user_id, search);
drop index messages_search;
