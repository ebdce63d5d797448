-- A project's owner invites an address no account has yet: the person joins the project with the role when an
-- account is made with that address (under the sign-up mode in force), and the invitation goes.
create table project_invitations (
    id          text not null primary key,
    project_id  text not null references projects (id) on delete cascade,
    -- Lower case: an address is matched whatever its case.
    email       text not null,
    role        text not null check (role in ('owner', 'editor', 'viewer')),
    invited_by  text references users (id) on delete set null,
    created_at  integer not null,
    unique (project_id, email)
);
create index project_invitations_email on project_invitations (email);
