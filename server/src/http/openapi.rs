//! `GET /api/openapi.json`: the API described from the handlers' own annotations (utoipa), for client
//! generators and schema-driven fuzzers.

use axum::Json;
use utoipa::{
    openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme},
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
        auth::me,
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
    modifiers(&SessionSchemes),
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

/// `GET /api/openapi.json`.
pub async fn document() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
