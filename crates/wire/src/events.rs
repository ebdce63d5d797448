//! The named events of a chat turn's Server-Sent-Events stream.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{ApprovalState, Artifact, ToolApproval, Usage};

/// One event of a chat turn. On the wire the SSE `event:` line carries [`ChatEvent::name`] and the
/// `data:` line the JSON of the variant's fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "event", content = "data", rename_all = "snake_case")]
pub enum ChatEvent {
    /// The thread got its title (first message of a thread).
    ThreadName { thread_id: Uuid, title: String },
    /// More answer text.
    TextDelta { text: String },
    /// More of the model's reasoning (shown folded beside the answer while it streams; never part of its text).
    ReasoningDelta { text: String },
    /// A tool started.
    ToolExecuting { tool: String, input: serde_json::Value },
    /// A document was saved.
    ArtifactCreated { artifact: Artifact },
    /// A call of an MCP tool asks the person first: the turn waits until someone who writes in the conversation
    /// approves or denies it (`POST /api/threads/{id}/approvals/{approval_id}`), or it expires.
    ApprovalRequested { approval: ToolApproval },
    /// The question was answered (or expired): the call ran only when `approved`.
    ApprovalDecided { approval_id: Uuid, state: ApprovalState },
    /// The turn ended; `message_id` is `None` when no message was saved. `stopped`: the person stopped it, so the
    /// answer was cut short (sent only when true).
    MessageComplete {
        message_id: Option<Uuid>,
        usage: Usage,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        stopped: bool,
        /// The model that wrote the answer (sent when one was saved).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    /// The turn failed; text so far is kept.
    Error { code: String, message: String },
}

impl ChatEvent {
    /// The SSE event name.
    pub fn name(&self) -> &'static str {
        match self {
            ChatEvent::ThreadName { .. } => "thread_name",
            ChatEvent::TextDelta { .. } => "text_delta",
            ChatEvent::ReasoningDelta { .. } => "reasoning_delta",
            ChatEvent::ToolExecuting { .. } => "tool_executing",
            ChatEvent::ArtifactCreated { .. } => "artifact_created",
            ChatEvent::ApprovalRequested { .. } => "approval_requested",
            ChatEvent::ApprovalDecided { .. } => "approval_decided",
            ChatEvent::MessageComplete { .. } => "message_complete",
            ChatEvent::Error { .. } => "error",
        }
    }

