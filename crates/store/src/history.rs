//! Storage types of the conversation history: what an import creates, and the helpers both backends share
//! for statistics and for writing imports.

use std::ops::Range;

use async_trait::async_trait;
use chrono::{DateTime, Days, NaiveDate, NaiveTime, Utc};
use uuid::Uuid;
use wire::{
    ArtifactType, AttachmentMeta, DayTokens, HistoryStats, MessageStatus, RequirementKind, RequirementStatus, Role,
    TagCount, Thread, TypeCount, Usage,
};

use super::columns::{convert, shared_sql, stored_row, Stored};
use super::projects::Scope;
use super::{Result, StoreError};

/// How many days of token use the statistics show.
pub const STATS_DAYS: u64 = 30;

/// How many tags the statistics list.
pub const TOP_TAGS: i64 = 10;

/// A conversation to create from an import, with its times as they were.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportThread {
    pub title: String,
    pub tags: Vec<String>,
    pub pinned: bool,
    pub archived: bool,
    pub created_at: DateTime<Utc>,
    /// Raised to `created_at` if earlier.
    pub updated_at: DateTime<Utc>,
    /// In order of `seq`.
    pub messages: Vec<ImportMessage>,
    pub artifacts: Vec<ImportArtifact>,
    /// The branches of the conversation; `None`: one path, the messages in order.
    pub tree: Option<ImportTree>,
    /// The requirements ledger, numbers distinct.
    pub requirements: Vec<ImportRequirement>,
}

impl ImportThread {
    /// A conversation made at `at` of one path of `messages`, with `artifacts`: untagged, neither pinned nor
    /// archived.
    pub fn new(
        title: impl Into<String>,
        at: DateTime<Utc>,
        messages: Vec<ImportMessage>,
        artifacts: Vec<ImportArtifact>,
    ) -> Self {
        ImportThread {
            title: title.into(),
            tags: Vec::new(),
            pinned: false,
            archived: false,
            created_at: at,
            updated_at: at,
            messages,
            artifacts,
            tree: None,
            requirements: Vec::new(),
        }
    }
}

/// The shape of an imported conversation, as indexes into its messages.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportTree {
    /// One per message: the message it follows, which comes before it (`None`: a first message).
    pub parents: Vec<Option<usize>>,
    /// The message the conversation shows last.
    pub active: Option<usize>,
}

/// A message of an imported conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportMessage {
    /// Position in the thread: positive, increasing (gaps allowed, as after deletions).
    pub seq: i64,
    pub role: Role,
    pub content: String,
    pub status: MessageStatus,
    pub usage: Usage,
    pub model: Option<String>,
    pub created_at: DateTime<Utc>,
}

impl ImportMessage {
    /// A complete message without token counts or model, written at `at`.
    pub fn new(seq: i64, role: Role, content: impl Into<String>, at: DateTime<Utc>) -> Self {
        ImportMessage {
            seq,
            role,
            content: content.into(),
            status: MessageStatus::Complete,
            usage: Usage::default(),
            model: None,
            created_at: at,
        }
    }
}

/// A document of an imported conversation with its versions; its links are indexes into the conversation's
/// messages.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportArtifact {
    pub artifact_type: ArtifactType,
    /// The request that asked for the document (its first version).
    pub request_message: Option<usize>,
    /// The answer that wrote it.
    pub assistant_message: Option<usize>,
    /// The versions before the current one, oldest first, numbered below it.
    pub earlier: Vec<ImportVersion>,
    /// The version the document shows.
    pub current: ImportVersion,
}

impl ImportArtifact {
    /// Its versions, oldest first, the current one last.
    pub fn versions(&self) -> impl Iterator<Item = &ImportVersion> {
        self.earlier.iter().chain(std::iter::once(&self.current))
    }

    /// When it was first written: its first version's time.
    pub fn created_at(&self) -> DateTime<Utc> {
        self.earlier.first().unwrap_or(&self.current).created_at
    }

    /// The version at `index` of [`versions`](Self::versions).
    fn version(&self, index: usize) -> &ImportVersion {
        self.earlier.get(index).unwrap_or(&self.current)
    }
}

/// A version of an imported document.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportVersion {
    pub version: i64,
    pub title: String,
    pub content: String,
    /// The request that asked for this version; `None` for one made by hand or silently.
    pub request_message: Option<usize>,
    pub author: ImportAuthor,
    pub created_at: DateTime<Utc>,
    /// What it reflects, each requirement once.
    pub cites: Vec<ImportCitation>,
}

/// A requirement of an imported conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportRequirement {
    /// Its key's number, kept.
    pub number: i64,
    /// Its changes, oldest first: at least one.
    pub revisions: Vec<ImportRevision>,
}

