//! Model providers. `types` holds the neutral request and stream-event types; each provider file is a
//! translator between them and one wire format.

pub mod builtin;
mod types;

use std::sync::Arc;

pub use types::*;

use crate::config::{Config, ProviderKind};

/// Builds the provider named in the configuration.
pub fn from_config(config: &Config) -> anyhow::Result<Arc<dyn Provider>> {
    match config.llm_provider {
        ProviderKind::Builtin => Ok(Arc::new(builtin::Builtin::new(
            std::time::Duration::from_millis(config.builtin_delay_ms),
            config.model.clone(),
        ))),
        other => anyhow::bail!("the {other:?} provider is not available in this build"),
    }
}
