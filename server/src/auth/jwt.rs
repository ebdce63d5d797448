//! Session tokens: HS256 JWTs with an id (`jti`) so one session can be revoked. Only HS256 with Quire's own key
//! is accepted; `alg: none`, any other algorithm, another key or an expired token is refused.

use chrono::{DateTime, Utc};
use jsonwebtoken::{decode, encode, Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::JwtSecret;

/// Name of the session cookie.
pub const SESSION_COOKIE: &str = "quire_session";
/// Name of the session cookie over HTTPS: the `__Host-` prefix makes browsers refuse it unless it is `Secure`,
/// set by Quire's own host and for every path, so a neighbouring subdomain cannot plant one.
pub const HOST_SESSION_COOKIE: &str = "__Host-quire_session";

/// What a session token says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claims {
    /// The user's id.
    pub sub: Uuid,
    /// The token's own id, for revocation.
    pub jti: Uuid,
    pub iat: i64,
    pub exp: i64,
}

impl Claims {
    /// When the token stops being valid.
    pub fn expires_at(&self) -> DateTime<Utc> {
        DateTime::from_timestamp(self.exp, 0).unwrap_or_default()
    }
}

/// Signs and checks session tokens.
#[derive(Clone)]
pub struct JwtKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    /// How long a new session lasts.
    pub lifetime: chrono::Duration,
}

impl std::fmt::Debug for JwtKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtKeys").field("lifetime", &self.lifetime).finish_non_exhaustive()
    }
}

impl JwtKeys {
    /// Keys from the secret; new sessions last `lifetime`.
    pub fn new(secret: &JwtSecret, lifetime: chrono::Duration) -> Self {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = 5;
        validation.validate_exp = true;
        validation.set_required_spec_claims(&["exp", "sub"]);
        Self {
            encoding: EncodingKey::from_secret(secret.expose()),
            decoding: DecodingKey::from_secret(secret.expose()),
            validation,
            lifetime,
        }
    }

    /// A new session token for `user`, with its claims.
    pub fn issue(&self, user: Uuid) -> anyhow::Result<(String, Claims)> {
        let now = Utc::now();
        let claims =
            Claims { sub: user, jti: Uuid::new_v4(), iat: now.timestamp(), exp: (now + self.lifetime).timestamp() };
        Ok((self.sign(&claims)?, claims))
    }

    /// Signs any claims (tests use it for expired tokens).
    pub fn sign(&self, claims: &Claims) -> anyhow::Result<String> {
        Ok(encode(&Header::new(Algorithm::HS256), claims, &self.encoding)?)
    }

    /// The claims of a valid token; `None` for anything else.
    pub fn verify(&self, token: &str) -> Option<Claims> {
        decode::<Claims>(token, &self.decoding, &self.validation).ok().map(|data| data.claims)
    }
}

#[cfg(test)]
mod tests {
    use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};

    use super::*;

    fn keys(secret: &str) -> JwtKeys {
        JwtKeys::new(&JwtSecret::new(secret.as_bytes()), chrono::Duration::hours(1))
    }

    #[test]
    fn issued_tokens_verify() {
        let keys = keys("a-secret-that-is-long-enough-for-hs256");
        let user = Uuid::new_v4();
        let (token, claims) = keys.issue(user).unwrap();
        assert_eq!(keys.verify(&token), Some(claims.clone()));
        assert_eq!(claims.sub, user);
    }

    #[test]
    fn forged_tokens_are_refused() {
        let keys = keys("a-secret-that-is-long-enough-for-hs256");
        let (token, claims) = keys.issue(Uuid::new_v4()).unwrap();
        let payload = token.split('.').nth(1).unwrap();

        let none_header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
        assert_eq!(keys.verify(&format!("{none_header}.{payload}.")), None, "alg none");

        let other = JwtKeys::new(&JwtSecret::new(*b"another-key-entirely-32-bytes-long"), chrono::Duration::hours(1));
        assert_eq!(keys.verify(&other.issue(claims.sub).unwrap().0), None, "wrong key");

        let hs512 = encode(
            &Header::new(Algorithm::HS512),
            &claims,
            &EncodingKey::from_secret(b"a-secret-that-is-long-enough-for-hs256"),
        )
        .unwrap();
        assert_eq!(keys.verify(&hs512), None, "other algorithm");

        let mut forged: Claims = claims.clone();
        forged.sub = Uuid::new_v4();
        let forged_payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&forged).unwrap());
        let mut parts: Vec<&str> = token.split('.').collect();
        parts[1] = &forged_payload;
        assert_eq!(keys.verify(&parts.join(".")), None, "tampered payload");

        let expired = Claims { exp: Utc::now().timestamp() - 60, ..claims };
        assert_eq!(keys.verify(&keys.sign(&expired).unwrap()), None, "expired");
    }
}
