//! Quire's integration tests, one binary (linking the server once keeps builds quick and small).
//! Each module is a suite; `common` starts real servers, `fake_upstream` replays model providers' wire formats.

mod common;
mod fake_upstream;

mod admin;
mod auth;
mod branches;
mod budgets;
mod chat_turns;
mod co_writing;
mod co_writing_live;
mod context_memory;
mod dedup;
mod delivery;
mod document_versions;
mod documents;
mod forms;
mod history;
mod history_story;
mod hostile;
mod imports;
mod isolation;
mod ledger;
mod llm_anthropic;
mod llm_builtin;
mod llm_openai;
mod messages;
mod models;
mod multi_instance;
mod ops;
mod parser_properties;
mod projects;
mod protection;
mod redaction;
mod reliability;
mod security;
mod security_budgets;
mod security_links;
mod security_setup;
mod settings_and_shares;
mod slice;
mod store_story;
mod summaries;
mod tokens;
mod traces;
mod versions_and_tags;
