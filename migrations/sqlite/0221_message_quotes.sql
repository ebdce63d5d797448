-- "Ask about this": the passage of a document of the same conversation a person's message is about, kept with the
-- message (the text as it was selected; the document may change or go since).
alter table messages add column quote_artifact_id text;
alter table messages add column quote_text text;
