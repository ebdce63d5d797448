//! Provider for the OpenAI Chat Completions API (`POST {base}/chat/completions`, streamed).
//!
//! The same wire format is spoken by most local servers (Ollama, llama.cpp, vLLM), so the API
//! key is optional and the base URL configurable.

use std::collections::BTreeMap;

use reqwest::{header::AUTHORIZATION, RequestBuilder};
use serde::{Deserialize, Serialize};
use wire::sse::SseEvent;

use crate::{
    endpoint::Endpoint,
    transport::{self, Progress, Remote, SseDecoder, Wire},
    types::{BrokenCall, ChatRequest, LlmError, Message, Part, Role, StopReason, StreamEvent, ToolCall, Usage},
};

/// Base URL used when `OPENAI_BASE_URL` is not set.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// Which request field carries [`ChatRequest::max_tokens`]: OpenAI's reasoning models reject the deprecated
/// `max_tokens`, while some local servers only understand it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaxTokensField {
    /// `max_completion_tokens`, what api.openai.com expects.
    MaxCompletionTokens,
    /// The older `max_tokens`, understood by every OpenAI-compatible server.
    MaxTokens,
}

impl MaxTokensField {
    /// `MaxCompletionTokens` for api.openai.com, `MaxTokens` for anything else.
    pub fn for_base_url(base_url: &str) -> Self {
        if base_url.contains("api.openai.com") {
            Self::MaxCompletionTokens
        } else {
            Self::MaxTokens
        }
    }
}

/// Settings of an [`OpenAiProvider`]. `Debug` does not show the API key.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// Where the API answers, e.g. `https://api.openai.com/v1` or `http://localhost:11434/v1`, with the bearer
    /// token (none for local servers that need none).
    pub endpoint: Endpoint,
    /// Field name used for the output token limit.
    pub max_tokens_field: MaxTokensField,
}

impl OpenAiConfig {
    /// Configuration for `model` on the server at `base_url`, without a key.
    pub fn with_base_url(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self::at(Endpoint::new(base_url, model))
    }

    /// Configuration for `endpoint`, with the token limit field its base URL expects.
    pub fn at(endpoint: Endpoint) -> Self {
        Self { max_tokens_field: MaxTokensField::for_base_url(&endpoint.base_url), endpoint }
    }
}

/// A [`Provider`](crate::Provider) speaking the Chat Completions API with `stream: true`.
pub type OpenAiProvider = Remote<OpenAiConfig>;

impl Wire for OpenAiConfig {
    const NAME: &'static str = "openai";
    const PATH: &'static str = "chat/completions";

    fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn prepare(&self, builder: RequestBuilder, request: &ChatRequest) -> Result<RequestBuilder, LlmError> {
        let builder = builder.json(&wire_request(self, request));
        Ok(match &self.endpoint.api_key {
            Some(key) => {
                builder.header(AUTHORIZATION, transport::secret_header(&format!("Bearer {}", key.expose()), "OpenAI")?)
            }
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
    messages: Vec<WireMessage<'a>>,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<WireToolChoice<'a>>,
}

/// `{"type": "function", "function": {"name": ...}}`: the model must call this function.
#[derive(Debug, Serialize)]
struct WireToolChoice<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireChoiceName<'a>,
}

#[derive(Debug, Serialize)]
struct WireChoiceName<'a> {
    name: &'a str,
}

#[derive(Debug, Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum WireMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: String,
    },
    Assistant {
        /// Text, empty when the turn consists only of tool calls: OpenAI takes `null` there too, but servers
        /// that check the body against a stricter schema (llama-cpp-python's) refuse `null`.
        content: String,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireToolCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: String,
    },
}

#[derive(Debug, Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionCall<'a>,
}

#[derive(Debug, Serialize)]
struct WireFunctionCall<'a> {
    name: &'a str,
    /// The API wants the arguments as a JSON-encoded string, not an object.
    arguments: String,
}

#[derive(Debug, Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionDef<'a>,
}

#[derive(Debug, Serialize)]
struct WireFunctionDef<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a serde_json::Value,
}

