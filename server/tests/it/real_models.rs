//! What real OpenAI-compatible servers and real models send, through the whole server: several tool calls in one
//! answer (in one chunk, and spread over chunks), tool calls written as text, a model without tools, broken calls,
//! a request for a document answered in words, and reasoning text. The provider is Quire's own OpenAI provider
//! talking to a loopback server that answers as those servers do.

use std::sync::Arc;

use llm::openai::{OpenAiConfig, OpenAiProvider};
use serde_json::{json, Value};
use tempfile::TempDir;
use uuid::Uuid;

use crate::common::{created, names, send, sqlite_store, text_of, TestServer};
use crate::fake_upstream::{openai_chunk, openai_usage_and_done, FakeServer, Recorded, Reply, Step};

/// Quire in front of `fake`, with `tool_calls_in_text` as given.
async fn quire_before(fake: &FakeServer, calls_in_text: bool) -> (TestServer, TempDir) {
    let config = OpenAiConfig::with_base_url(format!("{}/v1", fake.url), "local-model");
    let provider = OpenAiProvider::new(config).expect("provider").calls_in_text(calls_in_text);
    let (store, dir) = sqlite_store().await;
    (TestServer::with(store, Arc::new(provider)).await, dir)
}

/// A streamed answer whose events go out in one HTTP chunk each.
fn answer(events: &[String]) -> Reply {
    let mut steps: Vec<Step> = events.iter().map(|e| Step::Bytes(e.clone().into_bytes())).collect();
    steps.push(Step::Bytes(openai_usage_and_done(40, 12).into_bytes()));
    Reply::sse(steps)
}

fn words(text: &str) -> String {
    openai_chunk(json!({"content": text}), None)
}

fn finish(reason: &str) -> String {
    openai_chunk(json!({}), Some(reason))
}

/// A text answer that ends the turn.
fn said(text: &str) -> Reply {
    answer(&[words(text), finish("stop")])
}

