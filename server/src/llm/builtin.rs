//! The built-in offline assistant: deterministic, no network. It answers from the conversation by
//! acknowledging the latest message and restating the requirements it finds.

use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;

use super::{ChatRequest, EventStream, LlmError, Provider, Role, StopReason, StreamEvent, Usage};

/// The offline assistant.
#[derive(Debug, Clone)]
pub struct Builtin {
    delay: Duration,
    model: String,
}

impl Builtin {
    pub fn new(delay: Duration, model: Option<String>) -> Self {
        Self { delay, model: model.unwrap_or_else(|| "quire-builtin-1".into()) }
    }
}

const REQUIREMENT_WORDS: [&str; 8] = ["want", "need", "must", "should", "require", "would like", "has to", "able to"];

/// Sentences of the text that state a requirement.
fn requirement_sentences(text: &str) -> Vec<String> {
    text.split(['.', '!', '?', '\n'])
        .map(str::trim)
        .filter(|s| {
            let lower = s.to_lowercase();
            REQUIREMENT_WORDS.iter().any(|w| lower.contains(w))
        })
        .map(String::from)
        .collect()
}

fn approx_tokens(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

fn answer(request: &ChatRequest) -> String {
    let latest = request.messages.iter().rev().find(|m| m.role == Role::User).map(|m| m.text()).unwrap_or_default();
    let requirements: Vec<String> = request
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .flat_map(|m| requirement_sentences(&m.text()))
        .collect();
    let gist: String = latest.split_whitespace().take(12).collect::<Vec<_>>().join(" ");
    let mut out = format!("Thanks, noted: \"{gist}\".\n\n");
    if requirements.is_empty() {
        out.push_str(
            "I have not found explicit requirements yet. Tell me what the system must do, who uses it and why.",
        );
    } else {
        out.push_str("Here are the requirements I have so far:\n\n");
        for r in &requirements {
            out.push_str(&format!("- {r}\n"));
        }
        out.push_str("\nI can turn them into user stories, a BRD, a requirements document, acceptance criteria or a meeting summary.");
    }
    out
}

#[async_trait]
impl Provider for Builtin {
    fn name(&self) -> &str {
        "builtin"
    }

    fn model(&self) -> &str {
        &self.model
    }

    async fn stream(&self, request: ChatRequest) -> Result<EventStream, LlmError> {
        let text = answer(&request);
        let input =
            approx_tokens(&request.system) + request.messages.iter().map(|m| approx_tokens(&m.text())).sum::<u64>();
        let output = approx_tokens(&text);
        let mut tokens: Vec<String> = Vec::new();
        let mut current = String::new();
        for c in text.chars() {
            current.push(c);
            if c.is_whitespace() {
                tokens.push(std::mem::take(&mut current));
            }
        }
        if !current.is_empty() {
            tokens.push(current);
        }
        let delay = self.delay;
        let deltas = futures::stream::iter(tokens).then(move |t| async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            Ok(StreamEvent::TextDelta(t))
        });
        let tail = futures::stream::iter([
            Ok(StreamEvent::Usage(Usage { input_tokens: input, output_tokens: output })),
            Ok(StreamEvent::Stop(StopReason::EndTurn)),
        ]);
        Ok(Box::pin(deltas.chain(tail)))
    }
}
