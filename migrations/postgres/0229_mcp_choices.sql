-- The MCP servers whose tools a person's conversations are offered, and those one conversation is offered: a JSON
-- array of server names (an empty one turns them all off). Null: a conversation follows its person's choice, and a
-- person the servers on by default. A name no longer configured is passed over.
alter table users add column mcp_servers text;
alter table threads add column mcp_servers text;
-- Calls of MCP tools that ask the person first. The turn keeps a question here and waits until someone who writes in
-- the conversation decides (on any instance: the turn reads the row again until then) or it expires.
create table tool_approvals (
    id          uuid primary key,
    thread_id   uuid not null references threads (id) on delete cascade,
    turn_id     uuid not null references turns (id) on delete cascade,
    -- the conversation's author, and who sent the message the turn answers
    user_id     uuid not null references users (id) on delete cascade,
    sender_id   uuid references users (id) on delete set null,
    server      text not null,
    -- the server's label when the question was asked
    label       text not null,
    tool        text not null,
    -- the call's arguments as JSON, cut for showing (see `wire::shown_input`)
    input       text not null,
    state       text not null default 'pending' check (state in ('pending', 'approved', 'denied', 'expired')),
    created_at  timestamptz not null,
    decided_at  timestamptz,
    decided_by  uuid references users (id) on delete set null
);
-- The questions a conversation shows.
create index tool_approvals_pending on tool_approvals (thread_id, created_at) where state = 'pending';
create index tool_approvals_turn on tool_approvals (turn_id);