fn call(index: u32, id: &str, name: &str, arguments: &str) -> Value {
    json!({"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
}

fn calls(list: Vec<Value>) -> String {
    openai_chunk(json!({"tool_calls": list}), None)
}

fn save(kind: &str, title: &str, content: &str) -> String {
    json!({"artifact_type": kind, "title": title, "content": content}).to_string()
}

/// An answer that is one `save_artifact` call with `arguments`, ending in `finish`.
fn saving(id: &str, arguments: &str, finish_reason: &str) -> Reply {
    answer(&[calls(vec![call(0, id, "save_artifact", arguments)]), finish(finish_reason)])
}

/// The `tool` messages of a recorded request, in order.
fn tool_results(request: &Recorded) -> Vec<String> {
    request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn last_user_message(request: &Recorded) -> String {
    let messages = request.body["messages"].as_array().unwrap();
    let user = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    user["content"].as_str().unwrap_or_default().to_string()
}

async fn titled(server: &TestServer) -> Uuid {
    // Titled, so the model is not asked to name it (only the answer's calls reach the fake).
    server.create_titled_thread("Library").await
}

#[tokio::test]
async fn two_saves_in_one_chunk_for_one_request_make_one_document() {
    let fake = FakeServer::start(vec![
        answer(&[
            calls(vec![
                call(0, "c1", "save_artifact", &save("user_stories", "Library user stories", "# Stories\n- Borrow")),
                call(
                    1,
                    "c2",
                    "save_artifact",
                    &save("user_stories", "User stories: library", "# Stories\n- Borrow a book"),
                ),
            ]),
            finish("tool_calls"),
        ]),
        said("Saved."),
    ])
    .await;
    let (server, _dir) = quire_before(&fake, false).await;
    let thread = titled(&server).await;
    let frames = server.chat(thread, "Write user stories for a library app.").await;
    assert_eq!(created(&frames).len(), 1, "{:?}", names(&frames));
    let detail = server.wait_idle(thread).await;
    assert_eq!(detail.artifacts.len(), 1);
    assert_eq!(detail.artifacts[0].title, "Library user stories");
    let results = tool_results(&fake.requests()[1]);
    assert_eq!(results.len(), 2, "each call has its result");
    assert!(results[0].starts_with("Artifact saved successfully"), "{}", results[0]);
    assert!(results[1].contains("saved already") && results[1].contains(&detail.artifacts[0].id.to_string()));
}

#[tokio::test]
async fn calls_spread_over_chunks_for_different_documents_and_a_search_all_work() {
    let user_stories = save("user_stories", "Borrowing stories", "# Stories\n- As a member I borrow a book.");
    let criteria = save("acceptance_criteria", "Borrowing criteria", "# Criteria\n- A loan lasts 14 days.");
    let (stories_a, stories_b) = user_stories.split_at(20);
    let (criteria_a, criteria_b) = criteria.split_at(9);
    let fake = FakeServer::start(vec![
        answer(&[
            words("Looking at your notes."),
            // Each call's name first, then the arguments of all three interleaved, as vLLM streams them.
            calls(vec![call(0, "s1", "document_search", "")]),
            calls(vec![call(1, "s2", "save_artifact", "")]),
            calls(vec![call(2, "s3", "save_artifact", "")]),
            calls(vec![json!({"index": 0, "function": {"arguments": "{\"query\": \"loan\"}"}})]),
            calls(vec![json!({"index": 1, "function": {"arguments": stories_a}})]),
            calls(vec![json!({"index": 2, "function": {"arguments": criteria_a}})]),
            calls(vec![json!({"index": 1, "function": {"arguments": stories_b}})]),
            calls(vec![json!({"index": 2, "function": {"arguments": criteria_b}})]),
            finish("tool_calls"),
        ]),
        said("Both are saved."),
    ])
    .await;
    let (server, _dir) = quire_before(&fake, false).await;
    let thread = titled(&server).await;
    let uploaded = server.upload(thread, "loans.txt", "text/plain", b"Every loan lasts 14 days.".to_vec()).await;
    assert!(uploaded.status().is_success());
    let frames = server.chat(thread, "Write user stories and acceptance criteria for borrowing books.").await;
    let kinds: Vec<String> = created(&frames).iter().map(|a| a.artifact_type.as_str().to_string()).collect();
    assert_eq!(kinds, vec!["user_stories", "acceptance_criteria"]);
    let results = tool_results(&fake.requests()[1]);
    assert_eq!(results.len(), 3);
    assert!(results[0].contains("14 days"), "the search ran: {}", results[0]);
    assert_eq!(server.wait_idle(thread).await.artifacts.len(), 2);
    assert_eq!(text_of(&frames), "Looking at your notes.\n\nBoth are saved.");
}

#[tokio::test]
async fn calls_written_as_text_are_carried_out_and_taken_out_of_the_answer() {
    let stories = save("user_stories", "Library stories", "# Stories\n- As a member I borrow a book.");
    let tagged = format!("<tool_call>{{\"name\": \"save_artifact\", \"arguments\": {stories}}}</tool_call>");
    let (head, tail) = tagged.split_at(7);
    let criteria = save("acceptance_criteria", "Loan criteria", "# Criteria\n- A loan lasts 14 days.");
    let fenced = format!("```json\n{{\"name\": \"save_artifact\", \"arguments\": {criteria}}}\n```\n");
    let fake = FakeServer::start(vec![
        answer(&[words("Saving them.\n"), words(head), words(tail), finish("stop")]),
        said("Done."),
        // Seen writing tagged calls, the model's fenced JSON calls are read too.
        answer(&[words("Here:\n"), words(&fenced), finish("stop")]),
        said("Saved."),
    ])
    .await;
    let (server, _dir) = quire_before(&fake, false).await;
    let thread = titled(&server).await;
    let frames = server.chat(thread, "Write user stories for a library app.").await;
    assert_eq!(created(&frames).len(), 1, "{:?}", names(&frames));
    let text = text_of(&frames);
    assert!(!text.contains("tool_call") && !text.contains("artifact_type"), "{text}");
    assert_eq!(text, "Saving them.\n\nDone.");
    let saved_answer = server.wait_idle(thread).await.messages[1].content.clone();
    assert_eq!(saved_answer, text);
    // The call went back to the model as an API call with its result.
    let second = &fake.requests()[1];
    assert_eq!(tool_results(second).len(), 1);
    let frames = server.chat(thread, "Now write acceptance criteria for loans.").await;
    assert_eq!(created(&frames)[0].artifact_type.as_str(), "acceptance_criteria");
    assert_eq!(text_of(&frames), "Here:\n\nSaved.");
}

#[tokio::test]
async fn the_tool_calls_in_text_setting_reads_fenced_calls_from_the_first_answer() {
    let criteria = save("acceptance_criteria", "Loan criteria", "# Criteria\n- A loan lasts 14 days.");
    let fenced = format!("```json\n{{\"name\": \"save_artifact\", \"arguments\": {criteria}}}\n```");
    let fake = FakeServer::start(vec![answer(&[words(&fenced), finish("stop")]), said("Saved.")]).await;
    let (server, _dir) = quire_before(&fake, true).await;
    let thread = titled(&server).await;
    let frames = server.chat(thread, "Write acceptance criteria for loans.").await;
    assert_eq!(created(&frames).len(), 1);
    assert_eq!(text_of(&frames), "Saved.");
    // Without the setting, nor a tagged call seen, the same answer is only text.
    let plain = FakeServer::start(vec![answer(&[words(&fenced), finish("stop")])]).await;
    let (server, _dir) = quire_before(&plain, false).await;
    let thread = titled(&server).await;
    let frames = server.chat(thread, "Tell me about acceptance criteria for loans.").await;
    assert!(created(&frames).is_empty());
    assert_eq!(text_of(&frames), fenced);
}

/// Answers as Ollama does for a model without tool support: a request offering tools is refused.
fn refuses_tools(request: &Recorded) -> Reply {
    if request.body.get("tools").is_some() {
        return Reply::status(400, r#"{"error":"registry.ollama.ai/library/smollm2:135m does not support tools"}"#);
    }
    let block = "````document user_stories: Library stories\n# Stories\n- As a member I borrow a book.\n````\n";
    answer(&[words("Here they are.\n"), words(block), words("Anything else?"), finish("stop")])
}

#[tokio::test]
async fn a_model_without_tools_is_asked_without_them_and_its_documents_are_saved() {
    let fake = FakeServer::answering(refuses_tools).await;
    let (server, _dir) = quire_before(&fake, false).await;
    let thread = titled(&server).await;
    let frames = server.chat(thread, "Write user stories for a library app.").await;
    let made = created(&frames);
    assert_eq!(made.len(), 1, "{:?}", names(&frames));
    assert_eq!((made[0].artifact_type.as_str(), made[0].title.as_str()), ("user_stories", "Library stories"));
    assert_eq!(made[0].content, "# Stories\n- As a member I borrow a book.");
    assert_eq!(text_of(&frames), "Here they are.\nAnything else?");
    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "refused with tools, asked again without");
    assert!(requests[1].body.get("tools").is_none());
    let system = requests[1].body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("````document user_stories:"), "the prompt states the form");
    // Remembered for the model: the next turn goes without tools at once.
    let other = titled(&server).await;
    let frames = send(&server, other, "Generate user stories", true).await;
    assert_eq!(fake.request_count(), 3);
    assert_eq!(created(&frames).len(), 1, "silent generation works the same way");
    assert!(text_of(&frames).is_empty(), "nothing is shown of a silent answer");
}

#[tokio::test]
async fn broken_calls_go_back_to_the_model_once_then_end_the_turn_with_nothing_saved() {
    let cut = "{\"artifact_type\": \"user_stories\", \"title\": \"Lib";
    let fake = FakeServer::start(vec![
        // Not JSON (cut off by the server without saying so).
        saving("b1", cut, "tool_calls"),
        // Told what was wrong, the model breaks it again: the turn ends.
        answer(&[
            words("Trying again."),
            calls(vec![call(0, "b2", "save_artifact", "{\"title\":")]),
            finish("tool_calls"),
        ]),
    ])
    .await;
    let (server, _dir) = quire_before(&fake, false).await;
    let thread = titled(&server).await;
    let frames = server.chat(thread, "Write user stories for a library app.").await;
    assert!(created(&frames).is_empty());
    let detail = server.wait_idle(thread).await;
    assert!(detail.artifacts.is_empty(), "nothing half-saved");
    let answer_text = &detail.messages[1].content;
    assert!(answer_text.contains("nothing of it was saved"), "{answer_text}");
    let told = tool_results(&fake.requests()[1]);
    assert_eq!(told.len(), 1);
    assert!(told[0].contains("not carried out") && told[0].contains("cut off"), "{}", told[0]);
    assert_eq!(fake.request_count(), 2);
}

#[tokio::test]
async fn a_call_missing_a_field_or_cut_off_by_the_length_limit_is_told_once_and_the_retry_saves() {
    let whole = save("user_stories", "Library stories", "# Stories\n- Borrow.");
    let fake = FakeServer::start(vec![
        // A required field missing.
        saving("m1", "{\"title\": \"Library stories\"}", "tool_calls"),
        saving("m2", &whole, "tool_calls"),
        said("Saved."),
        // Cut off by the length limit in the middle of the arguments.
        saving("l1", "{\"artifact_type\": \"acceptance_criteria\", \"ti", "length"),
        saving("l2", &save("acceptance_criteria", "Loans", "- 14 days."), "tool_calls"),
        said("Saved."),
    ])
    .await;
    let (server, _dir) = quire_before(&fake, false).await;
    let thread = titled(&server).await;
    let frames = server.chat(thread, "Write user stories for a library app.").await;
    assert_eq!(created(&frames).len(), 1);
    let told = tool_results(&fake.requests()[1]);
    assert!(told[0].contains("Invalid save_artifact input: missing field"), "{}", told[0]);
    let frames = server.chat(thread, "Write acceptance criteria for loans.").await;
    assert_eq!(created(&frames).len(), 1);
    let told = tool_results(&fake.requests()[4]);
    assert!(told.last().unwrap().contains("length limit"), "{told:?}");
    assert_eq!(server.wait_idle(thread).await.artifacts.len(), 2);
}

#[tokio::test]
async fn a_request_for_a_document_answered_in_words_is_asked_again_naming_the_tool() {
    let fake = FakeServer::start(vec![
        said("1. As a member, I want to borrow a book."),
        saving("f1", &save("user_stories", "Library stories", "- As a member, I want to borrow a book."), "tool_calls"),
        said("Saved."),
        // A follow-up that asks for no document is not insisted on.
        said("You are welcome."),
        // Silent generation names the tool on its first call.
        saving("g1", &save("acceptance_criteria", "Loans", "- 14 days."), "tool_calls"),
        said(""),
    ])
    .await;
    let (server, _dir) = quire_before(&fake, false).await;
    let thread = titled(&server).await;
    let frames = server.chat(thread, "Generate user stories.").await;
    assert_eq!(created(&frames).len(), 1, "{:?}", names(&frames));
    let requests = fake.requests();
    assert!(requests[0].body.get("tool_choice").is_none());
    assert_eq!(requests[1].body["tool_choice"], json!({"type": "function", "function": {"name": "save_artifact"}}));
    assert!(last_user_message(&requests[1]).contains("save_artifact"));
    assert!(requests[2].body.get("tool_choice").is_none(), "named for one call only");
    let detail = server.wait_idle(thread).await;
    let answer_id = detail.messages[1].id;
    let trace = server.trace_of(answer_id).await;
    let answers = trace
        .steps
        .iter()
        .filter(|s| matches!(s, wire::TraceStep::ModelCall(c) if c.purpose == wire::CallPurpose::Answer))
        .count();
    assert_eq!(answers, 3, "both calls for the document show, and the one after it: {:?}", trace.steps);
    server.chat(thread, "Thanks!").await;
    assert_eq!(fake.request_count(), 4);
    let frames = send(&server, thread, "Generate acceptance criteria", true).await;
    assert_eq!(created(&frames).len(), 1);
    assert_eq!(fake.requests()[4].body["tool_choice"]["function"]["name"], "save_artifact");
}

#[tokio::test]
async fn reasoning_streams_apart_and_is_never_the_answer() {
    let fake = FakeServer::start(vec![answer(&[
        openai_chunk(json!({"reasoning_content": "The person wants a greeting. "}), None),
        openai_chunk(json!({"reasoning": "Keep it short."}), None),
        words("Hello!"),
        finish("stop"),
    ])])
    .await;
    let (server, _dir) = quire_before(&fake, false).await;
    let thread = titled(&server).await;
    let frames = server.chat(thread, "Say hello.").await;
    let reasoning: String = frames
        .iter()
        .filter_map(|f| match &f.event {
            wire::ChatEvent::ReasoningDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning, "The person wants a greeting. Keep it short.");
    assert_eq!(text_of(&frames), "Hello!");
    let detail = server.wait_idle(thread).await;
    assert_eq!(detail.messages[1].content, "Hello!");
    assert!(detail.artifacts.is_empty());
}

#[test]
fn the_providers_file_sets_tool_calls_in_text_for_openai_compatible_providers() {
    let file = "default_model = \"local/qwen\"\n[[providers]]\nname = \"local\"\nkind = \"openai\"\n\
                base_url = \"http://127.0.0.1:9/v1\"\ntool_calls_in_text = true\n";
    let config = llm::models_file::parse(file, &|_| None).unwrap();
    assert!(config.providers[0].tool_calls_in_text);
    let registry = llm::Registry::from_file(&config, std::time::Duration::ZERO, None);
    let provider = registry.default_provider();
    assert!(provider.habits().is_some_and(llm::Habits::calls_in_text), "set before any answer");
    let elsewhere = "[[providers]]\nname = \"a\"\nkind = \"anthropic\"\nmodels = [\"m\"]\ntool_calls_in_text = true\n";
    let error = llm::models_file::parse(elsewhere, &|_| None).unwrap_err();
    assert!(error.contains("tool_calls_in_text"), "{error}");
}

#[tokio::test]
async fn when_asking_again_fails_the_answer_stands() {
    let fake = FakeServer::start(vec![
        said("1. As a member, I want to borrow a book."),
        // The server breaks down on the second call (llama-cpp-python has crashed on one).
        Reply::status(500, r#"{"error":{"message":"internal error"}}"#),
    ])
    .await;
    let (server, _dir) = quire_before(&fake, false).await;
    let thread = titled(&server).await;
    let frames = server.chat(thread, "Generate user stories.").await;
    assert_eq!(frames.last().unwrap().event.name(), "message_complete", "{:?}", names(&frames));
    let detail = server.wait_idle(thread).await;
    assert_eq!(detail.messages[1].status, wire::MessageStatus::Complete);
    assert_eq!(detail.messages[1].content, "1. As a member, I want to borrow a book.");
    let answer_id = detail.messages[1].id;
    let trace = server.trace_of(answer_id).await;
    let failed = trace.steps.iter().filter(|s| matches!(s, wire::TraceStep::ModelCall(c) if c.error.is_some())).count();
    assert_eq!(failed, 1, "the failed second call is in the trace");
}
