//! Neutral types shared by every model provider. Providers translate between their wire format and these.

use std::{
    fmt,
    pin::Pin,
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

use futures::Stream;
use serde::{Deserialize, Serialize};

use crate::tokens::count_tokens;

/// Who wrote a message in the model's conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// One piece of a message: text, a tool call made by the assistant, or the result of one given back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    Text { text: String },
    ToolCall(ToolCall),
    ToolResult { call_id: String, content: String, is_error: bool },
}

/// A message of the conversation sent to the model. Tool results travel in `Role::User` messages
/// (Anthropic's convention; the OpenAI adapter turns them into `role: "tool"` messages).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub parts: Vec<Part>,
}

impl Message {
    pub fn user(text: impl Into<String>) -> Self {
        Self { role: Role::User, parts: vec![Part::Text { text: text.into() }] }
    }
    pub fn assistant(text: impl Into<String>) -> Self {
        Self { role: Role::Assistant, parts: vec![Part::Text { text: text.into() }] }
    }
    /// All text parts joined.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// A tool the model may call: name, description and JSON schema of its input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: serde_json::Value,
}

/// A complete tool call, arguments already parsed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: serde_json::Value,
}

/// One request to a model.
#[derive(Debug, Clone, Default)]
pub struct ChatRequest {
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub max_tokens: u32,
    /// The tool the model must call in this answer (OpenAI's and Anthropic's forced `tool_choice`); only sent to a
    /// provider that [can force one](Provider::can_force_tool).
    pub tool_choice: Option<String>,
}

impl ChatRequest {
    /// The request's tokens as Quire counts them (o200k): its instructions, messages and tools' descriptions.
    /// What a call costs before its first word, used when the provider reports nothing and to fit a budget.
    pub fn prompt_tokens(&self) -> u64 {
        let parts: usize = self
            .messages
            .iter()
            .flat_map(|m| m.parts.iter())
            .map(|p| match p {
                Part::Text { text } => count_tokens(text),
                Part::ToolCall(call) => count_tokens(&call.name) + count_tokens(&call.arguments.to_string()),
                Part::ToolResult { content, .. } => count_tokens(content),
            })
            .sum();
        let tools: usize = self
            .tools
            .iter()
            .map(|t| count_tokens(&t.name) + count_tokens(&t.description) + count_tokens(&t.input_schema.to_string()))
            .sum();
        (count_tokens(&self.system) + parts + tools) as u64
    }
}

/// Token counts reported by the provider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    Other,
}

/// A tool call the model wrote but that cannot be carried out: its arguments are not JSON, or it has no name.
/// It goes back to the model as a failed call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BrokenCall {
    pub id: String,
    pub name: String,
    /// What is wrong with it, in words the model can act on.
    pub problem: String,
}

/// What a provider stream yields.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    TextDelta(String),
    /// The model's reasoning before or between its answer's words (`reasoning_content`, thinking blocks): shown
    /// apart from the answer, never part of it.
    ReasoningDelta(String),
    ToolCall(ToolCall),
    BrokenCall(BrokenCall),
    Usage(Usage),
    Stop(StopReason),
}

impl StreamEvent {
    /// The event without NUL characters in its text and tool-call arguments: a model may send them, and
    /// PostgreSQL's text cannot hold them (both backends keep the same text).
    pub fn without_nul(self) -> Self {
        match self {
            StreamEvent::TextDelta(text) if text.contains('\0') => StreamEvent::TextDelta(text.replace('\0', "")),
            StreamEvent::ReasoningDelta(text) if text.contains('\0') => {
                StreamEvent::ReasoningDelta(text.replace('\0', ""))
            }
            StreamEvent::ToolCall(mut call) => {
                strip_nul(&mut call.arguments);
                StreamEvent::ToolCall(call)
            }
            other => other,
        }
    }
}

fn strip_nul(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(text) if text.contains('\0') => *text = text.replace('\0', ""),
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip_nul),
        serde_json::Value::Object(fields) => {
            if fields.keys().any(|k| k.contains('\0')) {
                *fields = std::mem::take(fields).into_iter().map(|(k, v)| (k.replace('\0', ""), v)).collect();
            }
            fields.values_mut().for_each(strip_nul);
        }
        _ => {}
    }
}

/// A failure talking to a model. `code()` is what the client sees in an `error` event.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    #[error("the model provider is rate limiting requests")]
    RateLimited { retry_after: Option<Duration> },
    #[error("the model provider is overloaded")]
    Overloaded,
    #[error("the model provider answered with status {status}")]
    Upstream { status: u16 },
    #[error("the model provider rejected the credentials")]
    Unauthorized,
    #[error("the model provider sent a response that could not be read: {0}")]
    Protocol(String),
    #[error("the model provider stopped responding")]
    Timeout,
    #[error("could not reach the model provider: {0}")]
    Network(String),
    /// The server refused a request because it offered tools: the model (or the server as started) has no tool
    /// support.
    #[error("the model provider does not support tools for this model")]
    ToolsUnsupported,
}

impl LlmError {
    /// Whether the provider refused the call before it could bill any of it: an error status, or no connection. A
    /// timeout or an unreadable answer came after the request was sent, so the call is metered all the same.
    pub fn billed_nothing(&self) -> bool {
        !matches!(self, LlmError::Timeout | LlmError::Protocol(_))
    }

