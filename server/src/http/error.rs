//! The one error type of the HTTP boundary. Every failure leaves as `{"error":{"code","message","field"?}}`
//! with the right status; internal causes are logged, never sent.

use axum::{
    extract::rejection::{JsonRejection, PathRejection, QueryRejection},
    http::{header, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use wire::{validate, ErrorBody, ErrorDetail};

use crate::chat::ChatError;
use crate::history;
use store::{SignUpRefusal, StoreError};

/// An error answered to a client.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{message}")]
    BadRequest { code: &'static str, message: String, field: Option<String> },
    #[error("{message}")]
    Unprocessable { code: &'static str, message: String, field: Option<String> },
    #[error("authentication required")]
    Unauthorized,
    #[error("wrong e-mail or password")]
    InvalidCredentials,
    #[error("{message}")]
    Forbidden { code: &'static str, message: String },
    #[error("not found")]
    NotFound,
    #[error("{0}")]
    Conflict(String),
    /// A document's new version was made from an older one: 409 with the document as it is now.
    #[error("The document was changed since the version you edited. Compare with the current version and save again.")]
    VersionConflict(Box<wire::Artifact>),
    #[error("the request body is too large")]
    PayloadTooLarge,
    /// A storage allowance would be passed (413 like a body too large, with its own code and message).
    #[error("{0}")]
    QuotaExceeded(String),
    #[error("{0}")]
    UnsupportedMediaType(String),
    #[error("too many requests")]
    TooManyRequests { retry_after_secs: u64 },
    /// Today's token budget is spent (429 with the time it resets, and `Retry-After` until then).
    #[error("the daily token budget is used up")]
    BudgetExceeded { resets_at: chrono::DateTime<chrono::Utc> },
    /// The person has as many answers being written at once as they may (429).
    #[error("You have as many answers being written at once as you may; wait for one to finish.")]
    TooManyTurns,
    /// The person has as many answer streams open at once as they may (429).
    #[error("You have as many answers open at once as you may; close one and try again.")]
    TooManyStreams,
    /// This instance cannot serve yet: its database does not answer or lacks migrations.
    #[error("Quire is not ready: its database cannot be reached or is not up to date.")]
    NotReady,
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

pub type Result<T, E = ApiError> = std::result::Result<T, E>;

tokio::task_local! {
    /// The id of the request being answered (`x-request-id`), for the log and the reference people are shown.
    static REQUEST_ID: String;
}

/// The layer's function that makes the request's id known to [`ApiError`] while the request is answered.
pub async fn with_request_id(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    // Our own ids are UUIDs; one sent by a proxy in front is kept only when it is as plain.
    let id = request
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|id| id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
        .unwrap_or_default()
        .to_string();
    REQUEST_ID.scope(id, next.run(request)).await
}

/// The id of the request being answered, if any.
pub fn request_id() -> Option<String> {
    REQUEST_ID.try_with(Clone::clone).ok().filter(|id| !id.is_empty())
}

impl ApiError {
    /// A 422 about one field of the request.
    pub fn invalid(field: &str, message: impl Into<String>) -> Self {
        Self::unprocessable("validation_failed", message, Some(field))
    }

    /// A 422 with a code, about one field of the request if any.
    pub fn unprocessable(code: &'static str, message: impl Into<String>, field: Option<&str>) -> Self {
        ApiError::Unprocessable { code, message: message.into(), field: field.map(str::to_string) }
    }

    /// A 400 with a code and message.
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        ApiError::BadRequest { code, message: message.into(), field: None }
    }

    /// A 400 about one field of the request.
    fn bad_field(code: &'static str, field: &str, message: impl Into<String>) -> Self {
        ApiError::BadRequest { code, message: message.into(), field: Some(field.to_string()) }
    }

    /// A 400 about one query parameter, beyond the limits the API states for it.
    pub fn invalid_query(field: &str, message: impl Into<String>) -> Self {
        Self::bad_field("invalid_query", field, message)
    }

    /// A 400 for a listing cursor that is not one the API gave out (or no longer fits the listing).
    pub fn invalid_cursor() -> Self {
        Self::bad_field("invalid_cursor", "cursor", "The cursor is not valid.")
    }

    /// A 415 for a body not declared as JSON.
    pub fn not_json() -> Self {
        ApiError::UnsupportedMediaType("Expected a JSON body with `Content-Type: application/json`.".into())
    }

    pub fn status_code(&self) -> StatusCode {
        match self {
            ApiError::BadRequest { .. } => StatusCode::BAD_REQUEST,
            ApiError::Unprocessable { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Unauthorized | ApiError::InvalidCredentials => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden { .. } => StatusCode::FORBIDDEN,
            ApiError::NotFound => StatusCode::NOT_FOUND,
            ApiError::Conflict(_) | ApiError::VersionConflict(_) => StatusCode::CONFLICT,
            ApiError::PayloadTooLarge | ApiError::QuotaExceeded(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::TooManyRequests { .. }
            | ApiError::BudgetExceeded { .. }
            | ApiError::TooManyTurns
            | ApiError::TooManyStreams => StatusCode::TOO_MANY_REQUESTS,
            ApiError::NotReady => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The `code` of the error's body.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::BadRequest { code, .. }
            | ApiError::Unprocessable { code, .. }
            | ApiError::Forbidden { code, .. } => code,
            ApiError::Unauthorized => "unauthorized",
            ApiError::InvalidCredentials => "invalid_credentials",
            ApiError::NotFound => "not_found",
            ApiError::Conflict(_) => "conflict",
            ApiError::VersionConflict(_) => "version_conflict",
            ApiError::PayloadTooLarge => "payload_too_large",
            ApiError::QuotaExceeded(_) => "storage_quota_exceeded",
            ApiError::UnsupportedMediaType(_) => "unsupported_media_type",
            ApiError::TooManyRequests { .. } => "rate_limited",
            ApiError::BudgetExceeded { .. } => "budget_exceeded",
            ApiError::TooManyTurns => "too_many_turns",
            ApiError::TooManyStreams => "too_many_streams",
            ApiError::NotReady => "not_ready",
            ApiError::Internal(_) => "internal",
        }
    }

    /// The `message` of the error's body: never an internal cause.
    pub fn public_message(&self) -> String {
        match self {
            ApiError::NotFound => "Not found.".into(),
            ApiError::Unauthorized => "Sign in to continue.".into(),
            ApiError::InvalidCredentials => "Wrong e-mail or password.".into(),
            ApiError::PayloadTooLarge => "The request body is too large.".into(),
            ApiError::TooManyRequests { retry_after_secs } => {
                format!("Too many requests; try again in {retry_after_secs} s.")
            }
            ApiError::BudgetExceeded { resets_at } => {
                format!("The daily token budget is used up. It resets at {} UTC.", resets_at.format("%Y-%m-%d %H:%M"))
            }
            ApiError::Internal(_) => match request_id() {
                Some(id) => format!("Something went wrong on our side. (Reference: {id}.)"),
                None => "Something went wrong on our side.".into(),
            },
            other => other.to_string(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let ApiError::Internal(err) = &self {
            tracing::error!(error = ?err, reference = request_id().unwrap_or_default(), "internal error");
        }
        let field = match &self {
            ApiError::BadRequest { field, .. } | ApiError::Unprocessable { field, .. } => field.clone(),
            _ => None,
        };
        let error = ErrorDetail { code: self.code().into(), message: self.public_message(), field };
        let mut response = match self {
            ApiError::VersionConflict(ref current) => {
                let body = wire::VersionConflict { error, current: (**current).clone() };
                (self.status_code(), Json(body)).into_response()
            }
            _ => (self.status_code(), Json(ErrorBody { error })).into_response(),
        };
        let retry_after_secs = match self {
            ApiError::TooManyRequests { retry_after_secs } => Some(retry_after_secs),
            ApiError::BudgetExceeded { resets_at } => {
                Some(u64::try_from((resets_at - chrono::Utc::now()).num_seconds()).unwrap_or(0))
            }
            _ => None,
        };
        if let Some(secs) = retry_after_secs {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
        }
        response
    }
}

impl From<StoreError> for ApiError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::NotFound => ApiError::NotFound,
            StoreError::Forbidden(message) => ApiError::Forbidden { code: "role_required", message },
            StoreError::Invalid { field, message } => ApiError::invalid(field, message),
            StoreError::Conflict(message) => ApiError::Conflict(message),
            StoreError::VersionConflict(current) => ApiError::VersionConflict(current),
            StoreError::BudgetExceeded { resets_at } => ApiError::BudgetExceeded { resets_at },
            StoreError::TooManyTurns => ApiError::TooManyTurns,
            StoreError::QuotaExceeded => ApiError::QuotaExceeded("The storage allowance is used up.".into()),
            StoreError::InvalidCursor => ApiError::invalid_cursor(),
            StoreError::ExpiredCursor => {
                Self::bad_field("cursor_expired", "cursor", "The cursor has expired; list again from the first page.")
            }
            other => ApiError::Internal(other.into()),
        }
    }
}

impl From<ChatError> for ApiError {
    fn from(err: ChatError) -> Self {
        match err {
            ChatError::Invalid(invalid) => invalid.into(),
            ChatError::NotFound => ApiError::NotFound,
            ChatError::Busy(None) => ApiError::Conflict(
                "An answer is already being written in this conversation; wait for it or stop it.".into(),
            ),
            ChatError::Busy(Some(writer)) => ApiError::Conflict(format!(
                "An answer to {writer} is already being written in this conversation; wait for it or stop it."
            )),
            ChatError::NotRetryable(message) | ChatError::Conflict(message) => ApiError::Conflict(message.into()),
            ChatError::KeyReused => Self::unprocessable(
                "idempotency_key_reused",
                "This Idempotency-Key was already used for a different request.",
                None,
            ),
            ChatError::KeyInProgress => {
                ApiError::Conflict("A request with this Idempotency-Key is still being processed.".into())
            }
            ChatError::BudgetExceeded { resets_at } => ApiError::BudgetExceeded { resets_at },
            ChatError::TooManyTurns => ApiError::TooManyTurns,
            ChatError::Store(err) => err.into(),
            ChatError::Internal(err) => ApiError::Internal(err),
        }
    }
}

impl From<crate::heavy::Busy> for ApiError {
    fn from(busy: crate::heavy::Busy) -> Self {
        ApiError::TooManyRequests { retry_after_secs: busy.retry_after_secs }
    }
}

impl From<validate::Invalid> for ApiError {
    fn from(invalid: validate::Invalid) -> Self {
        ApiError::invalid(invalid.field, invalid.message)
    }
}

impl From<history::Error> for ApiError {
    fn from(err: history::Error) -> Self {
        match err {
            history::Error::Malformed(message) => ApiError::bad_request("malformed_json", message),
            history::Error::Unsupported(message) => Self::unprocessable("unsupported_import", message, None),
            history::Error::Invalid { field, message } => ApiError::invalid(&field, message),
            history::Error::Store(e) => e.into(),
            other @ (history::Error::Render(_) | history::Error::Task) => ApiError::Internal(other.into()),
        }
    }
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> Self {
        match rejection {
            JsonRejection::JsonDataError(e) => Self::unprocessable("invalid_body", e.body_text(), None),
            JsonRejection::JsonSyntaxError(e) => ApiError::bad_request("malformed_json", e.body_text()),
            JsonRejection::MissingJsonContentType(_) => ApiError::not_json(),
            JsonRejection::BytesRejection(_) => ApiError::PayloadTooLarge,
            other => ApiError::bad_request("invalid_body", other.body_text()),
        }
    }
}

impl From<PathRejection> for ApiError {
    fn from(rejection: PathRejection) -> Self {
        ApiError::bad_request("invalid_path", format!("Invalid path parameter: {}", rejection.body_text()))
    }
}

impl From<QueryRejection> for ApiError {
    fn from(rejection: QueryRejection) -> Self {
        ApiError::bad_request("invalid_query", rejection.body_text())
    }
}
/// The answer to a refused sign-up.
impl From<SignUpRefusal> for ApiError {
    fn from(refusal: SignUpRefusal) -> Self {
        let invalid = |code, message: &str| ApiError::unprocessable(code, message, Some("invite"));
        match refusal {
            SignUpRefusal::Closed => ApiError::Forbidden {
                code: "signup_closed",
                message: "Sign-up is closed. Ask the administrator for an account.".into(),
            },
            SignUpRefusal::InviteRequired => ApiError::Forbidden {
                code: "invite_required",
                message: "Sign-up needs an invitation. Ask the administrator for an invitation link.".into(),
            },
            SignUpRefusal::SetupRequired => ApiError::Forbidden {
                code: "setup_required",
                message:
                    "Quire has no administrator yet. Open the setup link from the server's log to create the first \
                      account."
                        .into(),
            },
            SignUpRefusal::SetupInvalid => ApiError::unprocessable(
                "setup_invalid",
                "This setup link is not valid: it was used, or Quire has an administrator already.",
                Some("setup"),
            ),
            SignUpRefusal::InviteInvalid => invalid("invite_invalid", "This invitation is not valid (or was revoked)."),
            SignUpRefusal::InviteExpired => invalid("invite_expired", "This invitation has expired."),
            SignUpRefusal::InviteUsedUp => invalid("invite_used_up", "This invitation has been used up."),
        }
    }
}
