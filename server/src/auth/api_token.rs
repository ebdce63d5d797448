//! Personal API tokens' secrets: `quire_pat_` and 32 random bytes, URL-safe. Only their SHA-256 is stored (as
//! one-time tokens' are, see [`one_time`](super::one_time)), with a few of their first characters to recognise
//! them by; and what each scope lets a token do, decided for every route in one place ([`permits`]).

use std::fmt;

use wire::{TokenScope, TOKEN_PREFIX};

use super::one_time;

/// Characters after [`TOKEN_PREFIX`] kept (and shown) to recognise a token by.
pub const SHOWN_CHARS: usize = 8;

/// Longest bearer value looked up as a token (a real one has 53 characters); a longer one is refused unread.
pub const MAX_TOKEN_CHARS: usize = 64;

/// A new token's secret. No `Serialize`, no `Display`; `Debug` prints `[redacted]`.
pub struct Secret(String);

impl Secret {
    /// The secret, to hand to its owner once. Do not log it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// A new token: its secret, the hash to store and the characters to show.
#[derive(Debug)]
pub struct Issued {
    pub secret: Secret,
    pub hash: String,
    pub prefix: String,
}

/// A new token.
pub fn issue() -> Issued {
    let (random, _) = one_time::issue();
    let prefix = random.chars().take(SHOWN_CHARS).collect();
    let secret = format!("{TOKEN_PREFIX}{random}");
    let hash = one_time::hash(&secret);
    Issued { secret: Secret(secret), hash, prefix }
}

/// Whether a bearer value is meant as an API token rather than a session token.
pub fn is_api_token(bearer: &str) -> bool {
    bearer.starts_with(TOKEN_PREFIX)
}

/// The stored form of a bearer value meant as an API token, or `None` when it cannot be one (too long), so it is
/// refused without a look in the database.
pub fn lookup_hash(bearer: &str) -> Option<String> {
    (is_api_token(bearer) && bearer.len() <= MAX_TOKEN_CHARS).then(|| one_time::hash(bearer))
}

/// The Model Context Protocol endpoint (`http/mcp.rs`), open to tokens of either scope.
pub const MCP_ROUTE: &str = "/mcp";

/// Why a token may not make a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// A `read` token, for anything but `GET` and `HEAD`.
    ReadOnly,
    /// Any token, for what takes signing in: the account, its sessions and tokens, sharing, projects' members,
    /// settings and administration.
    SignInRequired,
}

impl Refusal {
    /// Why, in words for people.
    pub fn message(self) -> &'static str {
        match self {
            Refusal::ReadOnly => "This API token may only read (its scope is `read`).",
            Refusal::SignInRequired => {
                "API tokens cannot do this: managing the account, its tokens, sharing, projects or Quire takes \
                 signing in."
            }
        }
    }
}

/// Whether a token of `scope` may make a request of `method` to the route `route` (the path as the router matched
/// it, with `{id}`-like parameters, or the request's path where no route matched).
///
/// Deny by default: administration is closed to tokens even for reading; a `read` token reads; a `chat` token
/// also writes, but only in conversations and their documents (`/api/threads…`, `/api/artifacts/…`), never
/// their share links. A route added later is closed to `chat` tokens' writes until it is named here. `/mcp` takes
/// its JSON-RPC calls by `POST`, but every tool there only reads: any token may use it.
pub fn permits(scope: TokenScope, method: &axum::http::Method, route: &str) -> Result<(), Refusal> {
    use axum::http::Method;
    if route == "/api/admin" || route.starts_with("/api/admin/") {
        return Err(Refusal::SignInRequired);
    }
    if route == MCP_ROUTE {
        return Ok(());
    }
    if matches!(*method, Method::GET | Method::HEAD) {
        return Ok(());
    }
    if scope == TokenScope::Read {
        return Err(Refusal::ReadOnly);
    }
    let conversation =
        route == "/api/threads" || route.starts_with("/api/threads/") || route.starts_with("/api/artifacts/");
    if conversation && !route.ends_with("/shares") {
        Ok(())
    } else {
        Err(Refusal::SignInRequired)
    }
}

