//! Exports: one conversation with everything in it, as JSON (which imports back) or as Markdown people can
//! read, and everything a person has as one JSON file.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use uuid::Uuid;
#[cfg(doc)]
use wire::AccountExport;
use wire::{
    requirement_key, Artifact, ArtifactVersion, ExportedArtifact, ExportedCitation, ExportedMessage,
    ExportedRequirement, ExportedRequirementRevision, ExportedThreadInfo, MessageStatus, Role, ThreadExport,
    VersionAuthor, Writer, ACCOUNT_EXPORT_FORMAT, EXPORT_VERSION, THREAD_EXPORT_FORMAT,
};

use super::{Error, Result};
use crate::heavy::Ticket;
use store::{requirements::LedgerRows, DynStore, StoreError};

/// How a conversation is downloaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadFormat {
    /// Quire's own format, which imports back.
    Json,
    /// A document people can read.
    Markdown,
}

/// A file to download: its text, its type and the name to save it under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Download {
    pub body: String,
    pub content_type: &'static str,
    pub file_name: String,
}

/// One conversation of the user as exported: the thread, every message with its metadata, every document, the
/// traces of its turns.
pub async fn thread(store: &DynStore, user: Uuid, thread: Uuid) -> Result<ThreadExport, StoreError> {
    Ok(read_thread(store, user, thread).await?.0)
}

/// [`thread`], with the writer of each of the person's messages that the conversation's author did not write (a
/// project's editor's), by message id.
async fn read_thread(
    store: &DynStore,
    user: Uuid,
    thread: Uuid,
) -> Result<(ThreadExport, HashMap<Uuid, Uuid>), StoreError> {
    let info = store.get_thread(user, thread).await?;
    let (messages, tree, artifacts, versions, traces, ledger) = tokio::try_join!(
        store.list_messages(user, thread),
        store.message_tree(user, thread),
        store.list_artifacts(user, thread),
        store.list_thread_artifact_versions(user, thread),
        store.thread_traces(user, thread),
        store.ledger_rows(user, thread)
    )?;
    let mut artifacts = exported_versions(&artifacts, versions);
    let requirements = exported_ledger(&ledger, &mut artifacts);
    let others = messages.iter().filter_map(|m| Some((m.id, m.author_id?))).collect();
    let export = ThreadExport {
        format: THREAD_EXPORT_FORMAT.into(),
        version: EXPORT_VERSION,
        exported_at: store::now(),
        thread: ExportedThreadInfo {
            id: info.id,
            title: info.title,
            tags: info.tags,
            pinned: info.pinned,
            archived: info.archived,
            created_at: info.created_at,
            updated_at: info.updated_at,
            active_message_id: tree.path().last().map(|h| h.id),
        },
        messages: messages
            .into_iter()
            .map(|m| ExportedMessage {
                id: m.id,
                seq: m.seq,
                role: m.role,
                content: m.content,
                status: m.status,
                input_tokens: m.input_tokens,
                output_tokens: m.output_tokens,
                model: m.model,
                created_at: m.created_at,
                parent_id: m.parent_id,
            })
            .collect(),
        artifacts,
        traces,
        requirements,
    };
    Ok((export, others))
}

/// Every version of the documents as export entries, documents in order and each one's versions oldest first;
/// a document's own fields (type, the answer that wrote it) on every entry. A version of a document that is not
/// among `artifacts` (made or deleted between the two reads) is left out.
fn exported_versions(artifacts: &[Artifact], versions: Vec<ArtifactVersion>) -> Vec<ExportedArtifact> {
    let documents: HashMap<Uuid, &Artifact> = artifacts.iter().map(|a| (a.id, a)).collect();
    versions
        .into_iter()
        .filter_map(|v| {
            let document = documents.get(&v.artifact_id)?;
            Some(ExportedArtifact {
                id: v.artifact_id,
                artifact_type: document.artifact_type,
                title: v.title,
                content: v.content,
                version: v.version,
                request_message_id: v.request_message_id,
                assistant_message_id: document.assistant_message_id,
                author: v.author,
                created_at: v.created_at,
                requirements: Vec::new(),
            })
        })
        .collect()
}