/// One change of an imported requirement: its whole state after it.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportRevision {
    pub text: String,
    pub kind: RequirementKind,
    pub status: RequirementStatus,
    /// The message (an index into the conversation's) that caused it; `None` for a change made in the ledger.
    pub message: Option<usize>,
    pub author: ImportAuthor,
    pub created_at: DateTime<Utc>,
}

/// A requirement as an imported version reflects it: indexes into the conversation's requirements and that
/// requirement's revisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportCitation {
    pub requirement: usize,
    pub revision: usize,
}

impl ImportVersion {
    /// Version `version` written by the assistant (model unknown) at `at`, asked for by no request.
    pub fn new(version: i64, title: impl Into<String>, content: impl Into<String>, at: DateTime<Utc>) -> Self {
        ImportVersion {
            version,
            title: title.into(),
            content: content.into(),
            request_message: None,
            author: ImportAuthor::Assistant { model: None },
            created_at: at,
            cites: Vec::new(),
        }
    }
}

/// Who wrote a version of an imported document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImportAuthor {
    /// A person by hand: in the import, the person importing it (whoever it was written by).
    Importer,
    /// The assistant, answering with `model` when it is known.
    Assistant { model: Option<String> },
}

impl ImportAuthor {
    /// The author's columns as written: the person's id (the importing person's), or the model's name.
    fn columns(&self, user: Uuid) -> (Option<Uuid>, Option<String>) {
        match self {
            ImportAuthor::Importer => (Some(user), None),
            ImportAuthor::Assistant { model } => (None, model.clone()),
        }
    }
}

/// A conversation of an import with the ids its rows get.
pub(crate) struct Prepared<'a> {
    pub id: Uuid,
    pub thread: &'a ImportThread,
    /// One per message, in order.
    pub message_ids: Vec<Uuid>,
    /// One per document, in order.
    pub artifact_ids: Vec<Uuid>,
    /// Every version of every document, documents in order and each one's versions oldest first: the document's
    /// index and the version's among its versions.
    pub versions: Vec<(usize, usize)>,
    /// One per requirement, in order.
    pub requirement_ids: Vec<Uuid>,
    /// Every revision of every requirement in the order they are written (see [`revision_places`]): the
    /// requirement's index and the revision's among its revisions.
    pub revisions: Vec<(usize, usize)>,
    /// Every citation: the place of its version in [`versions`](Self::versions) and its index among the
    /// version's.
    pub citations: Vec<(usize, usize)>,
}

impl<'a> Prepared<'a> {
    /// Ids for every row of the conversations.
    pub fn all(threads: &'a [ImportThread]) -> Vec<Self> {
        threads
            .iter()
            .map(|thread| Prepared {
                id: Uuid::now_v7(),
                thread,
                message_ids: thread.messages.iter().map(|_| Uuid::now_v7()).collect(),
                artifact_ids: thread.artifacts.iter().map(|_| Uuid::now_v7()).collect(),
                versions: version_places(thread),
                requirement_ids: thread.requirements.iter().map(|_| Uuid::now_v7()).collect(),
                revisions: revision_places(thread),
                citations: citation_places(thread),
            })
            .collect()
    }

    /// The revision at `index` of [`revisions`](Self::revisions), with its requirement's index.
    pub fn revision(&self, index: usize) -> (usize, &ImportRevision) {
        let (requirement, revision) = self.revisions[index];
        (requirement, &self.thread.requirements[requirement].revisions[revision])
    }

    /// The citation at `index` of [`citations`](Self::citations), with its document's index and its version's.
    pub fn citation(&self, index: usize) -> (usize, &ImportVersion, ImportCitation) {
        let (place, i) = self.citations[index];
        let (artifact, version) = self.version(place);
        (artifact, version, version.cites[i])
    }

    /// The version at `index` of [`versions`](Self::versions), with its document's index.
    pub fn version(&self, index: usize) -> (usize, &ImportVersion) {
        let (artifact, version) = self.versions[index];
        (artifact, self.thread.artifacts[artifact].version(version))
    }

    /// The highest message number, where the next message's count goes on from.
    pub fn last_seq(&self) -> i64 {
        self.thread.messages.iter().map(|m| m.seq).max().unwrap_or(0)
    }

    /// The last activity, never before the start.
    pub fn updated_at(&self) -> DateTime<Utc> {
        self.thread.updated_at.max(self.thread.created_at)
    }

    /// The id of the parent of the message at `index`: the message before it on a single path. A parent that
    /// does not come before the message makes it a first message.
    pub fn parent(&self, index: usize) -> Option<Uuid> {
        let parent = match &self.thread.tree {
            Some(tree) => tree.parents.get(index).copied().flatten().filter(|p| *p < index),
            None => index.checked_sub(1),
        };
        self.link(parent)
    }

