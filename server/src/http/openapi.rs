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

use super::{artifacts, attachments, auth, chat, export, messages, search, stats, threads};

/// The whole API.
#[derive(OpenApi)]
#[openapi(
    info(title = "Quire API", description = "Quire's HTTP API. Errors are `{\"error\":{\"code\",\"message\",\"field\"?}}`."),
    paths(
        super::health,
        auth::register,
        auth::login,
        auth::logout,
        auth::logout_all,
        auth::change_password,
        auth::me,
        auth::delete_account,
        threads::list_threads,
        threads::create_thread,
        threads::get_thread,
        threads::update_thread,
        threads::delete_thread,
        threads::delete_message,
        chat::chat,
        chat::resume,
        chat::stop,
        messages::context,
        search::search,
        stats::stats,
        export::export_thread,
        export::export_account,
        export::import,
        artifacts::list,
        artifacts::show,
        artifacts::remove,
        artifacts::versions,
        artifacts::version,
        artifacts::export,
        attachments::upload,
        attachments::list,
        attachments::remove,
    ),
    components(schemas(app::api::ErrorBody, app::api::ErrorDetail, app::api::ChatEvent)),
    modifiers(&SessionSchemes, &ExtractorErrors),
    tags((name = "auth", description = "Accounts and sessions"), (name = "threads", description = "Conversations"),
        (name = "messages", description = "Messages"), (name = "chat", description = "Streamed chat turns"),
        (name = "meta", description = "Service"), (name = "history", description = "Search, stats, export and import"),
        (name = "documents", description = "Documents, versions, exports and attachments"))
)]
pub struct ApiDoc;

/// Declares the two ways to send a session token: the `quire_session` cookie and `Authorization: Bearer`.
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
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).bearer_format("JWT").build()),
        );
    }
}

/// Documents the answers every handler can give before its own code runs: a malformed path or query parameter
/// (400), a JSON body that is not JSON (400), not declared as JSON (415), too large (413) or of the wrong shape
/// (422), and the general per-user rate limit on signed-in routes (429).
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
            let operations = [&mut item.get, &mut item.post, &mut item.put, &mut item.patch, &mut item.delete];
            for operation in operations.into_iter().flatten() {
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
                }
            }
        }
    }
}

/// `GET /api/openapi.json`.
pub async fn document() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