/// The ledger's requirements with every revision, every branch's; and, on each version among `artifacts`, what
/// it cites. A revision's number in the export is its own.
fn exported_ledger(rows: &LedgerRows, artifacts: &mut [ExportedArtifact]) -> Vec<ExportedRequirement> {
    let keys: HashMap<Uuid, String> = rows.requirements.iter().map(|r| (r.id, requirement_key(r.number))).collect();
    let mut revisions: HashMap<Uuid, Vec<ExportedRequirementRevision>> = HashMap::new();
    for r in &rows.revisions {
        revisions.entry(r.requirement_id).or_default().push(ExportedRequirementRevision {
            revision: r.id,
            text: r.text.clone(),
            kind: r.kind,
            status: r.status,
            message_id: r.message_id,
            author: r.author.clone(),
            created_at: r.created_at,
        });
    }
    let mut cites: HashMap<(Uuid, i64), Vec<ExportedCitation>> = HashMap::new();
    for c in &rows.citations {
        if let Some(key) = keys.get(&c.requirement_id) {
            cites
                .entry((c.artifact_id, c.version))
                .or_default()
                .push(ExportedCitation { key: key.clone(), revision: c.revision_id });
        }
    }
    for artifact in artifacts {
        artifact.requirements = cites.remove(&(artifact.id, artifact.version)).unwrap_or_default();
    }
    rows.requirements
        .iter()
        .filter_map(|r| {
            let revisions = revisions.remove(&r.id)?;
            Some(ExportedRequirement { key: requirement_key(r.number), revisions })
        })
        .collect()
}

/// Everything the user has as one JSON download (an [`AccountExport`]), written while it is read: one
/// conversation at a time is in memory, its JSON made on a blocking thread of the heavy-work queue, and the text
/// goes out in pieces of about [`PIECE_BYTES`], at most [`PIECES_AHEAD`] ahead of the client. So an account of
/// any size costs about the same memory, and a long export holds no worker between pieces. The job's `ticket`
/// is held until the last piece is handed over (and given back before the body ends), the client goes away, or
/// it takes no piece for [`CLIENT_PATIENCE`]; a download cut short ends without the closing chunk, so it never
/// reads as whole.
pub async fn account_download(store: DynStore, user: Uuid, ticket: Ticket) -> Result<AccountDownload> {
    // Read before the first byte, so that a failure here is still a status.
    let ids = store.all_thread_ids(user).await?;
    let exported_at = store::now();
    let body = streamed(user, ticket, move |out, ticket| {
        Box::pin(async move { write_account(&store, user, &ticket, ids, exported_at, out).await })
    });
    Ok(AccountDownload { body, file_name: format!("quire-export-{}.json", exported_at.format("%Y-%m-%d")) })
}

/// Most entries of a project's activity log its export carries (the newest).
pub const MAX_EXPORTED_ACTIVITY: usize = 10_000;

/// A team project as one JSON download, written as it is read (as [`account_download`] is): the project, its
/// members, its activity log (the newest [`MAX_EXPORTED_ACTIVITY`] entries) and every conversation of it the
/// member reads, each as a conversation's export.
pub async fn project_download(store: DynStore, user: Uuid, project: Uuid, ticket: Ticket) -> Result<AccountDownload> {
    // Read before the first byte, so that a failure (a non-member's 404) is still a status.
    let info = store.get_project(user, project).await?;
    let members = store.project_members(user, project).await?;
    let mut activity = Vec::new();
    let mut before = None;
    while activity.len() < MAX_EXPORTED_ACTIVITY {
        let page = store.project_activity(user, project, before, wire::MAX_ACTIVITY_PAGE).await?;
        before = page.last().map(|entry| entry.id);
        let last = page.len() < wire::MAX_ACTIVITY_PAGE as usize;
        activity.extend(page);
        if last {
            break;
        }
    }
    activity.truncate(MAX_EXPORTED_ACTIVITY);
    let ids: Vec<Uuid> = store.project_threads(user, project).await?.into_iter().map(|t| t.id).collect();
    let exported_at = store::now();
    let file_name = crate::download::file_name(&info.name, "json", "project");
    let body = streamed(user, ticket, move |out, ticket| {
        Box::pin(async move {
            let head = format!(
                "{{\"format\":{},\"version\":{},\"exported_at\":{},\"project\":{},\"members\":{},\"activity\":{},\"threads\":[",
                json(PROJECT_EXPORT_FORMAT)?,
                json(&EXPORT_VERSION)?,
                json(&exported_at)?,
                json(&info)?,
                json(&members)?,
                json(&activity)?,
            );
            out.push(head.as_bytes()).await?;
            write_threads(&store, user, &ticket, ids, out).await?;
            out.push(b"]}").await?;
            out.flush().await
        })
    });
    Ok(AccountDownload { body, file_name })
}