    /// The id of the message the conversation shows last.
    pub fn active(&self) -> Option<Uuid> {
        let active = match &self.thread.tree {
            Some(tree) => tree.active,
            None => self.thread.messages.len().checked_sub(1),
        };
        self.link(active)
    }

    /// The id of the message at `index`, for a document's link.
    pub fn link(&self, index: Option<usize>) -> Option<Uuid> {
        index.and_then(|i| self.message_ids.get(i)).copied()
    }
}

/// The places of every version of a conversation's documents (see [`Prepared::versions`]).
pub(crate) fn version_places(thread: &ImportThread) -> Vec<(usize, usize)> {
    thread
        .artifacts
        .iter()
        .enumerate()
        .flat_map(|(a, artifact)| (0..=artifact.earlier.len()).map(move |v| (a, v)))
        .collect()
}

/// The places of every revision of a conversation's requirements (see [`Prepared::revisions`]), in the order
/// of their times so that the ledger's numbering of changes follows them; a requirement's own revisions keep
/// their order whatever their times say (each counts from the latest time of those before it).
pub(crate) fn revision_places(thread: &ImportThread) -> Vec<(usize, usize)> {
    let mut places: Vec<(DateTime<Utc>, usize, usize)> = Vec::new();
    for (r, requirement) in thread.requirements.iter().enumerate() {
        let mut latest = DateTime::<Utc>::MIN_UTC;
        for (v, revision) in requirement.revisions.iter().enumerate() {
            latest = latest.max(revision.created_at);
            places.push((latest, r, v));
        }
    }
    // Stable: ties keep the requirements' order, and a requirement's own revisions theirs.
    places.sort_by_key(|(at, _, _)| *at);
    places.into_iter().map(|(_, r, v)| (r, v)).collect()
}

/// The places of every citation of a conversation's document versions (see [`Prepared::citations`]).
pub(crate) fn citation_places(thread: &ImportThread) -> Vec<(usize, usize)> {
    version_places(thread)
        .into_iter()
        .enumerate()
        .flat_map(|(place, (a, v))| (0..thread.artifacts[a].version(v).cites.len()).map(move |i| (place, i)))
        .collect()
}

/// One statement's worth of an import.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Part {
    /// The conversation (an index into the prepared ones) with its tags.
    Thread(usize),
    /// Consecutive messages of a conversation.
    Messages(usize, Range<usize>),
    /// Consecutive documents of a conversation.
    Artifacts(usize, Range<usize>),
    /// Consecutive versions of a conversation's documents (see [`Prepared::versions`]).
    Versions(usize, Range<usize>),
    /// Consecutive requirements of a conversation.
    Requirements(usize, Range<usize>),
    /// Consecutive revisions of a conversation's requirements (see [`Prepared::revisions`]).
    Revisions(usize, Range<usize>),
    /// Consecutive citations of a conversation's document versions (see [`Prepared::citations`]).
    Citations(usize, Range<usize>),
}

impl Part {
    /// The index of the conversation it writes to.
    pub fn thread(&self) -> usize {
        match self {
            Part::Thread(t)
            | Part::Messages(t, _)
            | Part::Artifacts(t, _)
            | Part::Versions(t, _)
            | Part::Requirements(t, _)
            | Part::Revisions(t, _)
            | Part::Citations(t, _) => *t,
        }
    }
}

/// How much one group of an import's writes may hold.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    /// Rows in all.
    pub rows: usize,
    /// Bytes of text in all (a single larger row makes a group of its own).
    pub bytes: usize,
    /// Rows of one statement.
    pub rows_per_statement: usize,
}

