//! An OpenID Connect provider on loopback for the sign-in tests: discovery, an authorization endpoint that
//! consents at once for the person the test names, a token endpoint that checks the client's secret, the PKCE
//! verifier and that each code is used once, signed ID tokens (RS256, two keys to rotate between), user info and
//! an end-session endpoint. Each ID token can be spoiled on purpose (expired, another audience, another nonce).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use axum::{
    extract::{Form, Query, State},
    http::{header, HeaderMap, StatusCode},
    response::{IntoResponse, Redirect, Response},
    routing::{get, post},
    Json, Router,
};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use openidconnect::core::{CoreJwsSigningAlgorithm, CoreRsaPrivateSigningKey};
use openidconnect::{JsonWebKeyId, PrivateSigningKey};
use sha2::{Digest, Sha256};
use tokio::net::TcpListener;

pub const CLIENT_ID: &str = "quire";
pub const CLIENT_SECRET: &str = "quire-client-secret";

/// The person the provider signs in next, and how their ID token comes out.
#[derive(Debug, Clone)]
pub struct Person {
    pub subject: String,
    pub email: Option<String>,
    pub email_verified: bool,
    pub name: String,
    pub groups: Vec<String>,
    /// Seconds from now to the token's expiry (negative: expired).
    pub expires_in: i64,
    /// Seconds from now to the token's issue time.
    pub issued_in: i64,
    /// The audience, when not Quire's client id.
    pub audience: Option<String>,
    /// Whether the nonce is replaced by another.
    pub wrong_nonce: bool,
    /// Whether the ID token leaves out the address (the user info endpoint gives it).
    pub email_in_user_info_only: bool,
    /// Whether the ID token says nothing of the address being verified (as Entra ID's).
    pub silent_on_verification: bool,
}

impl Person {
    pub fn new(subject: &str, email: &str) -> Self {
        Self {
            subject: subject.to_owned(),
            email: Some(email.to_owned()),
            email_verified: true,
            name: format!("Person {subject}"),
            groups: Vec::new(),
            expires_in: 300,
            issued_in: 0,
            audience: None,
            wrong_nonce: false,
            email_in_user_info_only: false,
            silent_on_verification: false,
        }
    }
}

/// What a code was given for.
#[derive(Debug, Clone)]
struct Grant {
    person: Person,
    nonce: Option<String>,
    challenge: String,
    redirect_uri: String,
    used: bool,
}

struct Keys {
    signing: Vec<(String, CoreRsaPrivateSigningKey)>,
    /// The key tokens are signed with now.
    current: usize,
    /// The keys the key set lists.
    published: Vec<usize>,
}

struct Inner {
    issuer: String,
    next: Person,
    codes: HashMap<String, Grant>,
    tokens: HashMap<String, Person>,
    keys: Keys,
    /// How many times the key set was read.
    key_reads: usize,
}

#[derive(Clone)]
pub struct FakeProvider {
    pub issuer: String,
    inner: Arc<Mutex<Inner>>,
}

fn key(pem: &str, kid: &str) -> (String, CoreRsaPrivateSigningKey) {
    (kid.to_owned(), CoreRsaPrivateSigningKey::from_pem(pem, Some(JsonWebKeyId::new(kid.to_owned()))).expect("key"))
}

impl FakeProvider {
    /// A provider on a loopback port, signing with its first key, the next sign-in being `person`.
    pub async fn start(person: Person) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let issuer = format!("http://{}/oidc", listener.local_addr().expect("addr"));
        let keys = Keys {
            signing: vec![
                key(include_str!("../../fixtures/oidc/first.pem"), "first"),
                key(include_str!("../../fixtures/oidc/second.pem"), "second"),
            ],
            current: 0,
            published: vec![0],
        };
        let inner = Inner {
            issuer: issuer.clone(),
            next: person,
            codes: HashMap::new(),
            tokens: HashMap::new(),
            keys,
            key_reads: 0,
        };
        let provider = Self { issuer, inner: Arc::new(Mutex::new(inner)) };
        let app = Router::new()
            .route("/oidc/.well-known/openid-configuration", get(discovery))
            .route("/oidc/authorize", get(authorize))
            .route("/oidc/token", post(token))
            .route("/oidc/jwks", get(jwks))
            .route("/oidc/userinfo", get(user_info))
            .with_state(provider.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.expect("provider") });
        provider
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next sign-in is `person`'s.
    pub fn next(&self, person: Person) {
        self.inner().next = person;
    }

    /// Signs with the second key from now on, listing only it.
    pub fn rotate_keys(&self) {
        let mut inner = self.inner();
        inner.keys.current = 1;
        inner.keys.published = vec![1];
    }

    /// How often the key set was read.
    pub fn key_reads(&self) -> usize {
        self.inner().key_reads
    }
}

