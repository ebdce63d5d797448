//! The named events of a chat turn's Server-Sent-Events stream.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Artifact, Usage};

/// One event of a chat turn. On the wire the SSE `event:` line carries [`ChatEvent::name`] and the
/// `data:` line the JSON of the variant's fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(tag = "event", content = "data", rename_all = "snake_case")]
pub enum ChatEvent {
    /// The thread got its title (first message of a thread).
    ThreadName { thread_id: Uuid, title: String },
    /// More answer text.
    TextDelta { text: String },
    /// A tool started.
    ToolExecuting { tool: String, input: serde_json::Value },
    /// A document was saved.
    ArtifactCreated { artifact: Artifact },
    /// The turn ended; `message_id` is `None` when no message was saved.
    MessageComplete { message_id: Option<Uuid>, usage: Usage },
    /// The turn failed; text so far is kept.
    Error { code: String, message: String },
}

impl ChatEvent {
    /// The SSE event name.
    pub fn name(&self) -> &'static str {
        match self {
            ChatEvent::ThreadName { .. } => "thread_name",
            ChatEvent::TextDelta { .. } => "text_delta",
            ChatEvent::ToolExecuting { .. } => "tool_executing",
            ChatEvent::ArtifactCreated { .. } => "artifact_created",
            ChatEvent::MessageComplete { .. } => "message_complete",
            ChatEvent::Error { .. } => "error",
        }
    }

    /// The JSON of the SSE `data:` line.
    pub fn data_json(&self) -> String {
        let mut value = serde_json::to_value(self).unwrap_or_default();
        value.get_mut("data").map(serde_json::Value::take).unwrap_or_default().to_string()
    }

    /// Rebuilds an event from its SSE name and data.
    pub fn from_parts(name: &str, data: &str) -> Option<Self> {
        let data: serde_json::Value = serde_json::from_str(data).ok()?;
        serde_json::from_value(serde_json::json!({ "event": name, "data": data })).ok()
    }

    /// Whether this event ends the turn.
    pub fn is_terminal(&self) -> bool {
        matches!(self, ChatEvent::MessageComplete { .. } | ChatEvent::Error { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_and_data_round_trip() {
        let event = ChatEvent::TextDelta { text: "hello".into() };
        assert_eq!(event.name(), "text_delta");
        assert_eq!(event.data_json(), r#"{"text":"hello"}"#);
        assert_eq!(ChatEvent::from_parts(event.name(), &event.data_json()), Some(event));
    }

    #[test]
    fn message_complete_keeps_null_id() {
        let event = ChatEvent::MessageComplete { message_id: None, usage: Usage::default() };
        assert_eq!(event.data_json(), r#"{"message_id":null,"usage":{"input_tokens":0,"output_tokens":0}}"#);
        assert!(event.is_terminal());
    }
}
