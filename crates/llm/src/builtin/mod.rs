//! The built-in provider: an offline, deterministic assistant that needs no network and no key.
//!
//! It reads the latest user message and either answers in text (restating the requirements captured so far), calls
//! `save_artifact` with generated Markdown documents (user stories, BRD, requirements document, acceptance criteria,
//! meeting summary), calls `document_search` for questions about attached files, or answers the results of those calls. What a message asks for is read by Quire's request detection
//! (`analysis::requests`), the same that keeps answered requests out of every provider's view.
//! Text is streamed word by word, followed by honest token counts from [`crate::tokens::count_tokens`].

mod artifacts;
mod edits;
mod ledger;
mod reply;
mod summary;

pub use ledger::RECORD_REQUIREMENTS;
pub use reply::{DOCUMENT_SEARCH, EDIT_ARTIFACT, SAVE_ARTIFACT};

use std::time::Duration;

use futures::{stream, StreamExt};

use crate::tokens::count_tokens;
use crate::types::{ChatRequest, EventStream, LlmError, Part, Provider, StopReason, StreamEvent, ToolCall, Usage};
use reply::{plan, Plan};

/// Model name reported when none is configured.
pub const DEFAULT_MODEL: &str = "quire-builtin-1";

/// Delay between streamed tokens, in milliseconds, when `QUIRE_BUILTIN_DELAY_MS` is unset or invalid.
pub const DEFAULT_DELAY_MS: u64 = 20;

/// Quire's built-in assistant provider.
#[derive(Debug, Clone)]
pub struct Builtin {
    /// Pause between two streamed text tokens.
    delay: Duration,
    /// Model name reported to callers.
    model: String,
}

impl Default for Builtin {
    fn default() -> Self {
        Self::new()
    }
}

impl Builtin {
    /// A provider with no delay between tokens and the default model name.
    pub fn new() -> Self {
        Self { delay: Duration::ZERO, model: DEFAULT_MODEL.to_string() }
    }

    /// Sets the pause between streamed tokens.
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Sets the reported model name.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// The pause between streamed tokens.
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// Every event of the answer to `request`, without delays: what [`Provider::stream`] streams (deterministic).
    pub fn events(&self, request: &ChatRequest) -> Vec<StreamEvent> {
        // A summary is wanted whole, not word by word: it is read before an answer starts.
        let summary =
            crate::summary::read(request).map(|(earlier, messages)| summary::write(earlier.as_deref(), &messages));
        let whole = summary.is_some();
        let Plan { text, tool_calls } = match summary {
            Some(text) => Plan { text, tool_calls: Vec::new() },
            None => plan(request),
        };
        let mut stop = if tool_calls.is_empty() { StopReason::EndTurn } else { StopReason::ToolUse };
        let mut pieces = split_tokens(&text);
        if tool_calls.is_empty() && request.max_tokens > 0 {
            let limit = request.max_tokens as usize;
            if count_tokens(&text) > limit {
                pieces = truncate_pieces(pieces, limit);
                stop = StopReason::MaxTokens;
            }
        }
        if whole && !pieces.is_empty() {
            pieces = vec![pieces.concat()];
        }
        let streamed: String = pieces.concat();
        let id_seed = request_hash(request);
        let calls: Vec<ToolCall> = tool_calls
            .into_iter()
            .enumerate()
            .map(|(i, (name, arguments))| ToolCall {
                id: format!("call_builtin_{id_seed:016x}_{}", i + 1),
                name,
                arguments,
            })
            .collect();
        let output_tokens =
            count_tokens(&streamed) + calls.iter().map(|c| count_tokens(&c.arguments.to_string())).sum::<usize>();
        let usage = Usage { input_tokens: input_tokens(request), output_tokens: output_tokens as u64 };
        let mut events: Vec<StreamEvent> = pieces.into_iter().map(StreamEvent::TextDelta).collect();
        events.extend(calls.into_iter().map(StreamEvent::ToolCall));
        events.push(StreamEvent::Usage(usage));
        events.push(StreamEvent::Stop(stop));
        events
    }
}

#[async_trait::async_trait]
impl Provider for Builtin {
    fn name(&self) -> &str {
        "builtin"
    }

    fn model(&self) -> &str {
        &self.model
    }

    async fn stream(&self, request: ChatRequest) -> Result<EventStream, LlmError> {
        let events = self.events(&request);
        let delay = self.delay;
        let stream = stream::iter(events.into_iter().enumerate()).then(move |(i, event)| async move {
            if i > 0 && !delay.is_zero() && matches!(event, StreamEvent::TextDelta(_)) {
                tokio::time::sleep(delay).await;
            }
            Ok(event)
        });
        Ok(stream.boxed())
    }
}

/// Parses a delay in milliseconds (`QUIRE_BUILTIN_DELAY_MS`); unset or invalid values give [`DEFAULT_DELAY_MS`].
pub fn delay_from(value: Option<&str>) -> Duration {
    let ms = value.and_then(|v| v.trim().parse::<u64>().ok()).unwrap_or(DEFAULT_DELAY_MS);
    Duration::from_millis(ms)
}

/// Input tokens of a request: the system prompt, every message's text, earlier tool calls' arguments and tool results.
pub fn input_tokens(request: &ChatRequest) -> u64 {
    let parts: usize = request
        .messages
        .iter()
        .flat_map(|m| m.parts.iter())
        .map(|p| match p {
            Part::Text { text } => count_tokens(text),
            Part::ToolCall(call) => count_tokens(&call.arguments.to_string()),
            Part::ToolResult { content, .. } => count_tokens(content),
        })
        .sum();
    (count_tokens(&request.system) + parts) as u64
}

/// Splits text into streaming tokens: each word with the whitespace after it (leading whitespace stays with the
/// first). Concatenating the tokens gives back the text.
pub fn split_tokens(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut current = String::new();
    let mut in_trailing_space = false;
    let mut seen_word = false;
    for c in text.chars() {
        if c.is_whitespace() {
            if seen_word {
                in_trailing_space = true;
            }
            current.push(c);
        } else {
            if in_trailing_space {
                tokens.push(std::mem::take(&mut current));
                in_trailing_space = false;
            }
            seen_word = true;
            current.push(c);
        }
    }
    if !current.is_empty() {
        tokens.push(current);
    }
    tokens
}

/// Keeps the longest prefix of `pieces` whose text fits in `limit` tokens.
fn truncate_pieces(pieces: Vec<String>, limit: usize) -> Vec<String> {
    // Binary search on the number of pieces kept; token counts grow with the prefix.
    let (mut lo, mut hi) = (0usize, pieces.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if count_tokens(&pieces[..mid].concat()) <= limit {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    pieces.into_iter().take(lo).collect()
}

/// A stable 64-bit FNV-1a hash of the request's content, used for deterministic tool call ids.
fn request_hash(request: &ChatRequest) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = OFFSET;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            hash ^= u64::from(*b);
            hash = hash.wrapping_mul(PRIME);
        }
    };
    feed(request.system.as_bytes());
    for m in &request.messages {
        feed(serde_json::to_string(m).unwrap_or_default().as_bytes());
        feed(&[0xff]);
    }
    hash
}
