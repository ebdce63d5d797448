//! A conversation's requirements ledger: the rows both backends keep (requirements, their revisions, and what each
//! document version cites), and what is made of them for a path of the conversation ([`LedgerRows::on_path`]):
//! the ledger as that path shows it, who covers what, and which documents are out of date.
//!
//! A revision belongs to the person's message that caused it; the ledger of a path is made of the revisions
//! whose message is on it (and those a person made in the ledger itself, which belong to no message). So a
//! requirement stated in a message edited away is not in the new branch's ledger, and switching back restores it.

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;
use wire::{
    foreign_key, requirement_key, CitedConversation, Coverage, OutOfDate, Requirement, RequirementChange,
    RequirementKind, RequirementStatus, VersionAuthor,
};

use super::columns::{json_time, shared_sql, Stored};
use super::messages::Tree;
use super::{Result, StoreError};

/// A change to write to the ledger: the requirement's whole state after it.
#[derive(Debug, Clone, PartialEq)]
pub enum LedgerWrite {
    /// A new requirement (its number is the next of the conversation).
    Add { text: String, kind: RequirementKind, message_id: Option<Uuid> },
    /// A new state of requirement `requirement`, numbered `number` (both must hold).
    Revise {
        requirement: Uuid,
        number: i64,
        text: String,
        kind: RequirementKind,
        status: RequirementStatus,
        message_id: Option<Uuid>,
    },
}

/// A requirement as a document version reflects it: at revision `revision`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Citation {
    pub requirement: Uuid,
    pub revision: i64,
}

/// What a write made: the requirement's number and its new revision, per write, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recorded {
    pub number: i64,
    pub requirement: Uuid,
    pub revision: i64,
    /// A new requirement (else a new state of one).
    pub added: bool,
    /// Its status after the write.
    pub status: RequirementStatus,
}

/// What recording makes of the rows it read (see [`Requirements::record_planned`]): the writes, or why nothing is
/// written.
pub type PlanWrites = Box<dyn FnOnce(LedgerRows) -> std::result::Result<Vec<LedgerWrite>, String> + Send>;

#[async_trait]
pub trait Requirements {
    /// Everything the ledger of `thread` is made of (see [`LedgerRows::on_path`]); `NotFound` when the thread is
    /// missing or another user's.
    async fn ledger_rows(&self, user: Uuid, thread: Uuid) -> Result<LedgerRows>;
    /// [`ledger_rows`](Self::ledger_rows) without the tree (empty), for a caller that knows the path it shows.
    async fn ledger_rows_without_tree(&self, user: Uuid, thread: Uuid) -> Result<LedgerRows>;
    /// The ledgers of the other conversations of `thread`'s project that `pick` names and the person reads (each
    /// with its tree); empty when `thread` is in no project or not the person's to read.
    async fn foreign_ledgers(&self, user: Uuid, thread: Uuid, pick: ForeignPick) -> Result<Vec<ForeignLedger>>;
    /// What recording changes needs, without reading the whole ledger: the requirements numbered `numbers`
    /// with their revisions, how many there are in all ([`LedgerRows::total`]), and the person's messages
    /// numbered `seqs` (as [`LedgerRows::tree`]'s heads, no active message); no documents. `NotFound` when the
    /// thread is missing or another user's.
    async fn ledger_rows_of(&self, user: Uuid, thread: Uuid, numbers: &[i64], seqs: &[i64]) -> Result<LedgerRows>;
    /// Reads what [`ledger_rows_of`](Self::ledger_rows_of) reads and writes what `plan` makes of it, by `author`,
    /// in one transaction, so nothing changes the ledger between the two: `Ok(Err(why))` when the plan refuses
    /// (nothing is written). `NotFound` as [`record_requirements`](Self::record_requirements).
    async fn record_planned(
        &self,
        user: Uuid,
        thread: Uuid,
        numbers: Vec<i64>,
        seqs: Vec<i64>,
        author: VersionAuthor,
        plan: PlanWrites,
    ) -> Result<std::result::Result<Vec<Recorded>, String>>;
    /// The document versions of the person's `thread` that cite a requirement, with their titles and times (not
    /// their text), as the traceability matrix shows them; empty for a thread that is missing or another user's.
    async fn cited_versions(&self, user: Uuid, thread: Uuid) -> Result<Vec<CitedVersion>>;
    /// Writes the changes (each requirement changed once at most) in one transaction, by `author` (a person's
    /// change belongs to no message); `NotFound` when the thread, a requirement or a message is missing or
    /// another user's (then nothing is written).
    async fn record_requirements(
        &self,
        user: Uuid,
        thread: Uuid,
        writes: Vec<LedgerWrite>,
        author: VersionAuthor,
    ) -> Result<Vec<Recorded>>;
}

/// A document version that cites requirements, as the traceability matrix names it.
#[derive(Debug, Clone, PartialEq)]
pub struct CitedVersion {
    pub artifact_id: Uuid,
    pub version: i64,
    pub title: String,
    pub created_at: DateTime<Utc>,
}

super::columns::stored_row! {
    /// A [`CitedVersion`]'s row.
    CitedVersionRow<I, T> -> CitedVersion {
        artifact_id: I,
        version: i64,
        title: String,
        created_at: T,
    }
}

/// A requirement's row.
#[derive(Debug, Clone, PartialEq)]
pub struct RequirementRow {
    pub id: Uuid,
    pub number: i64,
}

/// One revision of a requirement.
#[derive(Debug, Clone, PartialEq)]
pub struct Revision {
    pub id: i64,
    pub requirement_id: Uuid,
    pub text: String,
    pub kind: RequirementKind,
    pub status: RequirementStatus,
    pub message_id: Option<Uuid>,
    pub author: VersionAuthor,
    pub created_at: DateTime<Utc>,
}

/// A document's current version, as the ledger needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct CurrentDocument {
    pub id: Uuid,
    pub title: String,
    pub version: i64,
    pub assistant_message_id: Option<Uuid>,
    /// Its conversation, when it is another of the project (a document there citing this conversation's
    /// requirements); `None` for the conversation's own.
    pub conversation: Option<CitedConversation>,
}

/// What a version of a document cites.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CitationOf {
    pub artifact_id: Uuid,
    pub version: i64,
    pub requirement_id: Uuid,
    pub revision_id: i64,
}

