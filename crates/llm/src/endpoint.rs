//! Where a remote provider answers and how it is reached: the settings the Anthropic and OpenAI providers share.

use std::{path::PathBuf, time::Duration};

use crate::secret::ApiKey;

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
}

/// Timeouts for one streamed completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpTimeouts {
    /// Establishing the TCP (and TLS) connection.
    pub connect: Duration,
    /// From sending the request until the response status and headers arrive.
    pub first_byte: Duration,
    /// Longest silence allowed between two chunks of the streamed body. Providers send keep-alive
    /// comments or pings while the model thinks, so a long silence means a dead stream.
    pub idle: Duration,
}

impl Default for HttpTimeouts {
    fn default() -> Self {
        Self { connect: Duration::from_secs(10), first_byte: Duration::from_secs(60), idle: Duration::from_secs(60) }
    }
}

/// A remote provider as the environment names it: its base URL (the provider's public one when `None`) and key.
#[derive(Debug, Clone, Default)]
pub struct Remote {
    pub base_url: Option<String>,
    pub api_key: Option<ApiKey>,
}

impl Remote {
    /// The endpoint serving `model`, at `default_url` unless a base URL is given, trusting `ca_file`'s certificates.
    pub fn endpoint(&self, default_url: &str, model: impl Into<String>, ca_file: Option<PathBuf>) -> Endpoint {
        let base_url = self.base_url.clone().unwrap_or_else(|| default_url.to_owned());
        Endpoint { api_key: self.api_key.clone(), ca_file, ..Endpoint::new(base_url, model) }
    }
}