/// The statements of an import in an order they can be written in (a conversation before its messages, the
/// messages before the documents that point at them, a document before its versions, a requirement before its
/// revisions, which point at messages, and both versions and revisions before the citations that join them), in
/// groups within `budget`.
pub(crate) fn import_groups(prepared: &[Prepared<'_>], budget: Budget) -> Vec<Vec<Part>> {
    let mut groups = Vec::new();
    let mut group: Vec<Part> = Vec::new();
    let (mut rows, mut bytes) = (0, 0);
    let mut add = |part: Part, size: usize| {
        if !group.is_empty() && (rows + 1 > budget.rows || bytes + size > budget.bytes) {
            groups.push(std::mem::take(&mut group));
            (rows, bytes) = (0, 0);
        }
        rows += 1;
        bytes += size;
        let extends = match (group.last_mut(), &part) {
            (Some(Part::Messages(t, range)), Part::Messages(u, next))
            | (Some(Part::Artifacts(t, range)), Part::Artifacts(u, next))
            | (Some(Part::Versions(t, range)), Part::Versions(u, next))
            | (Some(Part::Requirements(t, range)), Part::Requirements(u, next))
            | (Some(Part::Revisions(t, range)), Part::Revisions(u, next))
            | (Some(Part::Citations(t, range)), Part::Citations(u, next))
                if *t == *u && range.end == next.start && range.len() < budget.rows_per_statement =>
            {
                range.end = next.end;
                true
            }
            _ => false,
        };
        if !extends {
            group.push(part);
        }
    };
    for (t, p) in prepared.iter().enumerate() {
        let tags: usize = p.thread.tags.iter().map(String::len).sum();
        add(Part::Thread(t), p.thread.title.len() + tags);
        for (i, message) in p.thread.messages.iter().enumerate() {
            add(Part::Messages(t, i..i + 1), message.content.len());
        }
        for (i, artifact) in p.thread.artifacts.iter().enumerate() {
            add(Part::Artifacts(t, i..i + 1), artifact.current.title.len() + artifact.current.content.len());
        }
        for i in 0..p.versions.len() {
            let (_, version) = p.version(i);
            add(Part::Versions(t, i..i + 1), version.title.len() + version.content.len());
        }
        for i in 0..p.requirement_ids.len() {
            add(Part::Requirements(t, i..i + 1), 0);
        }
        for i in 0..p.revisions.len() {
            add(Part::Revisions(t, i..i + 1), p.revision(i).1.text.len());
        }
        for i in 0..p.citations.len() {
            add(Part::Citations(t, i..i + 1), 0);
        }
    }
    if !group.is_empty() {
        groups.push(group);
    }
    groups
}

/// The first day of the statistics window that ends `today`.
pub fn stats_window_start(today: NaiveDate) -> NaiveDate {
    today.checked_sub_days(Days::new(STATS_DAYS - 1)).unwrap_or(today)
}

/// The window ending `today` as times: from its first midnight (UTC, inclusive) to the midnight after `today`
/// (exclusive).
pub fn stats_window_bounds(today: NaiveDate) -> (DateTime<Utc>, DateTime<Utc>) {
    let from = stats_window_start(today).and_time(NaiveTime::MIN).and_utc();
    let until = today.succ_opt().unwrap_or(today).and_time(NaiveTime::MIN).and_utc();
    (from, until)
}

/// One entry per day of the window ending `today`, oldest first, from the days that had use (`used`) and the
/// number of messages written on each day that had any (`messages`).
pub fn fill_days(today: NaiveDate, used: &[DayTokens], messages: &[(NaiveDate, u64)]) -> Vec<DayTokens> {
    let start = stats_window_start(today);
    start
        .iter_days()
        .take_while(|day| *day <= today)
        .map(|day| {
            let mut entry = used.iter().find(|u| u.day == day).cloned().unwrap_or(DayTokens {
                day,
                input_tokens: 0,
                output_tokens: 0,
                messages: 0,
            });
            entry.messages = messages.iter().filter(|(d, _)| *d == day).map(|(_, n)| n).sum();
            entry
        })
        .collect()
}

shared_sql! {
    /// Writes the messages `range` of an imported conversation, in one statement.
    pub(crate) async fn insert_imported_messages(
        conn: &mut D::Connection,
        user: Uuid,
        p: &Prepared<'_>,
        range: Range<usize>,
    ) -> Result<()> {
        let sql = format!(
            "insert into messages (id, thread_id, user_id, seq, role, content, status, input_tokens,
             output_tokens, model, created_at, parent_id) values {}",
            value_rows(range.len(), 12)
        );
        let mut insert = sqlx::query(&sql);
        for i in range {
            let message = &p.thread.messages[i];
            insert = insert
                .bind(D::id(p.message_ids[i]))
                .bind(D::id(p.id))
                .bind(D::id(user))
                .bind(message.seq)
                .bind(message.role.as_str())
                .bind(message.content.as_str())
                .bind(message.status.as_str())
                .bind(message.usage.input_tokens as i64)
                .bind(message.usage.output_tokens as i64)
                .bind(message.model.clone())
                .bind(D::time(message.created_at))
                .bind(p.parent(i).map(D::id));
        }
        insert.persistent(false).execute(conn).await?;
        Ok(())
    }

    /// Writes the documents `range` of an imported conversation, each at its current version, in one statement.
    pub(crate) async fn insert_imported_artifacts(
        conn: &mut D::Connection,
        user: Uuid,
        p: &Prepared<'_>,
        range: Range<usize>,
    ) -> Result<()> {
        let sql = format!(
            "insert into artifacts (id, thread_id, user_id, artifact_type, title, content, version,
             request_message_id, assistant_message_id, created_at, updated_at) values {}",
            value_rows(range.len(), 11)
        );
        let mut insert = sqlx::query(&sql);
        for i in range {
            let artifact = &p.thread.artifacts[i];
            let created_at = artifact.created_at();
            insert = insert
                .bind(D::id(p.artifact_ids[i]))
                .bind(D::id(p.id))
                .bind(D::id(user))
                .bind(artifact.artifact_type.as_str())
                .bind(artifact.current.title.as_str())
                .bind(artifact.current.content.as_str())
                .bind(artifact.current.version)
                .bind(p.link(artifact.request_message).map(D::id))
                .bind(p.link(artifact.assistant_message).map(D::id))
                .bind(D::time(created_at))
                .bind(D::time(artifact.current.created_at.max(created_at)));
        }
        insert.persistent(false).execute(conn).await?;
        Ok(())
    }

    /// Writes the versions `range` (see [`Prepared::versions`]) of an imported conversation's documents, in one
    /// statement: a person's as the importing person's. Each is written where its request stands, the current
    /// one where the answer that wrote it does (with neither: on every path).
    pub(crate) async fn insert_imported_versions(
        conn: &mut D::Connection,
        user: Uuid,
        p: &Prepared<'_>,
        range: Range<usize>,
    ) -> Result<()> {
        let sql = format!(
            "insert into artifact_versions (artifact_id, version, title, content, created_at, request_message_id,
             written_on, author_id, model) values {}",
            value_rows(range.len(), 9)
        );
        let mut insert = sqlx::query(&sql);
        for i in range {
            let (a, version) = p.version(i);
            let artifact = &p.thread.artifacts[a];
            let request = p.link(version.request_message);
            let written_on = if std::ptr::eq(version, &artifact.current) {
                p.link(artifact.assistant_message).or(request)
            } else {
                request
            };
            let (author_id, model) = version.author.columns(user);
            insert = insert
                .bind(D::id(p.artifact_ids[a]))
                .bind(version.version)
                .bind(version.title.as_str())
                .bind(version.content.as_str())
                .bind(D::time(version.created_at))
                .bind(request.map(D::id))
                .bind(written_on.map(D::id))
                .bind(author_id.map(D::id))
                .bind(model);
        }
        insert.persistent(false).execute(conn).await?;
        Ok(())
    }
}