/// Everything a conversation's ledger is made of, read in one go.
#[derive(Debug, Clone, Default)]
pub struct LedgerRows {
    pub tree: Tree,
    /// How many requirements the conversation has (more than [`requirements`](Self::requirements) when only
    /// some were read).
    pub total: usize,
    pub requirements: Vec<RequirementRow>,
    /// Oldest first.
    pub revisions: Vec<Revision>,
    pub documents: Vec<CurrentDocument>,
    /// What every version of the documents cites, by document and version.
    pub citations: Vec<CitationOf>,
    /// The ledgers of the project's other conversations whose requirements the documents cite (each with its
    /// tree, none with ledgers of its own in turn).
    pub foreign: Vec<ForeignLedger>,
}

/// Another conversation of the project, with its ledger's rows.
#[derive(Debug, Clone)]
pub struct ForeignLedger {
    pub conversation: CitedConversation,
    pub rows: LedgerRows,
}

impl ForeignLedger {
    /// Its ledger as its own shown path has it.
    pub fn view(&self) -> LedgerView {
        self.rows.on_path(&self.rows.shown_path())
    }
}

/// Which of the project's other conversations [`Requirements::foreign_ledgers`] reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForeignPick {
    /// Those whose references ([`wire::conversation_ref`]) are these.
    References(Vec<String>),
    /// The most recently active ones that hold requirements, at most this many.
    Recent(u32),
    /// Those holding these requirements.
    Holding(Vec<Uuid>),
}

/// Most references one [`ForeignPick::References`] looks for.
pub const MAX_FOREIGN_REFERENCES: usize = 50;

/// Where a requirement stands on a path, with what the tools need besides the wire form.
#[derive(Debug, Clone, PartialEq)]
pub struct Standing {
    pub id: Uuid,
    pub number: i64,
    /// Its newest revision on the path.
    pub revision: i64,
    pub requirement: Requirement,
}

/// A document's citations on a path: the keys it cites and the out-of-date marks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DocumentMarks {
    pub requirements: Vec<String>,
    pub out_of_date: Vec<OutOfDate>,
    /// The other conversations whose requirements it cites.
    pub conversations: Vec<CitedConversation>,
}

/// The ledger as one path shows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LedgerView {
    /// In key order; only requirements stated on the path.
    pub standing: Vec<Standing>,
    /// Per document of the path.
    pub marks: HashMap<Uuid, DocumentMarks>,
    /// The numbers of the requirements stated only on other paths, in order.
    pub elsewhere: Vec<i64>,
}

impl LedgerView {
    /// The requirement with this number on the path.
    pub fn by_number(&self, number: i64) -> Option<&Standing> {
        self.standing.iter().find(|s| s.number == number)
    }

    /// The wire ledger: requirements with their coverage, and the keys of those in force that nothing covers.
    pub fn ledger(&self) -> wire::Ledger {
        let requirements: Vec<Requirement> = self.standing.iter().map(|s| s.requirement.clone()).collect();
        let uncovered = requirements
            .iter()
            .filter(|r| r.status.in_force() && r.covered_by.is_empty())
            .map(|r| r.key.clone())
            .collect();
        let elsewhere = self.elsewhere.iter().map(|n| requirement_key(*n)).collect();
        wire::Ledger { requirements, uncovered, elsewhere }
    }

    /// Fills in each document's cited keys and out-of-date marks.
    pub fn mark(&self, artifacts: &mut [wire::Artifact]) {
        for artifact in artifacts {
            if let Some(marks) = self.marks.get(&artifact.id) {
                artifact.requirements.clone_from(&marks.requirements);
                artifact.out_of_date.clone_from(&marks.out_of_date);
                artifact.cited_conversations.clone_from(&marks.conversations);
            }
        }
    }
}

impl LedgerRows {
    /// The rows as they are once `artifact`, just saved at its version, cites `cites`: read before the save,
    /// they mark the saved version without a second read.
    pub fn with_saved(mut self, artifact: &wire::Artifact, cites: &[Citation]) -> Self {
        self.documents.retain(|d| d.id != artifact.id);
        self.documents.push(CurrentDocument {
            id: artifact.id,
            title: artifact.title.clone(),
            version: artifact.version,
            assistant_message_id: artifact.assistant_message_id,
            conversation: None,
        });
        self.citations.extend(cites.iter().map(|c| CitationOf {
            artifact_id: artifact.id,
            version: artifact.version,
            requirement_id: c.requirement,
            revision_id: c.revision,
        }));
        self
    }

    /// What version `version` of `artifact` cites.
    pub fn cited_by(&self, artifact: Uuid, version: i64) -> impl Iterator<Item = &CitationOf> {
        self.citations.iter().filter(move |c| c.artifact_id == artifact && c.version == version)
    }

    /// The shown path's messages.
    pub fn shown_path(&self) -> HashSet<Uuid> {
        self.tree.path().into_iter().map(|h| h.id).collect()
    }

