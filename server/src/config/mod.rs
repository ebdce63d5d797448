//! Start-up configuration: command-line flags, each also readable from the environment.

use std::{net::SocketAddr, path::PathBuf};

use clap::{Parser, ValueEnum};

/// Which model answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProviderKind {
    /// The offline, deterministic assistant built into Quire.
    Builtin,
    /// Any OpenAI-compatible Chat Completions endpoint.
    Openai,
    /// Anthropic's Messages API.
    Anthropic,
}

/// Quire: a self-hosted AI chat workspace.
#[derive(Debug, Clone, Parser)]
#[command(name = "quire", version, about)]
pub struct Config {
    /// Address to listen on (cargo-leptos sets LEPTOS_SITE_ADDR).
    #[arg(long, env = "LEPTOS_SITE_ADDR", default_value = "127.0.0.1:3000")]
    pub addr: SocketAddr,

    /// Directory for Quire's own files: the SQLite database and generated secrets.
    #[arg(long, env = "QUIRE_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,

    /// Database URL: `sqlite://path/to/file.db` or `postgres://user@host/db`. Default: `sqlite://<data dir>/quire.db`.
    #[arg(long, env = "QUIRE_DATABASE_URL")]
    pub database_url: Option<String>,

    /// Model provider.
    #[arg(long, env = "QUIRE_LLM_PROVIDER", value_enum, default_value = "builtin")]
    pub llm_provider: ProviderKind,

    /// Model name sent to the provider (each provider has a default).
    #[arg(long, env = "QUIRE_MODEL")]
    pub model: Option<String>,

    /// Pause between tokens of the built-in assistant, in milliseconds.
    #[arg(long, env = "QUIRE_BUILTIN_DELAY_MS", default_value_t = 20)]
    pub builtin_delay_ms: u64,

    /// Token budget of the conversation sent to the model (older turns are left out beyond it).
    #[arg(long, env = "QUIRE_CONTEXT_TOKENS", default_value_t = 24_000)]
    pub context_tokens: usize,

    /// Directory of the built site (wasm, js, css, assets).
    #[arg(long, env = "LEPTOS_SITE_ROOT", default_value = "target/site")]
    pub site_root: String,
}

impl Config {
    /// The database URL in force.
    pub fn database_url(&self) -> String {
        self.database_url.clone().unwrap_or_else(|| format!("sqlite://{}", self.data_dir.join("quire.db").display()))
    }

    /// A configuration for tests: a data directory, the built-in assistant without delay.
    pub fn for_tests(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            data_dir: data_dir.into(),
            database_url: None,
            llm_provider: ProviderKind::Builtin,
            model: None,
            builtin_delay_ms: 0,
            context_tokens: 24_000,
            site_root: "target/site".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_data_dir() {
        let config = Config::try_parse_from(["quire", "--data-dir", "/tmp/q"]).unwrap();
        assert_eq!(config.database_url(), "sqlite:///tmp/q/quire.db");
        assert_eq!(config.llm_provider, ProviderKind::Builtin);
    }

    #[test]
    fn help_documents_the_environment() {
        let help = <Config as clap::CommandFactory>::command().render_long_help().to_string();
        for var in ["LEPTOS_SITE_ADDR", "QUIRE_DATA_DIR", "QUIRE_DATABASE_URL", "QUIRE_LLM_PROVIDER"] {
            assert!(help.contains(var), "{var} missing from --help");
        }
    }
}
