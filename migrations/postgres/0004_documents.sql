-- The request that asked for each version of a document, so a revision request counts as fulfilled too.
alter table artifact_versions add column request_message_id uuid references messages (id) on delete set null;
-- PostgreSQL does not index the referencing side of a foreign key; without this, deleting a message scans.
create index artifact_versions_request on artifact_versions (request_message_id);