#[cfg(test)]
mod tests {
    use axum::http::Method;

    use super::*;

    #[test]
    fn secrets_are_prefixed_random_and_hash_to_what_is_stored() {
        let (a, b) = (issue(), issue());
        assert_ne!(a.secret.expose(), b.secret.expose());
        assert!(a.secret.expose().starts_with("quire_pat_"));
        assert_eq!(a.secret.expose().len(), TOKEN_PREFIX.len() + 43);
        assert!(a.secret.expose().len() <= MAX_TOKEN_CHARS);
        assert_eq!(a.secret.expose()[TOKEN_PREFIX.len()..][..SHOWN_CHARS], a.prefix);
        assert_eq!(lookup_hash(a.secret.expose()), Some(a.hash.clone()));
        assert_ne!(a.hash, b.hash);
        assert_eq!(a.hash.len(), 64);
        assert_eq!(format!("{:?}", a.secret), "[redacted]");
        assert_eq!(lookup_hash("eyJhbGciOiJIUzI1NiJ9.e30.x"), None);
        assert_eq!(lookup_hash(&format!("{TOKEN_PREFIX}{}", "x".repeat(60))), None);
    }

    #[test]
    fn read_tokens_read_and_chat_tokens_write_only_in_conversations() {
        use TokenScope::{Chat, Read};
        for scope in [Read, Chat] {
            assert_eq!(permits(scope, &Method::GET, "/api/threads/{id}"), Ok(()));
            assert_eq!(permits(scope, &Method::HEAD, "/api/export"), Ok(()));
            assert_eq!(permits(scope, &Method::GET, "/api/tokens"), Ok(()));
            assert_eq!(permits(scope, &Method::GET, "/api/mcp/servers"), Ok(()));
            assert_eq!(permits(scope, &Method::GET, "/api/admin/users"), Err(Refusal::SignInRequired));
        }
        assert_eq!(permits(Read, &Method::POST, "/api/threads"), Err(Refusal::ReadOnly));
        assert_eq!(permits(Read, &Method::POST, "/api/threads/{id}/approvals/{approval_id}"), Err(Refusal::ReadOnly));
        assert_eq!(permits(Read, &Method::POST, "/mcp"), Ok(()));
        assert_eq!(permits(Chat, &Method::POST, "/mcp"), Ok(()));
        assert_eq!(permits(Read, &Method::POST, "/mcp/x"), Err(Refusal::ReadOnly));
        assert_eq!(permits(Read, &Method::DELETE, "/api/tokens/{id}"), Err(Refusal::ReadOnly));
        for (method, route) in [
            (Method::POST, "/api/threads"),
            (Method::POST, "/api/threads/{id}/messages"),
            (Method::POST, "/api/threads/{id}/chat"),
            (Method::PATCH, "/api/threads/{id}"),
            (Method::PUT, "/api/artifacts/{id}"),
            (Method::PATCH, "/api/threads/{id}/requirements/{key}"),
            (Method::POST, "/api/threads/{id}/attachments"),
            (Method::POST, "/api/threads/{id}/approvals/{approval_id}"),
        ] {
            assert_eq!(permits(Chat, &method, route), Ok(()), "{method} {route}");
        }
        for (method, route) in [
            (Method::POST, "/api/tokens"),
            (Method::DELETE, "/api/tokens/{id}"),
            (Method::POST, "/api/auth/password"),
            (Method::POST, "/api/auth/logout"),
            (Method::DELETE, "/api/auth/me"),
            (Method::PUT, "/api/admin/users/{id}/role"),
            (Method::POST, "/api/threads/{id}/shares"),
            (Method::DELETE, "/api/shares/{id}"),
            (Method::POST, "/api/projects/{id}/members"),
            (Method::PATCH, "/api/settings"),
            (Method::POST, "/settings/password"),
            (Method::POST, "/api/threadsX"),
        ] {
            assert_eq!(permits(Chat, &method, route), Err(Refusal::SignInRequired), "{method} {route}");
        }
    }
}
