//! The tools the model may call, and how Quire carries them out.

use app::api::{Artifact, ArtifactType};
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

use crate::llm::ToolSpec;
use crate::store::{DynStore, NewArtifact};

pub const SAVE_ARTIFACT: &str = "save_artifact";

/// The `save_artifact` tool. Its description asks for one call per request and never for earlier requests.
pub fn save_artifact_spec() -> ToolSpec {
    ToolSpec {
        name: SAVE_ARTIFACT.into(),
        description:
            "Save a document (artifact) for the person. Call this ONCE per user request, only for the document \
                      the latest message asks for. Never call it for earlier requests in the conversation history: \
                      those documents already exist."
                .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "artifact_type": {
                    "type": "string",
                    "enum": ArtifactType::ALL.iter().map(|t| t.as_str()).collect::<Vec<_>>(),
                    "description": "The kind of document."
                },
                "title": { "type": "string", "description": "A short, specific title." },
                "content": { "type": "string", "description": "The whole document in Markdown." }
            },
            "required": ["artifact_type", "title", "content"],
            "additionalProperties": false
        }),
    }
}

#[derive(Debug, Deserialize)]
struct SaveArtifactInput {
    artifact_type: String,
    title: String,
    content: String,
}

/// What a tool call produced: the text for the model and, for documents, the saved artifact.
#[derive(Debug)]
pub struct ToolOutcome {
    pub result: String,
    pub is_error: bool,
    pub artifact: Option<Artifact>,
    /// Whether the artifact was made by this call (false when the turn's guard returned an earlier one).
    pub created: bool,
}

impl ToolOutcome {
    fn error(message: impl Into<String>) -> Self {
        Self { result: message.into(), is_error: true, artifact: None, created: false }
    }
}

/// Where the tools of one turn act.
pub struct ToolContext<'a> {
    pub store: &'a DynStore,
    pub user: Uuid,
    pub thread: Uuid,
    /// The user message of this turn; `None` for silent generation.
    pub request_message: Option<Uuid>,
    /// Documents saved so far in this turn (the guard against duplicate calls).
    pub saved: &'a mut Vec<Artifact>,
}

/// Runs `save_artifact`. Within one turn a second call with the same type and title returns the first document.
pub async fn save_artifact(ctx: &mut ToolContext<'_>, input: &serde_json::Value) -> ToolOutcome {
    let input: SaveArtifactInput = match serde_json::from_value(input.clone()) {
        Ok(i) => i,
        Err(e) => return ToolOutcome::error(format!("Invalid save_artifact input: {e}")),
    };
    let Some(artifact_type) = ArtifactType::parse(&input.artifact_type) else {
        return ToolOutcome::error(format!("Unknown artifact_type '{}'.", input.artifact_type));
    };
    let title = input.title.trim();
    if title.is_empty() || input.content.trim().is_empty() {
        return ToolOutcome::error("save_artifact needs a non-empty title and content.");
    }
    let title: String = title.chars().take(500).collect();
    if let Some(existing) =
        ctx.saved.iter().find(|a| a.artifact_type == artifact_type && a.title.eq_ignore_ascii_case(&title))
    {
        return ToolOutcome {
            result: saved_message(existing),
            is_error: false,
            artifact: Some(existing.clone()),
            created: false,
        };
    }
    let new = NewArtifact {
        thread_id: ctx.thread,
        artifact_type,
        title,
        content: input.content,
        request_message_id: ctx.request_message,
        assistant_message_id: None,
    };
    match ctx.store.create_artifact(ctx.user, new).await {
        Ok(artifact) => {
            ctx.saved.push(artifact.clone());
            ToolOutcome { result: saved_message(&artifact), is_error: false, artifact: Some(artifact), created: true }
        }
        Err(e) => {
            tracing::error!(error = %e, "saving an artifact failed");
            ToolOutcome::error("The document could not be saved.")
        }
    }
}

fn saved_message(artifact: &Artifact) -> String {
    format!("Artifact saved successfully: '{}' (ID: {})", artifact.title, artifact.id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn description_asks_for_one_call_per_request() {
        let spec = save_artifact_spec();
        assert!(spec.description.contains("ONCE per user request"));
        assert!(spec.description.contains("Never call it for earlier requests"));
        assert!(!spec.description.to_lowercase().contains("multiple times"));
    }

    #[test]
    fn schema_lists_every_type() {
        let spec = save_artifact_spec();
        let types = spec.input_schema["properties"]["artifact_type"]["enum"].as_array().unwrap();
        assert_eq!(types.len(), 6);
        assert!(types.iter().any(|t| t == "business_requirements"));
    }
}
