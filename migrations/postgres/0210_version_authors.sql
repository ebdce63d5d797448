-- Who wrote each version of a document: a person by hand (author_id: an edit in the viewer, a restore), or the
-- assistant (author_id null) answering with `model` (null for versions saved before Quire kept it, and imports).
alter table artifact_versions add column author_id uuid references users (id) on delete set null;
alter table artifact_versions add column model text;
