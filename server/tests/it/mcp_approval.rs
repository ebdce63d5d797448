//! MCP tools that ask the person first, and which servers a conversation uses: a scripted model calls the `echo`
//! tool of a real MCP server (`@modelcontextprotocol/server-everything`, from `end2end/node_modules`, run by node
//! through `quire run-limited`), configured to ask before `echo`. Denied, the call does not run and the model
//! hears so; approved, it runs; unanswered, it expires; a question survives the stream being dropped; only those
//! who write in the conversation decide. On both backends; without node the stories say "skipped" and pass.

use std::{path::PathBuf, sync::Arc, time::Duration};

use llm::{Part, StopReason, StreamEvent};
use quire::mcp_tools::{Approval, ServerConfig, Transport};
use serde_json::json;
use uuid::Uuid;
use wire::{ApprovalState, ChatEvent, ToolApproval};

use crate::common::backends::{run_story, stories, Backend, Db};
use crate::common::{
    fresh_postgres_url, read_frames, read_frames_until, shared_instance, tool_call, Frame, ScriptedModel, Step,
    TestServer,
};

stories!(
    a_denied_call_does_not_run_and_an_approved_one_does,
    an_unanswered_question_expires_and_denies,
    a_question_survives_the_stream_and_is_decided_after_coming_back,
    only_those_who_write_in_the_conversation_decide,
    people_choose_the_servers_of_their_conversations,
);

/// The server's name, and the name the model calls its `echo` by.
const SERVER: &str = "everything";
const ECHO: &str = "everything__echo";

/// The MCP server that asks before `echo`, or `None` (with a "skipped" line) when node cannot be run here.
fn everything_server() -> Option<ServerConfig> {
    use std::io::Write;
    let node = std::process::Command::new("node").arg("--version").output();
    if !node.is_ok_and(|out| out.status.success()) {
        let _ = writeln!(std::io::stderr(), "mcp_approval: skipped: node is not installed");
        return None;
    }
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../end2end/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(script.exists(), "{} is missing: run `npm install` in end2end", script.display());
    Some(ServerConfig {
        name: SERVER.into(),
        label: "Everything".into(),
        transport: Transport::Stdio {
            program: "node".into(),
            args: vec![script.display().to_string(), "stdio".into()],
            env: Vec::new(),
            memory_mb: 0,
        },
        approval: Approval::Tools(vec!["echo".into()]),
        on_by_default: true,
        timeout: Duration::from_secs(30),
        max_result_chars: 20_000,
    })
}

