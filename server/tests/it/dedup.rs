//! Exactly one document per request, whatever the model does: structural filtering, the per-turn guard and
//! silent generation, through the HTTP API.

use std::sync::Arc;

use crate::common::{read_frames, sqlite_store, GreedyModel, TestServer};
use app::api::{ChatEvent, Role};

async fn greedy_server() -> (TestServer, Arc<GreedyModel>, tempfile::TempDir) {
    let (store, dir) = sqlite_store().await;
    let model = Arc::new(GreedyModel::default());
    (TestServer::with(store, model.clone()).await, model, dir)
}

#[test]
fn the_fake_model_really_is_greedy() {
    use quire::llm::{ChatRequest, Message};
    let request = ChatRequest {
        messages: vec![
            Message::user("Generate user stories"),
            Message::assistant("ok"),
            Message::user("Generate a BRD"),
            Message::assistant("ok"),
            Message::user("Generate a requirements doc"),
        ],
        ..Default::default()
    };
    assert_eq!(GreedyModel::calls_for(&request).len(), 3, "unfiltered, it would act on every request");
}

#[tokio::test]
async fn three_typed_requests_make_exactly_three_documents() {
    let (server, model, _dir) = greedy_server().await;
    let thread = server.create_thread().await;
    server.chat(thread, "We are building a travel booking site. Travellers must compare prices.").await;
    for request in ["Generate user stories", "Generate a BRD", "Generate a requirements doc"] {
        let frames = server.chat(thread, request).await;
        let created = frames.iter().filter(|f| f.event.name() == "artifact_created").count();
        assert_eq!(created, 1, "{request}: exactly one document");
    }
    let detail = server.detail(thread).await;
    assert_eq!(detail.artifacts.len(), 3);
    let kinds: Vec<&str> = detail.artifacts.iter().map(|a| a.artifact_type.as_str()).collect();
    assert_eq!(kinds, vec!["user_stories", "business_requirements", "requirements_doc"]);
    // The messages stay untouched: filtering only changes what the model sees.
    assert_eq!(detail.messages.len(), 8);

    // The third request's model input held neither earlier request nor their answers.
    let requests = model.requests.lock().unwrap();
    let last_first_round = requests.iter().rev().find(|r| r.messages.last().unwrap().parts.len() == 1).unwrap();
    let seen: String = last_first_round.messages.iter().map(|m| m.text()).collect::<Vec<_>>().join("|");
    assert!(!seen.contains("Generate user stories") && !seen.contains("Generate a BRD"), "{seen}");
    assert!(seen.contains("Travellers must compare prices"));
}

