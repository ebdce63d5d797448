//! Imports: a Quire export (one conversation or a whole account) or a ChatGPT `conversations.json` becomes new
//! conversations of the person importing it.
//!
//! An import follows the rules of the rest of the API, field by field (a typed message may be shorter than an
//! imported one: see [`MAX_IMPORTED_TEXT_CHARS`]), and is bounded in conversations, messages and documents. The
//! whole body is read and checked before anything is written, on a blocking thread; then the store writes all
//! of it or nothing.

use std::{collections::HashMap, fmt::Display};

use bytes::Bytes;
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;
use uuid::Uuid;
use wire::{
    objects::Object, requirement_key, requirement_number, validate, AccountExport, ArtifactType, ExportedArtifact,
    ExportedCitation, ExportedMessage, ExportedRequirement, MessageStatus, Role, Thread, ThreadExport, Usage,
    VersionAuthor, ACCOUNT_EXPORT_FORMAT, EXPORT_VERSION, MAX_IMPORTED_SEQ, MAX_IMPORTED_TEXT_CHARS,
    MAX_IMPORTED_TOKENS, MAX_IMPORTED_VERSION, MAX_IMPORT_DOCUMENTS, MAX_IMPORT_MESSAGES,
    MAX_IMPORT_REQUIREMENT_REVISIONS, MAX_IMPORT_THREADS, MAX_MODEL_CHARS, MAX_REQUIREMENTS, MAX_REQUIREMENT_CHARS,
    MAX_TITLE_CHARS, THREAD_EXPORT_FORMAT,
};

use super::chatgpt::{self, epoch_seconds};
use super::{Error, Result};
use crate::heavy::Ticket;
use store::{
    self,
    history::{
        ImportArtifact, ImportAuthor, ImportCitation, ImportMessage, ImportRequirement, ImportRevision, ImportThread,
        ImportTree, ImportVersion,
    },
    DynStore,
};

/// Title of an imported conversation that has neither a title nor a first message.
const IMPORTED_TITLE: &str = "Imported conversation";

/// Longest piece of a refused value quoted back in an error message, in characters.
const QUOTED_CHARS: usize = 40;

/// Longest reason of the parser passed on, in characters.
const REASON_CHARS: usize = 300;

/// Reads and checks `body` on a blocking thread of the heavy-work queue (the job `ticket` admitted), replacing
/// personal data in it when `redact` (as `QUIRE_REDACT_PII` asks), then creates its conversations for `user`: all
/// of them, or none when anything is refused or fails.
pub async fn import(store: &DynStore, user: Uuid, body: Bytes, redact: bool, ticket: &Ticket) -> Result<Vec<Thread>> {
    let threads = ticket
        .run_blocking(move || {
            let mut threads = plan(&body)?;
            if redact {
                redact_personal_data(&mut threads);
            }
            Ok::<_, Error>(threads)
        })
        .await
        .ok_or(Error::Task)??;
    Ok(store.import_threads(user, threads).await?)
}

/// Replaces personal data in the titles, messages and documents of an import, each kept within its limit.
pub fn redact_personal_data(threads: &mut [ImportThread]) {
    let redact = |text: &mut String, max_chars: usize| {
        *text = crate::privacy::redact_if(true, std::mem::take(text), max_chars);
    };
    for thread in threads {
        redact(&mut thread.title, MAX_TITLE_CHARS);
        for message in &mut thread.messages {
            redact(&mut message.content, MAX_IMPORTED_TEXT_CHARS);
        }
        for artifact in &mut thread.artifacts {
            for version in artifact.earlier.iter_mut().chain(std::iter::once(&mut artifact.current)) {
                redact(&mut version.title, MAX_TITLE_CHARS);
                redact(&mut version.content, MAX_IMPORTED_TEXT_CHARS);
            }
        }
        for requirement in &mut thread.requirements {
            for revision in &mut requirement.revisions {
                redact(&mut revision.text, MAX_REQUIREMENT_CHARS);
            }
        }
    }
}

