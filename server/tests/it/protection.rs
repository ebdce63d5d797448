//! Input limits, rate limits, personal-data redaction and the OpenAPI document.

use crate::common::{TestServer, PASSWORD};
use app::api::{ErrorBody, Role, ThreadDetail, ThreadList};
use serde_json::json;

async fn error_of(response: reqwest::Response) -> (u16, ErrorBody) {
    let status = response.status().as_u16();
    (status, response.json::<ErrorBody>().await.unwrap())
}

#[tokio::test]
async fn oversized_fields_are_refused_and_change_nothing() {
    let server = TestServer::start().await;
    let thread = server.create_thread().await;
    let before = server.detail(thread).await;
    let long_tag = "t".repeat(51);
    let eleven_tags: Vec<String> = (0..11).map(|i| format!("tag{i}")).collect();
    let cases = [
        (json!({"title": "x".repeat(501)}), "title"),
        (json!({"tags": eleven_tags}), "tags"),
        (json!({"tags": [long_tag]}), "tags"),
    ];
    for (body, field) in cases {
        let create = server.client.post(server.url("/api/threads")).json(&body).send().await.unwrap();
        let (status, error) = error_of(create).await;
        assert_eq!((status, error.error.field.as_deref()), (422, Some(field)), "create {body}");
        let patch =
            server.client.patch(server.url(&format!("/api/threads/{thread}"))).json(&body).send().await.unwrap();
        let (status, error) = error_of(patch).await;
        assert_eq!((status, error.error.field.as_deref()), (422, Some(field)), "patch {body}");
    }
    // The limits themselves are allowed.
    let at_limit = json!({"title": "x".repeat(500), "tags": (0..10).map(|i| format!("{i}{}", "t".repeat(49))).collect::<Vec<_>>()});
    let ok = server.client.post(server.url("/api/threads")).json(&at_limit).send().await.unwrap();
    assert_eq!(ok.status(), 201);

    let long_message = server
        .client
        .post(server.url(&format!("/api/threads/{thread}/chat")))
        .json(&json!({"content": "m".repeat(10_001)}))
        .send()
        .await
        .unwrap();
    let (status, error) = error_of(long_message).await;
    assert_eq!((status, error.error.field.as_deref()), (422, Some("content")));

    assert_eq!(server.detail(thread).await, before, "nothing changed");
    let list: ThreadList = server.client.get(server.url("/api/threads")).send().await.unwrap().json().await.unwrap();
    assert_eq!(list.threads.len(), 2, "only the two accepted threads exist");
}

#[tokio::test]
async fn malformed_requests_name_the_problem() {
    let server = TestServer::start().await;
    let thread = server.create_thread().await;
    let before = server.detail(thread).await;
    let url = server.url(&format!("/api/threads/{thread}"));

    let too_big = server
        .client
        .post(server.url(&format!("/api/threads/{thread}/chat")))
        .header("content-type", "application/json")
        .body(format!("{{\"content\": \"{}\"}}", "a".repeat(1024 * 1024 + 10)))
        .send()
        .await
        .unwrap();
    let (status, error) = error_of(too_big).await;
    assert_eq!((status, error.error.code.as_str()), (413, "payload_too_large"));

    let malformed = server.client.patch(&url).header("content-type", "application/json").body("{\"title\": ").send();
    let (status, error) = error_of(malformed.await.unwrap()).await;
    assert_eq!((status, error.error.code.as_str()), (400, "malformed_json"));

    let wrong_type = server.client.patch(&url).json(&json!({"pinned": "yes"})).send().await.unwrap();
    let (status, error) = error_of(wrong_type).await;
    assert_eq!(status, 422);
    assert!(error.error.message.contains("pinned"), "{}", error.error.message);

    let unknown_field = server.client.patch(&url).json(&json!({"owner": "me"})).send().await.unwrap();
    let (status, error) = error_of(unknown_field).await;
    assert_eq!(status, 422);
    assert!(error.error.message.contains("owner"), "{}", error.error.message);

    // serde alone would read a request struct from an array of its field values; bodies are objects only.
    for body in [json!([null, null]), json!(["title", ["tag"]]), json!(null), json!(7)] {
        let response = server.client.post(server.url("/api/threads")).json(&body).send().await.unwrap();
        let (status, error) = error_of(response).await;
        assert_eq!((status, error.error.code.as_str()), (422, "invalid_body"), "{body}");
    }

    let not_json = server.client.patch(&url).body("title=x").send().await.unwrap();
    assert_eq!(not_json.status(), 415);

    let bad_sort = server.client.get(server.url("/api/threads?sort=size")).send().await.unwrap();
    let (status, error) = error_of(bad_sort).await;
    assert_eq!((status, error.error.field.as_deref()), (422, Some("sort")));
    let bad_bool = server.client.get(server.url("/api/threads?archived=maybe")).send().await.unwrap();
    let (status, error) = error_of(bad_bool).await;
    assert_eq!((status, error.error.code.as_str()), (400, "invalid_query"));

    for path in ["/api/threads/42", "/api/messages/nope/context", &format!("/api/threads/{thread}/messages/x")] {
        let response = server.client.get(server.url(path)).send().await.unwrap();
        let response = if response.status() == 405 {
            server.client.delete(server.url(path)).send().await.unwrap()
        } else {
            response
        };
        let (status, error) = error_of(response).await;
        assert_eq!((status, error.error.code.as_str()), (400, "invalid_path"), "{path}");
    }
    assert_eq!(server.detail(thread).await, before, "nothing changed");
}

