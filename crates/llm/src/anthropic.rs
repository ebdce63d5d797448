//! Provider for the Anthropic Messages API (`POST {base}/v1/messages`, streamed).

use std::collections::BTreeMap;

use reqwest::RequestBuilder;
use serde::{Deserialize, Serialize};
use wire::sse::SseEvent;

use crate::{
    endpoint::Endpoint,
    transport::{self, Progress, Remote, SseDecoder, Wire},
    types::{BrokenCall, ChatRequest, LlmError, Message, Part, Role, StopReason, StreamEvent, ToolCall, Usage},
};

/// Base URL used when `ANTHROPIC_BASE_URL` is not set.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// Value of the `anthropic-version` header this adapter is written against.
pub const API_VERSION: &str = "2023-06-01";
/// Output token limit used when [`ChatRequest::max_tokens`] is 0 (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// Settings of an [`AnthropicProvider`]. `Debug` does not show the API key.
#[derive(Debug, Clone)]
pub struct AnthropicConfig {
    /// Where the API answers (its root without `/v1`), with the key sent as `x-api-key`.
    pub endpoint: Endpoint,
    /// `max_tokens` sent when the request leaves it at 0.
    pub default_max_tokens: u32,
}

impl AnthropicConfig {
    /// Configuration for `model` on the server at `base_url`, without a key.
    pub fn with_base_url(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self::at(Endpoint::new(base_url, model))
    }

    /// Configuration for `endpoint`, with the default output token limit.
    pub fn at(endpoint: Endpoint) -> Self {
        Self { endpoint, default_max_tokens: DEFAULT_MAX_TOKENS }
    }
}

/// A [`Provider`](crate::Provider) speaking the Messages API with `stream: true`.
pub type AnthropicProvider = Remote<AnthropicConfig>;

impl Wire for AnthropicConfig {
    const NAME: &'static str = "anthropic";
    const PATH: &'static str = "v1/messages";

    fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn prepare(&self, builder: RequestBuilder, request: &ChatRequest) -> Result<RequestBuilder, LlmError> {
        let builder = builder.header("anthropic-version", API_VERSION).json(&wire_request(self, request));
        Ok(match &self.endpoint.api_key {
            Some(key) => builder.header("x-api-key", transport::secret_header(key.expose(), "Anthropic")?),
            None => builder,
        })
    }

    fn decoder() -> impl SseDecoder {
        Decoder::default()
    }
}

// ---------------------------------------------------------------------------------------------
// Request translation

#[derive(Debug, Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "str::is_empty")]
    system: &'a str,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    /// `{"type": "tool", "name": ...}`: the model must call this tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<WireToolChoice<'a>>,
    stream: bool,
}

#[derive(Debug, Serialize)]
struct WireToolChoice<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
}

#[derive(Debug, Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Vec<WireBlock<'a>>,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlock<'a> {
    Text {
        text: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: &'a serde_json::Value,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

#[derive(Debug, Serialize)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a serde_json::Value,
}

fn wire_request<'a>(config: &'a AnthropicConfig, request: &'a ChatRequest) -> WireRequest<'a> {
    WireRequest {
        model: &config.endpoint.model,
        max_tokens: if request.max_tokens > 0 { request.max_tokens } else { config.default_max_tokens },
        system: &request.system,
        messages: request.messages.iter().filter_map(wire_message).collect(),
        tools: request
            .tools
            .iter()
            .map(|tool| WireTool { name: &tool.name, description: &tool.description, input_schema: &tool.input_schema })
            .collect(),
        tool_choice: request
            .tool_choice
            .as_deref()
            .filter(|_| !request.tools.is_empty())
            .map(|name| WireToolChoice { kind: "tool", name }),
        stream: true,
    }
}

/// Translates one message; `None` if nothing sendable is left (the API rejects empty content).
fn wire_message(message: &Message) -> Option<WireMessage<'_>> {
    let mut content = Vec::with_capacity(message.parts.len());
    // The API wants tool results before any text in a user turn.
    for part in &message.parts {
        if let Part::ToolResult { call_id, content: result, is_error } = part {
            if message.role == Role::Assistant {
                tracing::warn!("dropping a tool result found in an assistant message");
                continue;
            }
            content.push(WireBlock::ToolResult { tool_use_id: call_id, content: result, is_error: *is_error });
        }
    }
    for part in &message.parts {
        match part {
            // Empty text blocks are rejected by the API.
            Part::Text { text } if !text.is_empty() => content.push(WireBlock::Text { text }),
            Part::ToolCall(call) if message.role == Role::Assistant => {
                content.push(WireBlock::ToolUse { id: &call.id, name: &call.name, input: &call.arguments })
            }
            Part::ToolCall(call) => {
                tracing::warn!(tool = %call.name, "dropping a tool call found in a user message");
            }
            _ => {}
        }
    }
    if content.is_empty() {
        tracing::debug!(role = ?message.role, "skipping a message with no content");
        return None;
    }
    Some(WireMessage {
        role: match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        },
        content,
    })
}

