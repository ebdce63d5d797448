-- Personal API tokens: secrets a person makes in their settings for programs, sent as `Authorization: Bearer`.
-- Only the SHA-256 of the secret is kept, and a few of its first characters to recognise it by. Every token
-- expires; revoking one marks it (other instances end its open streams from that mark) and a later token of the
-- person clears it out. Times are microseconds since the Unix epoch.
create table api_tokens (
    id           text primary key,
    user_id      text not null references users (id) on delete cascade,
    name         text not null,
    scope        text not null check (scope in ('read', 'chat')),
    -- SHA-256 of the whole secret, in hex
    token_hash   text not null unique,
    prefix       text not null,
    created_at   integer not null,
    expires_at   integer not null,
    -- updated at most once a minute
    last_used_at integer,
    revoked_at   integer
);
create index api_tokens_by_user on api_tokens (user_id, created_at);
-- Tokens revoked lately, which instances look for to close their open streams.
create index api_tokens_revoked on api_tokens (revoked_at) where revoked_at is not null;
