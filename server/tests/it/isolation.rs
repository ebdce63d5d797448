//! Two users on one server: every object route answers another user's id with 404, exactly as a missing id,
//! listings hold only the caller's data, and the owner's data is unchanged afterwards.

use crate::common::{get_json, TestServer};
use serde_json::json;
use uuid::Uuid;
use wire::{ErrorBody, Role, ThreadDetail, ThreadList};

/// The owner's conversation with a finished turn (so it has messages, a context record and stored events).
async fn owner_with_a_conversation(server: &TestServer) -> (Uuid, ThreadDetail) {
    let thread = server.create_thread().await;
    server.patch_thread(thread, &json!({"title": "Private plans", "tags": ["secret"]})).await;
    server.chat(thread, "We need a payroll system. Please write the user stories.").await;
    (thread, server.wait_idle(thread).await)
}

async fn assert_not_found(response: reqwest::Response, what: &str) {
    assert_eq!(response.status(), 404, "{what}");
    assert_eq!(response.json::<ErrorBody>().await.unwrap().error.code, "not_found", "{what}");
}

#[tokio::test]
async fn another_users_objects_answer_404_like_missing_ones() {
    let server = TestServer::start().await;
    let (thread, before) = owner_with_a_conversation(&server).await;
    let question = before.messages.iter().find(|m| m.role == Role::User).unwrap().id;
    let answer = before.messages.iter().find(|m| m.role == Role::Assistant).unwrap().id;
    let owner_context = server.get(&format!("/api/messages/{answer}/context")).await;
    assert_eq!(owner_context.status(), 200, "the owner sees the context record");

    let (mallory, _) = server.second_user("mallory@example.com").await;
    let missing = Uuid::new_v4();
    for target in [thread, missing] {
        let label = if target == thread { "other user's" } else { "missing" };
        let requests = [
            ("GET thread", mallory.get(server.url(&format!("/api/threads/{target}")))),
            (
                "PATCH thread",
                mallory.patch(server.url(&format!("/api/threads/{target}"))).json(&json!({"title": "Mine now"})),
            ),
            ("DELETE thread", mallory.delete(server.url(&format!("/api/threads/{target}")))),
            ("DELETE message", mallory.delete(server.url(&format!("/api/threads/{target}/messages/{question}")))),
            ("chat", mallory.post(server.url(&format!("/api/threads/{target}/chat"))).json(&json!({"content": "Hi"}))),
            ("stream", mallory.get(server.url(&format!("/api/threads/{target}/stream")))),
            ("stop", mallory.post(server.url(&format!("/api/threads/{target}/stop")))),
        ];
        for (what, request) in requests {
            assert_not_found(request.send().await.unwrap(), &format!("{what} ({label})")).await;
        }
    }
    // Message-level routes: the owner's message ids under the attacker's own thread, and directly.
    let own_thread = server.create_thread_as(&mallory).await;
    for message in [question, answer] {
        let delete = mallory.delete(server.url(&format!("/api/threads/{own_thread}/messages/{message}")));
        assert_not_found(delete.send().await.unwrap(), "DELETE message via own thread").await;
    }
    for message in [answer, missing] {
        let context = mallory.get(server.url(&format!("/api/messages/{message}/context")));
        assert_not_found(context.send().await.unwrap(), "message context").await;
    }

    // Listings hold only the caller's data.
    let list: ThreadList = get_json(&mallory, &server.url("/api/threads")).await;
    assert_eq!(list.threads.iter().map(|t| t.id).collect::<Vec<_>>(), vec![own_thread]);
    let archived: ThreadList = get_json(&mallory, &server.url("/api/threads?archived=true")).await;
    assert!(archived.threads.is_empty());
    let tagged: ThreadList = get_json(&mallory, &server.url("/api/threads?tags=secret")).await;
    assert!(tagged.threads.is_empty());

    // The owner's conversation, messages, documents and context are exactly as before.
    let after = server.detail(thread).await;
    assert_eq!(after, before);
    assert_eq!(after.thread.title, "Private plans");
    let owner_list: ThreadList = server.get_json("/api/threads").await;
    assert_eq!(owner_list.threads.iter().map(|t| t.id).collect::<Vec<_>>(), vec![thread]);
    let context = server.get(&format!("/api/messages/{answer}/context")).await;
    assert_eq!(context.status(), 200);
}

