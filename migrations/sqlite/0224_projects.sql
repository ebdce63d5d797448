-- Team projects. A project has members, each an owner, an editor or a viewer; a conversation belongs to at most
-- one project (its rows keep their author as owner: members reach them through the conversation's project). A
-- deleted project leaves its conversations to their authors. The activity log names its subjects as they were
-- named then, so it reads the same after they are renamed or gone.
create table projects (
    id          text not null primary key,
    name        text not null,
    description text not null default '',
    -- Added to the system prompt of every conversation in the project, below Quire's rules and above each
    -- person's own instructions.
    instructions text not null default '',
    archived    integer not null default 0,
    created_at  integer not null,
    updated_at  integer not null
);

create table project_members (
    project_id text not null references projects (id) on delete cascade,
    user_id    text not null references users (id) on delete cascade,
    role       text not null check (role in ('owner', 'editor', 'viewer')),
    added_at   integer not null,
    primary key (project_id, user_id)
);
create index project_members_user on project_members (user_id, project_id);

alter table threads add column project_id text references projects (id) on delete set null;
create index threads_project on threads (project_id, updated_at) where project_id is not null;

create table project_activity (
    id         integer primary key autoincrement,
    project_id text not null references projects (id) on delete cascade,
    actor_id   text references users (id) on delete set null,
    kind       text not null,
    subject    text,
    role       text,
    created_at integer not null
);
create index project_activity_project on project_activity (project_id, id);
