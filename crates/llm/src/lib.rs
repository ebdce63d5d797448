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
pub mod tokens;
mod transport;
pub mod types;

use std::{path::PathBuf, sync::Arc, time::Duration};

pub use endpoint::Endpoint;
pub use meter::{Meter, Metered};
pub use registry::Registry;
pub use secret::ApiKey;
pub use transport::HttpTimeouts;
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

/// What the server's configuration says about models: the one provider of the environment, or a providers file.
#[derive(Debug, Clone)]
pub struct Settings {
    pub provider: ProviderKind,
    /// Model name sent to the provider (each provider has a default).
    pub model: Option<String>,
    /// The providers file, when one is given: it names several providers and the default model.
    pub models_file: Option<PathBuf>,
    /// Pause between tokens of the built-in assistant.
    pub builtin_delay: Duration,
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
            let provider = openai::OpenAiProvider::new(openai::OpenAiConfig::from_env(model))?;
            Arc::new(retry::RetryingProvider::new(provider, retry::RetryPolicy::default()))
        }
        ProviderKind::Anthropic => {
            let model = settings.model.clone().unwrap_or_else(|| "claude-sonnet-4-5".into());
            let provider = anthropic::AnthropicProvider::new(anthropic::AnthropicConfig::from_env(model))?;
            Arc::new(retry::RetryingProvider::new(provider, retry::RetryPolicy::default()))
        }
    })
}

/// The models on offer: those of the providers file when one is given, otherwise the one provider of the
/// settings. A bad providers file stops Quire with its message.
pub fn registry(settings: &Settings) -> anyhow::Result<Registry> {
    match &settings.models_file {
        Some(path) => {
            let file = models_file::load(path).map_err(anyhow::Error::msg)?;
            Ok(Registry::from_file(&file, settings.builtin_delay))
        }
        None => Ok(Registry::single(provider(settings)?)),
    }
}
