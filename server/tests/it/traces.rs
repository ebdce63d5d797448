//! Traces people can read: every model call and tool call of a turn (silent ones and failures too), through
//! `GET /api/messages/{id}/trace` and `GET /api/turns/{id}/trace`, in exports, and nobody else's. A greedy model
//! on the OpenAI wire format makes the turns, on both backends.

use serde_json::json;
use uuid::Uuid;
use wire::{
    CallPurpose, ChatEvent, ImportResult, ModelCall, Role, StopReason, ThreadExport, ToolCallStep, Trace, TraceStep,
};

use crate::common::backends::{run_story, stories, Backend, Db};
use crate::common::{send, Frame, TestServer};
use crate::fake_upstream::greedy::GreedyUpstream;

async fn greedy_server(db: &Db) -> (TestServer, GreedyUpstream) {
    let upstream = GreedyUpstream::start().await;
    (TestServer::with(db.store.clone(), upstream.provider()).await, upstream)
}

/// The turn the frames belong to (their ids are `<turn>:<n>`).
fn turn_of(frames: &[Frame]) -> Uuid {
    let id = frames[0].id.as_deref().expect("an event id");
    Uuid::parse_str(id.split_once(':').expect("<turn>:<n>").0).expect("a turn id")
}

/// The trace at `path`, or the status of the refusal.
async fn get_trace(client: &reqwest::Client, server: &TestServer, path: &str) -> Result<Trace, u16> {
    let response = client.get(server.url(path)).send().await.unwrap();
    match response.status().as_u16() {
        200 => Ok(response.json().await.unwrap()),
        status => Err(status),
    }
}

/// The model calls and the tool calls of a trace, each in order.
fn calls_of(trace: &Trace) -> (Vec<&ModelCall>, Vec<&ToolCallStep>) {
    let (mut models, mut tools) = (Vec::new(), Vec::new());
    for step in &trace.steps {
        match step {
            TraceStep::ModelCall(call) => models.push(call),
            TraceStep::ToolCall(call) => tools.push(call),
        }
    }
    (models, tools)
}

async fn a_turn_with_a_tool_call_is_traced(db: Db) {
    let (server, _upstream) = greedy_server(&db).await;
    let thread = server.create_thread().await;
    let frames = send(&server, thread, "Generate user stories for a booking site", false).await;
    let Some(ChatEvent::MessageComplete { message_id: Some(answer), .. }) = frames.last().map(|f| &f.event) else {
        panic!("the answer is kept: {frames:?}");
    };
    let turn = turn_of(&frames);

    let trace = get_trace(&server.client, &server, &format!("/api/messages/{answer}/trace")).await.unwrap();
    assert_eq!((trace.turn_id, trace.thread_id, trace.message_id), (turn, thread, Some(*answer)));
    let kinds: Vec<&str> = trace
        .steps
        .iter()
        .map(|s| match s {
            TraceStep::ModelCall(c) if c.purpose == CallPurpose::Title => "title",
            TraceStep::ModelCall(_) => "model",
            TraceStep::ToolCall(_) => "tool",
        })
        .collect();
    assert_eq!(kinds, ["model", "tool", "model", "title"], "in the order they happened");

    let (calls, tools) = calls_of(&trace);
    for call in &calls {
        assert_eq!((call.provider.as_str(), call.model.as_str()), ("openai", "greedy-gpt"));
        assert_eq!(call.error, None);
        assert!(call.first_token_ms.is_some_and(|first| first <= call.duration_ms), "{call:?}");
    }
    assert_eq!((calls[0].input_tokens, calls[0].output_tokens), (40, 12), "as the provider metered it");
    assert_eq!(calls[0].stop_reason, Some(StopReason::ToolUse));
    assert_eq!(calls[1].stop_reason, Some(StopReason::EndTurn));
    assert!(calls[0].started_at <= calls[1].started_at);

    assert_eq!(tools.len(), 1);
    let save = tools[0];
    assert_eq!(save.name, "save_artifact");
    assert_eq!(save.arguments["title"], "User Stories");
    assert_eq!(save.arguments["artifact_type"], "user_stories");
    assert!(save.result.as_deref().is_some_and(|r| !r.is_empty()), "{save:?}");
    assert_eq!(save.error, None);

    // The same trace by the turn's id; none for the person's own message.
    let by_turn = get_trace(&server.client, &server, &format!("/api/turns/{turn}/trace")).await;
    assert_eq!(by_turn.as_ref(), Ok(&trace));
    let detail = server.detail(thread).await;
    let question = detail.messages.iter().find(|m| m.role == Role::User).unwrap().id;
    assert_eq!(get_trace(&server.client, &server, &format!("/api/messages/{question}/trace")).await.err(), Some(404));

    // Nobody else reads it: the same answer as for a message that does not exist.
    let (intruder, _) = server.second_user("trace-intruder@example.test").await;
    for path in [format!("/api/messages/{answer}/trace"), format!("/api/turns/{turn}/trace")] {
        assert_eq!(get_trace(&intruder, &server, &path).await.err(), Some(404), "{path}");
    }
    let missing = Uuid::now_v7();
    assert_eq!(get_trace(&server.client, &server, &format!("/api/messages/{missing}/trace")).await.err(), Some(404));
    assert_eq!(get_trace(&server.client, &server, "/api/messages/not-an-id/trace").await.err(), Some(400));
}

