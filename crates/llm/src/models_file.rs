//! The model providers file (`QUIRE_CONFIG`): several providers at once and the default model. It is read once,
//! at start-up; anything wrong in it stops Quire with a message that names the line or the provider.

use std::path::PathBuf;

use serde::Deserialize;

use crate::ApiKey;
use crate::ProviderKind;

/// Largest providers file read, in bytes.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;
/// Most providers in one file.
const MAX_PROVIDERS: usize = 32;
/// Most models listed for one provider.
const MAX_FIXED_MODELS: usize = 200;
/// Longest provider name, in characters.
const MAX_NAME_CHARS: usize = 32;

/// Longest model name, in characters.
const MAX_MODEL_CHARS: usize = 200;

/// Whether `name` can be a model's name: 1 to 200 visible characters, no spaces.
pub fn valid_model_name(name: &str) -> bool {
    !name.is_empty() && name.chars().count() <= MAX_MODEL_CHARS && name.chars().all(|c| c.is_ascii_graphic())
}

/// The file as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelsFile {
    /// `provider/model`: the model of people who chose none.
    #[serde(default)]
    pub default_model: Option<String>,
    pub providers: Vec<ProviderEntry>,
    /// The MCP servers whose tools models are offered: read by the server, which checks them.
    #[serde(default)]
    pub mcp_servers: Vec<toml::Table>,
}

/// One `[[providers]]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderEntry {
    /// Unique, `[a-z0-9-]`: the first half of its models' ids.
    pub name: String,
    pub kind: ProviderKind,
    /// The API root; each kind has a default.
    #[serde(default)]
    pub base_url: Option<String>,
    /// The environment variable holding the API key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// A file holding the API key.
    #[serde(default)]
    pub api_key_file: Option<PathBuf>,
    /// A fixed list of models; without it the provider's own list is asked for.
    #[serde(default)]
    pub models: Option<Vec<String>>,
    /// The models write their tool calls in their text (`<tool_call>` tags, fenced JSON blocks), which the server
    /// does not parse: Quire reads them from the first answer on (tagged calls are read, and the model remembered,
    /// without it too). OpenAI-compatible providers only.
    #[serde(default)]
    pub tool_calls_in_text: bool,
}

/// A provider of the file, checked, its key read.
#[derive(Debug, Clone)]
pub struct ProviderSettings {
    pub name: String,
    pub kind: ProviderKind,
    pub base_url: Option<String>,
    pub api_key: Option<ApiKey>,
    pub models: Option<Vec<String>>,
    pub tool_calls_in_text: bool,
}

/// The providers file, checked: at least one provider and a default model that one of them offers.
#[derive(Debug, Clone)]
pub struct ModelsConfig {
    pub default_model: String,
    pub providers: Vec<ProviderSettings>,
    /// The file's `[[mcp_servers]]` tables, as written.
    pub mcp_servers: Vec<toml::Table>,
}

/// Checks the text of a providers file; `env` reads environment variables (keys named by `api_key_env`).
pub fn parse(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<ModelsConfig, String> {
    // The parser's message names the line and column of a syntax error or an unknown key.
    let file: ModelsFile = toml::from_str(text).map_err(|e| e.to_string().trim_end().to_string())?;
    if file.providers.is_empty() {
        return Err("name at least one provider ([[providers]])".into());
    }
    if file.providers.len() > MAX_PROVIDERS {
        return Err(format!("at most {MAX_PROVIDERS} providers"));
    }
    let mut providers: Vec<ProviderSettings> = Vec::with_capacity(file.providers.len());
    for ProviderEntry { name, kind, base_url, api_key_env, api_key_file, models, tool_calls_in_text } in file.providers
    {
        let valid = !name.is_empty()
            && name.chars().count() <= MAX_NAME_CHARS
            && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !valid {
            return Err(format!("provider name {name:?}: use 1 to {MAX_NAME_CHARS} of a-z, 0-9 and -"));
        }
        if providers.iter().any(|p| p.name == name) {
            return Err(format!("provider name {name:?} is used twice"));
        }
        let api_key = match (api_key_env, api_key_file) {
            (Some(_), Some(_)) => return Err(format!("provider {name}: give api_key_env or api_key_file, not both")),
            (Some(var), None) => match env(&var).map(ApiKey::new).filter(|k| !k.expose().is_empty()) {
                Some(key) => Some(key),
                None => return Err(format!("provider {name}: the environment variable {var} is not set")),
            },
            (None, Some(file)) => {
                let key = std::fs::read_to_string(&file)
                    .map_err(|e| format!("provider {name}: api_key_file {}: {e}", file.display()))?;
                let key = ApiKey::new(key);
                if key.expose().is_empty() {
                    return Err(format!("provider {name}: api_key_file {} is empty", file.display()));
                }
                Some(key)
            }
            (None, None) => None,
        };
        if let Some(url) = &base_url {
            let parsed = url::Url::parse(url).map_err(|e| format!("provider {name}: base_url: {e}"))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(format!("provider {name}: base_url must be http or https"));
            }
        }
        if kind == ProviderKind::Builtin && (base_url.is_some() || api_key.is_some()) {
            return Err(format!("provider {name}: the built-in assistant takes no base_url or key"));
        }
        if tool_calls_in_text && kind != ProviderKind::Openai {
            return Err(format!(
                "provider {name}: tool_calls_in_text is for OpenAI-compatible providers (kind = \"openai\")"
            ));
        }
        if let Some(models) = &models {
            if models.is_empty() || models.len() > MAX_FIXED_MODELS {
                return Err(format!("provider {name}: list 1 to {MAX_FIXED_MODELS} models, or leave models out"));
            }
            if let Some(bad) = models.iter().find(|m| !valid_model_name(m)) {
                return Err(format!("provider {name}: model {bad:?} is not a model name"));
            }
        }
        providers.push(ProviderSettings { name, kind, base_url, api_key, models, tool_calls_in_text });
    }
    let default_model = match file.default_model {
        Some(id) => {
            let Some((provider, model)) = id.split_once('/') else {
                return Err(format!("default_model {id:?}: write it as provider/model"));
            };
            let Some(source) = providers.iter().find(|p| p.name == provider) else {
                return Err(format!("default_model {id:?}: no provider is named {provider:?}"));
            };
            if source.models.as_ref().is_some_and(|models| !models.iter().any(|m| m == model)) {
                return Err(format!("default_model {id:?}: provider {provider} does not list {model:?}"));
            }
            if !valid_model_name(model) {
                return Err(format!("default_model {id:?}: {model:?} is not a model name"));
            }
            id
        }
        None => {
            let ProviderSettings { name, kind, models, .. } = &providers[0];
            match (models, kind) {
                (Some(models), _) => format!("{name}/{}", models[0]),
                (None, ProviderKind::Builtin) => format!("{name}/{}", crate::builtin::DEFAULT_MODEL),
                (None, _) => {
                    return Err(format!("set default_model: provider {name} lists no models of its own in the file"))
                }
            }
        }
    };
    Ok(ModelsConfig { default_model, providers, mcp_servers: file.mcp_servers })
}
