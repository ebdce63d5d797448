//! Model providers. `types` holds the neutral request and stream-event types; each provider file is a
//! translator between them and one wire format. `retry` adds retries for failures before the first event.

pub mod anthropic;
pub mod builtin;
pub mod endpoint;
pub mod meter;
pub mod openai;
pub mod registry;
pub mod retry;
pub mod secret;
pub mod summary;
mod transport;
pub mod types;

use std::sync::Arc;

pub use endpoint::Endpoint;
pub use meter::{Meter, Metered};
pub use registry::Registry;
pub use secret::ApiKey;
pub use transport::HttpTimeouts;
pub use types::*;

use crate::config::{Config, ProviderKind};

/// Builds the provider named in the configuration. Remote providers retry failures that happen before the first token.
pub fn from_config(config: &Config) -> anyhow::Result<Arc<dyn Provider>> {
    Ok(match config.llm_provider {
        ProviderKind::Builtin => {
            let mut builtin =
                builtin::Builtin::new().with_delay(std::time::Duration::from_millis(config.builtin_delay_ms));
            if let Some(model) = &config.model {
                builtin = builtin.with_model(model.clone());
            }
            Arc::new(builtin)
        }
        ProviderKind::Openai => {
            let model = config.model.clone().unwrap_or_else(|| "gpt-4o-mini".into());
            let provider = openai::OpenAiProvider::new(openai::OpenAiConfig::from_env(model))?;
            Arc::new(retry::RetryingProvider::new(provider, retry::RetryPolicy::default()))
        }
        ProviderKind::Anthropic => {
            let model = config.model.clone().unwrap_or_else(|| "claude-sonnet-4-5".into());
            let provider = anthropic::AnthropicProvider::new(anthropic::AnthropicConfig::from_env(model))?;
            Arc::new(retry::RetryingProvider::new(provider, retry::RetryPolicy::default()))
        }
    })
}

/// The models on offer: those of the providers file (`QUIRE_CONFIG`) when one is given, otherwise the one provider
/// of the environment. A bad providers file stops Quire with its message.
pub fn registry_from_config(config: &Config) -> anyhow::Result<Registry> {
    match &config.models_file {
        Some(path) => {
            let file = crate::config::models::load(path).map_err(anyhow::Error::msg)?;
            Ok(Registry::from_file(&file, std::time::Duration::from_millis(config.builtin_delay_ms)))
        }
        None => Ok(Registry::single(from_config(config)?)),
    }
}
