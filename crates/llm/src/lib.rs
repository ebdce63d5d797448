//! Model providers. `types` holds the neutral request and stream-event types; each provider file is a
//! translator between them and one wire format. `retry` adds retries for failures before the first event.

pub mod anthropic;
pub mod builtin;
pub mod endpoint;
pub mod meter;
pub mod models_file;
pub mod openai;
pub mod registry;
pub mod retry;
pub mod secret;
pub mod summary;
pub mod text_calls;
pub mod tokens;
mod transport;
pub mod types;

use std::{path::PathBuf, sync::Arc, time::Duration};

pub use endpoint::{Endpoint, HttpTimeouts, Remote};
pub use meter::{Meter, Metered};
pub use registry::Registry;
pub use secret::ApiKey;
pub use types::*;

/// Which model answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// The offline, deterministic assistant built into Quire.
    Builtin,
    /// Any OpenAI-compatible Chat Completions endpoint.
    Openai,
    /// Anthropic's Messages API.
    Anthropic,
}

impl ProviderKind {
    /// Every provider's name, as `QUIRE_LLM_PROVIDER` and the providers file take it.
    pub const NAMES: [&'static str; 3] = ["builtin", "openai", "anthropic"];

    /// The provider named `name`, if any.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "builtin" => Some(ProviderKind::Builtin),
            "openai" => Some(ProviderKind::Openai),
            "anthropic" => Some(ProviderKind::Anthropic),
            _ => None,
        }
    }
}

/// What the server's configuration says about models: the one provider of the environment, or a providers file.
#[derive(Debug, Clone)]
pub struct Settings {
    pub provider: ProviderKind,
    /// Model name sent to the provider (each provider has a default).
    pub model: Option<String>,
    /// The providers file, read and checked, when one is given: it names several providers and the default model.
    pub models_file: Option<models_file::ModelsConfig>,
    /// Pause between tokens of the built-in assistant.
    pub builtin_delay: Duration,
    /// A PEM file of certificates every remote provider may be signed by, besides the public roots.
    pub ca_file: Option<PathBuf>,
    /// The OpenAI-compatible provider's address and key, when it is the one provider.
    pub openai: Remote,
    /// Anthropic's address and key, when it is the one provider.
    pub anthropic: Remote,
}

/// Builds the provider the settings name. Remote providers retry failures that happen before the first token.
pub fn provider(settings: &Settings) -> anyhow::Result<Arc<dyn Provider>> {
    Ok(match settings.provider {
        ProviderKind::Builtin => {
            let mut builtin = builtin::Builtin::new().with_delay(settings.builtin_delay);
            if let Some(model) = &settings.model {
                builtin = builtin.with_model(model.clone());
            }
            Arc::new(builtin)
        }
        ProviderKind::Openai => {
            let model = settings.model.clone().unwrap_or_else(|| "gpt-4o-mini".into());
            let endpoint = settings.openai.endpoint(openai::DEFAULT_BASE_URL, model, settings.ca_file.clone());
            let provider = openai::OpenAiProvider::new(openai::OpenAiConfig::at(endpoint))?;
            Arc::new(retry::RetryingProvider::new(provider, retry::RetryPolicy::default()))
        }
        ProviderKind::Anthropic => {
            let model = settings.model.clone().unwrap_or_else(|| "claude-sonnet-4-5".into());
            let endpoint = settings.anthropic.endpoint(anthropic::DEFAULT_BASE_URL, model, settings.ca_file.clone());
            let provider = anthropic::AnthropicProvider::new(anthropic::AnthropicConfig::at(endpoint))?;
            Arc::new(retry::RetryingProvider::new(provider, retry::RetryPolicy::default()))
        }
    })
}

/// The models on offer: those of the providers file when one is given, otherwise the one provider of the
/// settings. A bad providers file stops Quire with its message.
pub fn registry(settings: &Settings) -> anyhow::Result<Registry> {
    match &settings.models_file {
        Some(file) => Ok(Registry::from_file(file, settings.builtin_delay, settings.ca_file.clone())),
        None => Ok(Registry::single(provider(settings)?)),
    }
}
