-- Search ranks a person's newest hits of a common word (see `Search` in the store). SQLite needs no new index for
-- it: FTS5 walks its rows newest first by rowid. This keeps the migrations of both backends numbered alike.
select 1;