#[tokio::test]
async fn a_silent_request_adds_a_document_and_no_message() {
    let (server, _model, _dir) = greedy_server().await;
    let thread = server.create_thread().await;
    server.chat(thread, "Generate user stories").await;
    let before = server.detail(thread).await;

    let response = server
        .client
        .post(server.url(&format!("/api/threads/{thread}/chat")))
        .json(&serde_json::json!({"content": "Generate acceptance criteria", "artifact_generation": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let frames = read_frames(response).await;
    let names: Vec<&str> = frames.iter().map(|f| f.event.name()).collect();
    assert!(!names.contains(&"text_delta"), "no text reaches the client: {names:?}");
    assert!(names.contains(&"tool_executing"));
    assert!(names.contains(&"artifact_created"));
    let ChatEvent::MessageComplete { message_id, usage, .. } = &frames.last().unwrap().event else {
        panic!("ends with message_complete: {names:?}");
    };
    assert_eq!(*message_id, None);
    assert!(usage.input_tokens > 0, "usage is still reported");

    let after = server.detail(thread).await;
    assert_eq!(after.messages, before.messages, "no message saved");
    assert_eq!(after.artifacts.len(), 2);
    let silent = after.artifacts.last().unwrap();
    assert_eq!(silent.artifact_type.as_str(), "acceptance_criteria");
    assert_eq!(silent.request_message_id, None);
    assert_eq!(silent.assistant_message_id, None);

    // A typed request afterwards still makes exactly one.
    let frames = server.chat(thread, "Generate a meeting summary").await;
    assert_eq!(frames.iter().filter(|f| f.event.name() == "artifact_created").count(), 1);
    let last = server.detail(thread).await;
    assert_eq!(last.artifacts.len(), 3);
    assert_eq!(last.messages.len(), 4);
}

#[tokio::test]
async fn a_silent_request_without_a_document_says_so_and_saves_nothing() {
    let (server, _model, _dir) = greedy_server().await;
    let thread = server.create_thread().await;
    let response = server
        .client
        .post(server.url(&format!("/api/threads/{thread}/chat")))
        .json(&serde_json::json!({"content": "Tell me a joke", "artifact_generation": true}))
        .send()
        .await
        .unwrap();
    let frames = read_frames(response).await;
    let ChatEvent::Error { code, message } = &frames.last().unwrap().event else { panic!("{frames:?}") };
    assert_eq!(code, "no_artifact");
    assert!(!message.is_empty());
    assert!(frames.iter().all(|f| f.event.name() != "text_delta"));
    let detail = server.detail(thread).await;
    assert!(detail.messages.is_empty() && detail.artifacts.is_empty());
}

#[tokio::test]
async fn parallel_duplicate_calls_in_one_turn_make_one_document() {
    use crate::common::{ScriptedModel, Step};
    use quire::llm::{StopReason, StreamEvent, ToolCall};
    let (store, _dir) = sqlite_store().await;
    let call = |id: &str, kind: &str, title: &str| {
        Step::Emit(StreamEvent::ToolCall(ToolCall {
            id: id.into(),
            name: "save_artifact".into(),
            arguments: serde_json::json!({"artifact_type": kind, "title": title, "content": "# Doc"}),
        }))
    };
    let first_round = vec![
        call("a", "user_stories", "Stories"),
        call("b", "user_stories", "Stories"),
        call("c", "business_requirements", "BRD"),
        Step::Emit(StreamEvent::Stop(StopReason::ToolUse)),
    ];
    let server = TestServer::with(store, ScriptedModel::new(vec![first_round, ScriptedModel::text(&["Saved."])])).await;
    let thread = server.create_thread().await;
    let frames = server.chat(thread, "Generate user stories and a BRD").await;
    assert_eq!(frames.iter().filter(|f| f.event.name() == "tool_executing").count(), 3);
    assert_eq!(frames.iter().filter(|f| f.event.name() == "artifact_created").count(), 2);
    let detail = server.detail(thread).await;
    assert_eq!(detail.artifacts.len(), 2, "same type and title in one turn is one document; another type is allowed");
}

#[tokio::test]
async fn the_context_record_says_what_the_model_saw() {
    let (server, _model, _dir) = greedy_server().await;
    let thread = server.create_thread().await;
    server.chat(thread, "Our clinic needs online appointments.").await;
    server.chat(thread, "Generate user stories").await;
    server.chat(thread, "What else do you need?").await;
    let detail = server.detail(thread).await;
    let answer = detail.messages.iter().rev().find(|m| m.role == Role::Assistant).unwrap();
    let record: serde_json::Value = server
        .client
        .get(server.url(&format!("/api/messages/{}/context", answer.id)))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids = |key: &str| -> Vec<String> {
        record[key].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect()
    };
    let m = &detail.messages;
    assert_eq!(ids("included"), vec![m[0].id.to_string(), m[1].id.to_string(), m[4].id.to_string()]);
    assert_eq!(ids("filtered"), vec![m[2].id.to_string(), m[3].id.to_string()]);
    assert!(ids("truncated").is_empty());
    assert_eq!(record["budget"], 24_000);
    assert_eq!(record["provider"], "greedy");
    assert_eq!(record["model"], "greedy-1");
    assert!(record["tokens"].as_u64().unwrap() > 0);

    let user_message =
        server.client.get(server.url(&format!("/api/messages/{}/context", m[0].id))).send().await.unwrap();
    assert_eq!(user_message.status(), 404);
}