/// The format a project's export names.
pub const PROJECT_EXPORT_FORMAT: &str = "quire-project";

/// A download whose text `write` makes piece by piece on a task of its own, holding `ticket` (its place in the
/// heavy-work queue) until the text is whole.
fn streamed<W>(user: Uuid, ticket: Ticket, write: W) -> axum::body::Body
where
    W: for<'a> FnOnce(
            &'a mut Piece,
            Ticket,
        )
            -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), WriteError>> + Send + 'a>>
        + Send
        + 'static,
{
    let (pieces, received) = tokio::sync::mpsc::channel(PIECES_AHEAD);
    tokio::spawn(async move {
        let mut out = Piece { text: Vec::with_capacity(PIECE_BYTES * 2), pieces };
        let written = write(&mut out, ticket).await;
        // The place was given back with the writing, before the body ends, so a client that has the whole file
        // can start the next job at once.
        let ended = match written {
            Ok(()) => out.send(Sent::Whole).await,
            Err(e) => Err(e),
        };
        match ended {
            Ok(()) => {}
            Err(WriteError::Gone) => tracing::debug!(%user, "an export stopped: the client went away"),
            Err(WriteError::Failed(e)) => tracing::warn!(%user, error = %e, "an export failed part way"),
        }
    });
    axum::body::Body::from_stream(AccountBody { received, ended: false })
}

/// The account export being sent: its body and the name to save it under.
pub struct AccountDownload {
    pub body: axum::body::Body,
    pub file_name: String,
}

/// About how much of an account export's text goes out at once.
pub const PIECE_BYTES: usize = 256 * 1024;
/// Pieces of an account export made before the client has taken them.
const PIECES_AHEAD: usize = 2;
/// How long an account export waits for the client to take a piece before giving up its place.
pub const CLIENT_PATIENCE: std::time::Duration = std::time::Duration::from_secs(60);

/// What the body of an account export receives: a piece of text, or word that the text is whole.
enum Sent {
    Text(bytes::Bytes),
    Whole,
}

/// Why the writing of an account export stopped early.
#[derive(Debug)]
enum WriteError {
    /// The client went away or took nothing for [`CLIENT_PATIENCE`].
    Gone,
    Failed(Error),
}

impl From<Error> for WriteError {
    fn from(e: Error) -> Self {
        WriteError::Failed(e)
    }
}

impl From<StoreError> for WriteError {
    fn from(e: StoreError) -> Self {
        WriteError::Failed(e.into())
    }
}

/// The text of an account export not yet handed to the body.
struct Piece {
    text: Vec<u8>,
    pieces: tokio::sync::mpsc::Sender<Sent>,
}

impl Piece {
    /// Hands the text over once it is about [`PIECE_BYTES`] long.
    async fn push(&mut self, text: &[u8]) -> Result<(), WriteError> {
        self.text.extend_from_slice(text);
        if self.text.len() >= PIECE_BYTES {
            let text = std::mem::replace(&mut self.text, Vec::with_capacity(PIECE_BYTES * 2));
            self.send(Sent::Text(text.into())).await?;
        }
        Ok(())
    }

    async fn send(&mut self, sent: Sent) -> Result<(), WriteError> {
        match tokio::time::timeout(CLIENT_PATIENCE, self.pieces.send(sent)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) | Err(_) => Err(WriteError::Gone),
        }
    }

    /// Hands over the rest of the text.
    async fn flush(&mut self) -> Result<(), WriteError> {
        let text = std::mem::take(&mut self.text);
        if text.is_empty() {
            return Ok(());
        }
        self.send(Sent::Text(text.into())).await
    }
}

/// Writes the account export of `user` into `out`: the fields of an [`AccountExport`] in its order, each
/// conversation of `ids` still there as it is read.
async fn write_account(
    store: &DynStore,
    user: Uuid,
    ticket: &Ticket,
    ids: Vec<Uuid>,
    exported_at: DateTime<Utc>,
    out: &mut Piece,
) -> Result<(), WriteError> {
    let head = format!(
        "{{\"format\":{},\"version\":{},\"exported_at\":{},\"threads\":[",
        json(ACCOUNT_EXPORT_FORMAT)?,
        json(&EXPORT_VERSION)?,
        json(&exported_at)?,
    );
    out.push(head.as_bytes()).await?;
    write_threads(store, user, ticket, ids, out).await?;
    let attachments = store.list_user_attachments(user).await?;
    let tail = format!("],\"attachments\":{}}}", json(&attachments)?);
    out.push(tail.as_bytes()).await?;
    out.flush().await
}

