-- The request that asked for each version of a document, so a revision request counts as fulfilled too.
alter table artifact_versions add column request_message_id text references messages (id) on delete set null;
