//! Traces: the steps one chat turn took to write an answer (each model call and each tool call), as they are
//! stored, served by `GET /api/messages/{id}/trace` and `GET /api/turns/{id}/trace`, exported and shown.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Longest tool result kept in a trace, in characters: the rest of it is what the model read, not what people
/// look for in a trace.
pub const TRACE_RESULT_CHARS: usize = 500;
/// Longest text kept of one value in a tool call's arguments, in characters (a document's whole text is in the
/// document itself).
pub const TRACE_ARGUMENT_CHARS: usize = 1_000;

/// The steps of one turn, in the order they were taken.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Trace {
    /// The turn that took the steps: the `<turn>` of its events' ids and of an error's reference.
    pub turn_id: Uuid,
    pub thread_id: Uuid,
    /// The answer the turn kept; `None` for a silent generation or a turn that failed before writing anything.
    #[serde(default)]
    pub message_id: Option<Uuid>,
    #[serde(default)]
    pub steps: Vec<TraceStep>,
}

/// One step of a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TraceStep {
    /// A request to the model, answered or failed.
    ModelCall(ModelCall),
    /// A tool the model called, run by Quire.
    ToolCall(ToolCallStep),
}

/// What a model call was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum CallPurpose {
    /// Writing the answer (or, in a silent turn, the document).
    Answer,
    /// Naming the conversation.
    Title,
}

/// Why a model call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer.
    EndTurn,
    /// The model asked for tools.
    ToolUse,
    /// The model reached the longest answer allowed.
    MaxTokens,
    /// The provider gave another reason.
    Other,
    /// The person stopped the answer.
    Stopped,
}

/// A failure, told plainly: the same words for every failure of a kind, no addresses or host names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StepError {
    /// Stable machine-readable kind, as in the chat stream's `error` event (`rate_limited`, `upstream_error`...).
    pub code: String,
    pub message: String,
}

/// One request to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ModelCall {
    pub purpose: CallPurpose,
    /// Provider as configured (`builtin`, `openai`, `anthropic`).
    pub provider: String,
    pub model: String,
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    /// The tokens were counted by Quire (the request sent, the answer received so far): the call ended before
    /// the provider reported them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub counted: bool,
    /// Milliseconds from sending the request to the first text or tool call; `None` when none came.
    #[serde(default)]
    pub first_token_ms: Option<u64>,
    /// Milliseconds from sending the request to its end (retries of a failed start included).
    pub duration_ms: u64,
    /// `None` when the call failed.
    #[serde(default)]
    pub stop_reason: Option<StopReason>,
    #[serde(default)]
    pub error: Option<StepError>,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub started_at: DateTime<Utc>,
}

/// One tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ToolCallStep {
    pub name: String,
    /// The arguments the model gave, long texts shortened to [`TRACE_ARGUMENT_CHARS`].
    #[serde(default)]
    pub arguments: serde_json::Value,
    /// The start of what the tool answered (at most [`TRACE_RESULT_CHARS`]); `None` when it failed.
    #[serde(default)]
    pub result: Option<String>,
    /// What the tool answered when it failed.
    #[serde(default)]
    pub error: Option<String>,
    pub duration_ms: u64,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub started_at: DateTime<Utc>,
}

/// `text` cut to at most `max` characters, an ellipsis marking the cut.
pub fn shortened(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((end, _)) => format!("{}…", &text[..end]),
    }
}

/// `value` with every string in it cut to at most `max` characters.
pub fn shortened_strings(value: &serde_json::Value, max: usize) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(s) => Value::String(shortened(s, max)),
        Value::Array(items) => Value::Array(items.iter().map(|v| shortened_strings(v, max)).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), shortened_strings(v, max))).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn long_texts_are_cut_on_characters() {
        assert_eq!(shortened("short", 10), "short");
        assert_eq!(shortened("ääääää", 3), "äää…");
        assert_eq!(shortened("exact", 5), "exact");
        let long = json!({"title": "T", "content": "x".repeat(50), "tags": ["y".repeat(20)], "n": 3});
        assert_eq!(
            shortened_strings(&long, 10),
            json!({"title": "T", "content": format!("{}…", "x".repeat(10)), "tags": [format!("{}…", "y".repeat(10))], "n": 3})
        );
    }

    #[test]
    fn steps_carry_their_kind() {
        let step = TraceStep::ToolCall(ToolCallStep {
            name: "save_artifact".into(),
            arguments: json!({"title": "Stories"}),
            result: Some("Saved.".into()),
            error: None,
            duration_ms: 4,
            started_at: Default::default(),
        });
        let value = serde_json::to_value(&step).unwrap();
        assert_eq!(value["kind"], "tool_call");
        assert_eq!(value["name"], "save_artifact");
        assert_eq!(serde_json::from_value::<TraceStep>(value).unwrap(), step);
    }
}
