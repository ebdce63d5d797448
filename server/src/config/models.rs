//! The model settings that come from outside the command line: the providers file (`QUIRE_CONFIG`) and the
//! remote provider's address and key in the environment.

use std::path::Path;

use llm::models_file::{parse, ModelsConfig, MAX_FILE_BYTES};
use llm::{ApiKey, Remote};

/// Reads and checks the providers file at `path`.
pub fn load(path: &Path) -> Result<ModelsConfig, String> {
    let at = path.display();
    let size = std::fs::metadata(path).map_err(|e| format!("QUIRE_CONFIG {at}: {e}"))?.len();
    if size > MAX_FILE_BYTES {
        return Err(format!("QUIRE_CONFIG {at}: the file is larger than {} KiB", MAX_FILE_BYTES / 1024));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("QUIRE_CONFIG {at}: {e}"))?;
    parse(&text, &|var| std::env::var(var).ok()).map_err(|e| format!("QUIRE_CONFIG {at}: {e}"))
}

/// The remote provider of the environment: its base URL (trimmed; the provider's own when unset or blank) and key.
pub fn remote(url_var: &str, key_var: &str) -> Remote {
    let base_url = std::env::var(url_var).ok().map(|url| url.trim().to_owned()).filter(|url| !url.is_empty());
    Remote { base_url, api_key: ApiKey::given(std::env::var(key_var).ok()) }
}