/// What an import body would create, checked in full: a Quire thread export, a Quire account export, or a
/// ChatGPT `conversations.json` (a list of conversations, or one). Pure and synchronous: its cost grows with the
/// body, so async callers run it on a blocking thread (as [`import`] does).
pub fn plan(body: &[u8]) -> Result<Vec<ImportThread>> {
    let plan = match body.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'[') => {
            let conversations: Vec<Object<chatgpt::Conversation>> =
                parse(body, "This is not a valid ChatGPT conversations.json")?;
            at_most(conversations.len(), MAX_IMPORT_THREADS, "conversations".into(), "Conversations in one import")?;
            let mut plan = Vec::with_capacity(conversations.len());
            for (i, Object(conversation)) in conversations.iter().enumerate() {
                plan.push(from_chatgpt(conversation, &format!("[{i}]."))?);
            }
            plan
        }
        Some(b'{') => plan_object(body)?,
        _ => {
            // Tells a body that is not JSON (400) from JSON of another shape (422).
            parse::<serde::de::IgnoredAny>(body, "")?;
            return Err(expected_a_known_format());
        }
    };
    if plan.is_empty() {
        return Err(Error::Unsupported("There is no conversation to import.".into()));
    }
    Ok(plan)
}

/// The keys that tell the kinds of object apart; everything else is skipped at this first reading.
#[derive(Deserialize)]
struct Kind {
    #[serde(default)]
    format: Option<Value>,
    #[serde(default)]
    mapping: Option<serde::de::IgnoredAny>,
}

fn plan_object(body: &[u8]) -> Result<Vec<ImportThread>> {
    let kind: Kind = parse(body, "Expected a JSON object")?;
    match (&kind.format, &kind.mapping) {
        (Some(Value::String(format)), _) if format == THREAD_EXPORT_FORMAT => {
            let export: ThreadExport = parse(body, "This is not a valid Quire conversation")?;
            Ok(vec![from_quire(export, "")?])
        }
        (Some(Value::String(format)), _) if format == ACCOUNT_EXPORT_FORMAT => {
            let export: AccountExport = parse(body, "This is not a valid Quire export")?;
            check_version(export.version)?;
            at_most(export.threads.len(), MAX_IMPORT_THREADS, "threads".into(), "Conversations in one import")?;
            let mut plan = Vec::with_capacity(export.threads.len());
            for (i, thread) in export.threads.into_iter().enumerate() {
                plan.push(from_quire(thread, &format!("threads[{i}]."))?);
            }
            Ok(plan)
        }
        (Some(format), _) => {
            let shown = format.as_str().map_or_else(|| format.to_string(), str::to_owned);
            Err(Error::Unsupported(format!("Unknown export format `{}`.", quoted(&shown, QUOTED_CHARS))))
        }
        (None, Some(_)) => {
            let conversation: chatgpt::Conversation = parse(body, "Not a valid ChatGPT conversation")?;
            Ok(vec![from_chatgpt(&conversation, "")?])
        }
        (None, None) => Err(expected_a_known_format()),
    }
}

fn expected_a_known_format() -> Error {
    Error::Unsupported("Expected a Quire export (`format`: \"quire.thread\") or a ChatGPT conversations.json.".into())
}

/// Parses the body as a `T`: a body that is not JSON is malformed; JSON of another shape is unsupported, with
/// `context` and serde's reason (cut short: it quotes the value it did not expect, which may be long).
fn parse<'a, T: Deserialize<'a>>(body: &'a [u8], context: &str) -> Result<T> {
    serde_json::from_slice(body).map_err(|e| {
        let reason = quoted(&e.to_string(), REASON_CHARS);
        match e.classify() {
            serde_json::error::Category::Data => Error::Unsupported(format!("{context}: {reason}.")),
            _ => Error::Malformed(reason),
        }
    })
}

/// The first `chars` characters of a text, to quote it back.
fn quoted(text: &str, chars: usize) -> String {
    let mut shown: String = text.chars().take(chars).collect();
    if text.chars().nth(chars).is_some() {
        shown.push('…');
    }
    shown
}

fn invalid(field: String, message: impl Display) -> Error {
    Error::Invalid { field, message: message.to_string() }
}

/// Refuses more than `max` of something (`what`, for people) in `field`.
fn at_most(count: usize, max: usize, field: String, what: &str) -> Result<()> {
    if count > max {
        return Err(invalid(field, format!("{what}: at most {max}, not {count}.")));
    }
    Ok(())
}

