-- Failed sign-ins per account, shared by every instance: after a few, each further attempt waits longer (up to
-- a cap), whichever address it comes from. Kept by the address as typed (lower case), known or not, so the
-- answers never tell whether an account exists. Times are microseconds since the Unix epoch.
create table sign_in_failures (
    account        text primary key,
    failures       integer not null,
    last_failed_at integer not null
);
