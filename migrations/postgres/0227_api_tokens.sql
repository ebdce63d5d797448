-- Personal API tokens: secrets a person makes in their settings for programs, sent as `Authorization: Bearer`.
-- Only the SHA-256 of the secret is kept, and a few of its first characters to recognise it by. Every token
-- expires; revoking one marks it (other instances end its open streams from that mark) and a later token of the
-- person clears it out.
create table api_tokens (
    id           uuid primary key,
    user_id      uuid not null references users (id) on delete cascade,
    name         text not null,
    scope        text not null check (scope in ('read', 'chat')),
    -- SHA-256 of the whole secret, in hex
    token_hash   text not null unique,
    prefix       text not null,
    created_at   timestamptz not null,
    expires_at   timestamptz not null,
    -- updated at most once a minute
    last_used_at timestamptz,
    revoked_at   timestamptz
);
create index api_tokens_by_user on api_tokens (user_id, created_at);
-- Tokens revoked lately, which instances look for to close their open streams.
create index api_tokens_revoked on api_tokens (revoked_at) where revoked_at is not null;
