//! Password hashing with argon2id. Hashing is slow on purpose, so it runs on the blocking thread pool and never
//! on the async runtime's worker threads.

use argon2::{
    password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString},
    Argon2,
};

/// Shortest accepted password, in characters.
pub const MIN_PASSWORD_CHARS: usize = 8;
/// Longest accepted password, in characters (bounds the hashing work an attacker can ask for).
pub const MAX_PASSWORD_CHARS: usize = 1024;

/// A valid argon2id hash of a random password, checked when the e-mail is unknown, so a failed sign-in takes
/// as long whether or not the account exists.
static DECOY_HASH: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| hash_now(&rand::random::<u64>().to_string()).unwrap_or_default());

/// Hashes a password (argon2id, random salt) into a PHC string.
pub async fn hash(password: String) -> anyhow::Result<String> {
    tokio::task::spawn_blocking(move || hash_now(&password)).await?
}

/// Whether `password` matches the PHC string `hash`. `None` checks against a decoy and answers `false`.
pub async fn verify(password: String, hash: Option<String>) -> anyhow::Result<bool> {
    tokio::task::spawn_blocking(move || {
        let known = hash.is_some();
        let hash = hash.unwrap_or_else(|| DECOY_HASH.clone());
        Ok(verify_now(&password, &hash) && known)
    })
    .await?
}

fn hash_now(password: &str) -> anyhow::Result<String> {
    let salt = SaltString::encode_b64(&rand::random::<[u8; 16]>()).map_err(|e| anyhow::anyhow!("salt: {e}"))?;
    let hash = Argon2::default().hash_password(password.as_bytes(), &salt).map_err(|e| anyhow::anyhow!("hash: {e}"))?;
    Ok(hash.to_string())
}

fn verify_now(password: &str, hash: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|parsed| Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hashes_verify_and_are_argon2id() {
        let hash = hash("correct horse".into()).await.unwrap();
        assert!(hash.starts_with("$argon2id$"));
        assert!(verify("correct horse".into(), Some(hash.clone())).await.unwrap());
        assert!(!verify("wrong horse".into(), Some(hash.clone())).await.unwrap());
        assert!(!verify("correct horse".into(), None).await.unwrap());
        assert_ne!(hash, super::hash("correct horse".into()).await.unwrap(), "salts differ");
    }
}
