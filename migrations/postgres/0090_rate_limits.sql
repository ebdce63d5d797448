-- Rate limits shared by every instance (GCRA): per key (a limit's name and the user or address it counts), the
-- theoretical arrival time of the next request in microseconds since 1970, and whether the last request was
-- admitted. A key whose time has passed is as good as a missing one; instances delete such rows every minute.
-- Unlogged: a check does not wait for the write-ahead log; after a crash every key starts again from its burst.
create unlogged table rate_limits (
    key        text primary key,
    tat_micros bigint not null,
    admitted   boolean not null
);
