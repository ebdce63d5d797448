//! A holder for API keys that keeps them out of logs and serialized output.

use std::fmt;

/// An API key for a model provider: `Debug` redacts it and there is no `Display` or `Serialize`, so it cannot reach a
/// log, an error or a JSON document by accident; only [`ApiKey::expose`] reads it, which keeps every use greppable.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key. Surrounding whitespace (a common copy-paste artefact) is removed.
    pub fn new(key: impl Into<String>) -> Self {
        let key = key.into();
        let trimmed = key.trim();
        if trimmed.len() == key.len() {
            Self(key)
        } else {
            Self(trimmed.to_owned())
        }
    }

    /// `key` unless it is blank: an unset or blank variable means "no key".
    pub fn given(key: Option<String>) -> Option<Self> {
        key.map(Self::new).filter(|key| !key.0.is_empty())
    }

    /// The key itself, for building the request header. Do not log the result.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_key() {
        let key = ApiKey::new("sk-very-secret");
        assert_eq!(format!("{key:?}"), "[redacted]");
        assert_eq!(format!("{:?}", Some(key.clone())), "Some([redacted])");
        assert_eq!(key.expose(), "sk-very-secret");
    }

    #[test]
    fn whitespace_is_trimmed() {
        assert_eq!(ApiKey::new("  sk-1\n").expose(), "sk-1");
    }
}
