-- A conversation's requirements ledger. A requirement's number gives its key (R-1, R-2...), never reused in its
-- conversation; every change is a revision that holds the requirement's text, kind and status after it, and the
-- person's message that caused it (null for a person's change in the ledger itself, author_id then set). The
-- ledger a path shows is made of the revisions whose message is on it, so it follows branches; a revision goes
-- with its message.
create table requirements (
    id        text not null primary key,
    thread_id text not null references threads (id) on delete cascade,
    user_id   text not null,
    number    integer not null,
    unique (thread_id, number)
);

create table requirement_revisions (
    id             integer primary key autoincrement,
    requirement_id text not null references requirements (id) on delete cascade,
    thread_id      text not null references threads (id) on delete cascade,
    text           text not null,
    kind           text not null,
    status         text not null,
    message_id     text references messages (id) on delete cascade,
    author_id      text references users (id) on delete set null,
    model          text,
    created_at     integer not null
);
create index requirement_revisions_thread on requirement_revisions (thread_id, id);
create index requirement_revisions_requirement on requirement_revisions (requirement_id);
create index requirement_revisions_message on requirement_revisions (message_id);

-- What each version of a document reflects: the requirement, at the revision it stood at.
create table artifact_requirements (
    artifact_id    text not null references artifacts (id) on delete cascade,
    version        integer not null,
    requirement_id text not null references requirements (id) on delete cascade,
    revision_id    integer not null references requirement_revisions (id) on delete cascade,
    primary key (artifact_id, version, requirement_id)
);
create index artifact_requirements_requirement on artifact_requirements (requirement_id);
create index artifact_requirements_revision on artifact_requirements (revision_id);
