//! Wire types of a conversation's requirements ledger: each requirement with its key, text, kind, status, the
//! messages it came from and its history; the documents that cover it; and what makes a document out of date.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::VersionAuthor;

/// Longest requirement text, in characters.
pub const MAX_REQUIREMENT_CHARS: usize = 2_000;
/// Most requirements one conversation keeps (the keys of dropped ones count).
pub const MAX_REQUIREMENTS: usize = 2_000;
/// Most entries one `record_requirements` call may carry.
pub const MAX_LEDGER_ENTRIES: usize = 50;

/// What kind of requirement it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum RequirementKind {
    /// Something the product does.
    Functional,
    /// How well it does it: speed, security, accessibility...
    Quality,
    /// A limit the solution must respect: a technology, a date, a budget, a rule.
    Constraint,
    /// What the product will explicitly not do.
    OutOfScope,
}

impl RequirementKind {
    pub const ALL: [RequirementKind; 4] = [Self::Functional, Self::Quality, Self::Constraint, Self::OutOfScope];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Functional => "functional",
            Self::Quality => "quality",
            Self::Constraint => "constraint",
            Self::OutOfScope => "out_of_scope",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == text.trim())
    }

    /// How people read it.
    pub fn label(self) -> &'static str {
        match self {
            Self::Functional => "Functional",
            Self::Quality => "Quality",
            Self::Constraint => "Constraint",
            Self::OutOfScope => "Out of scope",
        }
    }
}

/// Where a requirement stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum RequirementStatus {
    /// In force as first stated.
    Active,
    /// In force, with a text changed since it was first stated.
    Changed,
    /// No longer wanted.
    Dropped,
}

impl RequirementStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Changed => "changed",
            Self::Dropped => "dropped",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [Self::Active, Self::Changed, Self::Dropped].into_iter().find(|s| s.as_str() == text.trim())
    }

    /// Whether the requirement is still wanted (active or changed).
    pub fn in_force(self) -> bool {
        self != Self::Dropped
    }
}

/// One step of a requirement's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RequirementChange {
    /// The step's number within the conversation's ledger (grows with every change of any requirement).
    pub revision: i64,
    /// The text after this step.
    pub text: String,
    /// The text before it; `None` for the step that added the requirement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    pub kind: RequirementKind,
    /// The status after this step.
    pub status: RequirementStatus,
    /// The person's message that caused it; `None` for a person's change in the ledger itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<Uuid>,
    /// Who made the change: the assistant (recording what a message said) or a person by hand.
    pub author: VersionAuthor,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub at: DateTime<Utc>,
}

/// A document version that reflects a requirement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Coverage {
    pub artifact_id: Uuid,
    pub title: String,
    /// The document's current version, which cites the requirement.
    pub version: i64,
    /// Whether that version reflects the requirement as it stands now (false: changed or dropped since).
    pub current: bool,
    /// The document's conversation, when it is another conversation of the project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<CitedConversation>,
}

/// Another conversation of the same project, as a citation across conversations names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CitedConversation {
    pub thread_id: Uuid,
    pub title: String,
    /// What its keys carry after `@` (see [`conversation_ref`]).
    pub reference: String,
}

/// One requirement of a conversation's ledger, as it stands on the path shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Requirement {
    /// `R-1`, `R-2`...: stable, never reused in the conversation.
    pub key: String,
    pub text: String,
    pub kind: RequirementKind,
    pub status: RequirementStatus,
    /// The person's messages it came from (the one that stated it, then those that changed it), oldest first.
    pub sources: Vec<Uuid>,
    /// Every change, oldest first (the first added it).
    pub history: Vec<RequirementChange>,
    /// The documents whose current version cites it.
    #[serde(default)]
    pub covered_by: Vec<Coverage>,
}

/// `GET /api/threads/{id}/requirements`: the ledger of the path shown, in key order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Ledger {
    pub requirements: Vec<Requirement>,
    /// The keys of requirements in force that no document covers.
    pub uncovered: Vec<String>,
    /// The keys of the conversation's requirements stated only on other branches (a document shown on every
    /// branch may cite them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub elsewhere: Vec<String>,
}

/// `PATCH /api/threads/{id}/requirements/{key}`: a person's change of a requirement (at least one field).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct UpdateRequirement {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::schema::RequirementText>, inline))]
    pub text: Option<String>,
    /// `dropped` to drop it, `active` to bring a dropped one back (`changed` is taken as `active`: a requirement in
    /// force's status follows its text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<RequirementStatus>,
}

/// A requirement a document's current version reflects that has changed or been dropped since.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OutOfDate {
    pub key: String,
    /// The text the document reflects.
    pub was: String,
    /// The text now (the last text when dropped).
    pub now: String,
    pub status: RequirementStatus,
    /// The person's messages that changed it since (empty when changed by hand in the ledger).
    pub changed_by: Vec<Uuid>,
    /// The requirement's conversation (where `changed_by` are), when it is another conversation of the project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<CitedConversation>,
}

/// How many characters of a conversation's id its requirements' keys carry when cited from another conversation of
/// the project: the id's last group, random in every id Quire makes.
pub const CONVERSATION_REF_CHARS: usize = 12;