shared_sql! {
    /// Writes the requirements `range` of an imported conversation, in one statement.
    pub(crate) async fn insert_imported_requirements(
        conn: &mut D::Connection,
        user: Uuid,
        p: &Prepared<'_>,
        range: Range<usize>,
    ) -> Result<()> {
        let sql = format!(
            "insert into requirements (id, thread_id, user_id, number) values {}",
            value_rows(range.len(), 4)
        );
        let mut insert = sqlx::query(&sql);
        for i in range {
            insert = insert
                .bind(D::id(p.requirement_ids[i]))
                .bind(D::id(p.id))
                .bind(D::id(user))
                .bind(p.thread.requirements[i].number);
        }
        insert.persistent(false).execute(conn).await?;
        Ok(())
    }

    /// Writes the revisions `range` (see [`Prepared::revisions`]) of an imported conversation's requirements, in
    /// one statement, in order: their numbers are given as they go in, and a requirement's order is theirs.
    pub(crate) async fn insert_imported_revisions(
        conn: &mut D::Connection,
        user: Uuid,
        p: &Prepared<'_>,
        range: Range<usize>,
    ) -> Result<()> {
        let sql = format!(
            "insert into requirement_revisions (requirement_id, thread_id, text, kind, status, message_id, author_id,
             model, created_at) values {}",
            value_rows(range.len(), 9)
        );
        let mut insert = sqlx::query(&sql);
        for i in range {
            let (r, revision) = p.revision(i);
            let (author_id, model) = revision.author.columns(user);
            insert = insert
                .bind(D::id(p.requirement_ids[r]))
                .bind(D::id(p.id))
                .bind(revision.text.as_str())
                .bind(revision.kind.as_str())
                .bind(revision.status.as_str())
                .bind(p.link(revision.message).map(D::id))
                .bind(author_id.map(D::id))
                .bind(model)
                .bind(D::time(revision.created_at));
        }
        insert.persistent(false).execute(conn).await?;
        Ok(())
    }

    /// Writes the citations `range` (see [`Prepared::citations`]) of an imported conversation's document
    /// versions, in one statement: each names its revision by its place among the requirement's, which were all
    /// written before, in order.
    pub(crate) async fn insert_imported_citations(
        conn: &mut D::Connection,
        p: &Prepared<'_>,
        range: Range<usize>,
    ) -> Result<()> {
        let rows: Vec<String> = (0..range.len())
            .map(|r| {
                let n = r * 4;
                format!(
                    "(${}, ${}, ${}, (select v.id from requirement_revisions v where v.requirement_id = ${}
                     order by v.id limit 1 offset ${}))",
                    n + 1, n + 2, n + 3, n + 3, n + 4
                )
            })
            .collect();
        let sql = format!(
            "insert into artifact_requirements (artifact_id, version, requirement_id, revision_id) values {}",
            rows.join(", ")
        );
        let mut insert = sqlx::query(&sql);
        for i in range {
            let (a, version, cite) = p.citation(i);
            insert = insert
                .bind(D::id(p.artifact_ids[a]))
                .bind(version.version)
                .bind(D::id(p.requirement_ids[cite.requirement]))
                .bind(cite.revision as i64);
        }
        insert.persistent(false).execute(conn).await?;
        Ok(())
    }
}

