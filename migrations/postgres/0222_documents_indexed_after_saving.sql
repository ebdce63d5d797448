-- A document's search vector is computed after its save commits, not in it: as a generated column it was most of
-- the save's time (to_tsvector of 100,000 characters takes about 12 ms). The store indexes a document when its
-- save has committed and sweeps for any it missed (at start and every few minutes), and search computes the
-- vector of a document not indexed yet itself, so a search still finds every word saved before it.
-- `search_version` is the version `search` was computed for; null when it was never computed.
alter table artifacts drop column search;
alter table artifacts add column search tsvector;
alter table artifacts add column search_version bigint;
update artifacts set search = to_tsvector('simple', left(title || E'\n' || content, 250000)), search_version = version;
create index artifacts_search on artifacts using gin (search);
-- The documents waiting for their vector, in the order search walks a person's documents: normally none.
create index artifacts_unindexed on artifacts (user_id, created_at, id) where search_version is distinct from version;

-- Writing the vector changes nothing the model sees of a conversation (see 0150_context_versions): it does not
-- count.
drop trigger context_version_artifacts on artifacts;
create trigger context_version_artifacts after insert or delete on artifacts
    for each row when (pg_trigger_depth() = 0) execute function context_version_count();
create trigger context_version_artifacts_update after update on artifacts
    for each row when (pg_trigger_depth() = 0 and old.search_version is not distinct from new.search_version)
    execute function context_version_count();

-- Texts of documents compress with lz4 when the server was built with it: faster to write and read than the
-- default pglz. Texts already stored keep their compression; a server without lz4 keeps pglz.
do $$
begin
    alter table artifacts alter column content set compression lz4;
    alter table artifact_versions alter column content set compression lz4;
exception when feature_not_supported then
    raise notice 'lz4 is not available: document texts keep the default compression';
end
$$;
