//! Where a remote provider answers and how it is reached: the settings the Anthropic and OpenAI providers share.

use std::path::PathBuf;

use crate::{
    secret::ApiKey,
    transport::{self, Clients, HttpTimeouts},
    types::LlmError,
};

/// A remote provider's address, key, model, timeouts and extra trusted certificates. `Debug` does not show the key.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// API root, e.g. `https://api.anthropic.com` or `http://localhost:11434/v1`.
    pub base_url: String,
    /// The API key; `None` for local servers that need none, or behind a proxy that adds it.
    pub api_key: Option<ApiKey>,
    /// Model identifier sent upstream.
    pub model: String,
    /// Connect, first-byte and idle timeouts.
    pub timeouts: HttpTimeouts,
    /// A PEM file of certificates trusted besides the public roots (`QUIRE_LLM_CA_FILE`).
    pub ca_file: Option<PathBuf>,
}

impl Endpoint {
    /// `model` on the server at `base_url`, without a key or extra certificates; adjust the fields as needed.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            model: model.into(),
            timeouts: HttpTimeouts::default(),
            ca_file: None,
        }
    }

    /// `model` on the server at `base_url` with `api_key`, trusting the certificates of `QUIRE_LLM_CA_FILE`.
    pub fn configured(base_url: impl Into<String>, api_key: Option<ApiKey>, model: impl Into<String>) -> Self {
        Self { api_key, ca_file: transport::ca_file_from_env(), ..Self::new(base_url, model) }
    }

    /// `model` on the server in the variable `url_var` (`default_url` when unset), with the key in `key_var`.
    pub fn from_env(url_var: &str, default_url: &str, key_var: &str, model: impl Into<String>) -> Self {
        Self::configured(transport::base_url_from_env(url_var, default_url), ApiKey::from_env(key_var), model)
    }

    /// The HTTP clients that reach this endpoint.
    pub(crate) fn clients(&self) -> Result<Clients, LlmError> {
        Clients::new(&self.timeouts, self.ca_file.as_deref())
    }
}
