-- The model a person chose for a conversation, and the one they start conversations with (`provider/model` ids of
-- the models on offer; null: the default). A choice no longer on offer falls back to the default when used.
alter table threads add column model text;
alter table users add column default_model text;