#[tokio::test]
async fn documents_stay_with_their_owner() {
    let server = TestServer::start().await;
    let (thread, before) = owner_with_a_conversation(&server).await;
    let (mallory, _) = server.second_user("mallory@example.com").await;
    let own = server.create_thread_as(&mallory).await;
    let mine: ThreadDetail = get_json(&mallory, &server.url(&format!("/api/threads/{own}"))).await;
    assert!(mine.artifacts.is_empty() && mine.messages.is_empty());
    assert_eq!(server.detail(thread).await.artifacts, before.artifacts);
}

#[tokio::test]
async fn history_documents_and_files_stay_with_their_owner() {
    let server = TestServer::start().await;
    let (thread, before) = owner_with_a_conversation(&server).await;
    let artifact = before.artifacts.first().expect("the conversation made a document").id;
    let payroll = b"Payroll runs on the last Friday of each month.".to_vec();
    let uploaded = server.upload(thread, "payroll.txt", "text/plain", payroll).await;
    assert_eq!(uploaded.status(), 201);
    let attachment = uploaded.json::<serde_json::Value>().await.unwrap()["id"].as_str().unwrap().to_string();

    let (mallory, _) = server.second_user("mallory@example.com").await;
    let form = || {
        reqwest::multipart::Form::new()
            .part("file", reqwest::multipart::Part::text("mine").file_name("x.txt").mime_str("text/plain").unwrap())
    };
    let requests = [
        ("thread documents", mallory.get(server.url(&format!("/api/threads/{thread}/artifacts")))),
        ("document", mallory.get(server.url(&format!("/api/artifacts/{artifact}")))),
        ("document versions", mallory.get(server.url(&format!("/api/artifacts/{artifact}/versions")))),
        ("document version", mallory.get(server.url(&format!("/api/artifacts/{artifact}/versions/1")))),
        ("document export", mallory.get(server.url(&format!("/api/artifacts/{artifact}/export?format=md")))),
        ("document delete", mallory.delete(server.url(&format!("/api/artifacts/{artifact}")))),
        ("files", mallory.get(server.url(&format!("/api/threads/{thread}/attachments")))),
        ("file upload", mallory.post(server.url(&format!("/api/threads/{thread}/attachments"))).multipart(form())),
        ("file delete", mallory.delete(server.url(&format!("/api/threads/{thread}/attachments/{attachment}")))),
        ("conversation export", mallory.get(server.url(&format!("/api/threads/{thread}/export?format=json")))),
    ];
    for (what, request) in requests {
        assert_not_found(request.send().await.unwrap(), what).await;
    }

    let search: serde_json::Value = get_json(&mallory, &server.url("/api/search?q=payroll")).await;
    assert_eq!(search["total"], 0, "{search}");
    let stats: serde_json::Value = get_json(&mallory, &server.url("/api/stats")).await;
    assert_eq!(stats["total_threads"], 0, "{stats}");
    let everything: serde_json::Value = get_json(&mallory, &server.url("/api/export")).await;
    assert_eq!(everything["threads"].as_array().map(Vec::len), Some(0), "{everything}");

    // The owner still has it all, unchanged.
    assert_eq!(server.detail(thread).await, before);
    let files: serde_json::Value = server.get_json(&format!("/api/threads/{thread}/attachments")).await;
    assert_eq!(files["attachments"].as_array().unwrap().len(), 1);
    let owner_search: serde_json::Value = server.get_json("/api/search?q=payroll").await;
    assert!(owner_search["total"].as_u64().unwrap() > 0);
}
