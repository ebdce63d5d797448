//! Wire types of the settings page (`/api/settings`) and of share links (`/api/shares`, `/api/shared/{token}`).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::validate::{has_nul, Invalid};
use super::{ArtifactType, Role};

/// Longest custom instructions, in characters.
pub const MAX_INSTRUCTIONS_CHARS: usize = 4_000;
/// Most share links one person may have at once.
pub const MAX_SHARES_PER_PERSON: u32 = 100;

/// How the pages look: as the system prefers, or always light, or always dark.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Theme {
    #[default]
    System,
    Light,
    Dark,
}

impl Theme {
    /// The name used on the wire and in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Theme::System => "system",
            Theme::Light => "light",
            Theme::Dark => "dark",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [Theme::System, Theme::Light, Theme::Dark].into_iter().find(|t| t.as_str() == text)
    }
}

/// `GET /api/settings`: what a person set for themselves.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Settings {
    pub display_name: String,
    /// Standing instructions for the assistant, added to its system prompt below Quire's own rules.
    pub custom_instructions: String,
    pub theme: Theme,
    /// The model new conversations use (`provider/model`); `None`: the server's default.
    #[serde(default)]
    pub default_model: Option<String>,
    /// The MCP servers whose tools the person's conversations are offered where a conversation did not choose
    /// (`GET /api/mcp/servers`); `None`: those on by default.
    #[serde(default)]
    pub mcp_servers: Option<Vec<String>>,
}

/// `PATCH /api/settings`: what to change; a field left out stays as it is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct UpdateSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<super::schema::NewDisplayName>, inline))]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<super::schema::CustomInstructions>, inline))]
    pub custom_instructions: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<Theme>,
    /// A model of `GET /api/models`; an empty string goes back to the server's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    /// The MCP servers (of `GET /api/mcp/servers`) whose tools the person's conversations are offered, none for an
    /// empty list; `null` goes back to those on by default.
    #[serde(default, deserialize_with = "super::projects::present", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<String>>, nullable))]
    pub mcp_servers: Option<Option<Vec<String>>>,
}

impl UpdateSettings {
    /// The change as it is saved: the display name trimmed and not empty, the instructions trimmed and within
    /// [`MAX_INSTRUCTIONS_CHARS`], no NUL anywhere.
    pub fn checked(self) -> Result<Self, Invalid> {
        let display_name = self
            .display_name
            .map(|name| match super::validate::display_name(&name)? {
                name if name.is_empty() => Err(Invalid::new("display_name", "The display name must not be empty.")),
                name => Ok(name),
            })
            .transpose()?;
        let custom_instructions = self
            .custom_instructions
            .map(|text| {
                let field = "custom_instructions";
                if text.chars().count() > MAX_INSTRUCTIONS_CHARS {
                    let message = format!("The instructions are longer than {MAX_INSTRUCTIONS_CHARS} characters.");
                    return Err(Invalid::new(field, message));
                }
                if has_nul(&text) {
                    return Err(Invalid::new(field, "The instructions must not contain NUL characters."));
                }
                Ok(text.trim().to_string())
            })
            .transpose()?;
        let default_model = self.default_model.map(|id| super::models::checked_id("default_model", id)).transpose()?;
        let mcp_servers = match self.mcp_servers {
            Some(Some(names)) => Some(Some(super::mcp::checked_servers(names)?)),
            other => other,
        };
        Ok(Self { display_name, custom_instructions, theme: self.theme, default_model, mcp_servers })
    }
}

/// A share link of a conversation, as its owner sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ShareLink {
    pub id: Uuid,
    pub thread_id: Uuid,
    /// The conversation's title when it was shared.
    pub title: String,
    /// Where the snapshot is read: `/s/<token>`, on this site.
    pub path: String,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub created_at: DateTime<Utc>,
}

/// `GET /api/shares`, `GET /api/threads/{id}/shares`: the caller's share links, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ShareList {
    pub shares: Vec<ShareLink>,
}

/// `GET /api/shared/{token}`: a conversation as it was when it was shared. It names no one: no e-mail, no name,
/// no ids.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SharedConversation {
    pub title: String,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub shared_at: DateTime<Utc>,
    pub messages: Vec<SharedMessage>,
    pub documents: Vec<SharedArtifact>,
}

/// One message of a shared conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SharedMessage {
    pub role: Role,
    pub content: String,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub created_at: DateTime<Utc>,
}

/// One document of a shared conversation, at the newest version written on the path shared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SharedArtifact {
    pub artifact_type: ArtifactType,
    pub title: String,
    pub content: String,
    pub version: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_changes_are_trimmed_and_bounded() {
        let change = UpdateSettings {
            display_name: Some("  Ada  ".into()),
            custom_instructions: Some(" Answer in French. ".into()),
            theme: Some(Theme::Dark),
            default_model: Some(" deep/quire-deep ".into()),
            mcp_servers: Some(Some(vec![" tracker ".into()])),
        };
        let checked = change.checked().unwrap();
        assert_eq!(checked.default_model.as_deref(), Some("deep/quire-deep"));
        assert_eq!(checked.mcp_servers, Some(Some(vec!["tracker".to_string()])));
        assert_eq!(checked.display_name.as_deref(), Some("Ada"));
        assert_eq!(checked.custom_instructions.as_deref(), Some("Answer in French."));
        let blank = UpdateSettings { display_name: Some("   ".into()), ..Default::default() };
        assert_eq!(blank.checked().unwrap_err().field, "display_name");
        let long =
            UpdateSettings { custom_instructions: Some("x".repeat(MAX_INSTRUCTIONS_CHARS + 1)), ..Default::default() };
        assert_eq!(long.checked().unwrap_err().field, "custom_instructions");
        let nul = UpdateSettings { custom_instructions: Some("a\0b".into()), ..Default::default() };
        assert!(nul.checked().is_err());
        // Clearing the instructions is a change like any other.
        let cleared = UpdateSettings { custom_instructions: Some(String::new()), ..Default::default() };
        assert_eq!(cleared.checked().unwrap().custom_instructions.as_deref(), Some(""));
    }

    #[test]
    fn themes_round_trip_by_name() {
        for theme in [Theme::System, Theme::Light, Theme::Dark] {
            assert_eq!(Theme::parse(theme.as_str()), Some(theme));
        }
        assert_eq!(Theme::parse("sepia"), None);
    }
}