// ---------------------------------------------------------------------------------------------
// Stream decoding

/// One streamed event, told apart by its `type` field (which repeats the SSE event name).
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireEvent {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: u32,
        content_block: BlockStart,
    },
    ContentBlockDelta {
        index: u32,
        delta: BlockDelta,
    },
    ContentBlockStop {
        index: u32,
    },
    MessageDelta {
        delta: MessageDeltaBody,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: WireError,
    },
    /// Anthropic may add event types; they are to be ignored.
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Deserialize)]
struct StartMessage {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Default, Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockStart {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Option<serde_json::Value>,
    },
    /// Thinking, server tools and future block types carry nothing for the neutral stream.
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    /// Extended thinking's text. Quire does not turn thinking on, so its blocks (and their signatures) never have to
    /// be sent back; a gateway may still send them.
    ThinkingDelta {
        thinking: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
struct MessageDeltaBody {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireError {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: String,
}

/// A `tool_use` block being assembled.
#[derive(Debug)]
struct PartialToolUse {
    id: String,
    name: String,
    /// Input given in `content_block_start`, used when no `input_json_delta` follows.
    initial_input: Option<serde_json::Value>,
    partial_json: String,
}

/// Decodes a whole streamed Messages API body, given as the chunks it arrived in, as a live completion would be:
/// the neutral events, then the error that ended the stream, if any. For property tests and fuzzing.
pub fn decode_body(chunks: &[&[u8]]) -> Vec<Result<StreamEvent, LlmError>> {
    transport::decode_chunks(Decoder::default(), chunks)
}

/// Decoder state for one message.
#[derive(Debug, Default)]
struct Decoder {
    started: bool,
    /// Open tool-use blocks by content block index; parsed once at `content_block_stop`.
    tool_blocks: BTreeMap<u32, PartialToolUse>,
    usage: Usage,
    stop: Option<StopReason>,
}

impl SseDecoder for Decoder {
    fn on_event(&mut self, event: SseEvent, out: &mut Vec<StreamEvent>) -> Result<Progress, LlmError> {
        if event.data.trim().is_empty() {
            return Ok(Progress::Continue);
        }
        match transport::parse_json::<WireEvent>(&event.data)? {
            WireEvent::MessageStart { message } => {
                self.started = true;
                if let Some(usage) = message.usage {
                    self.add_usage(&usage);
                }
            }
            WireEvent::ContentBlockStart { index, content_block } => match content_block {
                BlockStart::Text { text } if !text.is_empty() => {
                    out.push(StreamEvent::TextDelta(text));
                }
                BlockStart::ToolUse { id, name, input } => {
                    self.tool_blocks
                        .insert(index, PartialToolUse { id, name, initial_input: input, partial_json: String::new() });
                }
                _ => {}
            },
            WireEvent::ContentBlockDelta { index, delta } => match delta {
                BlockDelta::TextDelta { text } if !text.is_empty() => {
                    out.push(StreamEvent::TextDelta(text));
                }
                BlockDelta::InputJsonDelta { partial_json } => {
                    let block = self.tool_blocks.get_mut(&index).ok_or_else(|| {
                        LlmError::Protocol(format!(
                            "input_json_delta for content block {index}, which is not a tool_use"
                        ))
                    })?;
                    block.partial_json.push_str(&partial_json);
                }
                BlockDelta::ThinkingDelta { thinking } if !thinking.is_empty() => {
                    out.push(StreamEvent::ReasoningDelta(thinking));
                }
                _ => {}
            },
            WireEvent::ContentBlockStop { index } => {
                if let Some(block) = self.tool_blocks.remove(&index) {
                    out.push(finish_tool_use(block));
                }
            }
            WireEvent::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.stop_reason {
                    self.stop = Some(stop_reason(&reason));
                }
                if let Some(usage) = usage {
                    self.update_usage(&usage);
                }
            }
            WireEvent::MessageStop => {
                // Blocks never closed are still complete once the message is.
                for block in std::mem::take(&mut self.tool_blocks).into_values() {
                    out.push(finish_tool_use(block));
                }
                if self.started {
                    out.push(StreamEvent::Usage(self.usage));
                }
                out.push(StreamEvent::Stop(self.stop.unwrap_or(StopReason::Other)));
                return Ok(Progress::Done);
            }
            WireEvent::Ping | WireEvent::Unknown => {}
            WireEvent::Error { error } => return Err(stream_error(&error)),
        }
        Ok(Progress::Continue)
    }

    fn on_eof(&mut self, _out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        Err(LlmError::Protocol("stream ended before message_stop".into()))
    }
}

impl WireUsage {
    /// Input tokens are split into uncached, cache-written and cache-read counts; the neutral usage reports their
    /// sum (`None` when none is given).
    fn input(&self) -> Option<u64> {
        let counts = [self.input_tokens, self.cache_creation_input_tokens, self.cache_read_input_tokens];
        counts.iter().any(Option::is_some).then(|| counts.iter().flatten().sum())
    }
}

impl Decoder {
    fn add_usage(&mut self, usage: &WireUsage) {
        self.usage.input_tokens = usage.input().unwrap_or(0);
        self.usage.output_tokens = usage.output_tokens.unwrap_or(0);
    }

    /// `message_delta` counts are cumulative, so they replace earlier ones.
    fn update_usage(&mut self, usage: &WireUsage) {
        if let Some(input) = usage.input() {
            self.usage.input_tokens = self.usage.input_tokens.max(input);
        }
        if let Some(output) = usage.output_tokens {
            self.usage.output_tokens = output;
        }
    }
}

/// The call of a finished `tool_use` block, or the block as broken when its input is not JSON (cut off, say).
fn finish_tool_use(block: PartialToolUse) -> StreamEvent {
    if block.partial_json.trim().is_empty() {
        let arguments = block.initial_input.unwrap_or_else(|| serde_json::Value::Object(Default::default()));
        return StreamEvent::ToolCall(ToolCall { id: block.id, name: block.name, arguments });
    }
    match transport::parse_arguments(&block.name, &block.partial_json) {
        Ok(arguments) => StreamEvent::ToolCall(ToolCall { id: block.id, name: block.name, arguments }),
        Err(_) => {
            let problem = transport::arguments_problem(&block.partial_json);
            StreamEvent::BrokenCall(BrokenCall { id: block.id, name: block.name, problem })
        }
    }
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        // A stop sequence is a normal end of the turn.
        "end_turn" | "stop_sequence" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" | "model_context_window_exceeded" => StopReason::MaxTokens,
        _ => StopReason::Other,
    }
}

/// Maps an `error` event, whose types mirror the API's HTTP error types.
fn stream_error(error: &WireError) -> LlmError {
    tracing::warn!(kind = %error.kind, message = %error.message, "model provider reported an error mid-stream");
    match error.kind.as_str() {
        "overloaded_error" => LlmError::Overloaded,
        "rate_limit_error" => LlmError::RateLimited { retry_after: None },
        "authentication_error" | "permission_error" => LlmError::Unauthorized,
        "timeout_error" => LlmError::Timeout,
        "invalid_request_error" => LlmError::Upstream { status: 400 },
        "not_found_error" => LlmError::Upstream { status: 404 },
        "request_too_large" => LlmError::Upstream { status: 413 },
        _ => LlmError::Upstream { status: 500 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn translation_orders_tool_results_first_and_drops_empty_text() {
        let request = ChatRequest {
            system: "be brief".into(),
            messages: vec![
                Message {
                    role: Role::Assistant,
                    parts: vec![
                        Part::Text { text: "".into() },
                        Part::ToolCall(ToolCall { id: "t1".into(), name: "f".into(), arguments: json!({"a": 1}) }),
                    ],
                },
                Message {
                    role: Role::User,
                    parts: vec![
                        Part::Text { text: "thanks".into() },
                        Part::ToolResult { call_id: "t1".into(), content: "ok".into(), is_error: false },
                    ],
                },
                Message { role: Role::User, parts: vec![] },
            ],
            tools: vec![],
            max_tokens: 0,
            tool_choice: None,
        };
        let config = AnthropicConfig::with_base_url(DEFAULT_BASE_URL, "claude");
        let body = serde_json::to_value(wire_request(&config, &request)).unwrap();
        assert_eq!(body["max_tokens"], json!(DEFAULT_MAX_TOKENS));
        assert_eq!(body["system"], json!("be brief"));
        assert_eq!(
            body["messages"],
            json!([
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
                    {"type": "text", "text": "thanks"}
                ]}
            ])
        );
        assert!(body.get("tools").is_none());
    }

    #[test]
    fn error_types() {
        let e = |kind: &str| stream_error(&WireError { kind: kind.into(), message: String::new() }).code();
        assert_eq!(e("overloaded_error"), "overloaded");
        assert_eq!(e("rate_limit_error"), "rate_limited");
        assert_eq!(e("authentication_error"), "upstream_unauthorized");
        assert_eq!(e("api_error"), "upstream_error");
    }
}