async fn discovery(State(provider): State<FakeProvider>) -> Json<serde_json::Value> {
    let issuer = provider.issuer.clone();
    Json(serde_json::json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "jwks_uri": format!("{issuer}/jwks"),
        "userinfo_endpoint": format!("{issuer}/userinfo"),
        "end_session_endpoint": format!("{issuer}/session/end"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "scopes_supported": ["openid", "email", "profile"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic"],
        "code_challenge_methods_supported": ["S256"],
    }))
}

async fn authorize(State(provider): State<FakeProvider>, Query(query): Query<HashMap<String, String>>) -> Response {
    let ok = query.get("client_id").map(String::as_str) == Some(CLIENT_ID)
        && query.get("response_type").map(String::as_str) == Some("code")
        && query.get("code_challenge_method").map(String::as_str) == Some("S256")
        && query.get("scope").is_some_and(|s| s.split(' ').any(|s| s == "openid"));
    let (Some(redirect_uri), Some(state), Some(challenge), true) =
        (query.get("redirect_uri"), query.get("state"), query.get("code_challenge"), ok)
    else {
        return (StatusCode::BAD_REQUEST, "bad authorization request").into_response();
    };
    let code = uuid::Uuid::new_v4().simple().to_string();
    let mut inner = provider.inner();
    let grant = Grant {
        person: inner.next.clone(),
        nonce: query.get("nonce").cloned(),
        challenge: challenge.clone(),
        redirect_uri: redirect_uri.clone(),
        used: false,
    };
    inner.codes.insert(code.clone(), grant);
    let mut back = url::Url::parse(redirect_uri).expect("redirect uri");
    back.query_pairs_mut().append_pair("code", &code).append_pair("state", state);
    Redirect::to(back.as_str()).into_response()
}

fn refuse(error: &str) -> Response {
    (StatusCode::BAD_REQUEST, Json(serde_json::json!({ "error": error }))).into_response()
}

async fn token(
    State(provider): State<FakeProvider>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let basic =
        format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}")));
    if headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) != Some(basic.as_str()) {
        return (StatusCode::UNAUTHORIZED, Json(serde_json::json!({ "error": "invalid_client" }))).into_response();
    }
    if form.get("grant_type").map(String::as_str) != Some("authorization_code") {
        return refuse("unsupported_grant_type");
    }
    let mut inner = provider.inner();
    let Some(grant) = form.get("code").and_then(|code| inner.codes.get_mut(code)) else {
        return refuse("invalid_grant");
    };
    if grant.used {
        return refuse("invalid_grant");
    }
    grant.used = true;
    let verifier = form.get("code_verifier").cloned().unwrap_or_default();
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    if challenge != grant.challenge || form.get("redirect_uri") != Some(&grant.redirect_uri) {
        return refuse("invalid_grant");
    }
    let grant = grant.clone();
    let person = &grant.person;
    let now = chrono::Utc::now().timestamp();
    let mut claims = serde_json::json!({
        "iss": inner.issuer,
        "sub": person.subject,
        "aud": person.audience.clone().unwrap_or_else(|| CLIENT_ID.to_owned()),
        "exp": now + person.expires_in,
        "iat": now + person.issued_in,
        "name": person.name,
        "groups": person.groups,
    });
    let nonce = if person.wrong_nonce { Some("another nonce".to_owned()) } else { grant.nonce.clone() };
    if let Some(nonce) = nonce {
        claims["nonce"] = nonce.into();
    }
    if !person.email_in_user_info_only {
        if let Some(email) = &person.email {
            claims["email"] = email.clone().into();
            if !person.silent_on_verification {
                claims["email_verified"] = person.email_verified.into();
            }
        }
    }
    let (kid, key) = &inner.keys.signing[inner.keys.current];
    let header = serde_json::json!({ "alg": "RS256", "typ": "JWT", "kid": kid });
    let input =
        format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
    let signature = key.sign(&CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256, input.as_bytes()).expect("sign");
    let id_token = format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature));
    let access_token = uuid::Uuid::new_v4().simple().to_string();
    inner.tokens.insert(access_token.clone(), person.clone());
    Json(serde_json::json!({
        "access_token": access_token,
        "token_type": "Bearer",
        "expires_in": 300,
        "id_token": id_token,
    }))
    .into_response()
}

async fn jwks(State(provider): State<FakeProvider>) -> Json<serde_json::Value> {
    let mut inner = provider.inner();
    inner.key_reads += 1;
    let keys: Vec<_> = inner
        .keys
        .published
        .iter()
        .map(|i| serde_json::to_value(inner.keys.signing[*i].1.as_verification_key()).expect("jwk"))
        .collect();
    Json(serde_json::json!({ "keys": keys }))
}

async fn user_info(State(provider): State<FakeProvider>, headers: HeaderMap) -> Response {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    let Some(person) = provider.inner().tokens.get(token).cloned() else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    Json(serde_json::json!({
        "sub": person.subject,
        "email": person.email,
        "email_verified": person.email_verified,
        "name": person.name,
        "groups": person.groups,
    }))
    .into_response()
}
