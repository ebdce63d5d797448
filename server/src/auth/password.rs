//! Password hashing with argon2id. Hashing is slow on purpose, so it runs on the blocking thread pool and never
//! on the async runtime's worker threads.

use argon2::{
    password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString},
    Argon2,
};

pub use wire::{MAX_PASSWORD_CHARS, MIN_PASSWORD_CHARS};

/// Why a new password is refused, in words fit to show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WeakPassword {
    #[error("The password needs at least {MIN_PASSWORD_CHARS} characters.")]
    TooShort,
    #[error("The password is longer than {MAX_PASSWORD_CHARS} characters.")]
    TooLong,
    /// In the list of breached passwords shipped with Quire ([`super::breached`]), whatever its letter case.
    #[error("This password appears in lists of breached passwords. Choose another one.")]
    Breached,
    /// In zxcvbn's lists of common passwords, or made of a few common words, names, dates, repeats,
    /// sequences or keyboard rows that guessing tools try early.
    #[error("This password is too common or too easy to guess. Try a few unrelated words, or a longer phrase.")]
    Guessable,
}

/// Checks a new password's length, the breached list, then how guessable it is (zxcvbn), also from the account's
/// e-mail address and name. Costs a few milliseconds: call it off the async workers.
pub fn check_new(password: &str, email: &str, display_name: &str) -> Result<(), WeakPassword> {
    let n = password.chars().count();
    if n < MIN_PASSWORD_CHARS {
        return Err(WeakPassword::TooShort);
    }
    if n > MAX_PASSWORD_CHARS {
        return Err(WeakPassword::TooLong);
    }
    if super::breached::contains(password) {
        return Err(WeakPassword::Breached);
    }
    // Score 3: more than 10^10 guesses, beyond an offline attack on a slow hash such as argon2.
    let words = account_words(email, display_name);
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    if zxcvbn::zxcvbn(password, &words).score() < zxcvbn::Score::Three {
        return Err(WeakPassword::Guessable);
    }
    Ok(())
}

/// A valid argon2id hash of a random password, checked when the e-mail is unknown, so a failed sign-in takes
/// as long whether or not the account exists.
static DECOY_HASH: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| hash_now(&rand::random::<u64>().to_string()).unwrap_or_default());

/// The words of an account that its password should not be built from: the address, its parts and the name.
fn account_words(email: &str, display_name: &str) -> Vec<String> {
    let (local, domain) = email.split_once('@').unwrap_or((email, ""));
    let mut words = vec![email.to_string(), local.to_string(), display_name.to_string()];
    let parts = [local, domain.split('.').next().unwrap_or_default(), display_name];
    for part in parts {
        words.extend(part.split(|c: char| !c.is_alphanumeric()).filter(|w| w.len() > 2).map(str::to_string));
    }
    words.retain(|w| !w.is_empty());
    words
}

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

    #[test]
    fn new_passwords_are_long_and_hard_to_guess() {
        for weak in ["password", "12345678", "short horse"] {
            assert_eq!(check_new(weak, "", ""), Err(WeakPassword::TooShort), "{weak}");
        }
        for breached in ["password1234", "qwertyuiop123", "iloveyou1234", "PasswordPassword", "1q2w3e4r5t6y"] {
            assert_eq!(check_new(breached, "", ""), Err(WeakPassword::Breached), "{breached}");
        }
        // Not in the list, but built from listed passwords, words, repeats, keyboard rows or the account's name.
        for guessable in ["iloveyou12345", "P@ssw0rd12345", "jane.doe.1990", "qwertyuiop1234567", "bbbbbbbbbbbbbbbbb"] {
            let refused = check_new(guessable, "jane.doe@example.com", "Jane Doe");
            assert_eq!(refused, Err(WeakPassword::Guessable), "{guessable}");
        }
        for fine in ["correct horse battery", "analytical engine", "walrus-paperclip-nebula", "Kq8#vT2!pLm9xZ"] {
            assert_eq!(check_new(fine, "jane.doe@example.com", "Jane Doe"), Ok(()), "{fine}");
        }
        assert_eq!(check_new(&"x".repeat(MAX_PASSWORD_CHARS + 1), "", ""), Err(WeakPassword::TooLong));
    }

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
