//! A greedy model on the OpenAI Chat Completions wire format. It calls `save_artifact` for every document
//! request it can see in the person's messages, the newest first, as careless models do: only Quire's filtering
//! of fulfilled requests, its per-turn guard and silent generation's one-document limit keep it from writing a
//! document twice. Told to, it fails its next requests as an overloaded provider does.

use std::sync::{
    atomic::{AtomicUsize, Ordering},
    Arc,
};

use llm::{
    openai::{OpenAiConfig, OpenAiProvider},
    Provider,
};
use serde_json::{json, Value};

use super::{openai_chunk, openai_usage_and_done, FakeServer, Recorded, Reply};

/// What the model says before its tool calls, and after their results.
pub const BEFORE_TOOLS: &str = "I'll draft it now.";
pub const AFTER_TOOLS: &str = "I've saved it.";
/// What it says when it sees no request.
pub const NOTHING_TO_DO: &str = "Noted.";

/// A document kind as the model reads it: the words that name it in a request, its `artifact_type` and the
/// title it gives every document of that kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    pub words: &'static [&'static str],
    pub artifact_type: &'static str,
    pub title: &'static str,
}

/// The kinds it knows; the first whose words appear wins.
pub const KINDS: [Kind; 5] = [
    Kind { words: &["business requirements", "brd"], artifact_type: "business_requirements", title: "BRD" },
    Kind { words: &["requirements document"], artifact_type: "requirements_doc", title: "Requirements" },
    Kind { words: &["user stories"], artifact_type: "user_stories", title: "User Stories" },
    Kind { words: &["acceptance criteria"], artifact_type: "acceptance_criteria", title: "Acceptance Criteria" },
    Kind { words: &["meeting summary"], artifact_type: "meeting_summary", title: "Meeting Summary" },
];

/// The kind a paragraph asks for, if it asks for one.
pub fn requested(paragraph: &str) -> Option<Kind> {
    let lower = paragraph.to_lowercase();
    if !lower.contains("generate") && !lower.contains("write") {
        return None;
    }
    KINDS.into_iter().find(|kind| kind.words.iter().any(|w| lower.contains(w)))
}

/// The fake provider and its switch for failures.
pub struct GreedyUpstream {
    pub server: FakeServer,
    failures: Arc<AtomicUsize>,
}

impl GreedyUpstream {
    pub async fn start() -> Self {
        let failures = Arc::new(AtomicUsize::new(0));
        let left = failures.clone();
        let server = FakeServer::answering(move |request| {
            let failing = left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok();
            if failing {
                Reply::status(503, r#"{"error":{"message":"The engine is overloaded.","type":"server_error"}}"#)
            } else {
                answer(request)
            }
        })
        .await;
        Self { server, failures }
    }

    /// The next `n` requests fail with HTTP 503.
    pub fn fail_next(&self, n: usize) {
        self.failures.store(n, Ordering::SeqCst);
    }

    /// Quire's OpenAI adapter pointed at this model, with no retries.
    pub fn provider(&self) -> Arc<dyn Provider> {
        let config = OpenAiConfig::with_base_url(format!("{}/v1", self.server.url), "greedy-gpt");
        Arc::new(OpenAiProvider::new(config).expect("provider"))
    }

    /// The texts of the person's messages of each request received (what the model saw), in order.
    pub fn seen(&self) -> Vec<Vec<String>> {
        self.server.requests().iter().map(|r| user_texts(&r.body)).collect()
    }
}

fn user_texts(body: &Value) -> Vec<String> {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    messages.iter().filter(|m| m["role"] == "user").filter_map(|m| m["content"].as_str().map(str::to_string)).collect()
}

/// The model's answer to one request.
fn answer(request: &Recorded) -> Reply {
    let body = &request.body;
    let answering_tools = body["messages"].as_array().and_then(|m| m.last()).is_some_and(|m| m["role"] == "tool");
    if body.get("tools").is_none() || answering_tools {
        return stream(&[AFTER_TOOLS], &[]);
    }
    let texts = user_texts(body);
    let mut paragraphs: Vec<&str> = texts.iter().flat_map(|t| t.split("\n\n")).collect();
    paragraphs.reverse();
    let calls: Vec<Kind> = paragraphs.into_iter().filter_map(requested).collect();
    if calls.is_empty() {
        stream(&[NOTHING_TO_DO], &[])
    } else {
        stream(&[BEFORE_TOOLS], &calls)
    }
}

/// A streamed completion: text, then one `save_artifact` call per kind, then usage.
fn stream(text: &[&str], calls: &[Kind]) -> Reply {
    let mut out = openai_chunk(json!({"role": "assistant", "content": ""}), None);
    for piece in text {
        out += &openai_chunk(json!({"content": piece}), None);
    }
    for (i, kind) in calls.iter().enumerate() {
        let arguments = json!({
            "artifact_type": kind.artifact_type,
            "title": kind.title,
            "content": format!("# {}\n\nWritten from the conversation.", kind.title),
        });
        let call = json!({"index": i, "id": format!("call_{i}"), "type": "function",
            "function": {"name": "save_artifact", "arguments": arguments.to_string()}});
        out += &openai_chunk(json!({"tool_calls": [call]}), None);
    }
    out += &openai_chunk(json!({}), Some(if calls.is_empty() { "stop" } else { "tool_calls" }));
    out += &openai_usage_and_done(40, 12);
    Reply::sse_chunked(&out, 64)
}
