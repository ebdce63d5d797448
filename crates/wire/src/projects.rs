//! Wire types of team projects: a project, its members and their roles, and its activity log.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize};
use uuid::Uuid;

/// Longest project name, in characters.
pub const MAX_PROJECT_NAME_CHARS: usize = 200;
/// Longest project description, in characters.
pub const MAX_PROJECT_DESCRIPTION_CHARS: usize = 2_000;
/// Most members one project has.
pub const MAX_PROJECT_MEMBERS: usize = 500;
/// Most projects one person belongs to.
pub const MAX_PROJECTS_PER_PERSON: usize = 200;
/// Most entries of the activity log one page holds.
pub const MAX_ACTIVITY_PAGE: u32 = 200;

/// What a member of a project may do. Viewers read the project's conversations, documents and requirements and
/// export them; editors also write in them; owners also manage the members and delete the project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ProjectRole {
    Viewer,
    Editor,
    Owner,
}

impl ProjectRole {
    pub const ALL: [ProjectRole; 3] = [Self::Owner, Self::Editor, Self::Viewer];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Owner => "owner",
            Self::Editor => "editor",
            Self::Viewer => "viewer",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == text)
    }

    /// Whether this role may write in the project's conversations, documents and requirements.
    pub fn writes(self) -> bool {
        self >= Self::Editor
    }
}

/// A project as one of its members sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Project {
    pub id: Uuid,
    pub name: String,
    pub description: String,
    /// Given to the model in every conversation of the project, below Quire's rules and above each person's own
    /// instructions.
    pub instructions: String,
    pub archived: bool,
    /// The caller's role in it.
    pub role: ProjectRole,
    pub member_count: i64,
    pub conversation_count: i64,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub created_at: DateTime<Utc>,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub updated_at: DateTime<Utc>,
}

/// `GET /api/projects`: the caller's projects, by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProjectList {
    pub projects: Vec<Project>,
}

/// `POST /api/projects`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateProject {
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schema::ProjectName, inline))]
    pub name: String,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::schema::ProjectDescription>, inline))]
    pub description: Option<String>,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::schema::CustomInstructions>, inline))]
    pub instructions: Option<String>,
}

/// `PATCH /api/projects/{id}`: the fields to change (owners only).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct UpdateProject {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::schema::ProjectName>, inline))]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::schema::ProjectDescription>, inline))]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::schema::CustomInstructions>, inline))]
    pub instructions: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived: Option<bool>,
}

/// A member of a project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProjectMember {
    pub user_id: Uuid,
    pub email: String,
    pub display_name: String,
    pub role: ProjectRole,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub added_at: DateTime<Utc>,
}

/// A person who wrote in a conversation: its author, or a member of its project who sent a message there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Writer {
    pub id: Uuid,
    /// Their display name, else their e-mail address.
    pub name: String,
}

/// An invitation to a project for an address no account has yet: whoever makes an account with it (under the
/// sign-up mode in force) joins with the role.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProjectInvitation {
    pub id: Uuid,
    /// In lower case.
    pub email: String,
    pub role: ProjectRole,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub invited_at: DateTime<Utc>,
}

/// `GET /api/projects/{id}/members`: owners first, then by e-mail; and the invitations not used yet, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MemberList {
    pub members: Vec<ProjectMember>,
    #[serde(default)]
    pub invitations: Vec<ProjectInvitation>,
}

/// `POST /api/projects/{id}/members`: an existing account, by its e-mail address.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct AddMember {
    #[cfg_attr(feature = "openapi", schema(value_type = crate::schema::Email, inline))]
    pub email: String,
    pub role: ProjectRole,
}

/// `PATCH /api/projects/{id}/members/{user_id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ChangeRole {
    pub role: ProjectRole,
}

/// What an entry of a project's activity log records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ActivityKind {
    ProjectCreated,
    /// Renamed, described again, archived or brought back.
    ProjectChanged,
    MemberAdded,
    MemberRemoved,
    /// A member left on their own.
    MemberLeft,
    RoleChanged,
    ConversationMovedIn,
    ConversationMovedOut,
    /// A person saved a version of a document of one of the project's conversations.
    DocumentEdited,
    /// A person changed or dropped requirements of one of the project's conversations.
    RequirementsChanged,
    /// An owner invited an address no account has yet (`subject`), with a role.
    MemberInvited,
    /// An invitation was taken back before anyone used it.
    InvitationCancelled,
    /// An invited person made their account and joined, with the role they were invited with.
    MemberJoined,
}

impl ActivityKind {
    pub const ALL: [ActivityKind; 13] = [
        Self::ProjectCreated,
        Self::ProjectChanged,
        Self::MemberAdded,
        Self::MemberRemoved,
        Self::MemberLeft,
        Self::RoleChanged,
        Self::ConversationMovedIn,
        Self::ConversationMovedOut,
        Self::DocumentEdited,
        Self::RequirementsChanged,
        Self::MemberInvited,
        Self::InvitationCancelled,
        Self::MemberJoined,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::ProjectCreated => "project_created",
            Self::ProjectChanged => "project_changed",
            Self::MemberAdded => "member_added",
            Self::MemberRemoved => "member_removed",
            Self::MemberLeft => "member_left",
            Self::RoleChanged => "role_changed",
            Self::ConversationMovedIn => "conversation_moved_in",
            Self::ConversationMovedOut => "conversation_moved_out",
            Self::DocumentEdited => "document_edited",
            Self::RequirementsChanged => "requirements_changed",
            Self::MemberInvited => "member_invited",
            Self::InvitationCancelled => "invitation_cancelled",
            Self::MemberJoined => "member_joined",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == text)
    }
}

/// One entry of a project's activity log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProjectActivity {
    pub id: i64,
    pub kind: ActivityKind,
    /// Who did it (their display name, or e-mail when they have none); `None` once their account is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    /// What it was done to, as it was named then: a member's e-mail, a conversation's title, the project's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The role given, for an added member or a changed role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<ProjectRole>,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub at: DateTime<Utc>,
}

/// `GET /api/projects/{id}/activity`: newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ActivityList {
    pub entries: Vec<ProjectActivity>,
}

/// One conversation's ledger in its project's requirements view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConversationLedger {
    pub thread_id: Uuid,
    /// The conversation's title, which the requirements came from.
    pub title: String,
    /// Its ledger on the path its author shows.
    pub ledger: crate::Ledger,
}

/// `GET /api/projects/{id}/requirements`: every conversation's ledger together, most recently changed conversation
/// first; conversations without requirements are left out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProjectLedger {
    pub conversations: Vec<ConversationLedger>,
}

/// For a field that may be left out (`None`), sent as `null` (`Some(None)`) or sent with a value: a conversation's
/// `project_id`, where `null` takes it out of its project.
pub fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}
