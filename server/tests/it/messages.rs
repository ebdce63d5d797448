//! A person's messages outside the usual turn, on both backends: Retry runs a failed turn again without storing
//! its message twice, and a message can be added without asking the model. And the model is asked while the
//! message that starts a turn commits, not after.

use llm::LlmError;
use serde_json::json;
use uuid::Uuid;
use wire::{ChatEvent, HistoryStats, Message, MessageStatus, Role, SearchResults, MAX_MESSAGE_CHARS};

use crate::common::backends::{run_story, stories, Backend, Db};
use crate::common::{names, read_frames, scripted_server, text_of, ExpectJson, Frame, ScriptedModel, Step, TestServer};

stories!(
    retry_runs_the_failed_turn_without_storing_the_message_again,
    retry_replaces_the_partial_answer_of_the_failed_turn,
    only_the_latest_message_whose_answer_failed_can_be_retried,
    a_message_is_added_without_asking_the_model,
    adding_a_message_waits_for_the_running_answer,
);

/// On PostgreSQL, whose row locks can hold back one conversation's writes from outside (a SQLite database
/// belongs to one process, whose writer does not wait for another's lock); the engine's path is the same on both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_is_asked_while_the_message_commits() {
    run_story(Backend::Postgres, "the_model_is_asked_while_the_message_commits", asked_while_committing).await;
}

async fn retry(server: &TestServer, thread: Uuid, message: Uuid) -> reqwest::Response {
    let url = server.url(&format!("/api/threads/{thread}/messages/{message}/retry"));
    server.client.post(url).send().await.unwrap()
}

async fn retried(server: &TestServer, thread: Uuid, message: Uuid) -> Vec<Frame> {
    let response = retry(server, thread, message).await;
    assert_eq!(response.status(), 200, "retry status");
    read_frames(response).await
}

fn ends_with_error(frames: &[Frame]) {
    assert!(matches!(frames.last().map(|f| &f.event), Some(ChatEvent::Error { .. })), "{:?}", names(frames));
}

/// The texts of the person's messages the model was sent in its `n`-th request.
async fn retry_runs_the_failed_turn_without_storing_the_message_again(db: Db) {
    let (server, model) =
        scripted_server(&db, vec![vec![Step::Fail(LlmError::Overloaded)], ScriptedModel::text(&["Here ", "it is."])])
            .await;
    let thread = server.create_thread().await;
    ends_with_error(&server.chat(thread, "Plan the spring launch").await);
    let request = server.detail(thread).await.messages.pop().unwrap();
    assert_eq!((request.role, request.content.as_str()), (Role::User, "Plan the spring launch"));

    let frames = retried(&server, thread, request.id).await;
    let ChatEvent::MessageComplete { message_id: Some(answer), .. } = frames.last().unwrap().event else {
        panic!("{:?}", names(&frames));
    };
    assert_eq!(text_of(&frames), "Here it is.");
    let detail = server.detail(thread).await;
    assert_eq!(
        detail.messages.iter().map(|m| (m.id, m.role)).collect::<Vec<_>>(),
        vec![(request.id, Role::User), (answer, Role::Assistant)]
    );
    assert_eq!(detail.thread.message_count, 2, "the message is stored once");
    // The model got the message once, in the retried turn as in the failed one.
    assert_eq!(model.calls.load(std::sync::atomic::Ordering::SeqCst), 2);
    for n in 0..2 {
        assert_eq!(model.sent(n).matches("Plan the spring launch").count(), 1, "request {n}");
    }
    // Answered now: there is nothing to run again.
    assert_eq!(retry(&server, thread, request.id).await.status(), 409);
}

