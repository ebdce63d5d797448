-- Every session that was signed in, until its token would have expired anyway: signing out, signing out
-- everywhere, a new password and an idle timeout end sessions here, and every instance asks here on each request.
-- Times are microseconds since the Unix epoch.
create table sessions (
    -- the token's id (`jti`)
    id           text primary key,
    user_id      text not null references users (id) on delete cascade,
    created_at   integer not null,
    -- updated at most once a minute, for the idle timeout
    last_seen_at integer not null,
    expires_at   integer not null,
    ended_at     integer
);
create index sessions_user on sessions (user_id);
create index sessions_expires on sessions (expires_at);
-- Sessions ended lately, which instances look for to close their open streams.
create index sessions_ended on sessions (ended_at) where ended_at is not null;

-- Sessions replace the list of signed-out tokens: a token without a session is refused.
drop table revoked_tokens;