fn check_version(version: u32) -> Result<()> {
    if version != EXPORT_VERSION {
        return Err(Error::Unsupported(format!(
            "Export version {version} is not supported (expected {EXPORT_VERSION})."
        )));
    }
    Ok(())
}

/// A rule of the API broken at `at` (the path of the value in the body).
fn broken(at: &str, rule: validate::Invalid) -> Error {
    invalid(format!("{at}{}", rule.field), rule.message)
}

/// Text kept as it is (a message or a document): at most `max` characters, no NUL.
fn check_text(text: &str, max: usize, field: String, what: &str) -> Result<()> {
    if text.chars().count() > max {
        return Err(invalid(field, format!("{what} is longer than {max} characters.")));
    }
    if validate::has_nul(text) {
        return Err(invalid(field, format!("{what} must not contain NUL characters.")));
    }
    Ok(())
}

fn check_time(time: DateTime<Utc>, field: String) -> Result<DateTime<Utc>> {
    if store::storable_time(time) {
        Ok(time)
    } else {
        Err(invalid(field, "The time is out of range (years 0 to 9999)."))
    }
}

fn check_number(value: i64, max: i64, field: String, what: &str) -> Result<i64> {
    if (1..=max).contains(&value) {
        Ok(value)
    } else {
        Err(invalid(field, format!("{what} must be between 1 and {max}.")))
    }
}

fn check_tokens(value: u64, field: String) -> Result<u64> {
    if value <= MAX_IMPORTED_TOKENS {
        Ok(value)
    } else {
        Err(invalid(field, format!("A message's tokens are at most {MAX_IMPORTED_TOKENS}.")))
    }
}

/// A Quire thread export as an import (`at`: where it is in the body), its document links turned into message
/// positions.
fn from_quire(export: ThreadExport, at: &str) -> Result<ImportThread> {
    if export.format != THREAD_EXPORT_FORMAT {
        return Err(invalid(format!("{at}format"), format!("A conversation's format is \"{THREAD_EXPORT_FORMAT}\".")));
    }
    check_version(export.version)?;
    let info = export.thread;
    let title = validate::title(&info.title).map_err(|e| broken(&format!("{at}thread."), e))?;
    let tags = validate::tags(&info.tags).map_err(|e| broken(&format!("{at}thread."), e))?;
    let created_at = check_time(info.created_at, format!("{at}thread.created_at"))?;
    let updated_at = check_time(info.updated_at, format!("{at}thread.updated_at"))?;
    at_most(export.messages.len(), MAX_IMPORT_MESSAGES, format!("{at}messages"), "Messages of a conversation")?;
    at_most(export.artifacts.len(), MAX_IMPORT_DOCUMENTS, format!("{at}artifacts"), "Documents of a conversation")?;
    let parent_of: HashMap<Uuid, Option<Uuid>> = export.messages.iter().map(|m| (m.id, m.parent_id)).collect();
    let mut messages = export
        .messages
        .into_iter()
        .enumerate()
        .map(|(i, m)| message_from_quire(m, &format!("{at}messages[{i}].")))
        .collect::<Result<Vec<_>>>()?;
    messages.sort_by_key(|(_, m)| m.seq);
    if let Some(pair) = messages.windows(2).find(|w| w[0].1.seq == w[1].1.seq) {
        return Err(invalid(
            format!("{at}messages"),
            format!("Two messages have the number (`seq`) {}; each needs its own.", pair[0].1.seq),
        ));
    }
    // Where each message id is (the first message with it, should two share one).
    let mut positions = HashMap::with_capacity(messages.len());
    for (position, (id, _)) in messages.iter().enumerate() {
        positions.entry(*id).or_insert(position);
    }
    let (requirements, ledger) = requirements_from_quire(export.requirements, &positions, at)?;
    let artifacts = artifacts_from_quire(export.artifacts, &positions, &ledger, at)?;
    // Branches, when the export has them: a parent that is missing or does not come before its message makes a
    // first message.
    let tree = parent_of.values().any(Option::is_some).then(|| ImportTree {
        parents: messages
            .iter()
            .enumerate()
            .map(|(i, (id, _))| {
                parent_of.get(id).copied().flatten().and_then(|p| positions.get(&p).copied()).filter(|p| *p < i)
            })
            .collect(),
        active: info.active_message_id.and_then(|id| positions.get(&id).copied()).or(messages.len().checked_sub(1)),
    });
    Ok(ImportThread {
        title,
        tags,
        pinned: info.pinned,
        archived: info.archived,
        created_at,
        updated_at,
        messages: messages.into_iter().map(|(_, m)| m).collect(),
        artifacts,
        tree,
        requirements,
    })
}

