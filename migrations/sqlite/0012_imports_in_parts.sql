-- An import is written in many short transactions, so that it never holds the writer for long. Until its last
-- one, each of its conversations carries the import's id: what a failed import wrote, or one cut off when the
-- process stopped, is found by it and removed.
alter table threads add column import_id text;
create index threads_importing on threads (import_id) where import_id is not null;

-- Removing a message clears the links of the documents and versions that point at it; without these indexes
-- each removal read every document of every user to find them.
create index artifacts_answer on artifacts (assistant_message_id);
create index artifact_versions_request on artifact_versions (request_message_id);