    /// Stable machine-readable code for the SSE `error` event.
    pub fn code(&self) -> &'static str {
        match self {
            LlmError::RateLimited { .. } => "rate_limited",
            LlmError::Overloaded => "overloaded",
            LlmError::Upstream { .. } => "upstream_error",
            LlmError::Unauthorized => "upstream_unauthorized",
            LlmError::Protocol(_) => "upstream_protocol",
            LlmError::Timeout => "upstream_timeout",
            LlmError::Network(_) => "upstream_unreachable",
            LlmError::ToolsUnsupported => "tools_unsupported",
        }
    }

    /// A plain, stable sentence for people, the same for every failure of a kind: the details (addresses, host
    /// names, operating-system errors) go to the log only.
    pub fn public_message(&self) -> &'static str {
        match self {
            LlmError::RateLimited { .. } => "The model provider is receiving too many requests. Try again in a minute.",
            LlmError::Overloaded => "The model provider is overloaded. Try again in a minute.",
            LlmError::Upstream { .. } => "The model provider answered with an error. Try again in a minute.",
            LlmError::Unauthorized => {
                "The model provider refused Quire's credentials. Ask whoever runs Quire to check its API key."
            }
            LlmError::Protocol(_) => "The model provider sent an answer Quire could not read. Try again.",
            LlmError::Timeout => "The model provider stopped responding. Try again in a minute.",
            LlmError::Network(_) => "The model provider could not be reached. Try again in a minute.",
            LlmError::ToolsUnsupported => "The model cannot use tools, and Quire could not ask it without them.",
        }
    }

    /// Whether trying again (before any token was streamed) may help.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            LlmError::RateLimited { .. }
                | LlmError::Overloaded
                | LlmError::Timeout
                | LlmError::Network(_)
                | LlmError::Upstream { status: 500..=599 }
        )
    }
}

pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, LlmError>> + Send>>;

/// A model provider: a translator between the neutral types and one wire format.
#[async_trait::async_trait]
pub trait Provider: Send + Sync + fmt::Debug {
    /// Provider name as configured (`builtin`, `openai`, `anthropic`).
    fn name(&self) -> &str;
    /// Model identifier sent upstream and recorded on messages.
    fn model(&self) -> &str;
    /// Starts one streamed completion. Errors before the first event are returned here;
    /// errors after it come through the stream.
    async fn stream(&self, request: ChatRequest) -> Result<EventStream, LlmError>;
    /// Whether conversations are named by asking this model (real models); otherwise a title is taken from the
    /// first words of the first message.
    fn names_threads(&self) -> bool {
        false
    }
    /// What this provider has learnt of its model (tools refused, calls written as text); `None` for providers that
    /// learn nothing.
    fn habits(&self) -> Option<&Habits> {
        None
    }
    /// Whether a request may name the tool the model must call ([`ChatRequest::tool_choice`]).
    fn can_force_tool(&self) -> bool {
        false
    }
}

/// What a remote provider learns about its model while it serves it, and what its settings say of it: kept for the
/// life of the process, per model.
#[derive(Debug, Default)]
pub struct Habits {
    tools_refused: AtomicBool,
    choice_refused: AtomicBool,
    calls_in_text: AtomicBool,
}

impl Habits {
    /// `calls_in_text`: the provider's `tool_calls_in_text` setting.
    pub fn new(calls_in_text: bool) -> Self {
        Self { calls_in_text: AtomicBool::new(calls_in_text), ..Self::default() }
    }

    /// Whether the server refused a request naming the tool to call (it takes tools, but not that).
    pub fn choice_refused(&self) -> bool {
        self.choice_refused.load(Ordering::Relaxed)
    }

    pub fn refuse_choice(&self) {
        if !self.choice_refused.swap(true, Ordering::Relaxed) {
            tracing::warn!("the model provider refused a named tool choice; requests no longer name one");
        }
    }

    /// Whether the server refused a request with tools for this model: later ones go without.
    pub fn tools_refused(&self) -> bool {
        self.tools_refused.load(Ordering::Relaxed)
    }

    pub fn refuse_tools(&self) {
        if !self.tools_refused.swap(true, Ordering::Relaxed) {
            tracing::warn!("the model provider refused tools for this model; it is asked without them from now on");
        }
    }

    /// Whether the model writes its tool calls as text (fenced JSON blocks are then read as calls too).
    pub fn calls_in_text(&self) -> bool {
        self.calls_in_text.load(Ordering::Relaxed)
    }

    pub fn saw_calls_in_text(&self) {
        if !self.calls_in_text.swap(true, Ordering::Relaxed) {
            tracing::info!("the model writes tool calls as text; Quire reads them from its answers from now on");
        }
    }
}

/// Answers [`Provider::name`], [`Provider::model`] and [`Provider::names_threads`] as the provider in the field
/// `$inner` does: for a provider that wraps another to add behaviour (retries, metrics) and is otherwise the same.
#[macro_export]
macro_rules! forward_identity {
    ($inner:ident) => {
        fn name(&self) -> &str {
            self.$inner.name()
        }

        fn model(&self) -> &str {
            self.$inner.model()
        }

        fn names_threads(&self) -> bool {
            self.$inner.names_threads()
        }

        fn habits(&self) -> Option<&$crate::types::Habits> {
            self.$inner.habits()
        }

        fn can_force_tool(&self) -> bool {
            self.$inner.can_force_tool()
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_characters_leave_text_and_tool_arguments() {
        assert_eq!(StreamEvent::TextDelta("a\0b".into()).without_nul(), StreamEvent::TextDelta("ab".into()));
        let call = ToolCall {
            id: "1".into(),
            name: "create_document".into(),
            arguments: serde_json::json!({"title": "T\0", "sections": [{"body\0": "x\0y"}], "n": 1}),
        };
        let StreamEvent::ToolCall(clean) = StreamEvent::ToolCall(call).without_nul() else { unreachable!() };
        assert_eq!(clean.arguments, serde_json::json!({"title": "T", "sections": [{"body": "xy"}], "n": 1}));
    }
}