/// Where an export's requirements and revisions are in an import: each key's requirement, each revision's
/// place (its requirement and its index among that requirement's revisions).
#[derive(Default)]
struct LedgerPlaces {
    keys: HashMap<i64, usize>,
    revisions: HashMap<i64, (usize, usize)>,
}

/// The requirements ledger of a Quire export (`at`: where the conversation is in the body), checked as the API
/// checks a person's change, its links turned into message positions.
fn requirements_from_quire(
    entries: Vec<ExportedRequirement>,
    positions: &HashMap<Uuid, usize>,
    at: &str,
) -> Result<(Vec<ImportRequirement>, LedgerPlaces)> {
    at_most(entries.len(), MAX_REQUIREMENTS, format!("{at}requirements"), "Requirements of a conversation")?;
    let changes: usize = entries.iter().map(|r| r.revisions.len()).sum();
    at_most(
        changes,
        MAX_IMPORT_REQUIREMENT_REVISIONS,
        format!("{at}requirements"),
        "Changes of the requirements of a conversation",
    )?;
    let mut places = LedgerPlaces::default();
    let mut requirements = Vec::with_capacity(entries.len());
    for (i, entry) in entries.into_iter().enumerate() {
        let here = format!("{at}requirements[{i}].");
        let number = requirement_number(&entry.key)
            .filter(|n| requirement_key(*n) == entry.key)
            .ok_or_else(|| invalid(format!("{here}key"), "A requirement's key is `R-` and a number, as `R-3`."))?;
        if places.keys.insert(number, i).is_some() {
            return Err(invalid(format!("{here}key"), format!("Two requirements have the key {}.", entry.key)));
        }
        if entry.revisions.is_empty() {
            return Err(invalid(format!("{here}revisions"), "A requirement has at least one revision."));
        }
        let mut revisions = Vec::with_capacity(entry.revisions.len());
        for (j, r) in entry.revisions.into_iter().enumerate() {
            let here = format!("{here}revisions[{j}].");
            if places.revisions.insert(r.revision, (i, j)).is_some() {
                return Err(invalid(
                    format!("{here}revision"),
                    format!("Two revisions are numbered {}; each needs its own.", r.revision),
                ));
            }
            let text = validate::requirement(&r.text).map_err(|e| broken(&here, e))?;
            let message = r
                .message_id
                .map(|id| {
                    positions.get(&id).copied().ok_or_else(|| {
                        invalid(
                            format!("{here}message_id"),
                            "A requirement points at a message that is not in the export.",
                        )
                    })
                })
                .transpose()?;
            let author = author_from_quire(r.author, &here)?;
            revisions.push(ImportRevision {
                text,
                kind: r.kind,
                status: r.status,
                message,
                author,
                created_at: check_time(r.created_at, format!("{here}created_at"))?,
            });
        }
        requirements.push(ImportRequirement { number, revisions });
    }
    Ok((requirements, places))
}

/// What a version of a Quire export cites (`at`: where the version is in the body), as places in the import's
/// ledger: each requirement once, at a revision of its own.
fn citations_from_quire(cites: Vec<ExportedCitation>, ledger: &LedgerPlaces, at: &str) -> Result<Vec<ImportCitation>> {
    let mut out: Vec<ImportCitation> = Vec::with_capacity(cites.len());
    for (i, cite) in cites.into_iter().enumerate() {
        let here = format!("{at}requirements[{i}]");
        let requirement =
            requirement_number(&cite.key).and_then(|n| ledger.keys.get(&n).copied()).ok_or_else(|| {
                invalid(format!("{here}.key"), "A document cites a requirement that is not in the export.")
            })?;
        let revision = match ledger.revisions.get(&cite.revision) {
            Some((r, j)) if *r == requirement => *j,
            _ => {
                return Err(invalid(
                    format!("{here}.revision"),
                    format!("A document cites {} at a revision that is not one of its own.", cite.key),
                ))
            }
        };
        if out.iter().any(|c| c.requirement == requirement) {
            return Err(invalid(here, format!("A document version cites {} twice.", cite.key)));
        }
        out.push(ImportCitation { requirement, revision });
    }
    Ok(out)
}

