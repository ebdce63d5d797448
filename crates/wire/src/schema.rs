//! OpenAPI schemas of values with limits, stated from the constants the server enforces so the two cannot drift
//! apart. Documentation only: fields keep their Rust types and name one of these as their `value_type`.

use std::borrow::Cow;

use utoipa::{
    openapi::{
        schema::{ArrayBuilder, KnownFormat, ObjectBuilder, SchemaFormat, Type},
        RefOr, Schema,
    },
    PartialSchema, ToSchema,
};

use super::validate::{EMAIL_PATTERN, NOT_BLANK_PATTERN, NO_NUL_PATTERN};
use super::{
    ACCOUNT_EXPORT_FORMAT, EXPORT_VERSION, MAX_DISPLAY_NAME_CHARS, MAX_EMAIL_CHARS, MAX_IMPORTED_SEQ,
    MAX_IMPORTED_TEXT_CHARS, MAX_IMPORTED_TOKENS, MAX_IMPORTED_VERSION, MAX_INSTRUCTIONS_CHARS, MAX_MESSAGE_CHARS,
    MAX_MODEL_CHARS, MAX_PASSWORD_CHARS, MAX_TAGS, MAX_TAG_CHARS, MAX_TITLE_CHARS, MIN_PASSWORD_CHARS,
    THREAD_EXPORT_FORMAT,
};

fn text(max_chars: usize, pattern: &str, description: &str) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .max_length(Some(max_chars))
        .pattern(Some(pattern))
        .description(Some(description))
        .into()
}

fn whole_number(minimum: i64, maximum: i64, description: &str) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
        .minimum(Some(minimum))
        .maximum(Some(maximum))
        .description(Some(description))
        .into()
}

fn constant(value: impl Into<serde_json::Value>) -> RefOr<Schema> {
    let value = value.into();
    let kind = if value.is_string() { Type::String } else { Type::Integer };
    ObjectBuilder::new().schema_type(kind).enum_values(Some([value])).into()
}

/// Declares documentation-only schemas, each named `$name`.
macro_rules! schemas {
    ($($(#[$doc:meta])* $name:ident => $schema:expr;)*) => {$(
        $(#[$doc])*
        pub struct $name;

        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                $schema
            }
        }

        impl ToSchema for $name {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($name))
            }
        }
    )*};
}

schemas! {
    /// A conversation's or a document's title.
    Title => text(MAX_TITLE_CHARS, NOT_BLANK_PATTERN, "Not only whitespace; trimmed when saved");
    /// A project's name.
    ProjectName => text(crate::MAX_PROJECT_NAME_CHARS, NOT_BLANK_PATTERN, "Not only whitespace; trimmed when saved");
    /// An API token's name.
    TokenName => text(crate::MAX_TOKEN_NAME_CHARS, NOT_BLANK_PATTERN, "Not only whitespace; trimmed when saved");
    /// A project's description.
    ProjectDescription => text(crate::MAX_PROJECT_DESCRIPTION_CHARS, NO_NUL_PATTERN, "Trimmed when saved; may be empty");
    /// One tag of a conversation.
    Tag => text(MAX_TAG_CHARS, NOT_BLANK_PATTERN, "Not only whitespace; trimmed when saved");
    /// The tags of a conversation.
    Tags => ArrayBuilder::new()
        .items(Tag::schema())
        .max_items(Some(MAX_TAGS))
        .description(Some("Repeated tags are kept once"))
        .into();
    /// A message typed into a conversation.
    MessageText => text(MAX_MESSAGE_CHARS, NOT_BLANK_PATTERN, "Not only whitespace; trimmed when saved");
    /// An imported message's text (longer than a typed one may be: other apps' answers can be long).
    ImportedText => text(MAX_IMPORTED_TEXT_CHARS, NO_NUL_PATTERN, "Kept as it is");
    /// A requirement's text as a person writes it.
    RequirementText => text(crate::MAX_REQUIREMENT_CHARS, NOT_BLANK_PATTERN, "Not only whitespace; trimmed when saved");
    /// A requirement's key: `R-` and its number.
    RequirementKey => text(11, "^R-[1-9][0-9]{0,8}$", "Distinct within the conversation");
    /// A requirement revision's number in an export.
    RevisionNumber => whole_number(1, i64::MAX, "Distinct within the conversation");
    /// A document's Markdown as a person saves it.
    ArtifactText => text(crate::MAX_ARTIFACT_CHARS, NOT_BLANK_PATTERN, "Not only whitespace; kept as written");
    /// The name of the model that wrote an answer.
    ModelName => text(MAX_MODEL_CHARS, NO_NUL_PATTERN, "As the provider names it");
    /// A message's number in its conversation, as an import may carry it.
    MessageNumber => whole_number(1, MAX_IMPORTED_SEQ, "Distinct within the conversation");
    /// A document's version, as an import may carry it.
    ArtifactVersionNumber => whole_number(1, MAX_IMPORTED_VERSION, "1 for a first version");
    /// Tokens of one imported message.
    TokenCount => whole_number(0, MAX_IMPORTED_TOKENS as i64, "As metered when the answer was written");
    /// The `format` of a one-conversation export.
    ThreadFormat => constant(THREAD_EXPORT_FORMAT);
    /// The `format` of an account export.
    AccountFormat => constant(ACCOUNT_EXPORT_FORMAT);
    /// The `version` of both export formats.
    ExportVersion => constant(EXPORT_VERSION);
    /// An e-mail address to sign up with.
    Email => text(MAX_EMAIL_CHARS, EMAIL_PATTERN, "`local@domain.tld`: no whitespace");
    /// A new account's password.
    NewPassword => ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(MIN_PASSWORD_CHARS))
        .max_length(Some(MAX_PASSWORD_CHARS))
        .into();
    /// A person's name as shown.
    DisplayName => text(MAX_DISPLAY_NAME_CHARS, NO_NUL_PATTERN, "Trimmed when saved");
    /// A person's new display name: not only whitespace.
    NewDisplayName => text(MAX_DISPLAY_NAME_CHARS, NOT_BLANK_PATTERN, "Trimmed when saved");
    /// Standing instructions for the assistant (empty for none).
    CustomInstructions => text(MAX_INSTRUCTIONS_CHARS, NO_NUL_PATTERN, "Trimmed when saved");
}