async fn retry_replaces_the_partial_answer_of_the_failed_turn(db: Db) {
    let cut_short = vec![Step::delta("The first half"), Step::Fail(LlmError::Upstream { status: 500 })];
    let (server, model) = scripted_server(&db, vec![cut_short, ScriptedModel::text(&["The whole answer."])]).await;
    let thread = server.create_thread().await;
    ends_with_error(&server.chat(thread, "Explain the plan").await);
    let before = server.detail(thread).await.messages;
    assert_eq!(before.len(), 2);
    assert_eq!(before[1].status, MessageStatus::Interrupted);

    let frames = retried(&server, thread, before[0].id).await;
    assert_eq!(names(&frames).last(), Some(&"message_complete"));
    let after = server.detail(thread).await;
    assert_eq!(after.messages.len(), 2);
    assert_eq!(after.messages[0], before[0]);
    assert_eq!(
        (after.messages[1].content.as_str(), after.messages[1].status),
        ("The whole answer.", MessageStatus::Complete)
    );
    assert_eq!(after.thread.message_count, 2);
    let seen = model.sent(1);
    assert!(!seen.contains("The first half"), "the failed attempt is not shown to the model: {seen}");
    assert_eq!(seen.matches("Explain the plan").count(), 1);
}

async fn only_the_latest_message_whose_answer_failed_can_be_retried(db: Db) {
    let scripts = vec![
        vec![Step::Fail(LlmError::Overloaded)],
        ScriptedModel::text(&["Noted."]),
        vec![Step::Fail(LlmError::Overloaded)],
        vec![Step::Hang],
    ];
    let (server, _model) = scripted_server(&db, scripts).await;
    let thread = server.create_thread().await;
    ends_with_error(&server.chat(thread, "First").await);
    server.chat(thread, "Second").await;
    let messages = server.detail(thread).await.messages;
    let (first, second, answer) = (messages[0].id, messages[1].id, messages[2].id);
    assert_eq!(retry(&server, thread, first).await.status(), 409, "a later message followed it");
    assert_eq!(retry(&server, thread, second).await.status(), 409, "its answer is complete");
    assert_eq!(retry(&server, thread, answer).await.status(), 404, "not a person's message");
    assert_eq!(retry(&server, thread, Uuid::now_v7()).await.status(), 404);
    let other = server.create_thread().await;
    assert_eq!(retry(&server, other, second).await.status(), 404, "a message of another conversation");
    let (stranger, _) = server.second_user("stranger@example.com").await;
    let url = server.url(&format!("/api/threads/{thread}/messages/{second}/retry"));
    assert_eq!(stranger.post(url).send().await.unwrap().status(), 404, "another person's conversation");

    // While an answer is being written, nothing else runs.
    ends_with_error(&server.chat(thread, "Third").await);
    let third = server.detail(thread).await.messages.pop().unwrap().id;
    let hanging = retry(&server, thread, third).await;
    assert_eq!(hanging.status(), 200);
    assert_eq!(retry(&server, thread, third).await.status(), 409);
    server.client.post(server.url(&format!("/api/threads/{thread}/stop"))).send().await.unwrap();
    read_frames(hanging).await;
    assert_eq!(server.wait_idle(thread).await.thread.message_count, 4, "every message stored once");
}

async fn a_message_is_added_without_asking_the_model(db: Db) {
    let (server, model) = scripted_server(&db, vec![ScriptedModel::text(&["Understood."])]).await;
    let thread = server.create_thread().await;
    let response =
        server.add_message(thread, &json!({"content": "  Stock counts happen every Monday at seven.  "})).await;
    assert_eq!(response.status(), 201);
    let message: Message = response.json().await.unwrap();
    assert_eq!((message.role, message.seq, message.status), (Role::User, 1, MessageStatus::Complete));
    assert_eq!(message.content, "Stock counts happen every Monday at seven.");
    assert_eq!(model.calls.load(std::sync::atomic::Ordering::SeqCst), 0, "the model was not asked");

    let detail = server.detail(thread).await;
    assert_eq!(detail.messages, vec![message.clone()]);
    assert_eq!(detail.thread.message_count, 1);
    assert_eq!(detail.thread.title, "Stock counts happen every Monday", "named after its first words");
    assert!(!detail.running);

    // Counted, found and exported like any other message.
    let stats: HistoryStats = server.get_json("/api/stats").await;
    assert_eq!(stats.total_messages, 1);
    let search: SearchResults =
        server.client.get(server.url("/api/search")).query(&[("q", "Monday")]).expect_json().await;
    let hits: Vec<Uuid> = search.results.iter().filter_map(|r| r.message_id).collect();
    assert_eq!(hits, vec![message.id], "the message (and the title named after it)");
    for export in [format!("/api/threads/{thread}/export"), "/api/export".to_string()] {
        let body = server.get(&export).await.text().await.unwrap();
        assert!(body.contains("Stock counts happen every Monday at seven."), "{export}: {body}");
    }

    // The next turn sees it.
    server.chat(thread, "What do we know so far?").await;
    assert!(model.sent(0).contains("Stock counts happen every Monday at seven."));
    assert_eq!(server.detail(thread).await.thread.message_count, 3);
}