/// A message of a Quire export and its id in the export (documents point at it).
fn message_from_quire(m: ExportedMessage, at: &str) -> Result<(Uuid, ImportMessage)> {
    let seq = check_number(m.seq, MAX_IMPORTED_SEQ, format!("{at}seq"), "A message's number (`seq`)")?;
    check_text(&m.content, MAX_IMPORTED_TEXT_CHARS, format!("{at}content"), "A message")?;
    if let Some(model) = &m.model {
        check_text(model, MAX_MODEL_CHARS, format!("{at}model"), "A model name")?;
    }
    let usage = Usage {
        input_tokens: check_tokens(m.input_tokens, format!("{at}input_tokens"))?,
        output_tokens: check_tokens(m.output_tokens, format!("{at}output_tokens"))?,
    };
    let created_at = check_time(m.created_at, format!("{at}created_at"))?;
    let message =
        ImportMessage { seq, role: m.role, content: m.content, status: m.status, usage, model: m.model, created_at };
    Ok((m.id, message))
}

/// The documents of a Quire export (`at`: where the conversation is in the body): its entries are versions, those
/// of one document sharing its `id`; each document has them all, in the order of their numbers, and takes its
/// type and links from its current (highest) version, its request from its first. Documents keep the order in
/// which they first appear.
fn artifacts_from_quire(
    entries: Vec<ExportedArtifact>,
    positions: &HashMap<Uuid, usize>,
    ledger: &LedgerPlaces,
    at: &str,
) -> Result<Vec<ImportArtifact>> {
    let mut documents: Vec<(Uuid, Vec<ImportedVersion>)> = Vec::new();
    let mut place: HashMap<Uuid, usize> = HashMap::new();
    for (i, entry) in entries.into_iter().enumerate() {
        let id = entry.id;
        let version = version_from_quire(entry, positions, ledger, &format!("{at}artifacts[{i}]."))?;
        let index = *place.entry(id).or_insert_with(|| {
            documents.push((id, Vec::new()));
            documents.len() - 1
        });
        documents[index].1.push(version);
    }
    documents
        .into_iter()
        .map(|(id, mut versions)| {
            versions.sort_by_key(|v| v.version.version);
            if let Some(pair) = versions.windows(2).find(|w| w[0].version.version == w[1].version.version) {
                return Err(invalid(
                    format!("{at}artifacts"),
                    format!("Document {id} has two versions numbered {}; each needs its own.", pair[0].version.version),
                ));
            }
            let request_message = versions.first().and_then(|v| v.version.request_message);
            let current = versions.pop().expect("a document has the entry that named it");
            Ok(ImportArtifact {
                artifact_type: current.artifact_type,
                request_message,
                assistant_message: current.assistant_message,
                earlier: versions.into_iter().map(|v| v.version).collect(),
                current: current.version,
            })
        })
        .collect()
}

/// An entry of a Quire export's documents: a version, and its document's type and answer as the entry says.
struct ImportedVersion {
    artifact_type: ArtifactType,
    assistant_message: Option<usize>,
    version: ImportVersion,
}

/// A version of a document in a Quire export, its links to messages as their positions in the import
/// (`positions`), a person's version becoming the importing person's.
fn version_from_quire(
    a: ExportedArtifact,
    positions: &HashMap<Uuid, usize>,
    ledger: &LedgerPlaces,
    at: &str,
) -> Result<ImportedVersion> {
    // Checked as a title is, but kept as it was written.
    validate::title(&a.title).map_err(|e| broken(at, e))?;
    check_text(&a.content, MAX_IMPORTED_TEXT_CHARS, format!("{at}content"), "A document")?;
    let version = check_number(a.version, MAX_IMPORTED_VERSION, format!("{at}version"), "A document's version")?;
    let position = |id: Option<Uuid>, field: &str| -> Result<Option<usize>> {
        id.map(|id| {
            positions.get(&id).copied().ok_or_else(|| {
                invalid(format!("{at}{field}"), "A document points at a message that is not in the export.")
            })
        })
        .transpose()
    };
    let author = author_from_quire(a.author, at)?;
    Ok(ImportedVersion {
        artifact_type: a.artifact_type,
        assistant_message: position(a.assistant_message_id, "assistant_message_id")?,
        version: ImportVersion {
            version,
            request_message: position(a.request_message_id, "request_message_id")?,
            author,
            created_at: check_time(a.created_at, format!("{at}created_at"))?,
            cites: citations_from_quire(a.requirements, ledger, at)?,
            title: a.title,
            content: a.content,
        },
    })
}