    /// The ledger as `path` shows it: the revisions of its messages and the person's own, folded in order; the
    /// documents of the path with what their current versions cite, each marked out of date by the later
    /// revisions of what it cites. Linear in the rows.
    pub fn on_path(&self, path: &HashSet<Uuid>) -> LedgerView {
        let numbers: HashMap<Uuid, i64> = self.requirements.iter().map(|r| (r.id, r.number)).collect();
        // Each requirement's first revision (revisions come oldest first).
        let mut first: HashMap<Uuid, i64> = HashMap::new();
        for revision in &self.revisions {
            first.entry(revision.requirement_id).or_insert(revision.id);
        }
        // Per requirement: its revisions on the path, in order.
        let mut folded: HashMap<Uuid, Vec<&Revision>> = HashMap::new();
        for revision in &self.revisions {
            let on_path = revision.message_id.is_none_or(|m| path.contains(&m));
            if !on_path {
                continue;
            }
            let steps = folded.entry(revision.requirement_id).or_default();
            // A requirement is on the path once a revision of the path states it (or a person added it); a
            // person's change of a requirement only another branch states stays there.
            let added_by_person = first.get(&revision.requirement_id) == Some(&revision.id);
            if steps.is_empty() && revision.message_id.is_none() && !added_by_person {
                continue;
            }
            steps.push(revision);
        }
        // The conversation's documents of the path, and those of other conversations of the project that cite it.
        let documents: Vec<&CurrentDocument> = self
            .documents
            .iter()
            .filter(|d| d.conversation.is_some() || d.assistant_message_id.is_none_or(|m| path.contains(&m)))
            .collect();
        let titles: HashMap<Uuid, &CurrentDocument> = documents.iter().map(|d| (d.id, *d)).collect();
        let mut cited_by: HashMap<Uuid, Vec<(&CurrentDocument, i64)>> = HashMap::new();
        for c in &self.citations {
            if let Some(document) = titles.get(&c.artifact_id).filter(|d| d.version == c.version) {
                cited_by.entry(c.requirement_id).or_default().push((document, c.revision_id));
            }
        }
        let mut standing: Vec<Standing> = folded
            .iter()
            .filter(|(_, steps)| !steps.is_empty())
            .filter_map(|(id, steps)| {
                let number = *numbers.get(id)?;
                let last = steps.last()?;
                let mut history = Vec::with_capacity(steps.len());
                let mut before: Option<&str> = None;
                let mut sources = Vec::new();
                for step in steps {
                    history.push(RequirementChange {
                        revision: step.id,
                        text: step.text.clone(),
                        before: before.filter(|b| *b != step.text).map(str::to_string),
                        kind: step.kind,
                        status: step.status,
                        message_id: step.message_id,
                        author: step.author.clone(),
                        at: step.created_at,
                    });
                    before = Some(&step.text);
                    if let Some(m) = step.message_id.filter(|m| !sources.contains(m)) {
                        sources.push(m);
                    }
                }
                let covered_by = cited_by
                    .get(id)
                    .map(|docs| {
                        docs.iter()
                            .map(|(d, revision)| Coverage {
                                artifact_id: d.id,
                                title: d.title.clone(),
                                version: d.version,
                                current: *revision >= last.id,
                                conversation: d.conversation.clone(),
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                Some(Standing {
                    id: *id,
                    number,
                    revision: last.id,
                    requirement: Requirement {
                        key: requirement_key(number),
                        text: last.text.clone(),
                        kind: last.kind,
                        status: last.status,
                        sources,
                        history,
                        covered_by,
                    },
                })
            })
            .collect();
        standing.sort_by_key(|s| s.number);
        // The marks of the conversation's own documents (another's that cites it is marked in its own).
        let own: Vec<&&CurrentDocument> = documents.iter().filter(|d| d.conversation.is_none()).collect();
        let mut marks: HashMap<Uuid, DocumentMarks> = own.iter().map(|d| (d.id, DocumentMarks::default())).collect();
        let by_id: HashMap<i64, &Revision> = self.revisions.iter().map(|r| (r.id, r)).collect();
        for s in &standing {
            let Some(docs) = cited_by.get(&s.id) else { continue };
            for (document, cited) in docs.iter().filter(|(d, _)| d.conversation.is_none()) {
                let entry = marks.entry(document.id).or_default();
                entry.requirements.push(s.requirement.key.clone());
                entry.out_of_date.extend(change_since(s, *cited, &by_id, None));
            }
        }
        // Requirements of the project's other conversations the documents cite, each as its conversation's own
        // shown path has it.
        if !self.foreign.is_empty() {
            let own_versions: HashMap<Uuid, i64> = own.iter().map(|d| (d.id, d.version)).collect();
            for foreign in &self.foreign {
                let view = foreign.view();
                let there: HashMap<Uuid, &Standing> = view.standing.iter().map(|s| (s.id, s)).collect();
                let by_id: HashMap<i64, &Revision> = foreign.rows.revisions.iter().map(|r| (r.id, r)).collect();
                let thread = foreign.conversation.thread_id;
                for c in &self.citations {
                    let (Some(s), Some(version)) = (there.get(&c.requirement_id), own_versions.get(&c.artifact_id))
                    else {
                        continue;
                    };
                    if *version != c.version {
                        continue;
                    }
                    let entry = marks.entry(c.artifact_id).or_default();
                    entry.requirements.push(foreign_key(s.number, thread));
                    entry.out_of_date.extend(change_since(s, c.revision_id, &by_id, Some(&foreign.conversation)));
                    if !entry.conversations.contains(&foreign.conversation) {
                        entry.conversations.push(foreign.conversation.clone());
                    }
                }
            }
        }
        let stated: HashSet<i64> = standing.iter().map(|s| s.number).collect();
        let elsewhere = self
            .requirements
            .iter()
            .filter(|r| first.contains_key(&r.id) && !stated.contains(&r.number))
            .map(|r| r.number)
            .collect();
        LedgerView { standing, marks, elsewhere }
    }
}

/// What makes a document that reflects requirement `s` at revision `cited` out of date: the later revisions of the
/// path that changed its text or dropped it (a new kind alone leaves the document right); `None` when none did.
/// `elsewhere` is the requirement's conversation when it is another of the project.
fn change_since(
    s: &Standing,
    cited: i64,
    revisions: &HashMap<i64, &Revision>,
    elsewhere: Option<&CitedConversation>,
) -> Option<OutOfDate> {
    let later: Vec<&RequirementChange> = s.requirement.history.iter().filter(|r| r.revision > cited).collect();
    if later.is_empty() {
        return None;
    }
    // The text the document reflects: the cited revision's (on this path or not).
    let now = &s.requirement;
    let was = revisions.get(&cited).map_or_else(|| now.text.clone(), |r| r.text.clone());
    if was == now.text && !later.iter().any(|r| r.status == RequirementStatus::Dropped) {
        return None;
    }
    let mut changed_by = Vec::new();
    for r in &later {
        if let Some(m) = r.message_id.filter(|m| !changed_by.contains(m)) {
            changed_by.push(m);
        }
    }
    Some(OutOfDate {
        key: match elsewhere {
            Some(c) => foreign_key(s.number, c.thread_id),
            None => now.key.clone(),
        },
        was,
        now: now.text.clone(),
        status: now.status,
        changed_by,
        conversation: elsewhere.cloned(),
    })
}

/// The columns of a revision (`v` the revisions).
const REVISION_COLUMNS: &str =
    "v.id, v.requirement_id, v.text, v.kind, v.status, v.message_id, v.author_id, v.model, v.created_at";

/// The same columns as items of [`Dialect::json_rows`](crate::columns::Dialect::json_rows), over a subquery `v`.
const REVISION_ITEMS: &str =
    "v.id, v.requirement_id, v.text, v.kind, v.status, v.message_id, v.author_id, v.model, v.created_at";

fn decode<T: serde::de::DeserializeOwned>(text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("ledger rows: {e}")))
}

/// A revision as [`Dialect::json_rows`](crate::columns::Dialect::json_rows) gives it.
type RevisionItems =
    (i64, String, String, String, String, Option<String>, Option<String>, Option<String>, serde_json::Value);

/// Revisions from their JSON rows, oldest first.
fn decode_revisions(text: &str) -> Result<Vec<Revision>> {
    let rows: Vec<RevisionItems> = decode(text)?;
    let mut out = rows
        .into_iter()
        .map(|(id, requirement, text, kind, status, message, author, model, at)| {
            Ok(Revision {
                id,
                requirement_id: Stored::<Uuid>::read(requirement, "requirement_id")?,
                text,
                kind: RequirementKind::parse(&kind)
                    .ok_or_else(|| StoreError::Corrupt(format!("requirement kind {kind}")))?,
                status: RequirementStatus::parse(&status)
                    .ok_or_else(|| StoreError::Corrupt(format!("requirement status {status}")))?,
                message_id: Stored::<Option<Uuid>>::read(message, "message_id")?,
                author: match Stored::<Option<Uuid>>::read(author, "author_id")? {
                    Some(user_id) => VersionAuthor::Person { user_id },
                    None => VersionAuthor::Assistant { model },
                },
                created_at: json_time(&at)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    out.sort_unstable_by_key(|r| r.id);
    Ok(out)
}

/// Requirements from their JSON rows, by number.
fn decode_requirements(text: &str) -> Result<Vec<RequirementRow>> {
    let rows: Vec<(String, i64)> = decode(text)?;
    let mut out = rows
        .into_iter()
        .map(|(id, number)| Ok(RequirementRow { id: Stored::<Uuid>::read(id, "id")?, number }))
        .collect::<Result<Vec<_>>>()?;
    out.sort_unstable_by_key(|r| r.number);
    Ok(out)
}

/// Documents from their JSON rows, oldest first.
fn decode_documents(text: &str) -> Result<Vec<CurrentDocument>> {
    let rows: Vec<(String, String, i64, Option<String>, serde_json::Value)> = decode(text)?;
    let mut out = rows
        .into_iter()
        .map(|(id, title, version, answer, at)| {
            let document = CurrentDocument {
                id: Stored::<Uuid>::read(id, "id")?,
                title,
                version,
                assistant_message_id: Stored::<Option<Uuid>>::read(answer, "assistant_message_id")?,
                conversation: None,
            };
            Ok((json_time(&at)?, document))
        })
        .collect::<Result<Vec<_>>>()?;
    out.sort_by(|(a, x), (b, y)| a.cmp(b).then(x.id.cmp(&y.id)));
    Ok(out.into_iter().map(|(_, d)| d).collect())
}

/// Citations from their JSON rows, by document and version.
fn decode_citations(text: &str) -> Result<Vec<CitationOf>> {
    let rows: Vec<(String, i64, String, i64)> = decode(text)?;
    let mut out = rows
        .into_iter()
        .map(|(artifact, version, requirement, revision)| {
            Ok(CitationOf {
                artifact_id: Stored::<Uuid>::read(artifact, "artifact_id")?,
                version,
                requirement_id: Stored::<Uuid>::read(requirement, "requirement_id")?,
                revision_id: revision,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    out.sort_unstable_by_key(|c| (c.artifact_id, c.version));
    Ok(out)
}

/// The documents of the project's other conversations that cite the conversation's requirements, from their JSON
/// rows (one per citation of a current version): the documents once each, and what they cite.
fn decode_outside(text: &str) -> Result<(Vec<CurrentDocument>, Vec<CitationOf>)> {
    let rows: Vec<(String, String, i64, String, String, String, i64)> = decode(text)?;
    let mut documents: Vec<CurrentDocument> = Vec::new();
    let mut citations = Vec::with_capacity(rows.len());
    for (artifact, title, version, thread, thread_title, requirement, revision) in rows {
        let id = Stored::<Uuid>::read(artifact, "artifact_id")?;
        if !documents.iter().any(|d| d.id == id) {
            let thread_id = Stored::<Uuid>::read(thread, "thread_id")?;
            documents.push(CurrentDocument {
                id,
                title,
                version,
                assistant_message_id: None,
                conversation: Some(CitedConversation {
                    thread_id,
                    title: thread_title,
                    reference: wire::conversation_ref(thread_id),
                }),
            });
        }
        citations.push(CitationOf {
            artifact_id: id,
            version,
            requirement_id: Stored::<Uuid>::read(requirement, "requirement_id")?,
            revision_id: revision,
        });
    }
    documents.sort_by_key(|d| d.id);
    Ok((documents, citations))
}

shared_sql! {
    rows(
        crate::messages::MessageRow<D::Id, D::Time>,
        crate::messages::StampRow<D::Id>,
        crate::messages::MessageHeadRow<D::Id>,
        (String, i64),
        CitedVersionRow<D::Id, D::Time>,
    );
    /// See [`Requirements::cited_versions`].
    pub(crate) async fn cited_versions(conn: &mut D::Connection, user: Uuid, thread: Uuid) -> Result<Vec<CitedVersion>> {
        let rows: Vec<CitedVersionRow<D::Id, D::Time>> = sqlx::query_as(
            "select v.artifact_id, v.version, v.title, v.created_at from artifact_versions v
             join artifacts a on a.id = v.artifact_id
             where a.thread_id = $1 and a.user_id = $2 and exists (select 1 from artifact_requirements c
               where c.artifact_id = v.artifact_id and c.version = v.version)",
        )
        .bind(D::id(thread))
        .bind(D::id(user))
        .fetch_all(conn)
        .await?;
        crate::columns::convert(rows)
    }

    /// Everything the ledger of the person's `thread` is made of; `None` when it is missing or another user's.
    pub(crate) async fn ledger_rows(conn: &mut D::Connection, user: Uuid, thread: Uuid) -> Result<Option<LedgerRows>> {
        let Some((tree, _)) = Self::tree(&mut *conn, user, thread, false).await? else {
            return Ok(None);
        };
        let rows = Self::ledger_rows_without_tree(conn, user, thread).await?;
        Ok(rows.map(|rows| LedgerRows { tree, ..rows }))
    }

    /// [`ledger_rows_without_tree`](Self::ledger_rows_without_tree), and the ledgers of the other conversations
    /// whose requirements its documents cite (read only when they cite any).
    pub(crate) async fn ledger_rows_without_tree(
        conn: &mut D::Connection,
        user: Uuid,
        thread: Uuid,
    ) -> Result<Option<LedgerRows>> {
        let Some(mut rows) = Self::ledger_rows_alone(&mut *conn, user, thread).await? else {
            return Ok(None);
        };
        let own: HashSet<Uuid> = rows.requirements.iter().map(|r| r.id).collect();
        let outside: HashSet<Uuid> =
            rows.documents.iter().filter(|d| d.conversation.is_some()).map(|d| d.id).collect();
        let mut elsewhere: Vec<Uuid> = rows
            .citations
            .iter()
            .filter(|c| !own.contains(&c.requirement_id) && !outside.contains(&c.artifact_id))
            .map(|c| c.requirement_id)
            .collect();
        if !elsewhere.is_empty() {
            elsewhere.sort_unstable();
            elsewhere.dedup();
            rows.foreign = Self::foreign_ledgers(conn, user, thread, ForeignPick::Holding(elsewhere)).await?;
        }
        Ok(Some(rows))
    }

    /// See [`Requirements::foreign_ledgers`]: one statement finds the conversations (the project's, the person
    /// reading them, `thread` too), then one reads each one's tree and one its ledger.
    pub(crate) async fn foreign_ledgers(
        conn: &mut D::Connection,
        user: Uuid,
        thread: Uuid,
        pick: ForeignPick,
    ) -> Result<Vec<ForeignLedger>> {
        let (picked, limit) = match &pick {
            ForeignPick::References(refs) if refs.is_empty() => return Ok(Vec::new()),
            ForeignPick::References(refs) => {
                let count = refs.len().min(MAX_FOREIGN_REFERENCES);
                let holes: Vec<String> = (0..count).map(|i| format!("${}", i + 3)).collect();
                // A conversation id's text is 36 characters; its reference is the last 12.
                (format!("substr(cast(t.id as text), 25) in ({})", holes.join(", ")), String::new())
            }
            ForeignPick::Holding(_) => (
                format!("t.id in (select q.thread_id from requirements q where {})", D::in_ids("q.id", "$3")),
                String::new(),
            ),
            ForeignPick::Recent(most) => (
                "exists (select 1 from requirements r where r.thread_id = t.id)".to_string(),
                format!("order by t.updated_at desc limit {most}"),
            ),
        };
        let sql = format!(
            "select t.id, t.title from threads t join threads me on me.id = $1
             where me.project_id is not null and t.project_id = me.project_id and t.id <> me.id
             and {} and {} and {picked} {limit}",
            crate::projects::readable("me.id", "$2"),
            crate::projects::readable("t.id", "$2"),
        );
        let mut query = sqlx::query_as::<_, (D::Id, String)>(&sql).bind(D::id(thread)).bind(D::id(user));
        match pick {
            ForeignPick::References(refs) => {
                for reference in refs.into_iter().take(MAX_FOREIGN_REFERENCES) {
                    query = query.bind(reference);
                }
            }
            ForeignPick::Holding(ids) => query = query.bind(D::ids(&ids)),
            ForeignPick::Recent(_) => {}
        }
        let found = query.fetch_all(&mut *conn).await?;
        let mut out = Vec::with_capacity(found.len());
        for (id, title) in found {
            let thread_id: Uuid = Stored::read(id, "id")?;
            let Some((tree, _)) = Self::tree(&mut *conn, user, thread_id, false).await? else { continue };
            let Some(rows) = Self::ledger_rows_alone(&mut *conn, user, thread_id).await? else { continue };
            let reference = wire::conversation_ref(thread_id);
            out.push(ForeignLedger {
                conversation: CitedConversation { thread_id, title, reference },
                rows: LedgerRows { tree, ..rows },
            });
        }
        Ok(out)
    }

    /// The conversation's own ledger rows without the tree, in one statement (the reader checked in it), with the
    /// documents of the project's other conversations that cite its requirements; no other conversation's
    /// ledger. The requirements, revisions and citations are each read as one JSON text and decoded at once: a
    /// row at a time, the driver's cost per row was most of the time of a ledger of hundreds.
    pub(crate) async fn ledger_rows_alone(
        conn: &mut D::Connection,
        user: Uuid,
        thread: Uuid,
    ) -> Result<Option<LedgerRows>> {
        // One statement: whether the person reads the thread, then five JSON texts: requirements, revisions,
        // documents, citations, and the other conversations' documents citing the requirements (none out of a
        // project, where the first condition ends it).
        let reads = crate::projects::readable("$1", "$2");
        let sql = format!(
            "select
               (select count(*) from threads t where t.id = $1 and {reads}),
               (select {} from requirements r where r.thread_id = $1 and {reads}),
               (select {} from (select {REVISION_COLUMNS} from requirement_revisions v
                  join requirements q on q.id = v.requirement_id where v.thread_id = $1 and {reads}) v),
               (select {} from artifacts d where d.thread_id = $1 and {reads}),
               (select {} from (select c.artifact_id, c.version, c.requirement_id, c.revision_id
                  from artifact_requirements c join artifacts a on a.id = c.artifact_id
                  where a.thread_id = $1 and {reads}) c),
               (select {} from (select a.id as artifact_id, a.title, a.version, a.thread_id, o.title as thread_title,
                    c.requirement_id, c.revision_id
                  from threads me join threads o on o.project_id = me.project_id and o.id <> me.id
                  join artifacts a on a.thread_id = o.id
                  join artifact_requirements c on c.artifact_id = a.id and c.version = a.version
                  join requirements q on q.id = c.requirement_id and q.thread_id = me.id
                  where me.id = $1 and me.project_id is not null and {reads} and {}) x)",
            D::json_rows("r.id, r.number"),
            D::json_rows(REVISION_ITEMS),
            D::json_rows("d.id, d.title, d.version, d.assistant_message_id, d.created_at"),
            D::json_rows("c.artifact_id, c.version, c.requirement_id, c.revision_id"),
            D::json_rows("x.artifact_id, x.title, x.version, x.thread_id, x.thread_title, x.requirement_id, x.revision_id"),
            crate::projects::readable("o.id", "$2"),
        );
        let (owned, requirements, revisions, documents, citations, outside): (i64, String, String, String, String, String) =
            sqlx::query_as(&sql).bind(D::id(thread)).bind(D::id(user)).fetch_one(conn).await?;
        if owned == 0 {
            return Ok(None);
        }
        let requirements = decode_requirements(&requirements)?;
        let (outside_documents, outside_citations) = decode_outside(&outside)?;
        let mut documents = decode_documents(&documents)?;
        documents.extend(outside_documents);
        let mut citations = decode_citations(&citations)?;
        citations.extend(outside_citations);
        Ok(Some(LedgerRows {
            tree: Tree::default(),
            total: requirements.len(),
            requirements,
            revisions: decode_revisions(&revisions)?,
            documents,
            citations,
            foreign: Vec::new(),
        }))
    }

    /// See [`Requirements::ledger_rows_of`]. One statement reads the requirements and their revisions (the
    /// thread's owner checked in it), one more the messages when `seqs` names any.
    pub(crate) async fn ledger_rows_of(
        conn: &mut D::Connection,
        user: Uuid,
        thread: Uuid,
        numbers: &[i64],
        seqs: &[i64],
    ) -> Result<Option<LedgerRows>> {
        let sql = format!(
            "select
               (select count(*) from threads t where t.id = $1 and t.user_id = $2),
               (select count(*) from requirements r where r.thread_id = $1 and r.user_id = $2),
               (select {} from requirements r where r.thread_id = $1 and r.user_id = $2 and {}),
               (select {} from (select {REVISION_COLUMNS} from requirement_revisions v
                  join requirements q on q.id = v.requirement_id
                  where q.thread_id = $1 and q.user_id = $2 and {}) v)",
            D::json_rows("r.id, r.number"),
            D::in_numbers("r.number", "$3"),
            D::json_rows(REVISION_ITEMS),
            D::in_numbers("q.number", "$3"),
        );
        let (owned, total, requirements, revisions): (i64, i64, String, String) = sqlx::query_as(&sql)
            .bind(D::id(thread))
            .bind(D::id(user))
            .bind(D::numbers(numbers))
            .fetch_one(&mut *conn)
            .await?;
        if owned == 0 {
            return Ok(None);
        }
        let mut heads = Vec::new();
        if !seqs.is_empty() {
            let sql = format!(
                "select {} from messages where thread_id = $1 and user_id = $2 and {}",
                crate::messages::HEAD_COLUMNS,
                D::in_numbers("seq", "$3")
            );
            let rows: Vec<crate::messages::MessageHeadRow<D::Id>> = sqlx::query_as(&sql)
                .bind(D::id(thread))
                .bind(D::id(user))
                .bind(D::numbers(seqs))
                .fetch_all(&mut *conn)
                .await?;
            heads = rows.into_iter().map(TryInto::try_into).collect::<Result<Vec<_>>>()?;
        }
        Ok(Some(LedgerRows {
            tree: Tree { heads, active: None },
            total: total as usize,
            requirements: decode_requirements(&requirements)?,
            revisions: decode_revisions(&revisions)?,
            documents: Vec::new(),
            citations: Vec::new(),
            foreign: Vec::new(),
        }))
    }

    /// Writes `writes` to the person's `thread`'s ledger (in the caller's transaction, which has locked the
    /// thread's row where there are other writers: see `lock_thread`); `NotFound` when the thread, a requirement
    /// or a message is not the person's and the thread's.
    pub(crate) async fn record_requirements(
        conn: &mut D::Connection,
        user: Uuid,
        thread: Uuid,
        writes: &[LedgerWrite],
        author: &VersionAuthor,
        at: DateTime<Utc>,
    ) -> Result<Vec<Recorded>> {
        // Who writes is checked by the statements that write (and by the caller's lock, where there is one): the
        // conversation's author, or an editor of its project (the rows stay the author's).
        // The new requirements first, numbered on from the conversation's highest, in one statement that writes
        // nothing unless the person reaches the thread as one of them.
        let adds: Vec<serde_json::Value> = writes
            .iter()
            .filter(|w| matches!(w, LedgerWrite::Add { .. }))
            .enumerate()
            .map(|(k, _)| serde_json::json!({"id": Uuid::now_v7().to_string(), "k": k as i64 + 1}))
            .collect();
        let mut added: Vec<(i64, Uuid)> = Vec::new();
        if !adds.is_empty() {
            let sql = format!(
                "insert into requirements (id, thread_id, user_id, number)
                 select w.id, t.id, t.user_id,
                   (select coalesce(max(r.number), 0) from requirements r where r.thread_id = $1) + w.k
                 from {} cross join threads t where t.id = $1 and {}
                 returning id, number",
                D::json_table("$3", "w", &[("id", "uuid"), ("k", "bigint")]),
                crate::projects::thread_row_access("t", "$2", wire::ProjectRole::Editor)
            );
            let rows: Vec<(D::Id, i64)> = sqlx::query_as(&sql)
                .bind(D::id(thread))
                .bind(D::id(user))
                .bind(serde_json::Value::from(adds.clone()).to_string())
                .fetch_all(&mut *conn)
                .await?;
            if rows.len() != adds.len() {
                return Err(StoreError::NotFound);
            }
            added = rows
                .into_iter()
                .map(|(id, number)| Ok((number, Stored::read(id, "id")?)))
                .collect::<Result<Vec<_>>>()?;
            added.sort_unstable();
        }
        // Then every revision in one statement: each requirement found by its id and number among the person's
        // of this thread, each message among the person's of this thread; one not found writes nothing.
        let mut order: Vec<(i64, Uuid, bool, RequirementStatus)> = Vec::with_capacity(writes.len());
        let mut next_added = added.iter();
        let rows: Vec<serde_json::Value> = writes
            .iter()
            .map(|write| {
                let ((number, requirement), message, text, kind, status) = match write {
                    LedgerWrite::Add { text, kind, message_id } => (
                        next_added.next().copied().unwrap_or((0, Uuid::nil())),
                        message_id,
                        text,
                        kind,
                        RequirementStatus::Active,
                    ),
                    LedgerWrite::Revise { requirement, number, text, kind, status, message_id } => {
                        ((*number, *requirement), message_id, text, kind, *status)
                    }
                };
                order.push((number, requirement, matches!(write, LedgerWrite::Add { .. }), status));
                serde_json::json!({
                    "requirement_id": requirement.to_string(),
                    "number": number,
                    "text": text,
                    "kind": kind.as_str(),
                    "status": status.as_str(),
                    "message_id": message.map(|m| m.to_string()),
                })
            })
            .collect();
        let (author_id, model) = match author {
            VersionAuthor::Person { user_id } => (Some(*user_id), None),
            VersionAuthor::Assistant { model } => (None, model.clone()),
        };
        let sql = format!(
            "insert into requirement_revisions
             (requirement_id, thread_id, text, kind, status, message_id, author_id, model, created_at)
             select q.id, q.thread_id, w.text, w.kind, w.status, w.message_id, $3, $4, $5
             from {} cross join requirements q
             where q.id = w.requirement_id and q.number = w.number and q.thread_id = $1 and {}
               and (w.message_id is null or exists (select 1 from messages m
                 where m.id = w.message_id and m.thread_id = $1))
             returning requirement_id, id",
            D::json_table(
                "$6",
                "w",
                &[
                    ("requirement_id", "uuid"),
                    ("number", "bigint"),
                    ("text", "text"),
                    ("kind", "text"),
                    ("status", "text"),
                    ("message_id", "uuid")
                ]
            ),
            crate::projects::thread_access("$1", "$2", wire::ProjectRole::Editor)
        );
        let written: Vec<(D::Id, i64)> = sqlx::query_as(&sql)
            .bind(D::id(thread))
            .bind(D::id(user))
            .bind(author_id.map(D::id))
            .bind(model)
            .bind(D::time(at))
            .bind(serde_json::Value::from(rows).to_string())
            .fetch_all(&mut *conn)
            .await?;
        if written.len() != writes.len() {
            return Err(StoreError::NotFound);
        }
        let mut revisions: HashMap<Uuid, i64> = HashMap::with_capacity(written.len());
        for (requirement, revision) in written {
            revisions.insert(Stored::read(requirement, "requirement_id")?, revision);
        }
        order
            .into_iter()
            .map(|(number, requirement, added, status)| {
                let revision = revisions.remove(&requirement).ok_or(StoreError::NotFound)?;
                Ok(Recorded { number, requirement, revision, added, status })
            })
            .collect()
    }

    /// Records what version `version` of `artifact` reflects (in the caller's transaction, after the version is
    /// saved); a citation of a requirement of a conversation outside the document's project (or of another
    /// conversation when it is in none), or of a revision of another requirement, is left out by the statement
    /// itself.
    pub(crate) async fn cite(conn: &mut D::Connection, artifact: Uuid, version: i64, cites: &[Citation]) -> Result<()> {
        for c in cites {
            sqlx::query(
                "insert into artifact_requirements (artifact_id, version, requirement_id, revision_id)
                 select a.id, $2, q.id, v.id from artifacts a
                 join threads ct on ct.id = a.thread_id
                 join requirements q on q.id = $3
                 join threads qt on qt.id = q.thread_id
                   and (qt.id = ct.id or (ct.project_id is not null and qt.project_id = ct.project_id))
                 join requirement_revisions v on v.requirement_id = q.id and v.id = $4
                 where a.id = $1",
            )
            .bind(D::id(artifact))
            .bind(version)
            .bind(D::id(c.requirement))
            .bind(c.revision)
            .execute(&mut *conn)
            .await?;
        }
        Ok(())
    }
}

/// Implements [`Requirements`] for a backend, written once for both.
macro_rules! requirements_for {
    ($backend:ty) => {
        const _: () = {
            use tracing::instrument;
            use uuid::Uuid;
            use wire::VersionAuthor;
            use $crate::requirements::{CitedVersion, LedgerRows, LedgerWrite, PlanWrites, Recorded, Requirements};
            use $crate::{now, Result, StoreError};

            #[async_trait::async_trait]
            impl Requirements for $backend {
                #[instrument(skip(self))]
                async fn ledger_rows(&self, user: Uuid, thread: Uuid) -> Result<LedgerRows> {
                    Shared::ledger_rows(&mut *self.read().await?, user, thread).await?.ok_or(StoreError::NotFound)
                }

                #[instrument(skip(self))]
                async fn ledger_rows_without_tree(&self, user: Uuid, thread: Uuid) -> Result<LedgerRows> {
                    Shared::ledger_rows_without_tree(&mut *self.read().await?, user, thread)
                        .await?
                        .ok_or(StoreError::NotFound)
                }

                #[instrument(skip(self))]
                async fn foreign_ledgers(
                    &self,
                    user: Uuid,
                    thread: Uuid,
                    pick: $crate::requirements::ForeignPick,
                ) -> Result<Vec<$crate::requirements::ForeignLedger>> {
                    Shared::foreign_ledgers(&mut *self.read().await?, user, thread, pick).await
                }

                #[instrument(skip(self))]
                async fn ledger_rows_of(
                    &self,
                    user: Uuid,
                    thread: Uuid,
                    numbers: &[i64],
                    seqs: &[i64],
                ) -> Result<LedgerRows> {
                    Shared::ledger_rows_of(&mut *self.read().await?, user, thread, numbers, seqs)
                        .await?
                        .ok_or(StoreError::NotFound)
                }

                #[instrument(skip(self, plan, author))]
                async fn record_planned(
                    &self,
                    user: Uuid,
                    thread: Uuid,
                    numbers: Vec<i64>,
                    seqs: Vec<i64>,
                    author: VersionAuthor,
                    plan: PlanWrites,
                ) -> Result<std::result::Result<Vec<Recorded>, String>> {
                    let at = now();
                    self.write_together(move |tx| {
                        Box::pin(async move {
                            // Locked first where there are other writers: what is read stays as read.
                            Shared::lock_thread(&mut *tx, user, thread).await?;
                            let rows = Shared::ledger_rows_of(&mut *tx, user, thread, &numbers, &seqs)
                                .await?
                                .ok_or(StoreError::NotFound)?;
                            match plan(rows) {
                                Ok(writes) => {
                                    Ok(Ok(Shared::record_requirements(tx, user, thread, &writes, &author, at).await?))
                                }
                                Err(why) => Ok(Err(why)),
                            }
                        })
                    })
                    .await
                }

                #[instrument(skip(self))]
                async fn cited_versions(&self, user: Uuid, thread: Uuid) -> Result<Vec<CitedVersion>> {
                    Shared::cited_versions(&mut *self.read().await?, user, thread).await
                }

                #[instrument(skip(self, writes, author), fields(writes = writes.len()))]
                async fn record_requirements(
                    &self,
                    user: Uuid,
                    thread: Uuid,
                    writes: Vec<LedgerWrite>,
                    author: VersionAuthor,
                ) -> Result<Vec<Recorded>> {
                    let at = now();
                    self.write_together(move |tx| {
                        Box::pin(async move {
                            Shared::lock_thread_for(&mut *tx, user, thread, wire::ProjectRole::Editor).await?;
                            let recorded =
                                Shared::record_requirements(&mut *tx, user, thread, &writes, &author, at).await?;
                            if let VersionAuthor::Person { user_id } = author {
                                let keys: Vec<String> = recorded.iter().map(|r| format!("R-{}", r.number)).collect();
                                let kind = wire::ActivityKind::RequirementsChanged;
                                Shared::log_thread_activity(tx, thread, user_id, kind, &keys.join(", ")).await?;
                            }
                            Ok(recorded)
                        })
                    })
                    .await
                }
            }
        };
    };
}
pub(crate) use requirements_for;

#[cfg(test)]
mod tests {
    use super::*;

    fn revision(id: i64, requirement: Uuid, text: &str, status: RequirementStatus, message: Option<Uuid>) -> Revision {
        Revision {
            id,
            requirement_id: requirement,
            text: text.into(),
            kind: RequirementKind::Functional,
            status,
            message_id: message,
            author: VersionAuthor::default(),
            created_at: DateTime::<Utc>::default(),
        }
    }

    #[test]
    fn the_path_decides_what_stands_and_what_is_out_of_date() {
        let (a, b, person) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
        let (here, there) = (Uuid::from_u128(10), Uuid::from_u128(11));
        let doc = Uuid::from_u128(20);
        let rows = LedgerRows {
            total: 3,
            requirements: vec![
                RequirementRow { id: a, number: 1 },
                RequirementRow { id: b, number: 2 },
                RequirementRow { id: person, number: 3 },
            ],
            revisions: vec![
                revision(1, a, "Slots are 30 minutes.", RequirementStatus::Active, Some(here)),
                revision(2, b, "Dark mode.", RequirementStatus::Active, Some(there)),
                // A person's change of a requirement only the other branch states stays there.
                revision(3, b, "Dark mode, please.", RequirementStatus::Changed, None),
                // A requirement a person added shows on every path.
                revision(4, person, "Export to CSV.", RequirementStatus::Active, None),
                revision(5, a, "Slots are 30 minutes.", RequirementStatus::Active, Some(here)),
                revision(6, a, "Slots are 45 minutes.", RequirementStatus::Changed, Some(there)),
            ],
            documents: vec![CurrentDocument {
                id: doc,
                title: "Plan".into(),
                version: 2,
                assistant_message_id: None,
                conversation: None,
            }],
            citations: vec![
                CitationOf { artifact_id: doc, version: 1, requirement_id: person, revision_id: 4 },
                CitationOf { artifact_id: doc, version: 2, requirement_id: a, revision_id: 1 },
            ],
            ..LedgerRows::default()
        };
        let view = rows.on_path(&[here].into());
        let keys: Vec<&str> = view.standing.iter().map(|s| s.requirement.key.as_str()).collect();
        assert_eq!(keys, ["R-1", "R-3"]);
        assert_eq!(view.elsewhere, [2], "R-2 is stated only on the other branch");
        assert_eq!(view.ledger().elsewhere, ["R-2"]);
        // A revision that changes nothing of the text leaves the document current; the old version's citation
        // is not the current version's.
        let marks = &view.marks[&doc];
        assert_eq!(marks.requirements, ["R-1"]);
        assert!(marks.out_of_date.is_empty());
        assert_eq!(view.ledger().uncovered, ["R-3"]);

        let view = rows.on_path(&[there].into());
        let texts: Vec<&str> = view.standing.iter().map(|s| s.requirement.text.as_str()).collect();
        assert_eq!(texts, ["Slots are 45 minutes.", "Dark mode, please.", "Export to CSV."]);
        let out = &view.marks[&doc].out_of_date;
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].was.as_str(), out[0].now.as_str()), ("Slots are 30 minutes.", "Slots are 45 minutes."));
        assert_eq!(out[0].changed_by, [there]);
    }

    #[test]
    fn another_conversations_requirements_mark_as_its_own_path_has_them() {
        // Conversation B ("Payments") states R-1 and changes it on its shown path; a document of A cites R-1 of B
        // as first stated, and R-1 of A.
        let (a_req, b_req) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let (a_msg, b_msg, b_later) = (Uuid::from_u128(10), Uuid::from_u128(11), Uuid::from_u128(12));
        let (doc, b_thread) = (Uuid::from_u128(20), Uuid::from_u128(0xabc_0000_0000_0000_0000_0a1b_2c3d_4e5f));
        let payments =
            CitedConversation { thread_id: b_thread, title: "Payments".into(), reference: "0a1b2c3d4e5f".into() };
        let head = |id, seq, parent| crate::MessageHead { id, seq, role: wire::Role::User, parent };
        let b_rows = LedgerRows {
            tree: Tree { heads: vec![head(b_msg, 1, None), head(b_later, 2, Some(b_msg))], active: None },
            total: 1,
            requirements: vec![RequirementRow { id: b_req, number: 1 }],
            revisions: vec![
                revision(7, b_req, "Card payments.", RequirementStatus::Active, Some(b_msg)),
                revision(9, b_req, "Card and bank payments.", RequirementStatus::Changed, Some(b_later)),
            ],
            ..LedgerRows::default()
        };
        let rows = LedgerRows {
            total: 1,
            requirements: vec![RequirementRow { id: a_req, number: 1 }],
            revisions: vec![revision(8, a_req, "Book a slot.", RequirementStatus::Active, Some(a_msg))],
            documents: vec![CurrentDocument {
                id: doc,
                title: "Stories".into(),
                version: 1,
                assistant_message_id: None,
                conversation: None,
            }],
            citations: vec![
                CitationOf { artifact_id: doc, version: 1, requirement_id: a_req, revision_id: 8 },
                CitationOf { artifact_id: doc, version: 1, requirement_id: b_req, revision_id: 7 },
            ],
            foreign: vec![ForeignLedger { conversation: payments.clone(), rows: b_rows.clone() }],
            ..LedgerRows::default()
        };
        let view = rows.on_path(&[a_msg].into());
        let marks = &view.marks[&doc];
        assert_eq!(marks.requirements, ["R-1", "R-1@0a1b2c3d4e5f"]);
        assert_eq!(marks.conversations, std::slice::from_ref(&payments));
        assert_eq!(marks.out_of_date.len(), 1, "{:?}", marks.out_of_date);
        let mark = &marks.out_of_date[0];
        assert_eq!(mark.key, "R-1@0a1b2c3d4e5f");
        assert_eq!((mark.was.as_str(), mark.now.as_str()), ("Card payments.", "Card and bank payments."));
        assert_eq!(mark.changed_by, [b_later]);
        assert_eq!(mark.conversation.as_ref(), Some(&payments));
        // The foreign requirement is not A's: A's ledger holds R-1 alone.
        assert_eq!(view.standing.len(), 1);

        // Seen from B, A's document covers R-1, though not as it stands now.
        let a_thread = Uuid::from_u128(30);
        let stories = CitedConversation { thread_id: a_thread, title: "Stories".into(), reference: "x".into() };
        let from_b = LedgerRows {
            documents: vec![CurrentDocument {
                id: doc,
                title: "Stories".into(),
                version: 1,
                assistant_message_id: Some(Uuid::from_u128(99)),
                conversation: Some(stories.clone()),
            }],
            citations: vec![CitationOf { artifact_id: doc, version: 1, requirement_id: b_req, revision_id: 7 }],
            ..b_rows
        };
        let view = from_b.on_path(&from_b.shown_path());
        let covered = &view.standing[0].requirement.covered_by;
        assert_eq!(covered.len(), 1);
        assert_eq!(covered[0].conversation.as_ref(), Some(&stories));
        assert!(!covered[0].current);
        assert!(view.marks.is_empty(), "another conversation's document is marked in its own");
    }
}