/// What the keys of `thread`'s requirements carry after `@` when cited from another conversation: the last
/// [`CONVERSATION_REF_CHARS`] hexadecimal digits of its id.
pub fn conversation_ref(thread: Uuid) -> String {
    let simple = thread.simple().to_string();
    simple[simple.len() - CONVERSATION_REF_CHARS..].to_string()
}

/// The key of requirement `n` of another conversation of the project, `thread`: `R-3@0a1b2c3d4e5f`.
pub fn foreign_key(n: i64, thread: Uuid) -> String {
    format!("{}@{}", requirement_key(n), conversation_ref(thread))
}

/// A cited key: the requirement's number and, for a requirement of another conversation (`R-3@0a1b2c3d4e5f`),
/// that conversation's reference (lower case); `None` for anything else.
pub fn cited_key(key: &str) -> Option<(i64, Option<String>)> {
    let key = key.trim();
    match key.split_once('@') {
        None => requirement_number(key).map(|n| (n, None)),
        Some((number, reference)) => {
            let reference = reference.trim();
            let well_formed =
                reference.len() == CONVERSATION_REF_CHARS && reference.bytes().all(|b| b.is_ascii_hexdigit());
            let number = requirement_number(number)?;
            well_formed.then(|| (number, Some(reference.to_ascii_lowercase())))
        }
    }
}

/// The key of requirement number `n`.
pub fn requirement_key(n: i64) -> String {
    format!("R-{n}")
}

/// The number of a key (`R-12`, `r-12` and `R12` are 12); `None` for anything else.
pub fn requirement_number(key: &str) -> Option<i64> {
    let key = key.trim();
    let rest = key.strip_prefix("R-").or_else(|| key.strip_prefix("r-")).or_else(|| key.strip_prefix(['R', 'r']))?;
    if rest.is_empty() || rest.len() > 9 || !rest.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    rest.parse().ok().filter(|n| *n > 0)
}

/// The requirement keys of the conversation a Markdown text cites, as `[R-3]` or `[R-3, R-5]`, in order of first
/// appearance.
pub fn cited_keys(markdown: &str) -> Vec<i64> {
    cited_refs(markdown).into_iter().filter(|(_, elsewhere)| elsewhere.is_none()).map(|(n, _)| n).collect()
}

/// Every key a Markdown text cites, its own conversation's (`[R-3]`) and other conversations' (`[R-3@0a1b2c3d4e5f]`,
/// see [`cited_key`]), in order of first appearance.
pub fn cited_refs(markdown: &str) -> Vec<(i64, Option<String>)> {
    let mut out = Vec::new();
    let mut rest = markdown;
    while let Some(open) = rest.find('[') {
        rest = &rest[open + 1..];
        let Some(close) = rest.find(']') else { break };
        let inside = &rest[..close];
        if inside.len() <= 200 {
            let keys: Vec<Option<(i64, Option<String>)>> = inside.split(',').map(cited_key).collect();
            if keys.iter().all(Option::is_some) {
                for key in keys.into_iter().flatten() {
                    if !out.contains(&key) {
                        out.push(key);
                    }
                }
            }
        }
        rest = &rest[close..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_read_and_write() {
        assert_eq!(requirement_key(3), "R-3");
        assert_eq!(requirement_number("R-3"), Some(3));
        assert_eq!(requirement_number(" r-12 "), Some(12));
        assert_eq!(requirement_number("R7"), Some(7));
        for bad in ["R-", "R-0", "R--1", "X-1", "R-1a", "R-99999999999", ""] {
            assert_eq!(requirement_number(bad), None, "{bad}");
        }
    }

    #[test]
    fn markdown_cites_keys_in_brackets() {
        let text = "- Book a slot [R-1]\n- Cancel [R-3, R-2] and [R-1]\n- [link](x) [not R-4] [R-5";
        assert_eq!(cited_keys(text), vec![1, 3, 2]);
        assert!(cited_keys("no keys [] [ ]").is_empty());
    }

    #[test]
    fn keys_of_other_conversations_carry_their_reference() {
        let thread = Uuid::parse_str("0193a2b4-7c1d-7e2f-8a3b-0A1B2C3D4E5F").unwrap();
        assert_eq!(conversation_ref(thread), "0a1b2c3d4e5f");
        assert_eq!(foreign_key(3, thread), "R-3@0a1b2c3d4e5f");
        assert_eq!(cited_key("R-3@0A1B2C3D4E5F"), Some((3, Some("0a1b2c3d4e5f".into()))));
        assert_eq!(cited_key("R-3"), Some((3, None)));
        for bad in ["R-3@", "R-3@0a1b", "R-3@0a1b2c3d4e5g", "X@0a1b2c3d4e5f", "R-3@0a1b2c3d4e5f0"] {
            assert_eq!(cited_key(bad), None, "{bad}");
        }
        let text = "- Pay [R-1] for [R-2@0a1b2c3d4e5f, R-1]\n- [R-2@0a1b2c3d4e5f] [R-9@zz]";
        assert_eq!(cited_refs(text), vec![(1, None), (2, Some("0a1b2c3d4e5f".into()))]);
        assert_eq!(cited_keys(text), vec![1]);
    }
}
