//! Exactly one document per request, whatever the model does: structural filtering, the per-turn guard and
//! silent generation, through the HTTP API; then the same against a greedy model on the OpenAI wire format,
//! with failing turns and deleted documents, ending in a property over random conversations on both backends.

use std::sync::Arc;

use crate::common::backends::{check_property, properties, Backend};
use crate::common::{created, send, sqlite_store, text_of, tool_call, Frame, GreedyModel, TestServer};
use crate::fake_upstream::greedy::{GreedyUpstream, AFTER_TOOLS, BEFORE_TOOLS, KINDS};
use proptest::prelude::*;
use serde_json::json;
use uuid::Uuid;
use wire::{ArtifactType, ChatEvent, Role};

async fn greedy_server() -> (TestServer, Arc<GreedyModel>, tempfile::TempDir) {
    let (store, dir) = sqlite_store().await;
    let model = Arc::new(GreedyModel::default());
    (TestServer::with(store, model.clone()).await, model, dir)
}

#[test]
fn the_fake_model_really_is_greedy() {
    use llm::{ChatRequest, Message};
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

    let frames = send(&server, thread, "Generate acceptance criteria", true).await;
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
    let frames = send(&server, thread, "Tell me a joke", true).await;
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
    use llm::{StopReason, StreamEvent};
    let (store, _dir) = sqlite_store().await;
    let call = |id: &str, kind: &str, title: &str| {
        let arguments = serde_json::json!({"artifact_type": kind, "title": title, "content": "# Doc"});
        Step::Emit(tool_call(id, "save_artifact", arguments))
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
    let record: serde_json::Value = server.get_json(&format!("/api/messages/{}/context", answer.id)).await;
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

    let user_message = server.get(&format!("/api/messages/{}/context", m[0].id)).await;
    assert_eq!(user_message.status(), 404);
}

// ---------------------------------------------------------------------------------------------------------------
// The greedy model on the OpenAI wire format
// ---------------------------------------------------------------------------------------------------------------

/// How a person asks for each kind of [`KINDS`] in the chat.
const ASK: [&str; 5] = [
    "Generate a BRD",
    "Generate a requirements document",
    "Generate user stories",
    "Write the acceptance criteria",
    "Generate a meeting summary",
];
/// Something that asks for no document.
const TALK: &str = "What should we look at next?";

/// What the Generate menu sends for a kind of [`KINDS`].
fn menu_request(kind: usize) -> String {
    let label = ArtifactType::parse(KINDS[kind].artifact_type).expect("a known type").label();
    format!("Generate {label} from this conversation")
}

/// A server over `store` whose model is the greedy one, speaking the OpenAI wire format.
async fn greedy_openai(store: store::DynStore) -> (TestServer, GreedyUpstream) {
    let upstream = GreedyUpstream::start().await;
    (TestServer::with(store, upstream.provider()).await, upstream)
}

/// A conversation with a title of its own, so the model is never asked to name it.
/// The documents (and versions) a turn made.
fn made(frames: &[Frame]) -> usize {
    created(frames).len()
}

async fn delete_artifact(server: &TestServer, id: Uuid) {
    let response = server.client.delete(server.url(&format!("/api/artifacts/{id}"))).send().await.unwrap();
    assert_eq!(response.status(), 204);
}

#[tokio::test]
async fn a_request_that_comes_back_is_fulfilled_once_and_then_left_alone() {
    let (store, _dir) = sqlite_store().await;
    let (server, upstream) = greedy_openai(store).await;
    let thread = server.create_titled_thread("Planning").await;
    server.chat(thread, "We met with the warehouse team about stock counts.").await;

    // The request fails: it stays open, and the next turn makes its document.
    upstream.fail_next(1);
    let failed = send(&server, thread, "Generate a meeting summary", false).await;
    assert!(matches!(failed.last().unwrap().event, ChatEvent::Error { .. }), "{failed:?}");
    assert_eq!(made(&send(&server, thread, TALK, false).await), 1, "the request that came back is acted on");
    // Once: no later turn acts on it again.
    for _ in 0..3 {
        assert_eq!(made(&send(&server, thread, TALK, false).await), 0);
    }
    let detail = server.detail(thread).await;
    assert_eq!(detail.artifacts.len(), 1);
    assert_eq!(detail.artifacts[0].version, 1);

    // Deleting the document brings its requests back: made once more, then left alone again.
    delete_artifact(&server, detail.artifacts[0].id).await;
    assert_eq!(made(&send(&server, thread, TALK, false).await), 1);
    assert_eq!(made(&send(&server, thread, TALK, false).await), 0);
    let detail = server.detail(thread).await;
    assert_eq!((detail.artifacts.len(), detail.artifacts[0].version), (1, 1));
    // The model's last view held no request for it.
    let last = upstream.seen().pop().unwrap().join("|");
    assert!(!last.contains("meeting summary"), "{last}");
}

#[tokio::test]
async fn a_silent_request_fulfils_an_earlier_one_for_the_same_kind() {
    let (store, _dir) = sqlite_store().await;
    let (server, upstream) = greedy_openai(store).await;
    let thread = server.create_titled_thread("Planning").await;
    upstream.fail_next(1);
    send(&server, thread, "Generate user stories", false).await;
    assert_eq!(made(&send(&server, thread, &menu_request(2), true).await), 1);
    assert_eq!(made(&send(&server, thread, TALK, false).await), 0, "the typed request was answered by it");
    let detail = server.detail(thread).await;
    assert_eq!(detail.artifacts.len(), 1);
    assert_eq!(detail.artifacts[0].artifact_type, ArtifactType::UserStories);
}

#[tokio::test]
async fn rounds_of_one_answer_are_separate_paragraphs() {
    let (store, _dir) = sqlite_store().await;
    let (server, _upstream) = greedy_openai(store).await;
    let thread = server.create_titled_thread("Planning").await;
    let frames = send(&server, thread, "Generate a BRD", false).await;
    let expected = format!("{BEFORE_TOOLS}\n\n{AFTER_TOOLS}");
    assert_eq!(text_of(&frames), expected, "as streamed");
    let answer = server.detail(thread).await.messages.pop().unwrap();
    assert_eq!(answer.content, expected, "as stored");
}

#[tokio::test]
async fn a_silent_turn_makes_one_document_at_most() {
    use crate::common::{ScriptedModel, Step};
    use llm::{Part, StopReason, StreamEvent};
    let (store, _dir) = sqlite_store().await;
    let call = |id: &str, title: &str| {
        let arguments = json!({"artifact_type": "user_stories", "title": title, "content": "# Stories"});
        Step::Emit(tool_call(id, "save_artifact", arguments))
    };
    let first_round =
        vec![call("a", "Stories"), call("b", "More stories"), Step::Emit(StreamEvent::Stop(StopReason::ToolUse))];
    let model = ScriptedModel::new(vec![first_round, ScriptedModel::text(&["Saved."])]);
    let server = TestServer::with(store, model.clone()).await;
    let thread = server.create_thread().await;
    let frames = send(&server, thread, &menu_request(2), true).await;
    assert_eq!(made(&frames), 1);
    assert!(matches!(frames.last().unwrap().event, ChatEvent::MessageComplete { .. }));
    let detail = server.detail(thread).await;
    assert_eq!(detail.artifacts.len(), 1);
    assert_eq!(detail.artifacts[0].title, "Stories");
    // The second call was answered with an error, and the model was told nothing more was saved.
    let requests = model.requests.lock().unwrap();
    let results: Vec<(String, bool)> = requests[1]
        .messages
        .last()
        .unwrap()
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::ToolResult { content, is_error, .. } => Some((content.clone(), *is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 2);
    assert!(!results[0].1);
    assert!(results[1].1 && results[1].0.contains("Nothing else was saved"), "{results:?}");
}

/// One thing a person does in a conversation with the greedy model.
#[derive(Debug, Clone)]
enum Act {
    /// Types a request for a document of `KINDS[kind]`; the provider fails the turn when `fails`.
    Ask { kind: usize, fails: bool },
    /// Picks that kind from the Generate menu (silent generation).
    Generate { kind: usize, fails: bool },
    /// Says something that asks for no document.
    Talk { fails: bool },
    /// Deletes the n-th of the documents left, if there are any.
    Delete(usize),
}

/// Three kinds, so requests for the same one meet often.
const PROPERTY_KINDS: usize = 3;

fn act() -> impl Strategy<Value = Act> {
    let kind = 0..PROPERTY_KINDS;
    prop_oneof![
        3 => (kind.clone(), prop::bool::weighted(0.3)).prop_map(|(kind, fails)| Act::Ask { kind, fails }),
        2 => (kind, prop::bool::weighted(0.2)).prop_map(|(kind, fails)| Act::Generate { kind, fails }),
        2 => prop::bool::weighted(0.3).prop_map(|fails| Act::Talk { fails }),
        2 => (0usize..4).prop_map(Act::Delete),
    ]
}

/// What Quire must do, worked out without it: a request needs a document while none that answers it exists,
/// and the first turn the model answers makes one for each kind asked for (requests for one kind waiting
/// together share it: a version of the document of that kind, if there is one).
#[derive(Debug, Default)]
struct Expected {
    /// Each stored request: the kind it asks for, if any, and the documents that answer it.
    requests: Vec<(Option<usize>, Vec<usize>)>,
    /// Each document ever made: its kind, its versions and whether it still exists.
    documents: Vec<(usize, i64, bool)>,
}

impl Expected {
    fn open(&self, request: usize) -> bool {
        !self.requests[request].1.iter().any(|&d| self.documents[d].2)
    }

    fn open_kinds(&self) -> Vec<usize> {
        let mut kinds: Vec<usize> =
            (0..self.requests.len()).filter(|&r| self.open(r)).filter_map(|r| self.requests[r].0).collect();
        kinds.sort_unstable();
        kinds.dedup();
        kinds
    }

    /// A turn the model answered: a document (or version) per kind; each answers the turn's own request and the
    /// open requests of its kind. How many it makes.
    fn answer(&mut self, kinds: &[usize], own: Option<usize>) -> usize {
        let open: Vec<usize> = (0..self.requests.len()).filter(|&r| self.open(r)).collect();
        for &kind in kinds {
            let doc = match self.documents.iter().position(|d| d.2 && d.0 == kind) {
                Some(doc) => {
                    self.documents[doc].1 += 1;
                    doc
                }
                None => {
                    self.documents.push((kind, 1, true));
                    self.documents.len() - 1
                }
            };
            for &r in &open {
                if self.requests[r].0 == Some(kind) {
                    self.requests[r].1.push(doc);
                }
            }
            if let Some(own) = own {
                self.requests[own].1.push(doc);
            }
        }
        kinds.len()
    }

    /// A message stored by a turn, answered by the model unless it failed; how many documents it makes.
    fn message(&mut self, kind: Option<usize>, fails: bool) -> usize {
        self.requests.push((kind, Vec::new()));
        if fails {
            return 0;
        }
        let kinds = self.open_kinds();
        self.answer(&kinds, Some(self.requests.len() - 1))
    }

    /// The kinds and versions of the documents that exist.
    fn live(&self) -> Vec<(usize, i64)> {
        let mut live: Vec<(usize, i64)> = self.documents.iter().filter(|d| d.2).map(|d| (d.0, d.1)).collect();
        live.sort_unstable();
        live
    }
}

/// (1) Whatever the person does (typed and silent requests, failing turns, deleted documents, small talk) and
/// however greedy the model is, every request that needs a document gets one once: the documents and versions
/// made, turn by turn, are what the requests needed, and none is made again later.
fn each_request_is_fulfilled_once(backend: Backend, test: &str) {
    let shared: Arc<tokio::sync::OnceCell<(TestServer, GreedyUpstream)>> = Arc::default();
    let strategy = prop::collection::vec(act(), 1..10);
    check_property(backend, test, 24, strategy, move |db, acts| {
        let shared = shared.clone();
        async move {
            let (server, upstream) = shared.get_or_init(|| greedy_openai(db.store.clone())).await;
            let thread = server.create_titled_thread("Planning").await;
            let mut expected = Expected::default();
            for (step, act) in acts.iter().enumerate() {
                let (made_now, should) = match *act {
                    Act::Ask { kind, fails } => {
                        upstream.fail_next(usize::from(fails));
                        (made(&send(server, thread, ASK[kind], false).await), expected.message(Some(kind), fails))
                    }
                    Act::Talk { fails } => {
                        upstream.fail_next(usize::from(fails));
                        (made(&send(server, thread, TALK, false).await), expected.message(None, fails))
                    }
                    Act::Generate { kind, fails } => {
                        upstream.fail_next(usize::from(fails));
                        let frames = send(server, thread, &menu_request(kind), true).await;
                        (made(&frames), if fails { 0 } else { expected.answer(&[kind], None) })
                    }
                    Act::Delete(n) => {
                        let live: Vec<usize> =
                            (0..expected.documents.len()).filter(|&d| expected.documents[d].2).collect();
                        if live.is_empty() {
                            continue;
                        }
                        let doc = live[n % live.len()];
                        expected.documents[doc].2 = false;
                        let kind = KINDS[expected.documents[doc].0].artifact_type;
                        let artifacts = server.detail(thread).await.artifacts;
                        let id = artifacts.iter().find(|a| a.artifact_type.as_str() == kind).expect("the document").id;
                        delete_artifact(server, id).await;
                        (0, 0)
                    }
                };
                assert_eq!(made_now, should, "documents made at step {step} ({act:?}) of {acts:?}");
            }
            let mut live: Vec<(usize, i64)> = server
                .detail(thread)
                .await
                .artifacts
                .iter()
                .map(|a| (KINDS.iter().position(|k| k.artifact_type == a.artifact_type.as_str()).unwrap(), a.version))
                .collect();
            live.sort_unstable();
            assert_eq!(live, expected.live(), "documents and versions after {acts:?}");
        }
    });
}

properties!(each_request_is_fulfilled_once);
