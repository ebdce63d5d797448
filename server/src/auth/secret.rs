//! The key that signs session tokens: from `QUIRE_JWT_SECRET`, or generated once and kept in the data directory
//! in a file only its owner may read.

use std::{fmt, io::Write, path::Path};

use base64::{engine::general_purpose::STANDARD, Engine};

/// Name of the generated key file inside the data directory.
pub const SECRET_FILE: &str = "jwt_secret";
/// Shortest accepted configured secret, in bytes.
pub const MIN_SECRET_BYTES: usize = 32;

/// The HMAC key of session tokens. No `Serialize`, no `Display`; `Debug` prints `[redacted]`.
#[derive(Clone, PartialEq, Eq)]
pub struct JwtSecret(Vec<u8>);

impl JwtSecret {
    /// Wraps key bytes.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        Self(bytes.into())
    }

    /// The configured secret if any (it must be at least [`MIN_SECRET_BYTES`] long), otherwise the one kept in
    /// `data_dir`, generated on first use.
    pub fn load(configured: Option<&JwtSecret>, data_dir: &Path) -> anyhow::Result<Self> {
        match configured.filter(|s| !s.0.is_empty()) {
            Some(secret) if secret.0.len() < MIN_SECRET_BYTES => {
                anyhow::bail!("QUIRE_JWT_SECRET must be at least {MIN_SECRET_BYTES} characters long")
            }
            Some(secret) => Ok(secret.clone()),
            None => Self::from_file(&data_dir.join(SECRET_FILE)),
        }
    }

    /// Reads the key file, creating it (mode 0600) with 32 random bytes if it does not exist.
    fn from_file(path: &Path) -> anyhow::Result<Self> {
        if let Ok(text) = std::fs::read_to_string(path) {
            let bytes = STANDARD.decode(text.trim())?;
            anyhow::ensure!(bytes.len() >= MIN_SECRET_BYTES, "{} holds too short a key", path.display());
            return Ok(Self(bytes));
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let bytes = rand::random::<[u8; 32]>().to_vec();
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        match options.open(path) {
            Ok(mut file) => {
                file.write_all(STANDARD.encode(&bytes).as_bytes())?;
                file.sync_all()?;
                Ok(Self(bytes))
            }
            // Another instance wrote it meanwhile.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Self::from_file(path),
            Err(e) => Err(e.into()),
        }
    }

    /// The key bytes, for signing and verifying. Do not log them.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }
}

/// Parses a configured secret (its text, trimmed, is the key).
impl std::str::FromStr for JwtSecret {
    type Err = std::convert::Infallible;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(Self(text.trim().as_bytes().to_vec()))
    }
}

impl fmt::Debug for JwtSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_once_kept_private_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let first = JwtSecret::load(None, dir.path()).unwrap();
        let second = JwtSecret::load(None, dir.path()).unwrap();
        assert_eq!(first, second);
        assert_eq!(first.expose().len(), 32);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(SECRET_FILE)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_eq!(format!("{first:?}"), "[redacted]");
    }

    #[test]
    fn configured_secret_wins_and_must_be_long() {
        let dir = tempfile::tempdir().unwrap();
        let key = "k".repeat(40);
        let configured: JwtSecret = key.parse().unwrap();
        assert_eq!(JwtSecret::load(Some(&configured), dir.path()).unwrap().expose(), key.as_bytes());
        assert!(JwtSecret::load(Some(&"short".parse().unwrap()), dir.path()).is_err());
        assert!(!dir.path().join(SECRET_FILE).exists());
    }
}
