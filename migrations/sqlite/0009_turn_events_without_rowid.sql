-- Every event a running turn streams becomes a row here (at 500 streams, about 25,000 a second). Kept in the
-- B-tree of its key alone (WITHOUT ROWID), a row costs one B-tree insert instead of two (the table's and its key
-- index's), and the rows are small, as such tables should be.
create table turn_events_keyed (
    turn_id text not null references turns (id) on delete cascade,
    seq     integer not null,
    name    text not null,
    data    text not null,
    primary key (turn_id, seq)
) without rowid;
insert into turn_events_keyed (turn_id, seq, name, data) select turn_id, seq, name, data from turn_events;
drop table turn_events;
alter table turn_events_keyed rename to turn_events;
