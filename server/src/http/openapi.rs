//! `GET /api/openapi.json`: the API described from the handlers' own annotations (utoipa), for client
//! generators and schema-driven fuzzers.

use axum::Json;
use utoipa::{
    openapi::{
        path::{Operation, ParameterIn},
        security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme},
        Content, Ref, ResponseBuilder,
    },
    Modify, OpenApi,
};

use super::{
    admin, approvals, artifacts, attachments, auth, changes, chat, export, mcp_servers, messages, models, projects,
    requirements, search, settings, shares, sso, stats, threads, tokens,
};

/// The whole API.
#[derive(OpenApi)]
#[openapi(
    info(title = "Quire API", description = "Quire's HTTP API. Errors are `{\"error\":{\"code\",\"message\",\"field\"?}}`."),
    paths(
        super::health, super::ready,
        auth::register, auth::login, auth::logout, auth::logout_all, auth::change_password, auth::me,
        auth::delete_account, auth::sessions, auth::end_session, sso::methods, sso::start, sso::callback, tokens::create, tokens::list, tokens::revoke,
        admin::reset_password, admin::list_accounts, admin::list_projects, admin::set_role, admin::set_disabled, admin::set_budget,
        admin::delete_account, admin::reset_link, admin::list_invites, admin::create_invite, admin::revoke_invite,
        admin::sign_up_settings, admin::set_sign_up_settings, admin::list_tokens, admin::revoke_token,
        settings::settings, settings::update_settings, models::list_models, mcp_servers::list_servers,
        threads::list_threads, threads::create_thread, threads::get_thread, threads::update_thread,
        threads::delete_thread, threads::delete_message, threads::list_tags,
        shares::create, shares::list_for_thread, shares::list, shares::revoke, shares::shared,
        projects::create, projects::list, projects::show, projects::update, projects::remove, projects::members,
        projects::add_member, projects::cancel_invitation, projects::change_role, projects::remove_member, projects::activity, projects::threads, projects::requirements,
        projects::export,
        chat::chat, chat::resume, chat::stop, chat::retry, chat::update_document, approvals::decide, changes::changes,
        requirements::ledger, requirements::update, requirements::export,
        messages::add_message, messages::regenerate, messages::switch_branch, messages::context, messages::trace,
        messages::turn_trace,
        search::search, stats::stats,
        export::export_thread, export::export_account, export::import,
        artifacts::list, artifacts::show, artifacts::edit, artifacts::remove, artifacts::versions, artifacts::version,
        artifacts::restore, artifacts::diff, artifacts::compare, artifacts::export,
        attachments::upload, attachments::list, attachments::remove,
    ),
    components(schemas(wire::ErrorBody, wire::ErrorDetail, wire::ChatEvent, wire::ExportFormat)),
    modifiers(&SessionSchemes, &ExtractorErrors),
    tags((name = "auth", description = "Accounts, sessions and personal API tokens"),
        (name = "admin", description = "Operator control, for administrators only (404 to everyone else, 403 to an API token)"), (name = "threads", description = "Conversations"),
        (name = "projects", description = "Team projects: members and roles, conversations, activity"),
        (name = "messages", description = "Messages"), (name = "chat", description = "Streamed chat turns"),
        (name = "meta", description = "Service"), (name = "history", description = "Search, stats, export and import"),
        (name = "artifacts", description = "Artifacts (the documents people see), their versions and exports, and attached files"),
        (name = "requirements", description = "A conversation's requirements ledger: what each document version reflects, and what changed since"))
)]
pub struct ApiDoc;

/// Declares the ways to sign a request in: a session token in the `quire_session` cookie, or `Authorization:
/// Bearer` with a session token or a personal API token.
struct SessionSchemes;

impl Modify for SessionSchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "session",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::new(crate::auth::SESSION_COOKIE))),
        );
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new().scheme(HttpAuthScheme::Bearer).description(Some(BEARER_DESCRIPTION)).build(),
            ),
        );
    }
}

