//! Wire types of the models on offer (`GET /api/models`).

use serde::{Deserialize, Serialize};

use super::validate::Invalid;

/// Longest model id accepted in a request, in characters.
pub const MAX_MODEL_ID_CHARS: usize = 240;

/// One model people may choose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ModelInfo {
    /// `provider/model`: what a conversation or the settings name.
    pub id: String,
    /// The provider's name, as configured.
    pub provider: String,
    /// The model's own name, as its answers show it.
    pub model: String,
}

/// `GET /api/models`: the models on offer and the server's default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ModelList {
    pub models: Vec<ModelInfo>,
    /// The model of the caller's conversations that name none: their default while it is on offer, else the
    /// server's.
    pub default: String,
    /// The server's default model.
    pub server_default: String,
}

/// A model id of a request, trimmed; empty means "the default". Whether it is on offer is the server's to say.
pub fn checked_id(field: &'static str, id: String) -> Result<String, Invalid> {
    let id = id.trim();
    if id.chars().count() > MAX_MODEL_ID_CHARS || id.chars().any(char::is_control) {
        return Err(Invalid { field, message: "That is not a model of this server.".into() });
    }
    Ok(id.to_string())
}
