//! Accounts and sessions over real HTTP: sign-up, sign-in, sign-out, who am I, and every kind of bad token.

use crate::common::{bearer_client, get_json, post_raw_json, TestServer, PASSWORD};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use quire::auth::{Claims, JwtKeys, JwtSecret};
use serde_json::json;
use wire::{AuthResponse, ErrorBody, ThreadList, UserProfile};

async fn me(client: &reqwest::Client, server: &TestServer) -> reqwest::StatusCode {
    client.get(server.url("/api/auth/me")).send().await.unwrap().status()
}

#[tokio::test]
async fn register_login_logout_and_me() {
    let server = TestServer::start().await;
    let anon = server.anonymous();

    let response = anon
        .post(server.url("/api/auth/register"))
        .json(&json!({"email": "Ada@Example.org", "password": "analytical engine", "display_name": "Ada"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let cookie = response.headers().get("set-cookie").unwrap().to_str().unwrap().to_string();
    assert!(cookie.starts_with("quire_session="), "{cookie}");
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax") && cookie.contains("Path=/"), "{cookie}");
    let registered: AuthResponse = response.json().await.unwrap();
    assert_eq!(registered.user.email, "Ada@Example.org");
    assert_eq!(registered.user.display_name, "Ada");
    assert!(cookie.contains(&registered.token), "the cookie carries the same token");

    // The token works as a bearer token and as the cookie.
    let by_bearer = bearer_client(&registered.token);
    let profile: UserProfile = get_json(&by_bearer, &server.url("/api/auth/me")).await;
    assert_eq!(profile, registered.user);
    let by_cookie = anon
        .get(server.url("/api/auth/me"))
        .header("cookie", format!("theme=dark; quire_session={}", registered.token))
        .send()
        .await
        .unwrap();
    assert_eq!(by_cookie.status(), 200);

    // E-mail is case-insensitive at sign-in.
    let login = server.sign_in("ada@example.ORG", "analytical engine").await;
    assert_eq!(login.status(), 200);
    assert!(login.headers().get("set-cookie").is_some());
    let second: AuthResponse = login.json().await.unwrap();
    assert_eq!(second.user.id, registered.user.id);
    assert_ne!(second.token, registered.token);

    // Signing out ends that session at once, and only that one.
    let logout = by_bearer.post(server.url("/api/auth/logout")).send().await.unwrap();
    assert_eq!(logout.status(), 204);
    assert!(logout.headers().get("set-cookie").unwrap().to_str().unwrap().contains("Max-Age=0"));
    assert_eq!(me(&by_bearer, &server).await, 401);
    assert_eq!(by_bearer.get(server.url("/api/threads")).send().await.unwrap().status(), 401);
    assert_eq!(by_bearer.post(server.url("/api/auth/logout")).send().await.unwrap().status(), 401);
    assert_eq!(me(&bearer_client(&second.token), &server).await, 200);
}

#[tokio::test]
async fn failed_sign_ins_do_not_reveal_whether_the_account_exists() {
    let server = TestServer::start().await;
    let mut bodies = Vec::new();
    for (email, password) in [("owner@example.com", "wrong password"), ("nobody@example.com", PASSWORD)] {
        let response = server.sign_in(email, password).await;
        assert_eq!(response.status(), 401);
        assert!(response.headers().get("set-cookie").is_none());
        bodies.push(response.json::<ErrorBody>().await.unwrap());
    }
    assert_eq!(bodies[0], bodies[1]);
    assert_eq!(bodies[0].error.code, "invalid_credentials");
}

#[tokio::test]
async fn sign_up_checks_its_input_and_changes_nothing_when_refused() {
    let server = TestServer::start().await;
    let anon = server.anonymous();
    let cases = [
        (json!({"email": "new@example.com", "password": "short"}), 422, Some("password")),
        (json!({"email": "not-an-email", "password": PASSWORD}), 422, Some("email")),
        (json!({"email": "a b@example.com", "password": PASSWORD}), 422, Some("email")),
        (
            json!({"email": "new@example.com", "password": PASSWORD, "display_name": "x".repeat(101)}),
            422,
            Some("display_name"),
        ),
        (json!({"email": "new@example.com"}), 422, None),
        (json!({"email": "new@example.com", "password": 12345678}), 422, None),
        (json!({"email": "new@example.com", "password": PASSWORD, "admin": true}), 422, None),
        (json!({"email": "OWNER@example.com", "password": PASSWORD}), 409, None),
    ];
    for (body, status, field) in cases {
        let response = anon.post(server.url("/api/auth/register")).json(&body).send().await.unwrap();
        assert_eq!(response.status(), status, "{body}");
        let error = response.json::<ErrorBody>().await.unwrap();
        assert_eq!(error.error.field.as_deref(), field, "{body}");
    }
    let malformed = post_raw_json(&anon, &server.url("/api/auth/register"), "{\"email\":").await;
    assert_eq!(malformed.status(), 400);
    // None of the refused sign-ups created an account.
    let login = server.sign_in("new@example.com", PASSWORD).await;
    assert_eq!(login.status(), 401);
    // The original owner's password is untouched by the duplicate attempt.
    let owner = server.sign_in("owner@example.com", PASSWORD).await;
    assert_eq!(owner.status(), 200);
}

#[tokio::test]
async fn forged_expired_and_missing_tokens_are_refused() {
    let server = TestServer::start().await;
    let parts: Vec<&str> = server.token.split('.').collect();
    let claims: Claims = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();

    let none_header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
    let alg_none = format!("{none_header}.{}.", parts[1]);

    let other_user = Claims { sub: uuid::Uuid::new_v4(), ..claims.clone() };
    let tampered =
        format!("{}.{}.{}", parts[0], URL_SAFE_NO_PAD.encode(serde_json::to_vec(&other_user).unwrap()), parts[2]);

    let other_key = JwtKeys::new(&JwtSecret::new(*b"not-the-server-key-but-long-enough!"), chrono::Duration::hours(1));
    let wrong_key = other_key.sign(&claims).unwrap();

    let hs384 = {
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS384","typ":"JWT"}"#);
        format!("{header}.{}.{}", parts[1], parts[2])
    };

    let expired =
        server.state.jwt.sign(&Claims { exp: chrono::Utc::now().timestamp() - 120, ..claims.clone() }).unwrap();

    for (name, token) in [
        ("alg none", alg_none),
        ("tampered", tampered),
        ("wrong key", wrong_key),
        ("other algorithm", hs384),
        ("expired", expired),
        ("garbage", "not.a.token".to_string()),
    ] {
        let response = bearer_client(&token).get(server.url("/api/threads")).send().await.unwrap();
        assert_eq!(response.status(), 401, "{name}");
        assert_eq!(response.json::<ErrorBody>().await.unwrap().error.code, "unauthorized", "{name}");
        let by_cookie = server
            .anonymous()
            .get(server.url("/api/auth/me"))
            .header("cookie", format!("quire_session={token}"))
            .send()
            .await
            .unwrap();
        assert_eq!(by_cookie.status(), 401, "{name} as cookie");
    }
    // The genuine token still works.
    let list: ThreadList = server.get_json("/api/threads").await;
    assert!(list.threads.is_empty());
}

#[tokio::test]
async fn every_route_but_the_open_ones_needs_a_session() {
    let server = TestServer::start().await;
    let anon = server.anonymous();
    let id = server.create_thread().await;
    let other = uuid::Uuid::new_v4();
    let routes = [
        ("GET", "/api/auth/me".to_string()),
        ("POST", "/api/auth/logout".to_string()),
        ("GET", "/api/threads".to_string()),
        ("POST", "/api/threads".to_string()),
        ("GET", format!("/api/threads/{id}")),
        ("PATCH", format!("/api/threads/{id}")),
        ("DELETE", format!("/api/threads/{id}")),
        ("DELETE", format!("/api/threads/{id}/messages/{other}")),
        ("POST", format!("/api/threads/{id}/chat")),
        ("GET", format!("/api/threads/{id}/stream")),
        ("POST", format!("/api/threads/{id}/stop")),
        ("GET", format!("/api/messages/{other}/context")),
    ];
    for (method, path) in routes {
        let response = anon
            .request(method.parse().unwrap(), server.url(&path))
            .json(&json!({"content": "hello", "title": "x"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 401, "{method} {path}");
        assert_eq!(response.json::<ErrorBody>().await.unwrap().error.code, "unauthorized");
    }
    for path in ["/api/health", "/api/openapi.json"] {
        assert_eq!(anon.get(server.url(path)).send().await.unwrap().status(), 200, "{path}");
    }
    // Nothing the anonymous requests tried happened.
    let detail = server.detail(id).await;
    assert!(detail.messages.is_empty());
    assert_eq!(detail.thread.title, "New conversation");
}