/// Writes the exports of the conversations `ids`, comma-separated, each as it is read (one deleted or out of
/// reach meanwhile is left out).
async fn write_threads(
    store: &DynStore,
    user: Uuid,
    ticket: &Ticket,
    ids: Vec<Uuid>,
    out: &mut Piece,
) -> Result<(), WriteError> {
    let mut first = true;
    for id in ids {
        let export = match thread(store, user, id).await {
            Ok(export) => export,
            Err(StoreError::NotFound) => continue,
            Err(e) => return Err(e.into()),
        };
        let text = ticket.run_blocking(move || serde_json::to_vec(&export)).await.ok_or(Error::Task)?;
        if !std::mem::take(&mut first) {
            out.push(b",").await?;
        }
        out.push(&text.map_err(Error::Render)?).await?;
    }
    Ok(())
}

/// One value as JSON text.
fn json<T: serde::Serialize + ?Sized>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(Error::Render)
}

/// The body of an account export: the pieces as they come, then its end only once the text is whole.
struct AccountBody {
    received: tokio::sync::mpsc::Receiver<Sent>,
    ended: bool,
}

impl futures::Stream for AccountBody {
    type Item = std::io::Result<bytes::Bytes>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::task::Poll;
        if self.ended {
            return Poll::Ready(None);
        }
        match self.received.poll_recv(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Sent::Text(text))) => Poll::Ready(Some(Ok(text))),
            Poll::Ready(Some(Sent::Whole)) => {
                self.ended = true;
                Poll::Ready(None)
            }
            // The writing stopped before the end: the body fails, and the download is cut short.
            Poll::Ready(None) => {
                self.ended = true;
                Poll::Ready(Some(Err(std::io::Error::other("the export stopped before its end"))))
            }
        }
    }
}

/// One conversation as a download in `format`, its text written on a blocking thread of the heavy-work queue
/// (the job `ticket` admitted).
pub async fn thread_download(
    store: &DynStore,
    user: Uuid,
    id: Uuid,
    format: ThreadFormat,
    ticket: &Ticket,
) -> Result<Download> {
    let (export, others) = read_thread(store, user, id).await?;
    // Names are read only where someone besides the author wrote: a personal conversation asks nothing more.
    let bylines = match format {
        ThreadFormat::Markdown if !others.is_empty() => {
            Bylines::new(&export, &others, &store.thread_writers(user, id).await?).ok_or(StoreError::NotFound)?
        }
        _ => Bylines::default(),
    };
    ticket.run_blocking(move || render_thread(&export, &bylines, format)).await.ok_or(Error::Task)?
}

fn render_thread(export: &ThreadExport, bylines: &Bylines, format: ThreadFormat) -> Result<Download> {
    Ok(match format {
        ThreadFormat::Json => Download {
            body: serde_json::to_string_pretty(export).map_err(Error::Render)?,
            content_type: "application/json",
            file_name: crate::download::file_name(&export.thread.title, "json", "conversation"),
        },
        ThreadFormat::Markdown => Download {
            body: to_markdown(export, bylines),
            content_type: "text/markdown; charset=utf-8",
            file_name: crate::download::file_name(&export.thread.title, "md", "conversation"),
        },
    })
}

fn stamp(time: DateTime<Utc>) -> String {
    time.format("%Y-%m-%d %H:%M UTC").to_string()
}

/// The messages of the path an export shows: from a first message to its active message (the last message when
/// it names none). An export without parents is one path, in order.
fn shown_path(export: &ThreadExport) -> Vec<&ExportedMessage> {
    if export.messages.iter().all(|m| m.parent_id.is_none()) {
        return export.messages.iter().collect();
    }
    let by_id: std::collections::HashMap<Uuid, &ExportedMessage> = export.messages.iter().map(|m| (m.id, m)).collect();
    let mut next = export.thread.active_message_id.filter(|id| by_id.contains_key(id));
    next = next.or_else(|| export.messages.last().map(|m| m.id));
    let mut path = Vec::new();
    while let Some(message) = next.and_then(|id| by_id.get(&id)).filter(|_| path.len() < export.messages.len()) {
        path.push(*message);
        next = message.parent_id;
    }
    path.reverse();
    path
}

/// Who wrote each of the person's messages of a conversation, for its Markdown: by name, by message id, where more
/// than one person wrote in it (a project's); empty where only its author did, whose messages are "You".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bylines(HashMap<Uuid, String>);

