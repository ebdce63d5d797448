-- Earlier requests a document answers besides the one of the turn that made it: a request for the same kind of
-- document that failed, or whose document was deleted, and was then made in a later turn. They count as
-- fulfilled while the document exists, so no later turn acts on them again; deleting it brings them back.
create table artifact_requests (
    artifact_id uuid not null references artifacts (id) on delete cascade,
    message_id  uuid not null references messages (id) on delete cascade,
    primary key (artifact_id, message_id)
);
-- PostgreSQL does not index the referencing side of a foreign key; without this, deleting a message scans.
create index artifact_requests_message on artifact_requests (message_id);
