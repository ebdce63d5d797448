-- An account's attachments, summed against its storage allowance on every upload.
create index attachments_user on attachments (user_id);