/// What the `bearer` scheme takes.
const BEARER_DESCRIPTION: &str = "A session token (the JWT that signing in answers with) or a personal API token \
    (`quire_pat_…`, made with `POST /api/tokens`). An API token acts as its owner, counts against their rate limits \
    and budgets, and is refused (401) once revoked or expired or while the account is disabled. Its scope decides \
    what it may do: `read` only reads (`GET`); `chat` also writes in conversations and their documents (`/api/threads…`, \
    `/api/artifacts/…`) but not their share links. No token manages the account, its sessions or tokens, settings, \
    projects or sharing, nor uses `/api/admin/…`: such a request is a 403 with the code `token_scope`.";

/// Documents the answers every handler can give before its own code runs: a malformed parameter or JSON body
/// (400, 413, 415, 422), the general per-user rate limit on signed-in routes (429) and, on signed-in routes that
/// write, an API token whose scope does not allow it (403).
struct ExtractorErrors;

impl ExtractorErrors {
    fn add(operation: &mut Operation, status: &str, description: &str) {
        operation.responses.responses.entry(status.to_string()).or_insert_with(|| {
            ResponseBuilder::new()
                .description(description)
                .content("application/json", Content::new(Some(Ref::from_schema_name("ErrorBody"))))
                .build()
                .into()
        });
    }
}

impl Modify for ExtractorErrors {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for item in openapi.paths.paths.values_mut() {
            let operations = [
                (true, &mut item.get),
                (false, &mut item.post),
                (false, &mut item.put),
                (false, &mut item.patch),
                (false, &mut item.delete),
            ];
            for (reads, operation) in operations.into_iter().filter_map(|(reads, op)| Some((reads, op.as_mut()?))) {
                let parameters = operation.parameters.iter().flatten();
                if parameters.clone().any(|p| matches!(p.parameter_in, ParameterIn::Path | ParameterIn::Query)) {
                    Self::add(operation, "400", "A path or query parameter is malformed");
                }
                let json_body =
                    operation.request_body.as_ref().is_some_and(|b| b.content.contains_key("application/json"));
                if json_body {
                    Self::add(operation, "400", "The body is not valid JSON");
                    Self::add(operation, "413", "The body is larger than the limit");
                    Self::add(operation, "415", "The body is not declared as `application/json`");
                    Self::add(operation, "422", "The JSON does not have the expected shape");
                }
                if operation.security.as_ref().is_some_and(|s| !s.is_empty()) {
                    Self::add(operation, "429", "Over the per-user rate limit (see `Retry-After`)");
                    if !reads {
                        Self::add(operation, "403", "An API token whose scope does not allow this (`token_scope`)");
                    }
                }
            }
        }
    }
}