fn wire_request<'a>(config: &'a OpenAiConfig, request: &'a ChatRequest) -> WireRequest<'a> {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        messages.push(WireMessage::System { content: &request.system });
    }
    for message in &request.messages {
        push_messages(message, &mut messages);
    }
    let limit = (request.max_tokens > 0).then_some(request.max_tokens);
    let (max_tokens, max_completion_tokens) = match config.max_tokens_field {
        MaxTokensField::MaxTokens => (limit, None),
        MaxTokensField::MaxCompletionTokens => (None, limit),
    };
    WireRequest {
        model: &config.endpoint.model,
        messages,
        stream: true,
        stream_options: StreamOptions { include_usage: true },
        max_tokens,
        max_completion_tokens,
        tools: request
            .tools
            .iter()
            .map(|tool| WireTool {
                kind: "function",
                function: WireFunctionDef {
                    name: &tool.name,
                    description: &tool.description,
                    parameters: &tool.input_schema,
                },
            })
            .collect(),
        tool_choice: request
            .tool_choice
            .as_deref()
            .filter(|_| !request.tools.is_empty())
            .map(|name| WireToolChoice { kind: "function", function: WireChoiceName { name } }),
    }
}

/// Translates one neutral message into one or more OpenAI messages.
fn push_messages<'a>(message: &'a Message, out: &mut Vec<WireMessage<'a>>) {
    match message.role {
        Role::User => {
            // Tool results become `tool` messages. They must directly follow the assistant
            // message holding the calls, so they go before any text of the same user turn.
            for part in &message.parts {
                match part {
                    Part::ToolResult { call_id, content, is_error } => {
                        out.push(WireMessage::Tool {
                            tool_call_id: call_id,
                            // The API has no error flag for tool results; say it in the content.
                            content: if *is_error { format!("Error: {content}") } else { content.clone() },
                        })
                    }
                    Part::ToolCall(call) => {
                        tracing::warn!(tool = %call.name, "dropping a tool call found in a user message");
                    }
                    Part::Text { .. } => {}
                }
            }
            let text = message.text();
            let has_tool_results = message.parts.iter().any(|part| matches!(part, Part::ToolResult { .. }));
            if !text.is_empty() || !has_tool_results {
                out.push(WireMessage::User { content: text });
            }
        }
        Role::Assistant => {
            let tool_calls: Vec<_> = message
                .parts
                .iter()
                .filter_map(|part| match part {
                    Part::ToolCall(call) => Some(WireToolCall {
                        id: &call.id,
                        kind: "function",
                        function: WireFunctionCall { name: &call.name, arguments: call.arguments.to_string() },
                    }),
                    _ => None,
                })
                .collect();
            let text = message.text();
            out.push(WireMessage::Assistant { content: text, tool_calls });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Stream decoding

/// One `chat.completion.chunk`. Every field is optional because OpenAI-compatible servers differ
/// in what they leave out.
#[derive(Debug, Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<WireUsage>,
    /// Some servers report failures inside the stream as `{"error": {...}}`.
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    #[serde(default)]
    index: u32,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    /// The model's reasoning: `reasoning_content` (DeepSeek, vLLM, llama.cpp's server), `reasoning` (Ollama,
    /// OpenRouter, LM Studio).
    #[serde(default, alias = "reasoning")]
    reasoning_content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Debug, Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

/// A tool call being assembled from fragments.
#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Decodes a whole streamed Chat Completions body, given as the chunks it arrived in, as a live completion would be:
/// the neutral events, then the error that ended the stream, if any. For property tests and fuzzing.
pub fn decode_body(chunks: &[&[u8]]) -> Vec<Result<StreamEvent, LlmError>> {
    transport::decode_chunks(Decoder::default(), chunks)
}

/// Decoder state for one completion.
#[derive(Debug, Default)]
struct Decoder {
    /// Tool calls by their `index`; arguments are only parsed once the call is complete.
    calls: BTreeMap<u32, PartialCall>,
    /// Set once `finish_reason` arrived.
    stop: Option<StopReason>,
    /// Latest usage seen; emitted once, just before `Stop`.
    usage: Option<Usage>,
}

impl SseDecoder for Decoder {
    fn on_event(&mut self, event: SseEvent, out: &mut Vec<StreamEvent>) -> Result<Progress, LlmError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.complete(out)?;
            return Ok(Progress::Done);
        }
        if data.is_empty() {
            return Ok(Progress::Continue);
        }
        let chunk: Chunk = transport::parse_json(data)?;
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            return Err(stream_error(&error));
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(Usage { input_tokens: usage.prompt_tokens, output_tokens: usage.completion_tokens });
        }
        // Only one choice is requested; ignore any other (`n > 1` is never sent).
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            if self.stop.is_some() {
                tracing::debug!("ignoring a delta after finish_reason");
                continue;
            }
            let delta = choice.delta.unwrap_or_default();
            if let Some(reasoning) = delta.reasoning_content.filter(|r| !r.is_empty()) {
                out.push(StreamEvent::ReasoningDelta(reasoning));
            }
            for text in [delta.content, delta.refusal].into_iter().flatten() {
                if !text.is_empty() {
                    out.push(StreamEvent::TextDelta(text));
                }
            }
            for fragment in delta.tool_calls.into_iter().flatten() {
                self.accumulate(fragment);
            }
            if let Some(reason) = choice.finish_reason {
                let had_calls = !self.calls.is_empty();
                self.flush_calls(out);
                let mut stop = stop_reason(&reason);
                // Some local servers (older Ollama) report "stop" even when the turn ended in
                // tool calls; the caller must still run them.
                if had_calls && stop == StopReason::EndTurn {
                    stop = StopReason::ToolUse;
                }
                self.stop = Some(stop);
            }
        }
        Ok(Progress::Continue)
    }

    fn on_eof(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        if self.stop.is_some() {
            // Some servers close right after the finish_reason chunk without `[DONE]`; the answer is complete.
            self.complete(out)
        } else {
            Err(LlmError::Protocol("stream ended before the completion finished".into()))
        }
    }
}