#[tokio::test]
async fn chat_turns_over_the_limit_get_429_with_retry_after() {
    let server = TestServer::start_with(|c| c.limits.chat = 2).await;
    let thread = server.create_thread().await;
    for i in 0..2 {
        server.chat(thread, &format!("Requirement {i}: the app must work offline.")).await;
        server.wait_idle(thread).await;
    }
    let third = server
        .client
        .post(server.url(&format!("/api/threads/{thread}/chat")))
        .json(&json!({"content": "One more"}))
        .send()
        .await
        .unwrap();
    assert_eq!(third.status(), 429);
    let retry: u64 = third.headers().get("retry-after").unwrap().to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "Retry-After {retry}");
    assert_eq!(third.json::<ErrorBody>().await.unwrap().error.code, "rate_limited");
    assert_eq!(server.detail(thread).await.messages.len(), 4, "the refused turn saved nothing");

    // Another user has a quota of their own.
    let (other, _) = server.second_user("other@example.com").await;
    let own: app::api::Thread =
        other.post(server.url("/api/threads")).json(&json!({})).send().await.unwrap().json().await.unwrap();
    let response =
        other.post(server.url(&format!("/api/threads/{}/chat", own.id))).json(&json!({"content": "Hi"})).send();
    assert_eq!(response.await.unwrap().status(), 200);
}