impl Bylines {
    /// The bylines of `export`, whose messages `others` (by id) were written by someone besides its author, as
    /// named by `writers` (its author first: see [`wire::ThreadDetail::writers`]). `None` without writers: the
    /// person no longer reads the conversation.
    pub fn new(export: &ThreadExport, others: &HashMap<Uuid, Uuid>, writers: &[Writer]) -> Option<Self> {
        let author = writers.first()?.id;
        if others.values().all(|writer| *writer == author) {
            return Some(Self::default());
        }
        let name = |id: Uuid| {
            writers.iter().find(|w| w.id == id).map_or_else(|| "A former member".to_string(), |w| w.name.clone())
        };
        let persons = export.messages.iter().filter(|m| m.role == Role::User);
        Some(Self(persons.map(|m| (m.id, name(others.get(&m.id).copied().unwrap_or(author)))).collect()))
    }

    /// Who heads the person's message `id`.
    fn of(&self, id: Uuid) -> &str {
        self.0.get(&id).map_or("You", String::as_str)
    }
}

/// The conversation as a Markdown document people can read: the path it shows, each of the person's messages under
/// its writer's name where more than one person wrote (see [`Bylines`]).
pub fn to_markdown(export: &ThreadExport, bylines: &Bylines) -> String {
    use std::fmt::Write;
    let mut out = format!("# {}\n\n", export.thread.title);
    // Writing to a String cannot fail.
    if !export.thread.tags.is_empty() {
        let _ = writeln!(out, "- Tags: {}", export.thread.tags.join(", "));
    }
    let _ = writeln!(out, "- Started: {}", stamp(export.thread.created_at));
    let _ = writeln!(out, "- Last activity: {}", stamp(export.thread.updated_at));
    let shown = shown_path(export);
    let _ = writeln!(out, "- Messages: {}", shown.len());
    if shown.len() < export.messages.len() {
        let _ = writeln!(out, "- Other branches: {} messages, not shown", export.messages.len() - shown.len());
    }
    for message in shown {
        let who = match message.role {
            Role::User => bylines.of(message.id),
            Role::Assistant => "Assistant",
        };
        let _ = write!(out, "\n---\n\n### {who} · {}", stamp(message.created_at));
        if let Some(model) = &message.model {
            let _ = write!(out, " · {model}");
        }
        if message.status != MessageStatus::Complete {
            let _ = write!(out, " · {}", message.status.as_str());
        }
        let _ = writeln!(out, "\n\n{}", message.content.trim_end());
    }
    let documents = current_versions(&export.artifacts);
    if !documents.is_empty() {
        out.push_str("\n---\n\n## Documents\n");
        for artifact in documents {
            let _ = writeln!(
                out,
                "\n### {} ({})\n\n_{}, version {}_\n\n{}",
                artifact.title,
                artifact.artifact_type.label(),
                written_by(&artifact.author),
                artifact.version,
                artifact.content.trim_end()
            );
        }
    }
    out
}

/// Each document of an export once, at its current (highest) version, in the order documents first appear.
fn current_versions(entries: &[ExportedArtifact]) -> Vec<&ExportedArtifact> {
    let mut current: Vec<&ExportedArtifact> = Vec::new();
    let mut place: HashMap<Uuid, usize> = HashMap::new();
    for entry in entries {
        match place.get(&entry.id) {
            Some(&i) if current[i].version >= entry.version => {}
            Some(&i) => current[i] = entry,
            None => {
                place.insert(entry.id, current.len());
                current.push(entry);
            }
        }
    }
    current
}