impl Decoder {
    fn accumulate(&mut self, fragment: ToolCallDelta) {
        let index = match fragment.index {
            Some(index) => index,
            // A server that leaves out `index` is assumed to send calls one after another: a new
            // id starts a new call, anything else continues the last one.
            None => match self.calls.last_key_value() {
                Some((&last, call)) => {
                    last + u32::from(fragment.id.as_ref().is_some_and(|id| !id.is_empty() && call.id != *id))
                }
                None => 0,
            },
        };
        let call = self.calls.entry(index).or_default();
        if let Some(id) = fragment.id.filter(|id| !id.is_empty()) {
            call.id = id;
        }
        if let Some(function) = fragment.function {
            if let Some(name) = function.name.filter(|name| !name.is_empty()) {
                call.name = name;
            }
            if let Some(arguments) = function.arguments {
                call.arguments.push_str(&arguments);
            }
        }
    }

    /// Parses every accumulated tool call (once) and emits them in index order; one without a name or with
    /// arguments that are not JSON (cut off, say) is emitted as broken, for the model to be told.
    fn flush_calls(&mut self, out: &mut Vec<StreamEvent>) {
        for (index, call) in std::mem::take(&mut self.calls) {
            // Some local servers send no id; the id only needs to be unique in this turn.
            let id = if call.id.is_empty() { format!("call_{index}") } else { call.id };
            if call.name.is_empty() {
                let problem = "the call has no function name".to_string();
                out.push(StreamEvent::BrokenCall(BrokenCall { id, name: call.name, problem }));
                continue;
            }
            match transport::parse_arguments(&call.name, &call.arguments) {
                Ok(arguments) => out.push(StreamEvent::ToolCall(ToolCall { id, name: call.name, arguments })),
                Err(e) => {
                    tracing::debug!(error = %e, "a tool call's arguments are not JSON");
                    let problem = transport::arguments_problem(&call.arguments);
                    out.push(StreamEvent::BrokenCall(BrokenCall { id, name: call.name, problem }));
                }
            }
        }
    }

    /// Ends the completion: remaining tool calls, usage, then `Stop`.
    fn complete(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        let had_calls = !self.calls.is_empty();
        self.flush_calls(out);
        if let Some(usage) = self.usage.take() {
            out.push(StreamEvent::Usage(usage));
        }
        let stop = self.stop.unwrap_or(if had_calls { StopReason::ToolUse } else { StopReason::Other });
        out.push(StreamEvent::Stop(stop));
        Ok(())
    }
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "stop" => StopReason::EndTurn,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "length" => StopReason::MaxTokens,
        _ => StopReason::Other,
    }
}

