-- Where each version of a document was written: the newest message of the path shown then (the answer that wrote
-- it once that answer is saved; for a silent generation or a restored version, the active message). A share
-- link shows of each document the newest version written on the path it shares. Null: written before the
-- conversation had a message, which is on every path. No foreign key: a version whose branch was deleted is on
-- no path any more (a null would put it on every one).
alter table artifact_versions add column written_on uuid;
-- Versions written before: the answer that wrote the current version (the document's), the request that asked
-- for an earlier one; a first version nothing is known of stays on every path, as it was; a later one nothing is
-- known of goes on no path (the nil id).
update artifact_versions v set written_on = coalesce(
    case when a.version = v.version then a.assistant_message_id end,
    v.request_message_id,
    case when v.version = 1 then a.request_message_id else '00000000-0000-0000-0000-000000000000'::uuid end)
from artifacts a where a.id = v.artifact_id;

-- A reset link ends, unused, when a newer one of its account is made or its account's password changes.
alter table password_resets add column ended_at timestamptz;