/// Who wrote a version, as the person exporting reads it.
fn written_by(author: &VersionAuthor) -> String {
    match author {
        VersionAuthor::Person { .. } => "Edited by you".to_string(),
        VersionAuthor::Assistant { model: Some(model) } => format!("Written by the assistant ({model})"),
        VersionAuthor::Assistant { model: None } => "Written by the assistant".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;

    fn body() -> (Piece, AccountBody) {
        let (pieces, received) = tokio::sync::mpsc::channel(PIECES_AHEAD);
        (Piece { text: Vec::new(), pieces }, AccountBody { received, ended: false })
    }

    #[tokio::test]
    async fn a_whole_export_ends_and_one_cut_short_fails() {
        let (mut piece, mut whole) = body();
        piece.push(b"{\"threads\":[").await.unwrap();
        piece.push(b"]}").await.unwrap();
        piece.flush().await.unwrap();
        piece.send(Sent::Whole).await.unwrap();
        drop(piece);
        assert_eq!(whole.next().await.unwrap().unwrap(), "{\"threads\":[]}");
        assert!(whole.next().await.is_none());

        let (mut piece, mut cut) = body();
        piece.push(&vec![b' '; PIECE_BYTES]).await.unwrap();
        piece.push(b"[").await.unwrap();
        drop(piece);
        assert_eq!(cut.next().await.unwrap().unwrap().len(), PIECE_BYTES);
        assert!(cut.next().await.unwrap().is_err(), "a body without its end must not end as if whole");
        assert!(cut.next().await.is_none());
    }

    #[tokio::test]
    async fn text_waits_for_a_piece_and_stops_when_the_client_is_gone() {
        let (mut piece, mut whole) = body();
        piece.push(&vec![b'a'; PIECE_BYTES - 1]).await.unwrap();
        assert!(futures::poll!(whole.next()).is_pending(), "less than a piece is kept back");
        piece.push(b"b").await.unwrap();
        assert_eq!(whole.next().await.unwrap().unwrap().len(), PIECE_BYTES);
        drop(whole);
        assert!(matches!(piece.push(&vec![b'c'; PIECE_BYTES]).await, Err(WriteError::Gone)));
    }

    fn said(seq: i64, role: Role, content: &str) -> ExportedMessage {
        ExportedMessage {
            id: Uuid::from_u128(seq as u128),
            seq,
            role,
            content: content.into(),
            status: MessageStatus::Complete,
            input_tokens: 0,
            output_tokens: 0,
            model: None,
            created_at: DateTime::UNIX_EPOCH,
            parent_id: None,
        }
    }

    #[test]
    fn a_conversation_with_more_than_one_writer_names_each_persons_messages() {
        let export = ThreadExport {
            format: THREAD_EXPORT_FORMAT.into(),
            version: EXPORT_VERSION,
            exported_at: DateTime::UNIX_EPOCH,
            thread: ExportedThreadInfo {
                id: Uuid::nil(),
                title: "Payroll".into(),
                tags: Vec::new(),
                pinned: false,
                archived: false,
                created_at: DateTime::UNIX_EPOCH,
                updated_at: DateTime::UNIX_EPOCH,
                active_message_id: None,
            },
            messages: vec![
                said(1, Role::User, "Monthly."),
                said(2, Role::Assistant, "Noted."),
                said(3, Role::User, "Overtime weekly."),
                said(4, Role::User, "And holidays."),
            ],
            artifacts: Vec::new(),
            traces: Vec::new(),
            requirements: Vec::new(),
        };
        let (ada, ed, gone) = (Uuid::from_u128(10), Uuid::from_u128(11), Uuid::from_u128(12));
        let writers = [Writer { id: ada, name: "Ada Lovelace".into() }, Writer { id: ed, name: "Ed Ward".into() }];
        let heads = |bylines: &Bylines| {
            let markdown = to_markdown(&export, bylines);
            markdown
                .lines()
                .filter_map(|l| l.strip_prefix("### "))
                .map(|l| l.split(" · ").next().unwrap().to_string())
                .collect::<Vec<_>>()
        };

        let others = HashMap::from([(Uuid::from_u128(3), ed), (Uuid::from_u128(4), gone)]);
        let named = Bylines::new(&export, &others, &writers).unwrap();
        assert_eq!(heads(&named), ["Ada Lovelace", "Assistant", "Ed Ward", "A former member"]);
        // Only the author wrote: every message of theirs is "You", as before projects.
        assert_eq!(heads(&Bylines::default()), ["You", "Assistant", "You", "You"]);
        let own = HashMap::from([(Uuid::from_u128(3), ada)]);
        assert_eq!(Bylines::new(&export, &own, &writers), Some(Bylines::default()));
        assert_eq!(Bylines::new(&export, &others, &[]), None, "no longer read");
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_takes_nothing_loses_its_place() {
        let (mut piece, _stalled) = body();
        for _ in 0..PIECES_AHEAD {
            piece.push(&vec![b'a'; PIECE_BYTES]).await.unwrap();
        }
        let started = tokio::time::Instant::now();
        assert!(matches!(piece.push(&vec![b'a'; PIECE_BYTES]).await, Err(WriteError::Gone)));
        assert_eq!(started.elapsed(), CLIENT_PATIENCE);
    }
}