/// A server on `db` whose model follows `scripts`, with the MCP server connected; questions wait `approval_seconds`.
async fn server_with_tools(
    db: &Db,
    scripts: Vec<Vec<Step>>,
    approval_seconds: u64,
) -> Option<(TestServer, Arc<ScriptedModel>)> {
    let tools = everything_server()?;
    let model = ScriptedModel::new(scripts);
    let server = TestServer::with_configured(db.store.clone(), model.clone(), |config| {
        config.mcp_servers = vec![tools];
        config.mcp_approval_seconds = approval_seconds;
    })
    .await;
    for _ in 0..300 {
        if server.state.chat.mcp().servers().iter().all(|(_, connected)| *connected) {
            return Some((server, model));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the MCP server did not connect in 30 seconds");
}

/// The model calls `echo` with `message` (call `id`), then stops for the result.
fn calls_echo(id: &str, message: &str) -> Vec<Step> {
    vec![
        Step::Emit(tool_call(id, ECHO, json!({ "message": message }))),
        Step::Emit(StreamEvent::Stop(StopReason::ToolUse)),
    ]
}

/// Sends `content` in `thread` as the server's user, its events read in the background until the turn ends.
fn chat_in_background(server: &TestServer, thread: Uuid, content: &str) -> tokio::task::JoinHandle<Vec<Frame>> {
    let request = server.chat_request(thread).json(&json!({ "content": content }));
    tokio::spawn(async move {
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200);
        read_frames(response).await
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_made_on_another_instance_reaches_the_waiting_turn() {
    let Some(url) = fresh_postgres_url("a_decision_made_on_another_instance_reaches_the_waiting_turn").await else {
        return;
    };
    let Some(tools) = everything_server() else { return };
    let model = ScriptedModel::new(vec![calls_echo("call_a", "across"), ScriptedModel::text(&["Echoed."])]);
    let here = shared_instance(&url, model.clone(), |config| config.mcp_servers = vec![tools]).await;
    // The other instance has no MCP servers of its own: it only records the decision.
    let there = shared_instance(&url, Arc::new(llm::builtin::Builtin::new()), |_| {}).await;
    for _ in 0..300 {
        if here.state.chat.mcp().servers().iter().all(|(_, connected)| *connected) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let thread = here.create_thread().await;
    let chat = chat_in_background(&here, thread, "Echo across");
    let question = next_question(&there, thread, &[]).await;
    assert_eq!(decide(&there, &there.client, thread, question.id, true).await.0, 200);
    assert_eq!(decisions(&chat.await.unwrap()), [ApprovalState::Approved]);
    assert_eq!(results_sent(&model, 1)[0].1, "Echo: across");
}

/// The pending question of `thread` other than those in `seen`, as the conversation shows it once it is asked.
async fn next_question(server: &TestServer, thread: Uuid, seen: &[Uuid]) -> ToolApproval {
    for _ in 0..400 {
        let detail = server.detail(thread).await;
        if let Some(question) = detail.approvals.into_iter().find(|a| !seen.contains(&a.id)) {
            return question;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no question was asked");
}

/// `POST /api/threads/{thread}/approvals/{id}` as `client`: the status and the body.
async fn decide(
    server: &TestServer,
    client: &reqwest::Client,
    thread: Uuid,
    id: Uuid,
    approve: bool,
) -> (u16, serde_json::Value) {
    let url = server.url(&format!("/api/threads/{thread}/approvals/{id}"));
    let response = client.post(url).json(&json!({ "approve": approve })).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or_default())
}

/// The tool results the model was given in its `n`-th request: call id, text, and whether it was an error.
fn results_sent(model: &ScriptedModel, n: usize) -> Vec<(String, String, bool)> {
    let requests = model.requests.lock().unwrap();
    let results = requests[n].messages.iter().flat_map(|m| m.parts.iter()).filter_map(|part| match part {
        Part::ToolResult { call_id, content, is_error } => Some((call_id.clone(), content.clone(), *is_error)),
        _ => None,
    });
    results.collect()
}

/// The names of the tools the model was offered in its `n`-th request.
fn tools_offered(model: &ScriptedModel, n: usize) -> Vec<String> {
    model.requests.lock().unwrap()[n].tools.iter().map(|t| t.name.clone()).collect()
}

/// The decisions the frames carry, in order.
fn decisions(frames: &[Frame]) -> Vec<ApprovalState> {
    let decided = frames.iter().filter_map(|f| match &f.event {
        ChatEvent::ApprovalDecided { state, .. } => Some(*state),
        _ => None,
    });
    decided.collect()
}

async fn a_denied_call_does_not_run_and_an_approved_one_does(db: Db) {
    let scripts = vec![calls_echo("call_a", "first"), calls_echo("call_b", "second"), ScriptedModel::text(&["Done."])];
    let Some((server, model)) = server_with_tools(&db, scripts, 300).await else { return };
    let thread = server.create_thread().await;
    let chat = chat_in_background(&server, thread, "Echo something twice");

    let first = next_question(&server, thread, &[]).await;
    assert_eq!((first.server.as_str(), first.label.as_str(), first.tool.as_str()), (SERVER, "Everything", "echo"));
    assert_eq!(
        (first.input.clone(), first.state, first.thread_id),
        (json!({ "message": "first" }), ApprovalState::Pending, thread)
    );
    let (status, denied) = decide(&server, &server.client, thread, first.id, false).await;
    assert_eq!((status, denied["state"].as_str()), (200, Some("denied")), "{denied}");
    // Decided once.
    assert_eq!(decide(&server, &server.client, thread, first.id, true).await.0, 409);

    let second = next_question(&server, thread, &[first.id]).await;
    assert_eq!(second.input, json!({ "message": "second" }));
    let (status, approved) = decide(&server, &server.client, thread, second.id, true).await;
    assert_eq!((status, approved["state"].as_str()), (200, Some("approved")), "{approved}");

    let frames = chat.await.unwrap();
    assert!(matches!(frames.last().map(|f| &f.event), Some(ChatEvent::MessageComplete { .. })), "{frames:?}");
    let asked: Vec<Uuid> = frames
        .iter()
        .filter_map(|f| match &f.event {
            ChatEvent::ApprovalRequested { approval } => Some(approval.id),
            _ => None,
        })
        .collect();
    assert_eq!(asked, [first.id, second.id]);
    assert_eq!(decisions(&frames), [ApprovalState::Denied, ApprovalState::Approved]);

    // Denied, the call did not run: the model hears so, as an error.
    let after_deny = results_sent(&model, 1);
    assert_eq!(after_deny.len(), 1, "{after_deny:?}");
    let (call, text, is_error) = &after_deny[0];
    assert_eq!(call, "call_a");
    assert!(text.contains("denied") && !text.contains("Echo:") && *is_error, "{text}");
    // Approved, it ran.
    let after_approve = results_sent(&model, 2);
    let (call, text, is_error) = after_approve.last().expect("a result");
    assert_eq!((call.as_str(), text.as_str(), *is_error), ("call_b", "Echo: second", false));
    // Neither is waiting any more, and the denial is counted.
    assert!(server.wait_idle(thread).await.approvals.is_empty());
    let metrics = server.state.metrics.render(&server.state);
    let denied_line = metrics
        .lines()
        .find(|l| l.contains("mcp_tool_call_duration") && l.contains("outcome=\"denied\"") && l.contains("_count"));
    assert!(denied_line.is_some_and(|l| l.contains("tool=\"echo\"") && l.ends_with(" 1")), "{metrics}");
}

async fn an_unanswered_question_expires_and_denies(db: Db) {
    let scripts = vec![calls_echo("call_a", "unanswered"), ScriptedModel::text(&["Understood."])];
    let Some((server, model)) = server_with_tools(&db, scripts, 1).await else { return };
    let thread = server.create_thread().await;
    let frames = chat_in_background(&server, thread, "Echo this").await.unwrap();
    assert_eq!(decisions(&frames), [ApprovalState::Expired]);
    let results = results_sent(&model, 1);
    let (_, text, is_error) = &results[0];
    assert!(text.contains("in time") && !text.contains("Echo:") && *is_error, "{text}");
    // Too late to decide now.
    let question = frames
        .iter()
        .find_map(|f| match &f.event {
            ChatEvent::ApprovalRequested { approval } => Some(approval.id),
            _ => None,
        })
        .expect("a question");
    assert_eq!(decide(&server, &server.client, thread, question, true).await.0, 409);
    assert!(server.detail(thread).await.approvals.is_empty());
}

async fn a_question_survives_the_stream_and_is_decided_after_coming_back(db: Db) {
    let scripts = vec![calls_echo("call_a", "still here"), ScriptedModel::text(&["Echoed."])];
    let Some((server, model)) = server_with_tools(&db, scripts, 300).await else { return };
    let thread = server.create_thread().await;
    // The browser goes away at the answer's first event.
    let response = server.send_text(thread, "Echo this later").await;
    assert_eq!(response.status(), 200);
    read_frames_until(response, 1).await;

    // A reload shows the question, and the stream picks the answer up again.
    let asked = next_question(&server, thread, &[]).await;
    let detail = server.detail(thread).await;
    assert!(detail.running);
    let [question] = detail.approvals.as_slice() else { panic!("one question: {:?}", detail.approvals) };
    assert_eq!(question.id, asked.id);
    assert_eq!(question.input, json!({ "message": "still here" }));
    let resumed = server.open_stream(thread, None).await;
    assert_eq!(resumed.status(), 200);
    let following = tokio::spawn(read_frames(resumed));
    assert_eq!(decide(&server, &server.client, thread, question.id, true).await.0, 200);

    let frames = following.await.unwrap();
    assert!(frames
        .iter()
        .any(|f| matches!(&f.event, ChatEvent::ApprovalRequested { approval } if approval.id == question.id)));
    assert_eq!(decisions(&frames), [ApprovalState::Approved]);
    assert!(matches!(frames.last().map(|f| &f.event), Some(ChatEvent::MessageComplete { .. })));
    assert_eq!(results_sent(&model, 1)[0].1, "Echo: still here");
    assert!(server.wait_idle(thread).await.approvals.is_empty());
}

async fn only_those_who_write_in_the_conversation_decide(db: Db) {
    let scripts = vec![calls_echo("call_a", "ours"), ScriptedModel::text(&["Fine."])];
    let Some((server, model)) = server_with_tools(&db, scripts, 300).await else { return };
    // A conversation of a project with an editor and a viewer; and someone outside it.
    let (editor, _) = server.second_user("edna@example.com").await;
    let (viewer, _) = server.second_user("vic@example.com").await;
    let (stranger, _) = server.second_user("stranger@example.com").await;
    let project: wire::Project = server.post_json("/api/projects", &json!({ "name": "Tools" })).await;
    for (email, role) in [("edna@example.com", "editor"), ("vic@example.com", "viewer")] {
        let add = json!({ "email": email, "role": role });
        let _: wire::ProjectMember = server.post_json(&format!("/api/projects/{}/members", project.id), &add).await;
    }
    let thread = server.create_thread().await;
    assert_eq!(server.patch_thread(thread, &json!({ "project_id": project.id })).await.status(), 200);
    let chat = chat_in_background(&server, thread, "Echo ours");
    let question = next_question(&server, thread, &[]).await;

    assert_eq!(decide(&server, &stranger, thread, question.id, true).await.0, 404);
    let stranger_sees = stranger.get(server.url(&format!("/api/threads/{thread}"))).send().await.unwrap();
    assert_eq!(stranger_sees.status(), 404);
    // A viewer sees the question but does not decide it.
    let seen: wire::ThreadDetail =
        crate::common::get_json(&viewer, &server.url(&format!("/api/threads/{thread}"))).await;
    assert_eq!(seen.approvals.iter().map(|a| a.id).collect::<Vec<_>>(), [question.id]);
    assert_eq!(decide(&server, &viewer, thread, question.id, true).await.0, 403);
    // The question of another conversation, or none at all, is not found.
    let other = server.create_thread().await;
    assert_eq!(decide(&server, &server.client, other, question.id, true).await.0, 404);
    assert_eq!(decide(&server, &server.client, thread, Uuid::now_v7(), true).await.0, 404);

    // Still waiting; an editor denies it, and the author can no longer decide.
    assert_eq!(server.detail(thread).await.approvals.len(), 1);
    let (status, decided) = decide(&server, &editor, thread, question.id, false).await;
    assert_eq!((status, decided["state"].as_str()), (200, Some("denied")), "{decided}");
    assert_eq!(decide(&server, &server.client, thread, question.id, true).await.0, 409);
    assert_eq!(decisions(&chat.await.unwrap()), [ApprovalState::Denied]);
    assert!(results_sent(&model, 1)[0].1.contains("denied"));
}

async fn people_choose_the_servers_of_their_conversations(db: Db) {
    let answers = (0..4).map(|_| ScriptedModel::text(&["Noted."])).collect();
    let Some((server, model)) = server_with_tools(&db, answers, 300).await else { return };

    // What people choose from: no command, no secret.
    let list: serde_json::Value = server.get_json("/api/mcp/servers").await;
    assert_eq!(
        list,
        json!({ "servers": [{
            "name": SERVER, "label": "Everything", "connected": true, "on_by_default": true,
            "approve": false, "approve_tools": ["echo"],
        }] })
    );
    assert_eq!(server.anonymous().get(server.url("/api/mcp/servers")).send().await.unwrap().status(), 401);

    // On by default: offered.
    let thread = server.create_thread().await;
    server.chat(thread, "First").await;
    assert!(tools_offered(&model, 0).contains(&ECHO.to_string()));
    // Turned off in this conversation: not offered.
    let response = server.patch_thread(thread, &json!({ "mcp_servers": [] })).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.json::<wire::Thread>().await.unwrap().mcp_servers, Some(Vec::new()));
    server.chat(thread, "Second").await;
    assert!(!tools_offered(&model, 1).iter().any(|t| t.starts_with("everything__")), "{:?}", tools_offered(&model, 1));

    // The person turns them off for their conversations: a new one is not offered them, the one that chose its
    // own servers is.
    let saved: wire::Settings = server
        .client
        .patch(server.url("/api/settings"))
        .json(&json!({ "mcp_servers": [] }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(saved.mcp_servers, Some(Vec::new()));
    let response = server.patch_thread(thread, &json!({ "mcp_servers": [SERVER] })).await;
    assert_eq!(response.status(), 200);
    server.chat(thread, "Third").await;
    assert!(tools_offered(&model, 2).contains(&ECHO.to_string()));
    let fresh = server.create_thread().await;
    server.chat(fresh, "Fourth").await;
    assert!(!tools_offered(&model, 3).iter().any(|t| t.starts_with("everything__")));
    // `null` goes back to the person's choice.
    let response = server.patch_thread(thread, &json!({ "mcp_servers": null })).await;
    assert_eq!(response.json::<wire::Thread>().await.unwrap().mcp_servers, None);

    // A server this Quire does not have is refused, and nothing changes.
    let response = server.patch_thread(thread, &json!({ "mcp_servers": ["nope"] })).await;
    assert_eq!(response.status(), 422);
    let refused = server.client.patch(server.url("/api/settings")).json(&json!({ "mcp_servers": [SERVER, "nope"] }));
    let response = refused.send().await.unwrap();
    assert_eq!(response.status(), 422);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"]["field"], "mcp_servers", "{body}");
    let settings: wire::Settings = server.get_json("/api/settings").await;
    assert_eq!(settings.mcp_servers, Some(Vec::new()));
}