/// The placeholders of `rows` rows of `columns` values each, numbered on: `($1, $2), ($3, $4)`.
fn value_rows(rows: usize, columns: usize) -> String {
    let row = |r: usize| {
        let values: Vec<String> = (1..=columns).map(|c| format!("${}", r * columns + c)).collect();
        format!("({})", values.join(", "))
    };
    (0..rows).map(row).collect::<Vec<_>>().join(", ")
}

shared_sql! {
    rows(
        (i64, i64, Option<D::Time>, Option<D::Time>),
        (String, i64),
        (i64, i64),
        (D::Day, i64, i64),
        (D::Day, i64),
        AttachmentMetaRow<D::Id, D::Time>,
    );
    /// The statistics of the conversations of `scope` over the window ending `today` (see
    /// [`History::history_stats`]). Tags and types with as many uses compare byte-wise, so ties break alike on both
    /// backends.
    pub(crate) async fn history_stats(
        conn: &mut D::Connection,
        user: Uuid,
        scope: Scope,
        today: NaiveDate,
    ) -> Result<HistoryStats> {
        let (from, until) = stats_window_bounds(today);
        let (start, end) = (scope.next_placeholder(), scope.next_placeholder() + 1);
        let totals: (i64, i64, Option<D::Time>, Option<D::Time>) = Self::scoped(
            sqlx::query_as(&format!(
                "select count(*) as threads, cast(coalesce(sum(t.message_count), 0) as bigint) as messages,
                 min(t.created_at) as first, max(t.updated_at) as last from threads t where {}",
                scope.threads("t")
            )),
            user,
            scope,
        )
        .fetch_one(&mut *conn)
        .await?;
        if totals.0 == 0 {
            Self::must_reach(&mut *conn, user, scope).await?;
        }
        // A person's tokens are their ledger's, wherever they spent them (a project's conversations are metered to
        // whoever sent each turn); a project's are what its conversations spent, whoever sent.
        let (tokens_sql, used_sql) = match scope {
            Scope::Own => (
                "select cast(coalesce(sum(input_tokens), 0) as bigint) as input,
                 cast(coalesce(sum(output_tokens), 0) as bigint) as output from usage_ledger where user_id = $1"
                    .to_string(),
                format!(
                    "select day, cast(sum(input_tokens) as bigint) as input, cast(sum(output_tokens) as bigint) as output
                     from usage_ledger where user_id = $1 and day >= ${start} and day <= ${end} group by day"
                ),
            ),
            Scope::Project(_) => (
                format!(
                    "select cast(coalesce(sum(t.input_tokens), 0) as bigint) as input,
                     cast(coalesce(sum(t.output_tokens), 0) as bigint) as output from threads t where {}",
                    scope.threads("t")
                ),
                format!(
                    "select {} as day, cast(sum(m.input_tokens) as bigint) as input,
                     cast(sum(m.output_tokens) as bigint) as output from messages m
                     where {} and m.created_at >= ${start} and m.created_at < ${end} group by day",
                    D::utc_day("m.created_at"),
                    scope.rows("m")
                ),
            ),
        };
        let used = match scope {
            Scope::Own => Self::scoped(sqlx::query_as(&used_sql), user, scope)
                .bind(D::day(stats_window_start(today)))
                .bind(D::day(today)),
            Scope::Project(_) => {
                Self::scoped(sqlx::query_as(&used_sql), user, scope).bind(D::time(from)).bind(D::time(until))
            }
        };
        let rows: StatsRows<D::Time, D::Day> = StatsRows {
            totals,
            tags: Self::scoped(
                sqlx::query_as(&format!(
                    "select tt.tag, count(*) as n from thread_tags tt where {}
                     group by tt.tag order by n desc, tt.tag{} limit {TOP_TAGS}",
                    scope.rows("tt"),
                    D::BYTEWISE
                )),
                user,
                scope,
            )
            .fetch_all(&mut *conn)
            .await?,
            tokens: Self::scoped(sqlx::query_as(&tokens_sql), user, scope).fetch_one(&mut *conn).await?,
            used: used.fetch_all(&mut *conn).await?,
            written: Self::scoped(
                sqlx::query_as(&format!(
                    "select {} as day, count(*) as n from messages m
                     where {} and m.created_at >= ${start} and m.created_at < ${end} group by day",
                    D::utc_day("m.created_at"),
                    scope.rows("m")
                )),
                user,
                scope,
            )
            .bind(D::time(from))
            .bind(D::time(until))
            .fetch_all(&mut *conn)
            .await?,
            artifacts: Self::scoped(
                sqlx::query_as(&format!(
                    "select a.artifact_type, count(*) as n from artifacts a where {}
                     group by a.artifact_type order by n desc, a.artifact_type{}",
                    scope.rows("a"),
                    D::BYTEWISE
                )),
                user,
                scope,
            )
            .fetch_all(conn)
            .await?,
        };
        rows.stats(today)
    }

    /// See [`History::list_user_attachments`].
    pub(crate) async fn user_attachments(conn: &mut D::Connection, user: Uuid) -> Result<Vec<AttachmentMeta>> {
        let rows: Vec<AttachmentMetaRow<D::Id, D::Time>> = sqlx::query_as(
            "select id, thread_id, filename, content_type, size, created_at from attachments where user_id = $1
             order by created_at, id",
        )
        .bind(D::id(user))
        .fetch_all(conn)
        .await?;
        convert(rows)
    }
}