/// Who wrote a version or made a change in a Quire export (`at`: where it is in the body): a person's work becomes
/// the importing person's; the assistant's keeps its model's name, checked.
fn author_from_quire(author: VersionAuthor, at: &str) -> Result<ImportAuthor> {
    Ok(match author {
        VersionAuthor::Person { .. } => ImportAuthor::Importer,
        VersionAuthor::Assistant { model } => {
            if let Some(model) = &model {
                check_text(model, MAX_MODEL_CHARS, format!("{at}author.model"), "A model name")?;
            }
            ImportAuthor::Assistant { model }
        }
    })
}

/// One ChatGPT conversation (`at`: where it is in the body): its tree of the person's and the assistant's visible
/// messages, every branch kept (a hidden or empty node's children follow its parent), `current_node`'s branch
/// shown.
fn from_chatgpt(conversation: &chatgpt::Conversation, at: &str) -> Result<ImportThread> {
    let unsupported =
        |reason: &'static str| Error::Unsupported(format!("Not a valid ChatGPT conversation ({at}mapping): {reason}."));
    conversation.current_branch().map_err(unsupported)?;
    let nodes = conversation.tree().map_err(unsupported)?;
    let started = epoch_seconds(conversation.create_time);
    let mut messages: Vec<ImportMessage> = Vec::new();
    // Each node's nearest message kept, itself or an ancestor: what a message after it follows.
    let mut kept: HashMap<&str, Option<usize>> = HashMap::with_capacity(nodes.len());
    let mut parents: Vec<Option<usize>> = Vec::new();
    for (id, node) in nodes {
        let before = node.parent.as_deref().and_then(|p| kept.get(p).copied().flatten());
        kept.insert(id, before);
        let Some(message) = &node.message else { continue };
        let role = match message.role() {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            _ => continue,
        };
        if message.hidden() {
            continue;
        }
        let content = message.text();
        if content.is_empty() {
            continue;
        }
        let field = || format!("{at}mapping.{}.message", quoted(id, QUOTED_CHARS));
        check_text(&content, MAX_IMPORTED_TEXT_CHARS, field(), "A message")?;
        let model = match message.model().filter(|_| role == Role::Assistant) {
            Some(model) => {
                check_text(model, MAX_MODEL_CHARS, field(), "A model name")?;
                Some(model.to_owned())
            }
            None => None,
        };
        let created_at = epoch_seconds(message.create_time)
            .or(messages.last().map(|m| m.created_at))
            .or(started)
            .unwrap_or_else(store::now);
        kept.insert(id, Some(messages.len()));
        parents.push(before);
        messages.push(ImportMessage {
            seq: messages.len() as i64 + 1,
            role,
            content,
            status: MessageStatus::Complete,
            usage: Usage::default(),
            model,
            created_at,
        });
    }
    // The branches are kept; the one the person last saw is shown.
    let tree = ImportTree { parents, active: kept.get(conversation.current_node.as_str()).copied().flatten() };
    at_most(messages.len(), MAX_IMPORT_MESSAGES, format!("{at}mapping"), "Messages of a conversation")?;
    // A foreign title is taken as far as Quire's titles go; without one, the first words name the conversation.
    let title = conversation.title.as_deref().map(str::trim).filter(|t| !t.is_empty());
    let title = match title {
        Some(t) => {
            let cut: String = t.chars().take(MAX_TITLE_CHARS).collect();
            validate::title(&cut).map_err(|e| broken(at, e))?
        }
        None => match messages.iter().find(|m| m.role == Role::User) {
            Some(first) => store::title_from_message(&first.content),
            None => IMPORTED_TITLE.to_string(),
        },
    };
    let created_at = started.or(messages.first().map(|m| m.created_at)).unwrap_or_else(store::now);
    let last = messages.iter().map(|m| m.created_at).max();
    let updated_at = [epoch_seconds(conversation.update_time), last, Some(created_at)]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(created_at);
    Ok(ImportThread {
        title,
        tags: Vec::new(),
        pinned: false,
        archived: conversation.is_archived.unwrap_or(false),
        created_at,
        updated_at,
        messages,
        artifacts: Vec::new(),
        tree: Some(tree),
        requirements: Vec::new(),
    })
}

