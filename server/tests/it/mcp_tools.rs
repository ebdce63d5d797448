//! MCP servers' tools offered to the model: the reference server of the protocol's registry
//! (`@modelcontextprotocol/server-everything`, installed with the browser tests' npm packages) over stdio and over
//! streamable HTTP, and a server that misbehaves on purpose (`tests/fixtures/mcp/faulty.mjs`): it crashes in the
//! middle of a call, hangs, floods, answers with what is not JSON, disappears, or changes its tools.

use std::{path::PathBuf, sync::Arc, time::Duration};

use llm::Part;
use quire::mcp_tools::{Approval, ServerConfig, Transport};
use serde_json::json;

use crate::common::{sqlite_store, ScriptedModel, Step, TestServer};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// `node`, which `scripts/test` installs with the npm packages.
fn node() -> String {
    let found = std::process::Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success());
    assert!(found, "node is needed for the MCP tests (scripts/test installs it)");
    "node".to_string()
}

fn everything() -> String {
    let path = root().join("end2end/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(path.is_file(), "{} is missing: run `npm ci` in end2end (scripts/test does)", path.display());
    path.display().to_string()
}

fn faulty() -> String {
    root().join("server/tests/fixtures/mcp/faulty.mjs").display().to_string()
}

fn server(name: &str, transport: Transport) -> ServerConfig {
    ServerConfig {
        name: name.into(),
        label: name.into(),
        transport,
        approval: Approval::Never,
        on_by_default: true,
        timeout: Duration::from_secs(10),
        max_result_chars: 20_000,
    }
}

fn stdio(name: &str, args: Vec<String>, env: Vec<(String, String)>) -> ServerConfig {
    server(name, Transport::Stdio { program: node(), args, env, memory_mb: 8192 })
}

/// Quire with `servers`, answering through `model`.
async fn quire_with(servers: Vec<ServerConfig>, model: Arc<ScriptedModel>) -> (TestServer, tempfile::TempDir) {
    let (store, dir) = sqlite_store().await;
    let server = TestServer::with_configured(store, model, |c| c.mcp_servers = servers).await;
    (server, dir)
}

/// Waits until the server `name` is connected and offers `tool` (its list was read).
async fn offered(server: &TestServer, tool: &str) {
    for _ in 0..400 {
        if server.state.chat.mcp().offered(None).iter().any(|t| t.spec.name == tool) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{tool} was never offered: {:?}", server.state.chat.mcp().servers());
}

/// The model calls `tool` with `arguments`, then answers in words.
fn calls(tool: &str, arguments: serde_json::Value) -> Vec<Vec<Step>> {
    vec![ScriptedModel::tool_use(tool, arguments), ScriptedModel::text(&["Done."])]
}

/// The result the model was given of its call, in its `n`-th request.
fn result_in(model: &ScriptedModel, n: usize) -> (String, bool) {
    let requests = model.requests.lock().unwrap();
    let last = requests[n].messages.last().unwrap();
    last.parts
        .iter()
        .find_map(|p| match p {
            Part::ToolResult { content, is_error, .. } => Some((content.clone(), *is_error)),
            _ => None,
        })
        .expect("a tool result")
}

async fn chat(server: &TestServer) -> uuid::Uuid {
    let thread = server.create_titled_thread("Tools").await;
    let frames = server.chat(thread, "Use the tool, please.").await;
    assert_eq!(frames.last().unwrap().event.name(), "message_complete", "the turn ends well whatever the tool did");
    thread
}

#[tokio::test]
async fn server_everything_over_stdio_answers_the_models_call_and_shows_in_trace_and_metrics() {
    let model = ScriptedModel::new(calls("everything__echo", json!({"message": "hello from Quire"})));
    let (quire, _dir) =
        quire_with(vec![stdio("everything", vec![everything(), "stdio".into()], vec![])], model.clone()).await;
    offered(&quire, "everything__echo").await;
    let thread = chat(&quire).await;
    let requests = model.requests.lock().unwrap().clone();
    let spec = requests[0].tools.iter().find(|t| t.name == "everything__echo").expect("offered to the model");
    assert!(spec.description.starts_with("[everything] "), "{}", spec.description);
    assert!(spec.input_schema["properties"]["message"].is_object());
    let (text, is_error) = result_in(&model, 1);
    assert!(!is_error && text.contains("hello from Quire"), "{text}");
    // In the answer's steps, and in the metrics per server and tool.
    let detail = quire.wait_idle(thread).await;
    let answer = detail.messages[1].id;
    let trace = quire.trace_of(answer).await;
    let step = trace
        .steps
        .iter()
        .find_map(|s| match s {
            wire::TraceStep::ToolCall(step) if step.name == "everything__echo" => Some(step.clone()),
            _ => None,
        })
        .expect("the call is a step");
    assert!(step.result.as_deref().is_some_and(|r| r.contains("hello from Quire")), "{step:?}");
    let metrics = quire.state.metrics.render(&quire.state);
    assert!(
        metrics
            .contains(r#"quire_mcp_tool_call_duration_seconds_count{server="everything",tool="echo",outcome="ok"} 1"#),
        "{metrics}"
    );
}

#[tokio::test]
async fn server_everything_over_streamable_http_answers_the_models_call() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = tokio::process::Command::new(node())
        .args([everything(), "streamableHttp".into()])
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("server-everything");
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let url = format!("http://127.0.0.1:{port}/mcp");
    let model = ScriptedModel::new(calls("remote__get-sum", json!({"a": 19, "b": 23})));
    let (quire, _dir) =
        quire_with(vec![server("remote", Transport::Http { url, headers: vec![] })], model.clone()).await;
    offered(&quire, "remote__get-sum").await;
    chat(&quire).await;
    let (text, is_error) = result_in(&model, 1);
    assert!(!is_error && text.contains("42"), "{text}");
    child.kill().await.ok();
}

#[tokio::test]
async fn a_local_server_gets_only_the_variables_configured_for_it() {
    let env = vec![("MODE".to_string(), "read-only".to_string())];
    let model = ScriptedModel::new(calls("everything__get-env", json!({})));
    let (quire, _dir) =
        quire_with(vec![stdio("everything", vec![everything(), "stdio".into()], env)], model.clone()).await;
    offered(&quire, "everything__get-env").await;
    chat(&quire).await;
    let (text, _) = result_in(&model, 1);
    assert!(text.contains("read-only"), "its own variable: {text}");
    assert!(text.contains("PATH"), "PATH, to find its interpreter: {text}");
    // The test process runs with cargo's variables (and whatever else the machine sets): none reach the server.
    for leaked in ["CARGO", "RUST", "QUIRE", "HOME"] {
        assert!(!text.contains(&format!("\"{leaked}")), "{leaked}: {text}");
    }
}

/// One misbehaving server, called once by the model; the result the model got.
async fn faulty_call(
    mode: &str,
    configure: impl FnOnce(&mut ServerConfig),
) -> (String, bool, TestServer, Arc<ScriptedModel>) {
    let marker = tempfile::NamedTempFile::new().unwrap().into_temp_path().keep().unwrap();
    std::fs::remove_file(&marker).ok();
    let mut config = stdio("faulty", vec![faulty(), mode.into(), marker.display().to_string()], vec![]);
    configure(&mut config);
    let model = ScriptedModel::new(calls("faulty__work", json!({})));
    let (quire, dir) = quire_with(vec![config], model.clone()).await;
    std::mem::forget(dir);
    offered(&quire, "faulty__work").await;
    chat(&quire).await;
    let (text, is_error) = result_in(&model, 1);
    (text, is_error, quire, model)
}

#[tokio::test]
async fn a_server_that_crashes_mid_call_is_an_error_for_the_model_and_is_started_again() {
    let (text, is_error, quire, model) = faulty_call("crash", |_| {}).await;
    assert!(is_error && text.contains("failed"), "{text}");
    // Started again after its back-off, it answers the next call.
    offered(&quire, "faulty__work").await;
    for _ in 0..100 {
        if quire.state.chat.mcp().servers().iter().all(|(_, connected)| *connected) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    model.push(ScriptedModel::tool_use("faulty__work", json!({})));
    model.push(ScriptedModel::text(&["Done again."]));
    chat(&quire).await;
    let (text, is_error) = result_in(&model, 3);
    assert!(!is_error && text.contains("done after a restart"), "{text}");
}

#[tokio::test]
async fn a_server_that_hangs_is_given_up_on_at_its_timeout() {
    let (text, is_error, quire, _) = faulty_call("hang", |c| c.timeout = Duration::from_secs(1)).await;
    assert!(is_error && text.contains("did not answer within 1 seconds"), "{text}");
    let metrics = quire.state.metrics.render(&quire.state);
    assert!(metrics.contains(r#"server="faulty",tool="work",outcome="timeout""#), "{metrics}");
}

#[tokio::test]
async fn a_flood_of_output_is_cut_with_a_note_to_the_model() {
    let (text, is_error, _, _) = faulty_call("flood", |c| c.max_result_chars = 1000).await;
    assert!(!is_error);
    assert!(
        text.len() < 1200 && text.contains("2000000 characters long"),
        "{}",
        &text[text.len().saturating_sub(200)..]
    );
}

#[tokio::test]
async fn an_answer_that_is_not_json_is_an_error_for_the_model() {
    let (text, is_error, _, _) = faulty_call("invalid", |c| c.timeout = Duration::from_secs(2)).await;
    assert!(is_error, "{text}");
}

#[tokio::test]
async fn a_server_that_disappears_is_an_error_for_the_model() {
    let (text, is_error, _, _) = faulty_call("vanish", |c| c.timeout = Duration::from_secs(5)).await;
    assert!(is_error, "{text}");
}

#[tokio::test]
async fn tools_are_listed_again_when_the_server_says_they_changed() {
    let (_, is_error, quire, model) = faulty_call("grow", |_| {}).await;
    assert!(!is_error);
    offered(&quire, "faulty__more").await;
    model.push(ScriptedModel::text(&["Noted."]));
    chat(&quire).await;
    let requests = model.requests.lock().unwrap();
    assert!(requests.last().unwrap().tools.iter().any(|t| t.name == "faulty__more"));
}

#[tokio::test]
async fn a_turn_without_mcp_tools_never_waits_for_a_server() {
    // A server that never finishes starting: the turn is offered nothing of it and answers at once.
    let stuck = stdio("stuck", vec!["-e".into(), "setInterval(() => {}, 1000)".into()], vec![]);
    let model = ScriptedModel::new(vec![ScriptedModel::text(&["Hello."])]);
    let (quire, _dir) = quire_with(vec![stuck], model.clone()).await;
    chat(&quire).await;
    assert!(model.requests.lock().unwrap()[0].tools.iter().all(|t| !t.name.starts_with("stuck__")));
}