    /// The JSON of the SSE `data:` line: the variant's fields, as the derived `Serialize` writes them under
    /// `data`. Written straight to text: every delta goes through here at least twice (to its listeners, and
    /// to the store), and going through a `serde_json::Value` built a map and copied the text first.
    pub fn data_json(&self) -> String {
        #[derive(Serialize)]
        #[serde(untagged)]
        enum Data<'a> {
            ThreadName {
                thread_id: &'a Uuid,
                title: &'a str,
            },
            TextDelta {
                text: &'a str,
            },
            ToolExecuting {
                tool: &'a str,
                input: &'a serde_json::Value,
            },
            ArtifactCreated {
                artifact: &'a Artifact,
            },
            ApprovalRequested {
                approval: &'a ToolApproval,
            },
            ApprovalDecided {
                approval_id: &'a Uuid,
                state: ApprovalState,
            },
            MessageComplete {
                message_id: &'a Option<Uuid>,
                usage: &'a Usage,
                #[serde(skip_serializing_if = "std::ops::Not::not")]
                stopped: bool,
                #[serde(skip_serializing_if = "Option::is_none")]
                model: &'a Option<String>,
            },
            Error {
                code: &'a str,
                message: &'a str,
            },
        }
        let data = match self {
            ChatEvent::ThreadName { thread_id, title } => Data::ThreadName { thread_id, title },
            ChatEvent::TextDelta { text } | ChatEvent::ReasoningDelta { text } => Data::TextDelta { text },
            ChatEvent::ToolExecuting { tool, input } => Data::ToolExecuting { tool, input },
            ChatEvent::ArtifactCreated { artifact } => Data::ArtifactCreated { artifact },
            ChatEvent::ApprovalRequested { approval } => Data::ApprovalRequested { approval },
            ChatEvent::ApprovalDecided { approval_id, state } => Data::ApprovalDecided { approval_id, state: *state },
            ChatEvent::MessageComplete { message_id, usage, stopped, model } => {
                Data::MessageComplete { message_id, usage, stopped: *stopped, model }
            }
            ChatEvent::Error { code, message } => Data::Error { code, message },
        };
        // Nothing here can fail to serialise: no map has keys that are not strings.
        serde_json::to_string(&data).unwrap_or_default()
    }

    /// Rebuilds an event from its SSE name and data, read by the name: the derived `Deserialize` of an adjacently
    /// tagged enum buffers through serde's generic content, the largest JSON code in the browser bundle.
    pub fn from_parts(name: &str, data: &str) -> Option<Self> {
        use serde_json::from_str;

        #[derive(Deserialize)]
        struct ThreadName {
            thread_id: Uuid,
            title: String,
        }
        #[derive(Deserialize)]
        struct TextDelta {
            text: String,
        }
        #[derive(Deserialize)]
        struct ToolExecuting {
            tool: String,
            input: serde_json::Value,
        }
        #[derive(Deserialize)]
        struct ArtifactCreated {
            artifact: Artifact,
        }
        #[derive(Deserialize)]
        struct ApprovalRequested {
            approval: ToolApproval,
        }
        #[derive(Deserialize)]
        struct ApprovalDecided {
            approval_id: Uuid,
            state: ApprovalState,
        }
        #[derive(Deserialize)]
        struct MessageComplete {
            message_id: Option<Uuid>,
            usage: Usage,
            #[serde(default)]
            stopped: bool,
            #[serde(default)]
            model: Option<String>,
        }
        #[derive(Deserialize)]
        struct Error {
            code: String,
            message: String,
        }

        Some(match name {
            "thread_name" => {
                let ThreadName { thread_id, title } = from_str(data).ok()?;
                ChatEvent::ThreadName { thread_id, title }
            }
            "text_delta" => {
                let TextDelta { text } = from_str(data).ok()?;
                ChatEvent::TextDelta { text }
            }
            "reasoning_delta" => {
                let TextDelta { text } = from_str(data).ok()?;
                ChatEvent::ReasoningDelta { text }
            }
            "tool_executing" => {
                let ToolExecuting { tool, input } = from_str(data).ok()?;
                ChatEvent::ToolExecuting { tool, input }
            }
            "artifact_created" => {
                let ArtifactCreated { artifact } = from_str(data).ok()?;
                ChatEvent::ArtifactCreated { artifact }
            }
            "approval_requested" => {
                let ApprovalRequested { approval } = from_str(data).ok()?;
                ChatEvent::ApprovalRequested { approval }
            }
            "approval_decided" => {
                let ApprovalDecided { approval_id, state } = from_str(data).ok()?;
                ChatEvent::ApprovalDecided { approval_id, state }
            }
            "message_complete" => {
                let MessageComplete { message_id, usage, stopped, model } = from_str(data).ok()?;
                ChatEvent::MessageComplete { message_id, usage, stopped, model }
            }
            "error" => {
                let Error { code, message } = from_str(data).ok()?;
                ChatEvent::Error { code, message }
            }
            _ => return None,
        })
    }

    /// Whether this event ends the turn.
    pub fn is_terminal(&self) -> bool {
        matches!(self, ChatEvent::MessageComplete { .. } | ChatEvent::Error { .. })
    }

    /// Whether an event of this name ends the turn: the name alone tells, without reading its data.
    pub fn name_ends_turn(name: &str) -> bool {
        matches!(name, "message_complete" | "error")
    }
}

/// A change to a conversation that everyone watching it sees without a reload, from
/// `GET /api/threads/{id}/changes` (SSE; the `event:` line carries [`ThreadChange::name`], the `data:` line the
/// JSON of the variant's fields). Sent for every instance's changes, whoever made them: a person's save or
/// restore, the assistant's new version, a deletion, an answer started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "event", content = "data", rename_all = "snake_case")]
pub enum ThreadChange {
    /// A document got a new version (or its first).
    ArtifactSaved { artifact: Artifact },
    /// A document was deleted with all its versions.
    ArtifactDeleted { artifact_id: Uuid },
    /// Someone who writes in the conversation (its author, or an editor of its project) started an answer: read
    /// the conversation again and follow the answer with `GET .../stream`.
    TurnStarted { turn_id: Uuid },
}

impl ThreadChange {
    /// Every SSE event name a change has.
    pub const NAMES: [&'static str; 3] = ["artifact_saved", "artifact_deleted", "turn_started"];

    /// The SSE event name.
    pub fn name(&self) -> &'static str {
        match self {
            ThreadChange::ArtifactSaved { .. } => "artifact_saved",
            ThreadChange::ArtifactDeleted { .. } => "artifact_deleted",
            ThreadChange::TurnStarted { .. } => "turn_started",
        }
    }