/// The rows [`History::history_stats`] is made of, as both backends read them, with their time (`T`) and day
/// (`D`) columns (see [`Stored`]).
pub(crate) struct StatsRows<T, D> {
    /// Conversations, messages, the first conversation's start and the last activity.
    pub totals: (i64, i64, Option<T>, Option<T>),
    /// The [`TOP_TAGS`] most used tags with their uses, in order.
    pub tags: Vec<(String, i64)>,
    /// Input and output tokens in all.
    pub tokens: (i64, i64),
    /// Input and output tokens of each day of the window that had any.
    pub used: Vec<(D, i64, i64)>,
    /// Messages written on each day of the window that had any.
    pub written: Vec<(D, i64)>,
    /// Documents of each type, most first.
    pub artifacts: Vec<(String, i64)>,
}

impl<T: Stored<DateTime<Utc>>, D: Stored<NaiveDate>> StatsRows<T, D> {
    /// The statistics of the window ending `today`.
    pub fn stats(self, today: NaiveDate) -> Result<HistoryStats> {
        let (threads, messages, first, last) = self.totals;
        let used = self
            .used
            .into_iter()
            .map(|(day, input, output)| {
                Ok(DayTokens {
                    day: day.read("day")?,
                    input_tokens: input as u64,
                    output_tokens: output as u64,
                    messages: 0,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let written =
            self.written.into_iter().map(|(day, n)| Ok((day.read("day")?, n as u64))).collect::<Result<Vec<_>>>()?;
        let artifacts = self
            .artifacts
            .into_iter()
            .map(|(kind, n)| {
                let artifact_type =
                    ArtifactType::parse(&kind).ok_or_else(|| StoreError::Corrupt(format!("type {kind}")))?;
                Ok(TypeCount { artifact_type, count: n as u64 })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(HistoryStats {
            total_threads: threads as u64,
            total_messages: messages as u64,
            average_messages_per_thread: if threads == 0 { 0.0 } else { messages as f64 / threads as f64 },
            first_conversation_at: first.read("first")?,
            last_conversation_at: last.read("last")?,
            top_tags: self.tags.into_iter().map(|(tag, n)| TagCount { tag, count: n as u64 }).collect(),
            input_tokens: self.tokens.0 as u64,
            output_tokens: self.tokens.1 as u64,
            tokens_per_day: fill_days(today, &used, &written),
            artifacts_by_type: artifacts,
            budget: None,
        })
    }
}

stored_row! {
    /// An attachment's metadata as stored, with the backend's id (`I`) and time (`T`) columns (see [`Stored`]).
    AttachmentMetaRow<I, T> -> AttachmentMeta {
        id: I,
        thread_id: I,
        filename: String,
        content_type: String,
        size: i64,
        created_at: T,
    }
}

/// A person's history as a whole: usage, stats, export and import.
#[async_trait]
pub trait History: Send + Sync {
    /// Adds tokens the provider reported to the thread totals and the user's ledger for today and this model.
    async fn record_usage(&self, user: Uuid, thread: Uuid, model: &str, usage: Usage) -> Result<()> {
        let spent =
            super::SpentTokens { user, payer: user, thread, model: model.to_string(), usage, counted_tokens: 0 };
        self.record_spent(&spent).await
    }
    /// Adds spent tokens (some perhaps counted by Quire) to the thread totals and the user's ledger for today.
    async fn record_spent(&self, spent: &super::SpentTokens) -> Result<()>;
    /// Counts, dates, top tags, tokens (in all and per day of the 30 ending `today`) and documents by type, over
    /// the conversations of `scope`: for the person's own, the tokens metered to them; for a project's, what its
    /// conversations spent (per day: their answers'). `NotFound` for a project the person is not a member of.
    async fn history_stats(&self, user: Uuid, scope: Scope, today: NaiveDate) -> Result<HistoryStats>;
    /// Every thread id of the user, archived ones too, oldest first.
    async fn all_thread_ids(&self, user: Uuid) -> Result<Vec<Uuid>>;
    /// The metadata of the user's attachments, oldest first.
    async fn list_user_attachments(&self, user: Uuid) -> Result<Vec<AttachmentMeta>>;
    /// Creates the threads with their messages and documents, all of them or none, and returns them in order.
    /// PostgreSQL writes them in one transaction; SQLite in many short ones, so that an import never holds its
    /// only writer for long, and removes what it wrote if one fails.
    async fn import_threads(&self, user: Uuid, threads: Vec<ImportThread>) -> Result<Vec<Thread>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(messages: &[usize], artifacts: usize) -> ImportThread {
        let now = chrono::Utc::now();
        let messages = messages
            .iter()
            .enumerate()
            .map(|(i, size)| ImportMessage::new(i as i64 + 1, Role::User, "x".repeat(*size), now));
        let artifacts = (0..artifacts).map(|_| ImportArtifact {
            artifact_type: ArtifactType::Custom,
            request_message: Some(0),
            assistant_message: None,
            earlier: Vec::new(),
            current: ImportVersion::new(1, "d", "y", now),
        });
        ImportThread::new("t", now, messages.collect(), artifacts.collect())
    }

    #[test]
    fn value_rows_number_every_placeholder_once() {
        assert_eq!(value_rows(2, 3), "($1, $2, $3), ($4, $5, $6)");
    }

    #[test]
    fn import_groups_keep_the_order_and_the_budget() {
        let threads = [thread(&[10; 7], 2), thread(&[1_000, 10], 0)];
        let prepared = Prepared::all(&threads);
        let budget = Budget { rows: 4, bytes: 500, rows_per_statement: 2 };
        let groups = import_groups(&prepared, budget);
        assert_eq!(
            groups,
            [
                vec![Part::Thread(0), Part::Messages(0, 0..2), Part::Messages(0, 2..3)],
                vec![Part::Messages(0, 3..5), Part::Messages(0, 5..7)],
                vec![Part::Artifacts(0, 0..2), Part::Versions(0, 0..2)],
                vec![Part::Thread(1)],
                // Larger than the budget alone.
                vec![Part::Messages(1, 0..1)],
                vec![Part::Messages(1, 1..2)],
            ]
        );
    }

    #[test]
    fn revisions_go_in_by_time_each_requirement_keeping_its_order() {
        let at = |minute: i64| chrono::DateTime::UNIX_EPOCH + chrono::Duration::minutes(minute);
        let revision = |minute| ImportRevision {
            text: "r".into(),
            kind: RequirementKind::Functional,
            status: RequirementStatus::Active,
            message: None,
            author: ImportAuthor::Importer,
            created_at: at(minute),
        };
        let mut t = thread(&[1], 0);
        t.requirements = vec![
            // Its second change says it came before its first: it still goes after it.
            ImportRequirement { number: 1, revisions: vec![revision(1), revision(0), revision(5)] },
            ImportRequirement { number: 2, revisions: vec![revision(2), revision(3)] },
        ];
        assert_eq!(revision_places(&t), [(0, 0), (0, 1), (1, 0), (1, 1), (0, 2)]);
        let prepared = Prepared::all(std::slice::from_ref(&t));
        let budget = Budget { rows: 100, bytes: 1_000, rows_per_statement: 100 };
        let parts = import_groups(&prepared, budget).concat();
        assert_eq!(parts[parts.len() - 2..], [Part::Requirements(0, 0..2), Part::Revisions(0, 0..5)]);
    }

    #[test]
    fn thirty_days_end_today() {
        let today = NaiveDate::from_ymd_opt(2026, 3, 1).unwrap();
        let yesterday = NaiveDate::from_ymd_opt(2026, 2, 28).unwrap();
        let used = [DayTokens { day: yesterday, input_tokens: 5, output_tokens: 7, messages: 0 }];
        let too_old = NaiveDate::from_ymd_opt(2026, 1, 30).unwrap();
        let days = fill_days(today, &used, &[(today, 3), (too_old, 9)]);
        assert_eq!(days.len(), 30);
        assert_eq!(days.last().unwrap().day, today);
        assert_eq!(days[0].day, NaiveDate::from_ymd_opt(2026, 1, 31).unwrap());
        assert_eq!(days[28], used[0]);
        assert_eq!(days.iter().map(|d| d.input_tokens).sum::<u64>(), 5);
        assert_eq!(days[29].messages, 3);
        assert_eq!(days.iter().map(|d| d.messages).sum::<u64>(), 3);
    }
}