/// `GET /api/openapi.json`.
pub async fn document() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Value;
    use wire::{
        validate, MAX_EMAIL_CHARS, MAX_IMPORT_DOCUMENTS, MAX_IMPORT_MESSAGES, MAX_IMPORT_THREADS, MAX_PASSWORD_CHARS,
    };

    fn document() -> Value {
        serde_json::to_value(ApiDoc::openapi()).expect("the document is JSON")
    }

    fn schema<'a>(doc: &'a Value, name: &str) -> &'a Value {
        &doc["components"]["schemas"][name]
    }

    fn parameter<'a>(doc: &'a Value, path: &str, name: &str) -> &'a Value {
        let parameters = doc["paths"][path]["get"]["parameters"].as_array().expect("parameters");
        &parameters.iter().find(|p| p["name"] == name).unwrap_or_else(|| panic!("{path} {name}"))["schema"]
    }

    fn regex(pattern: &Value) -> regex::Regex {
        regex::Regex::new(pattern.as_str().expect("a pattern")).expect("the pattern compiles")
    }

    /// The limits of the document are the server's own (its attributes have to spell them as literals).
    #[test]
    fn the_document_states_the_limits_the_server_enforces() {
        let doc = document();
        let limits = [
            (&schema(&doc, "ThreadExport")["properties"]["messages"]["maxItems"], MAX_IMPORT_MESSAGES),
            (&schema(&doc, "ThreadExport")["properties"]["artifacts"]["maxItems"], MAX_IMPORT_DOCUMENTS),
            (&schema(&doc, "AccountExport")["properties"]["threads"]["maxItems"], MAX_IMPORT_THREADS),
            (&schema(&doc, "ImportBody")["oneOf"][3]["maxItems"], MAX_IMPORT_THREADS),
            (&schema(&doc, "LoginRequest")["properties"]["email"]["maxLength"], MAX_EMAIL_CHARS),
            (&schema(&doc, "LoginRequest")["properties"]["password"]["maxLength"], MAX_PASSWORD_CHARS),
            (&parameter(&doc, "/api/threads", "cursor")["maxLength"], super::super::threads::MAX_CURSOR_CHARS),
            (&parameter(&doc, "/api/search", "q")["maxLength"], super::super::search::MAX_QUERY_CHARS),
        ];
        for (stated, enforced) in limits {
            assert_eq!(stated.as_u64(), Some(enforced as u64));
        }
        // Every offset the accounts page takes is within what its description allows.
        let offset = parameter(&doc, "/api/admin/users", "offset");
        assert_eq!((offset["format"].as_str(), offset["maximum"].as_u64()), (Some("int64"), Some(u32::MAX as u64)));
        for path in ["/api/threads", "/api/search"] {
            let limit = parameter(&doc, path, "limit");
            assert_eq!((limit["minimum"].as_u64(), limit["maximum"].as_u64()), (Some(1), Some(100)), "{path}");
        }
    }

    #[test]
    fn every_reference_resolves() {
        fn references<'a>(value: &'a Value, found: &mut Vec<&'a str>) {
            match value {
                Value::Object(map) => {
                    if let Some(Value::String(target)) = map.get("$ref") {
                        found.push(target);
                    }
                    map.values().for_each(|v| references(v, found));
                }
                Value::Array(items) => items.iter().for_each(|v| references(v, found)),
                _ => {}
            }
        }
        let doc = document();
        let mut found = Vec::new();
        references(&doc, &mut found);
        assert!(!found.is_empty());
        for target in found {
            let name = target.strip_prefix("#/components/schemas/").expect("a schema reference");
            assert!(schema(&doc, name).is_object(), "{target} is not in the document");
        }
    }

    /// Text with what the rules care about: whitespace of every kind, NUL, commas, `@` and dots.
    fn tricky_text(max: usize) -> impl Strategy<Value = String> {
        let chars = prop::sample::select(vec![
            'a', 'Z', '7', 'é', '語', '🦀', ' ', '\t', '\n', '\r', '\u{b}', '\u{c}', '\u{1c}', '\u{85}', '\u{a0}',
            '\u{2003}', '\u{200b}', '\u{3000}', '\0', ',', '@', '.',
        ]);
        prop::collection::vec(chars, 0..max).prop_map(|chars| chars.into_iter().collect())
    }

    proptest! {
        /// The document's patterns accept exactly what the rules accept.
        #[test]
        fn the_patterns_accept_what_the_rules_accept(text in tricky_text(24)) {
            let doc = document();
            let create = &schema(&doc, "CreateThread")["properties"];
            let title = regex(&create["title"]["oneOf"][1]["pattern"]);
            prop_assert_eq!(title.is_match(&text), validate::title(&text).is_ok());
            let tag = regex(&create["tags"]["oneOf"][1]["items"]["pattern"]);
            prop_assert_eq!(tag.is_match(&text), validate::tag(&text).is_ok());
            let token_name = regex(&schema(&doc, "CreateTokenRequest")["properties"]["name"]["oneOf"][0]["pattern"]);
            prop_assert_eq!(token_name.is_match(&text), validate::token_name(&text).is_ok());
            let email = regex(&schema(&doc, "RegisterRequest")["properties"]["email"]["pattern"]);
            prop_assert_eq!(email.is_match(&text), validate::email(&text).is_ok());
            let filter = regex(&parameter(&doc, "/api/threads", "tags")["pattern"]);
            prop_assert_eq!(filter.is_match(&text), super::super::threads::tag_filter(&text).is_ok());
        }

        #[test]
        fn the_tag_filter_pattern_counts_tags_and_characters(tags in prop::collection::vec(tricky_text(60), 0..14)) {
            let doc = document();
            let filter = regex(&parameter(&doc, "/api/threads", "tags")["pattern"]);
            let text = tags.join(",");
            prop_assert_eq!(filter.is_match(&text), super::super::threads::tag_filter(&text).is_ok());
        }
    }
}