async fn adding_a_message_waits_for_the_running_answer(db: Db) {
    let (server, _model) = scripted_server(&db, vec![vec![Step::Hang]]).await;
    let thread = server.create_thread().await;

    // Checked as a chat message is.
    assert_eq!(server.add_message(thread, &json!({"content": "   "})).await.status(), 422);
    assert_eq!(server.add_message(thread, &json!({"content": "x".repeat(MAX_MESSAGE_CHARS + 1)})).await.status(), 422);
    assert_eq!(server.add_message(thread, &json!({"content": "Hi", "role": "assistant"})).await.status(), 422);
    assert_eq!(server.add_message(Uuid::now_v7(), &json!({"content": "Hi"})).await.status(), 404);
    let (stranger, _) = server.second_user("stranger@example.com").await;
    let url = server.url(&format!("/api/threads/{thread}/messages"));
    assert_eq!(stranger.post(url).json(&json!({"content": "Hi"})).send().await.unwrap().status(), 404);
    assert_eq!(server.detail(thread).await.thread.message_count, 0);

    let running = server.send_text(thread, "Think about it").await;
    assert_eq!(running.status(), 200);
    let busy = server.add_message(thread, &json!({"content": "One more thing"})).await;
    assert_eq!(busy.status(), 409);
    server.client.post(server.url(&format!("/api/threads/{thread}/stop"))).send().await.unwrap();
    read_frames(running).await;
    server.wait_idle(thread).await;
    assert_eq!(server.add_message(thread, &json!({"content": "One more thing"})).await.status(), 201);
    let messages = server.detail(thread).await.messages;
    assert_eq!(messages.last().map(|m| m.content.as_str()), Some("One more thing"));
}

/// With writes to the conversation held back, the person's message cannot commit; the model is asked all the
/// same, with the conversation and the message, and nothing is relayed or saved until the commit lands.
async fn asked_while_committing(db: Db) {
    let scripts = vec![ScriptedModel::text(&["First answer"]), ScriptedModel::text(&["Second", " answer"])];
    let (server, model) = scripted_server(&db, scripts).await;
    let thread = server.create_thread().await;
    server.chat(thread, "The first question.").await;
    let asked = model.calls.load(std::sync::atomic::Ordering::SeqCst);
    let held = db.raw.hold_writes(thread).await;
    let sending = server.chat_request(thread).json(&json!({ "content": "The second question." })).send();
    let response = tokio::spawn(sending);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while model.calls.load(std::sync::atomic::Ordering::SeqCst) == asked {
        assert!(std::time::Instant::now() < deadline, "the model was not asked while the message committed");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(db.raw.count("messages", "thread_id", thread).await, 2, "nothing saved before the commit");
    let request = model.requests.lock().unwrap().last().cloned().expect("the request");
    let said: Vec<String> = request.messages.iter().map(|m| m.text()).collect();
    assert_eq!(said.first().map(String::as_str), Some("The first question."));
    assert_eq!(said.last().map(String::as_str), Some("The second question."), "{said:?}");
    held.release().await;
    let response = response.await.unwrap().unwrap();
    assert_eq!(response.status(), 200, "the turn starts once the commit lands");
    let frames = read_frames(response).await;
    assert_eq!(names(&frames).last(), Some(&"message_complete"), "{:?}", names(&frames));
    assert_eq!(text_of(&frames), "Second answer");
    let messages = server.detail(thread).await.messages;
    let texts: Vec<&str> = messages.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(texts[2..], ["The second question.", "Second answer"]);
}