/// What the OpenAPI document says an import body is (documentation only).
pub struct ImportBody;

impl utoipa::PartialSchema for ImportBody {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ArrayBuilder, OneOfBuilder};
        use utoipa::openapi::Ref;
        let conversation = || Ref::from_schema_name("ChatGptConversation");
        OneOfBuilder::new()
            .item(Ref::from_schema_name("ThreadExport"))
            .item(Ref::from_schema_name("AccountExport"))
            .item(conversation())
            .item(ArrayBuilder::new().items(conversation()).min_items(Some(1)).max_items(Some(MAX_IMPORT_THREADS)))
            .description(Some(
                "A Quire export (one conversation or a whole account) or a ChatGPT conversations.json (a list of \
                 conversations, or one)",
            ))
            .into()
    }
}

impl utoipa::ToSchema for ImportBody {
    fn schemas(schemas: &mut Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>)>) {
        use utoipa::PartialSchema;
        for (name, schema) in [
            ("ThreadExport", ThreadExport::schema()),
            ("AccountExport", AccountExport::schema()),
            ("ChatGptConversation", chatgpt::Conversation::schema()),
        ] {
            schemas.push((name.to_string(), schema));
        }
        <ThreadExport as utoipa::ToSchema>::schemas(schemas);
        <AccountExport as utoipa::ToSchema>::schemas(schemas);
        <chatgpt::Conversation as utoipa::ToSchema>::schemas(schemas);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plan_of(body: Value) -> Result<Vec<ImportThread>> {
        plan(&serde_json::to_vec(&body).unwrap())
    }

    #[test]
    fn chatgpt_keeps_every_branch_and_shows_the_current_one() {
        let conversation = json!({
            "title": "",
            "create_time": 1_700_000_000.5,
            "current_node": "b2",
            "mapping": {
                "root": {"id": "root", "message": null, "parent": null, "children": ["u1"]},
                "u1": {"id": "u1", "parent": "root", "children": ["a1", "b2"], "message": {
                    "author": {"role": "user"}, "create_time": 1_700_000_001.0,
                    "content": {"content_type": "text", "parts": ["Plan a launch party please"]}}},
                "a1": {"id": "a1", "parent": "u1", "children": [], "message": {
                    "author": {"role": "assistant"}, "content": {"content_type": "text", "parts": ["old branch"]}}},
                "b2": {"id": "b2", "parent": "u1", "children": [], "message": {
                    "author": {"role": "assistant"}, "create_time": 1_700_000_002.0,
                    "metadata": {"model_slug": "gpt-4o"},
                    "content": {"content_type": "text", "parts": ["New branch"]}}}
            }
        });
        let thread = plan_of(conversation).unwrap().remove(0);
        assert_eq!(thread.title, "Plan a launch party please");
        let texts: Vec<&str> = thread.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(texts, ["Plan a launch party please", "old branch", "New branch"]);
        assert_eq!(thread.tree, Some(ImportTree { parents: vec![None, Some(0), Some(0)], active: Some(2) }));
        assert_eq!(thread.messages[2].model.as_deref(), Some("gpt-4o"));
        assert!(thread.updated_at > thread.created_at);
    }

    fn quire(messages: Value) -> Value {
        json!({"format": "quire.thread", "version": 1, "exported_at": "2026-01-01T00:00:00Z",
               "thread": {"id": Uuid::nil(), "title": "T", "created_at": "2026-01-01T00:00:00Z",
                          "updated_at": "2026-01-01T00:00:00Z"},
               "messages": messages})
    }

    fn message(seq: i64) -> Value {
        json!({"id": Uuid::now_v7(), "seq": seq, "role": "user", "content": "hi", "status": "complete",
               "created_at": "2026-01-01T00:00:00Z"})
    }

    fn refused_at(body: Value) -> String {
        match plan_of(body) {
            Err(Error::Invalid { field, .. }) => field,
            other => panic!("not refused as invalid: {other:?}"),
        }
    }

    #[test]
    fn message_numbers_stay_far_below_the_largest() {
        let last = plan_of(quire(json!([message(1), message(MAX_IMPORTED_SEQ)]))).unwrap();
        assert_eq!(last[0].messages[1].seq, MAX_IMPORTED_SEQ);
        assert_eq!(refused_at(quire(json!([message(1), message(MAX_IMPORTED_SEQ + 1)]))), "messages[1].seq");
        assert_eq!(refused_at(quire(json!([message(0)]))), "messages[0].seq");
        assert_eq!(refused_at(quire(json!([message(3), message(3)]))), "messages");
    }

    #[test]
    fn structs_given_as_arrays_are_not_read() {
        let mut body = quire(json!([message(1)]));
        body["thread"] = json!([Uuid::nil(), "T", [], false, false, "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"]);
        assert!(matches!(plan_of(body), Err(Error::Unsupported(_))));
        let chatgpt = json!([{"current_node": "a", "mapping": {"a": [null, null]}}]);
        assert!(matches!(plan_of(chatgpt), Err(Error::Unsupported(_))));
        let account = json!({"format": "quire.export", "version": 1, "exported_at": "2026-01-01T00:00:00Z",
                             "threads": [quire(json!([])), 0]});
        assert!(matches!(plan_of(account), Err(Error::Unsupported(_))));
    }

    #[test]
    fn an_account_s_conversations_carry_their_own_format() {
        let mut thread = quire(json!([]));
        thread["format"] = json!("something.else");
        let account = json!({"format": "quire.export", "version": 1, "exported_at": "2026-01-01T00:00:00Z",
                             "threads": [quire(json!([])), thread]});
        assert_eq!(refused_at(account), "threads[1].format");
    }

    #[test]
    fn chatgpt_text_follows_the_rules_and_long_titles_are_cut() {
        let conversation = |title: &str, text: &str| {
            json!([{"title": title, "current_node": "q", "mapping": {"q": {"message": {
                "author": {"role": "user"}, "content": {"parts": [text]}}}}}])
        };
        let long_title = "t".repeat(MAX_TITLE_CHARS + 100);
        let planned = plan_of(conversation(&long_title, "hello")).unwrap();
        assert_eq!(planned[0].title.chars().count(), MAX_TITLE_CHARS);
        assert_eq!(refused_at(conversation("T", "nul \0 inside")), "[0].mapping.q.message");
        let long = "x".repeat(MAX_IMPORTED_TEXT_CHARS + 1);
        assert_eq!(refused_at(conversation("T", &long)), "[0].mapping.q.message");
        assert_eq!(refused_at(conversation("a\0b", "hello")), "[0].title");
    }

    #[test]
    fn bodies_that_are_not_json_are_malformed_and_other_json_unsupported() {
        assert!(matches!(plan(b"{\"format\": "), Err(Error::Malformed(_))));
        assert!(matches!(plan(b"[{]"), Err(Error::Malformed(_))));
        assert!(matches!(plan(b""), Err(Error::Malformed(_))));
        assert!(matches!(plan(b"42"), Err(Error::Unsupported(_))));
        assert!(matches!(plan(b"[]"), Err(Error::Unsupported(_))));
        assert!(matches!(plan(b"{}"), Err(Error::Unsupported(_))));
        let long = json!({"format": "x".repeat(10_000)});
        let Err(Error::Unsupported(message)) = plan_of(long) else { panic!("an unknown format") };
        assert!(message.len() < 200, "the format is not echoed whole: {message}");
        let misplaced = json!({"format": "quire.thread", "version": "v".repeat(10_000)});
        let Err(Error::Unsupported(message)) = plan_of(misplaced) else { panic!("a string for a number") };
        assert!(message.len() < 600, "the value is not echoed whole: {message}");
    }
}
