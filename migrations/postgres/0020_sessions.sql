-- Every session that was signed in, until its token would have expired anyway: signing out, signing out
-- everywhere, a new password and an idle timeout end sessions here, and every instance asks here on each request.
create table sessions (
    -- the token's id (`jti`)
    id           uuid primary key,
    user_id      uuid not null references users (id) on delete cascade,
    created_at   timestamptz not null,
    -- updated at most once a minute, for the idle timeout
    last_seen_at timestamptz not null,
    expires_at   timestamptz not null,
    ended_at     timestamptz
);
create index sessions_user on sessions (user_id);
create index sessions_expires on sessions (expires_at);
-- Sessions ended lately, which instances look for to close their open streams.
create index sessions_ended on sessions (ended_at) where ended_at is not null;

-- Sessions replace the list of signed-out tokens: a token without a session is refused.
drop table revoked_tokens;
