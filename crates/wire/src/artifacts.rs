//! Wire types of documents: artifact versions, export formats and attachments.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Largest accepted attachment (10 MiB).
pub const MAX_ATTACHMENT_BYTES: usize = 10 * 1024 * 1024;
/// Most attachments one conversation may hold.
pub const MAX_ATTACHMENTS_PER_THREAD: usize = 20;

/// One saved version of a document. Version 1 is the first; the artifact itself shows the latest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ArtifactVersion {
    pub artifact_id: Uuid,
    pub version: i64,
    pub title: String,
    pub content: String,
    /// The user message that asked for this version; `None` for silent generation and for a person's edit.
    #[serde(default)]
    pub request_message_id: Option<Uuid>,
    /// Who wrote it.
    #[serde(default)]
    pub author: VersionAuthor,
    /// The name of the person who wrote it (their display name, or e-mail when they have none); `None` for the
    /// assistant's versions and once their account is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author_name: Option<String>,
    /// The assistant's answer that wrote it, in reply to `request_message_id` (once the answer is saved); `None`
    /// for a person's version, silent generation and versions whose answer was deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_message_id: Option<Uuid>,
    /// The words of the request that caused it: the person's message, cut to [`REQUEST_EXCERPT_CHARS`]; `None`
    /// for a person's edit or restore (made by hand) and for silent generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub created_at: DateTime<Utc>,
}

/// Who wrote a version of a document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum VersionAuthor {
    /// A person, by hand: an edit in the viewer, or a restore of an earlier version.
    Person { user_id: Uuid },
    /// The assistant, answering with `model` (`None` for versions saved before Quire kept it, and for imports).
    Assistant {
        #[serde(default)]
        model: Option<String>,
    },
}

impl Default for VersionAuthor {
    fn default() -> Self {
        VersionAuthor::Assistant { model: None }
    }
}

/// Largest document a person saves, in characters (as large as an imported one).
pub const MAX_ARTIFACT_CHARS: usize = crate::MAX_IMPORTED_TEXT_CHARS;

/// `PUT /api/artifacts/{id}`: a person's new version of a document, made from version `base_version`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct EditArtifact {
    /// The whole Markdown text of the new version.
    #[cfg_attr(feature = "openapi", schema(value_type = super::schema::ArtifactText, inline))]
    pub content: String,
    /// A new title; the current one is kept when it is left out.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<super::schema::Title>, inline))]
    pub title: Option<String>,
    /// The version the edit was made from: a save whose base is not the current version is refused (409
    /// `version_conflict`), so nobody's version is overwritten unseen.
    #[serde(deserialize_with = "crate::objects::whole_i64")]
    #[cfg_attr(feature = "openapi", schema(value_type = super::schema::ArtifactVersionNumber, inline))]
    pub base_version: i64,
}

/// The answer to a save refused because the document changed since its base version: the usual error, and the
/// document as it is now, to compare with and merge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct VersionConflict {
    pub error: super::ErrorDetail,
    pub current: super::Artifact,
}

/// `GET /api/artifacts/{id}/versions`: every version, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ArtifactVersionList {
    pub versions: Vec<ArtifactVersion>,
}

/// `GET /api/threads/{id}/artifacts`: the thread's documents (latest versions), oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ArtifactList {
    pub artifacts: Vec<super::Artifact>,
}

/// What a line of a diff does between two versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum DiffOp {
    /// In both versions.
    Equal,
    /// Only in the later one (`to`).
    Insert,
    /// Only in the earlier one (`from`).
    Delete,
}

/// One line of a diff, without its line ending.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DiffLine {
    pub op: DiffOp,
    pub text: String,
    /// For a changed line (deleted or inserted with a counterpart on the other side): `text` in pieces, the words
    /// that changed marked; empty for kept lines and for lines with no counterpart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<DiffPart>,
}

/// A piece of a changed line: words that changed, or words both sides share.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DiffPart {
    pub changed: bool,
    pub text: String,
}

/// `POST /api/artifacts/{id}/compare`: a text not saved yet (a person's draft), to compare with the current
/// version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CompareDraft {
    #[cfg_attr(feature = "openapi", schema(value_type = super::schema::ArtifactText, inline))]
    pub content: String,
}

/// The answer to [`CompareDraft`]: the lines of the current version (`version`) turned into those of the draft.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DraftDiff {
    pub version: i64,
    pub lines: Vec<DiffLine>,
}

/// Longest excerpt of a request shown beside the version it caused, in characters.
pub const REQUEST_EXCERPT_CHARS: usize = 300;

/// `GET /api/artifacts/{id}/diff?from=&to=`: the lines of version `from` turned into those of version `to`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct VersionDiff {
    pub from: i64,
    pub to: i64,
    pub lines: Vec<DiffLine>,
}

/// A download format of `GET /api/artifacts/{id}/export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    Md,
    Pdf,
    Docx,
}

impl ExportFormat {
    pub const ALL: [ExportFormat; 3] = [ExportFormat::Md, ExportFormat::Pdf, ExportFormat::Docx];

    /// The `format=` value and the file extension.
    pub fn as_str(self) -> &'static str {
        match self {
            ExportFormat::Md => "md",
            ExportFormat::Pdf => "pdf",
            ExportFormat::Docx => "docx",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == s)
    }

    /// The `Content-Type` of the download.
    pub fn content_type(self) -> &'static str {
        match self {
            ExportFormat::Md => "text/markdown; charset=utf-8",
            ExportFormat::Pdf => "application/pdf",
            ExportFormat::Docx => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        }
    }

    /// A human name for buttons and menus.
    pub fn label(self) -> &'static str {
        match self {
            ExportFormat::Md => "Markdown",
            ExportFormat::Pdf => "PDF",
            ExportFormat::Docx => "Word",
        }
    }
}

/// A file attached to a conversation; its text is searchable by the assistant in every later turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Attachment {
    pub id: Uuid,
    pub thread_id: Uuid,
    pub filename: String,
    pub content_type: String,
    /// Size of the uploaded file in bytes.
    pub size: i64,
    /// How many searchable pieces its text was split into.
    pub chunks: i64,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub created_at: DateTime<Utc>,
}

/// `GET /api/threads/{id}/attachments`: oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AttachmentList {
    pub attachments: Vec<Attachment>,
}

/// The URL of a document's download.
pub fn export_url(artifact: Uuid, format: ExportFormat, version: Option<i64>) -> String {
    match version {
        Some(v) => format!("/api/artifacts/{artifact}/export?format={}&version={v}", format.as_str()),
        None => format!("/api/artifacts/{artifact}/export?format={}", format.as_str()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_round_trip() {
        for f in ExportFormat::ALL {
            assert_eq!(ExportFormat::parse(f.as_str()), Some(f));
        }
        assert_eq!(ExportFormat::parse("html"), None);
        assert_eq!(
            export_url(Uuid::nil(), ExportFormat::Pdf, Some(2)).rsplit_once('?').unwrap().1,
            "format=pdf&version=2"
        );
    }
}