/// Maps an `{"error": {...}}` object sent inside the stream.
fn stream_error(error: &serde_json::Value) -> LlmError {
    let field = |name: &str| error.get(name).and_then(|v| v.as_str()).unwrap_or_default().to_ascii_lowercase();
    let (kind, code, message) = (field("type"), field("code"), field("message"));
    tracing::warn!(%kind, %code, %message, "model provider reported an error mid-stream");
    let says = |needle: &str| [&kind, &code, &message].iter().any(|s| s.contains(needle));
    if says("overloaded") {
        return LlmError::Overloaded;
    }
    if says("rate_limit") || says("rate limit") {
        return LlmError::RateLimited { retry_after: None };
    }
    // vLLM and friends put the HTTP status in a numeric `code`.
    let status = error
        .get("code")
        .and_then(|v| v.as_u64())
        .and_then(|code| u16::try_from(code).ok())
        .and_then(|code| reqwest::StatusCode::from_u16(code).ok())
        .filter(|status| status.is_client_error() || status.is_server_error());
    match status {
        Some(status) => transport::classify_status(status, None, ""),
        None => LlmError::Upstream { status: 500 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Decodes one `data:` event per line.
    fn decode(lines: &[&str]) -> Vec<Result<StreamEvent, String>> {
        let body: String = lines.iter().map(|line| format!("data: {line}\n\n")).collect();
        decode_body(&[body.as_bytes()]).into_iter().map(|item| item.map_err(|e| e.code().to_owned())).collect()
    }

    #[test]
    fn calls_without_index_are_told_apart_by_id() {
        let events = decode(&[
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"b","function":{"name":"g","arguments":"{\"x\""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":":1}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            "[DONE]",
        ]);
        assert_eq!(
            events,
            vec![
                Ok(StreamEvent::ToolCall(ToolCall { id: "a".into(), name: "f".into(), arguments: json!({}) })),
                Ok(StreamEvent::ToolCall(ToolCall { id: "b".into(), name: "g".into(), arguments: json!({"x": 1}) })),
                Ok(StreamEvent::Stop(StopReason::ToolUse)),
            ]
        );
    }

    #[test]
    fn tool_calls_with_finish_reason_stop_still_end_in_tool_use() {
        let events = decode(&[
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"stop"}]}"#,
            "[DONE]",
        ]);
        assert_eq!(events.last(), Some(&Ok(StreamEvent::Stop(StopReason::ToolUse))));
    }

    #[test]
    fn finish_without_done_is_complete_but_bare_eof_is_not() {
        let events = decode(&[r#"{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"length"}]}"#]);
        assert_eq!(events, vec![Ok(StreamEvent::TextDelta("hi".into())), Ok(StreamEvent::Stop(StopReason::MaxTokens))]);
        let events = decode(&[r#"{"choices":[{"index":0,"delta":{"content":"hi"}}]}"#]);
        assert_eq!(events.last(), Some(&Err("upstream_protocol".to_owned())));
    }

    #[test]
    fn in_stream_errors() {
        let events = decode(&[r#"{"error":{"message":"Overloaded","type":"server_error"}}"#]);
        assert_eq!(events, vec![Err("overloaded".to_owned())]);
        let events = decode(&[r#"{"error":{"message":"bad","type":"BadRequestError","code":400}}"#]);
        assert_eq!(events, vec![Err("upstream_error".to_owned())]);
    }

    #[test]
    fn tool_results_and_text_translation() {
        let request = ChatRequest {
            system: String::new(),
            messages: vec![Message {
                role: Role::User,
                parts: vec![
                    Part::Text { text: "and now?".into() },
                    Part::ToolResult { call_id: "c1".into(), content: "boom".into(), is_error: true },
                ],
            }],
            tools: vec![],
            max_tokens: 0,
            tool_choice: None,
        };
        let config = OpenAiConfig::with_base_url("http://localhost:8080/v1", "m");
        let body = serde_json::to_value(wire_request(&config, &request)).unwrap();
        assert_eq!(
            body["messages"],
            json!([
                {"role": "tool", "tool_call_id": "c1", "content": "Error: boom"},
                {"role": "user", "content": "and now?"}
            ])
        );
        assert!(body.get("max_tokens").is_none());
        assert!(body.get("tools").is_none());
    }
}
