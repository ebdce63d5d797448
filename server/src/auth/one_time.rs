//! One-time tokens given out in links (invitations, password resets): 32 random bytes, URL-safe. Only their
//! SHA-256 is stored, so the database alone cannot be used to sign up or take over an account.

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use rand::RngCore;
use sha2::{Digest, Sha256};

/// Longest token accepted from a client (a real one has 43 characters).
pub const MAX_TOKEN_CHARS: usize = 64;

/// A new token and its hash, as stored.
pub fn issue() -> (String, String) {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let token = URL_SAFE_NO_PAD.encode(bytes);
    let hash = hash(&token);
    (token, hash)
}

/// The stored form of `token`: its SHA-256 in hex.
pub fn hash(token: &str) -> String {
    Sha256::digest(token.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_differ_and_hash_to_what_is_stored() {
        let (a, a_hash) = issue();
        let (b, _) = issue();
        assert_ne!(a, b);
        assert_eq!(a.len(), 43);
        assert!(a.len() <= MAX_TOKEN_CHARS);
        assert_eq!(hash(&a), a_hash);
        assert_ne!(hash(&b), a_hash);
    }
}