async fn a_failed_provider_call_shows_an_error_step(db: Db) {
    let (server, upstream) = greedy_server(&db).await;
    let thread = server.create_thread().await;
    upstream.fail_next(1);
    let frames = send(&server, thread, "Generate user stories", false).await;
    let Some(ChatEvent::Error { code, message }) = frames.last().map(|f| &f.event) else {
        panic!("the turn fails: {frames:?}");
    };
    let turn = turn_of(&frames);
    assert!(message.contains(&turn.to_string()), "the error names the turn: {message}");

    // No answer was kept, but the turn's trace was: its failed call, as plainly as the person was told.
    let trace = get_trace(&server.client, &server, &format!("/api/turns/{turn}/trace")).await.unwrap();
    assert_eq!(trace.message_id, None);
    let (models, tools) = calls_of(&trace);
    let failed = models.into_iter().find(|c| c.purpose == CallPurpose::Answer).expect("the answer call");
    let error = failed.error.as_ref().expect("an error step");
    assert_eq!(&error.code, code);
    assert_eq!(failed.stop_reason, None);
    assert_eq!(failed.first_token_ms, None);
    assert!(tools.is_empty());
    let text = serde_json::to_string(&trace).unwrap();
    let host = upstream.server.url.trim_start_matches("http://");
    assert!(!text.contains(host) && !text.contains("/v1"), "no address of the provider: {text}");
}

async fn a_silent_turn_has_a_trace(db: Db) {
    let (server, _upstream) = greedy_server(&db).await;
    let thread = server.create_thread().await;
    let frames = send(&server, thread, "Generate acceptance criteria from this conversation", true).await;
    assert!(
        matches!(frames.last().map(|f| &f.event), Some(ChatEvent::MessageComplete { message_id: None, .. })),
        "{frames:?}"
    );
    let turn = turn_of(&frames);
    let trace = get_trace(&server.client, &server, &format!("/api/turns/{turn}/trace")).await.unwrap();
    assert_eq!(trace.message_id, None);
    let (models, tools) = calls_of(&trace);
    assert!(models.iter().all(|c| c.purpose == CallPurpose::Answer), "a silent turn names nothing");
    assert_eq!(models.len(), 2);
    assert_eq!(tools.len(), 1);
    assert_eq!(
        (tools[0].name.as_str(), &tools[0].arguments["title"]),
        ("save_artifact", &json!("Acceptance Criteria"))
    );

    // The export carries it with the typed turn's trace, and an import takes the file back whole.
    let typed = send(&server, thread, "Generate a meeting summary", false).await;
    let response = server.get(&format!("/api/threads/{thread}/export")).await;
    assert_eq!(response.status(), 200);
    let export: ThreadExport = response.json().await.unwrap();
    let turns: Vec<Uuid> = export.traces.iter().map(|t| t.turn_id).collect();
    assert_eq!(turns, [turn, turn_of(&typed)], "oldest first");
    assert_eq!(export.traces[0], trace);
    let answer = export.messages.iter().find(|m| m.role == Role::Assistant).unwrap().id;
    assert_eq!(export.traces[1].message_id, Some(answer));

    let response = server.client.post(server.url("/api/threads/import")).json(&export).send().await.unwrap();
    assert_eq!(response.status(), 201);
    let copy = response.json::<ImportResult>().await.unwrap().threads.remove(0);
    let copied: ThreadExport = server.get_json(&format!("/api/threads/{}/export", copy.id)).await;
    assert_eq!(copied.messages.len(), export.messages.len());
    assert!(copied.traces.is_empty(), "a copy's answers were not written by its own turns");
}

stories!(a_turn_with_a_tool_call_is_traced, a_failed_provider_call_shows_an_error_step, a_silent_turn_has_a_trace);