    /// The JSON of the SSE `data:` line.
    pub fn data_json(&self) -> String {
        let data = match self {
            ThreadChange::ArtifactSaved { artifact } => serde_json::json!({ "artifact": artifact }),
            ThreadChange::ArtifactDeleted { artifact_id } => serde_json::json!({ "artifact_id": artifact_id }),
            ThreadChange::TurnStarted { turn_id } => serde_json::json!({ "turn_id": turn_id }),
        };
        data.to_string()
    }

    /// Rebuilds a change from its SSE name and data; `None` for a name this version does not know.
    pub fn from_parts(name: &str, data: &str) -> Option<Self> {
        #[derive(Deserialize)]
        struct Saved {
            artifact: Artifact,
        }
        #[derive(Deserialize)]
        struct Deleted {
            artifact_id: Uuid,
        }
        #[derive(Deserialize)]
        struct Started {
            turn_id: Uuid,
        }
        match name {
            "artifact_saved" => {
                serde_json::from_str::<Saved>(data).ok().map(|d| ThreadChange::ArtifactSaved { artifact: d.artifact })
            }
            "artifact_deleted" => serde_json::from_str::<Deleted>(data)
                .ok()
                .map(|d| ThreadChange::ArtifactDeleted { artifact_id: d.artifact_id }),
            "turn_started" => {
                serde_json::from_str::<Started>(data).ok().map(|d| ThreadChange::TurnStarted { turn_id: d.turn_id })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_thread_change_is_named_and_comes_back() {
        let changes = [
            ThreadChange::ArtifactDeleted { artifact_id: Uuid::nil() },
            ThreadChange::TurnStarted { turn_id: Uuid::from_u128(7) },
        ];
        for change in changes {
            assert!(ThreadChange::NAMES.contains(&change.name()));
            assert_eq!(ThreadChange::from_parts(change.name(), &change.data_json()), Some(change));
        }
    }

    #[test]
    fn name_and_data_round_trip() {
        let event = ChatEvent::TextDelta { text: "hello".into() };
        assert_eq!(event.name(), "text_delta");
        assert_eq!(event.data_json(), r#"{"text":"hello"}"#);
        assert_eq!(ChatEvent::from_parts(event.name(), &event.data_json()), Some(event));
    }

    /// One event of each kind; the match fails to compile when a variant is added without a case in `from_parts`.
    fn one_of_each() -> Vec<ChatEvent> {
        let artifact = Artifact {
            id: Uuid::from_u128(1),
            thread_id: Uuid::from_u128(2),
            artifact_type: crate::ArtifactType::UserStories,
            title: "Stories".into(),
            content: "# A\n- b".into(),
            version: 2,
            request_message_id: Some(Uuid::from_u128(3)),
            assistant_message_id: None,
            requirements: Vec::new(),
            out_of_date: Vec::new(),
            cited_conversations: Vec::new(),
            created_at: chrono::DateTime::from_timestamp(1_790_000_000, 0).unwrap(),
        };
        let events = vec![
            ChatEvent::ThreadName { thread_id: Uuid::from_u128(7), title: "T \"q\"".into() },
            ChatEvent::TextDelta { text: "h\u{e9} <b>\n".into() },
            ChatEvent::ReasoningDelta { text: "first, \"think\"".into() },
            ChatEvent::ToolExecuting { tool: "write".into(), input: serde_json::json!({ "a": [1, null, "x", 2.5] }) },
            ChatEvent::ArtifactCreated { artifact },
            ChatEvent::ApprovalRequested {
                approval: ToolApproval {
                    id: Uuid::from_u128(11),
                    thread_id: Uuid::from_u128(2),
                    turn_id: Uuid::from_u128(12),
                    server: "tracker".into(),
                    label: "Issue \"tracker\"".into(),
                    tool: "delete_issue".into(),
                    input: serde_json::json!({ "id": 7, "why": ["dup", null] }),
                    state: ApprovalState::Pending,
                    created_at: chrono::DateTime::from_timestamp(1_790_000_100, 0).unwrap(),
                    decided_at: None,
                },
            },
            ChatEvent::ApprovalDecided { approval_id: Uuid::from_u128(11), state: ApprovalState::Denied },
            ChatEvent::MessageComplete {
                message_id: Some(Uuid::from_u128(9)),
                usage: Usage { input_tokens: 3, output_tokens: 4 },
                stopped: false,
                model: Some("quire-builtin-2".into()),
            },
            ChatEvent::MessageComplete {
                message_id: Some(Uuid::from_u128(8)),
                usage: Usage::default(),
                stopped: true,
                model: None,
            },
            ChatEvent::MessageComplete { message_id: None, usage: Usage::default(), stopped: false, model: None },
            ChatEvent::Error { code: "c".into(), message: "m".into() },
        ];
        for event in &events {
            match event {
                ChatEvent::ThreadName { .. }
                | ChatEvent::TextDelta { .. }
                | ChatEvent::ReasoningDelta { .. }
                | ChatEvent::ToolExecuting { .. }
                | ChatEvent::ArtifactCreated { .. }
                | ChatEvent::ApprovalRequested { .. }
                | ChatEvent::ApprovalDecided { .. }
                | ChatEvent::MessageComplete { .. }
                | ChatEvent::Error { .. } => {}
            }
        }
        events
    }

    #[test]
    fn every_kind_of_change_round_trips() {
        let artifact = match one_of_each().into_iter().find_map(|e| match e {
            ChatEvent::ArtifactCreated { artifact } => Some(artifact),
            _ => None,
        }) {
            Some(a) => a,
            None => unreachable!("one_of_each has a document"),
        };
        for change in
            [ThreadChange::ArtifactDeleted { artifact_id: artifact.id }, ThreadChange::ArtifactSaved { artifact }]
        {
            assert_eq!(ThreadChange::from_parts(change.name(), &change.data_json()), Some(change));
        }
        assert_eq!(ThreadChange::from_parts("later_kind", "{}"), None);
    }

    #[test]
    fn every_kind_of_event_round_trips() {
        for event in one_of_each() {
            assert_eq!(ChatEvent::from_parts(event.name(), &event.data_json()), Some(event));
        }
    }

    #[test]
    fn data_is_what_the_derived_serialize_writes_under_data() {
        for event in one_of_each() {
            let derived = serde_json::to_value(&event).unwrap();
            let data: serde_json::Value = serde_json::from_str(&event.data_json()).unwrap();
            assert_eq!(data, derived["data"], "{}", event.name());
        }
    }

    #[test]
    fn the_name_alone_tells_whether_an_event_ends_the_turn() {
        for event in one_of_each() {
            assert_eq!(ChatEvent::name_ends_turn(event.name()), event.is_terminal(), "{}", event.name());
        }
    }

    #[test]
    fn from_parts_reads_what_the_derived_deserialize_reads() {
        for event in one_of_each() {
            let data = event.data_json();
            let derived: ChatEvent =
                serde_json::from_str(&format!(r#"{{"event":"{}","data":{data}}}"#, event.name())).unwrap();
            assert_eq!(ChatEvent::from_parts(event.name(), &data), Some(derived));
        }
        // Extra fields are ignored and a missing optional id is none, as with the derived implementation.
        assert_eq!(
            ChatEvent::from_parts("text_delta", r#"{"text":"a","extra":1}"#),
            Some(ChatEvent::TextDelta { text: "a".into() })
        );
        assert_eq!(
            ChatEvent::from_parts("message_complete", r#"{"usage":{"input_tokens":1,"output_tokens":2}}"#),
            Some(ChatEvent::MessageComplete {
                message_id: None,
                usage: Usage { input_tokens: 1, output_tokens: 2 },
                stopped: false,
                model: None,
            })
        );
        assert_eq!(ChatEvent::from_parts("unknown", r#"{"text":"a"}"#), None);
        assert_eq!(ChatEvent::from_parts("error", r#"{"code":"x"}"#), None, "a field is missing");
        assert_eq!(ChatEvent::from_parts("text_delta", r#"{"text":"a"}}"#), None);
    }

    #[test]
    fn message_complete_keeps_null_id() {
        let event =
            ChatEvent::MessageComplete { message_id: None, usage: Usage::default(), stopped: false, model: None };
        assert_eq!(event.data_json(), r#"{"message_id":null,"usage":{"input_tokens":0,"output_tokens":0}}"#);
        assert!(event.is_terminal());
        let stopped =
            ChatEvent::MessageComplete { message_id: None, usage: Usage::default(), stopped: true, model: None };
        assert_eq!(
            stopped.data_json(),
            r#"{"message_id":null,"usage":{"input_tokens":0,"output_tokens":0},"stopped":true}"#
        );
        let written = ChatEvent::MessageComplete {
            message_id: None,
            usage: Usage::default(),
            stopped: false,
            model: Some("gpt-4o".into()),
        };
        assert!(written.data_json().ends_with(r#","model":"gpt-4o"}"#), "{}", written.data_json());
    }
}
