-- Setup links: while Quire has no administrator and sign-up is by invitation or closed, each instance that
-- starts makes one and prints it to its log; any of them makes the first administrator, once. Only the token's
-- SHA-256 is kept. Times are microseconds since the Unix epoch.
create table setup_tokens (
    token_hash  text primary key,
    created_at  integer not null
);