#[tokio::test]
async fn the_general_limit_applies_per_user() {
    let server = TestServer::start_with(|c| c.limits.general = 5).await;
    for _ in 0..5 {
        assert_eq!(server.client.get(server.url("/api/threads")).send().await.unwrap().status(), 200);
    }
    let over = server.client.get(server.url("/api/threads")).send().await.unwrap();
    assert_eq!(over.status(), 429);
    assert!(over.headers().get("retry-after").is_some());
    let (other, _) = server.second_user("other@example.com").await;
    assert_eq!(other.get(server.url("/api/threads")).send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn sign_in_attempts_are_limited_per_ip_address() {
    // The harness's own sign-up is the first attempt.
    let server = TestServer::start_with(|c| c.limits.auth = 3).await;
    let anon = server.anonymous();
    let login = || {
        anon.post(server.url("/api/auth/login"))
            .json(&json!({"email": "owner@example.com", "password": PASSWORD}))
            .send()
    };
    assert_eq!(login().await.unwrap().status(), 200);
    assert_eq!(login().await.unwrap().status(), 200);
    let over = login().await.unwrap();
    assert_eq!(over.status(), 429);
    assert!(over.headers().get("retry-after").is_some());
    let register = anon
        .post(server.url("/api/auth/register"))
        .json(&json!({"email": "late@example.com", "password": PASSWORD}))
        .send()
        .await
        .unwrap();
    assert_eq!(register.status(), 429);
    // Signed-in use is not affected by the sign-in limit.
    assert_eq!(server.client.get(server.url("/api/auth/me")).send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn rate_limits_can_be_turned_off() {
    let server = TestServer::start_with(|c| {
        c.limits.general = 1;
        c.limits.enabled = "off".into();
    })
    .await;
    for _ in 0..5 {
        assert_eq!(server.client.get(server.url("/api/threads")).send().await.unwrap().status(), 200);
    }
}

const PERSONAL: &str = "Contact me at jane.doe@example.com or +1 415 555 2671. \
                        Pay to DE89 3704 0044 0532 0130 00 with card 4242 4242 4242 4242.";

async fn stored_question(server: &TestServer) -> (String, ThreadDetail) {
    let thread = server.create_thread().await;
    server.chat(thread, PERSONAL).await;
    let detail = server.wait_idle(thread).await;
    let question = detail.messages.iter().find(|m| m.role == Role::User).unwrap().content.clone();
    (question, detail)
}

#[tokio::test]
async fn personal_data_is_redacted_when_asked() {
    let server = TestServer::start_with(|c| c.redact_pii = true).await;
    let (question, detail) = stored_question(&server).await;
    assert_eq!(question, "Contact me at [EMAIL] or [PHONE]. Pay to [IBAN] with card [CARD].");
    for message in &detail.messages {
        for secret in ["jane.doe", "555 2671", "3704 0044", "4242 4242"] {
            assert!(!message.content.contains(secret), "{secret} reached {:?}", message.role);
        }
    }
}

#[tokio::test]
async fn personal_data_is_kept_by_default() {
    let server = TestServer::start().await;
    let (question, _) = stored_question(&server).await;
    assert_eq!(question, PERSONAL);
}

#[tokio::test]
async fn openapi_describes_every_route() {
    let server = TestServer::start().await;
    let doc: serde_json::Value =
        server.anonymous().get(server.url("/api/openapi.json")).send().await.unwrap().json().await.unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let paths = doc["paths"].as_object().unwrap();
    let expected = [
        ("/api/health", "get"),
        ("/api/ready", "get"),
        ("/api/auth/register", "post"),
        ("/api/auth/login", "post"),
        ("/api/auth/logout", "post"),
        ("/api/auth/logout-all", "post"),
        ("/api/auth/password", "post"),
        ("/api/auth/me", "get"),
        ("/api/auth/me", "delete"),
        ("/api/auth/sessions", "get"),
        ("/api/auth/sessions/{id}", "delete"),
        ("/api/auth/reset-password", "post"),
        ("/api/admin/users", "get"),
        ("/api/admin/users/{id}", "delete"),
        ("/api/admin/users/{id}/role", "put"),
        ("/api/admin/users/{id}/disabled", "put"),
        ("/api/admin/users/{id}/budget", "put"),
        ("/api/admin/users/{id}/reset-link", "post"),
        ("/api/admin/invites", "get"),
        ("/api/admin/invites", "post"),
        ("/api/admin/invites/{id}", "delete"),
        ("/api/admin/signup", "get"),
        ("/api/admin/signup", "put"),
        ("/api/threads", "get"),
        ("/api/threads", "post"),
        ("/api/threads/{id}", "get"),
        ("/api/threads/{id}", "patch"),
        ("/api/threads/{id}", "delete"),
        ("/api/threads/{id}/messages/{message_id}", "delete"),
        ("/api/threads/{id}/chat", "post"),
        ("/api/threads/{id}/stream", "get"),
        ("/api/threads/{id}/stop", "post"),
        ("/api/threads/{id}/messages/{message_id}/retry", "post"),
        ("/api/threads/{id}/messages", "post"),
        ("/api/messages/{id}/context", "get"),
        ("/api/messages/{id}/trace", "get"),
        ("/api/turns/{id}/trace", "get"),
        ("/api/search", "get"),
        ("/api/stats", "get"),
        ("/api/threads/{id}/export", "get"),
        ("/api/export", "get"),
        ("/api/threads/import", "post"),
        ("/api/threads/{id}/artifacts", "get"),
        ("/api/artifacts/{id}", "get"),
        ("/api/artifacts/{id}", "delete"),
        ("/api/artifacts/{id}/versions", "get"),
        ("/api/artifacts/{id}/versions/{version}", "get"),
        ("/api/artifacts/{id}/versions/{version}/restore", "post"),
        ("/api/artifacts/{id}/diff", "get"),
        ("/api/tags", "get"),
        ("/api/artifacts/{id}/export", "get"),
        ("/api/threads/{id}/attachments", "post"),
        ("/api/threads/{id}/attachments", "get"),
        ("/api/threads/{id}/attachments/{attachment_id}", "delete"),
        ("/api/threads/{id}/messages/{message_id}/regenerate", "post"),
        ("/api/threads/{id}/branch", "post"),
        ("/api/settings", "get"),
        ("/api/settings", "patch"),
        ("/api/threads/{id}/shares", "post"),
        ("/api/threads/{id}/shares", "get"),
        ("/api/shares", "get"),
        ("/api/shares/{id}", "delete"),
        ("/api/shared/{token}", "get"),
    ];
    for (path, method) in expected {
        assert!(paths.get(path).and_then(|p| p.get(method)).is_some(), "{method} {path} missing");
    }
    assert_eq!(paths.values().map(|p| p.as_object().unwrap().len()).sum::<usize>(), expected.len());
    let chat = &paths["/api/threads/{id}/chat"]["post"]["responses"]["200"]["content"];
    assert!(chat.get("text/event-stream").is_some(), "{chat}");
    for schema in ["Thread", "ThreadDetail", "ChatRequest", "ChatEvent", "ErrorBody", "AuthResponse", "RegisterRequest"]
    {
        assert!(doc["components"]["schemas"].get(schema).is_some(), "schema {schema} missing");
    }
    assert!(doc["components"]["securitySchemes"].get("bearer").is_some());
}
