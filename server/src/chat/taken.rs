//! What a turn answers once it holds its conversation: the opening it started from and the changes to the
//! conversation each opening makes then (a retry removes the failed answers, an edit saves the new version beside
//! the old, another answer moves to the question). The checks made before the conversation is taken are in
//! `openings.rs`; the turn itself in `turn.rs`.

use uuid::Uuid;
use wire::{Message, MessageStatus, Role as ApiRole};

use super::context;
use super::error::ChatError;
use store::{NewMessage, Store};

/// What a turn starts from.
pub(super) enum Opening {
    /// A message the person sends now, saved in the commit that takes the thread.
    Message(NewMessage),
    /// Silent generation: the request is never stored.
    Silent(String),
    /// "Update document": a silent turn whose request (never stored) is the whole instruction.
    Update(String),
    /// A stored message whose turn failed.
    Retry(Uuid),
    /// Edit and resend: a new version of a person's message, saved after `parent` (beside the old version).
    Edit { parent: Option<Uuid>, message: NewMessage },
    /// Regenerate: another answer to a stored message of the person's.
    Again(Uuid),
}

/// With the thread taken: what the turn answers, once the opening's changes to the conversation are made.
pub(super) async fn plan_taken(
    store: &dyn Store,
    Writer { author: user, sender }: Writer,
    thread: Uuid,
    opening: Opening,
    saved: Option<Message>,
) -> Result<Plan, ChatError> {
    // A stored message to answer: the turn's answer goes after it.
    let stored = |request: Message| (request.content, false, Some(request.id));
    let update = matches!(opening, Opening::Update(_));
    let (content, silent, request_message) = match opening {
        Opening::Message(message) => (message.content, false, saved.map(|m| m.id)),
        Opening::Silent(content) | Opening::Update(content) => (content, true, None),
        Opening::Retry(message) => Box::pin(take_over_failed(store, user, thread, message)).await.map(stored)?,
        Opening::Edit { parent, message } => {
            Box::pin(branch_off(store, user, thread, parent, message)).await.map(stored)?
        }
        Opening::Again(question) => Box::pin(answer_again(store, user, thread, question)).await.map(stored)?,
    };
    Ok(Plan { user, sender, thread, silent, update, content, request_message, name_thread: None })
}

/// With the thread taken for a retry: checks the message can still be run again and removes what the failed
/// attempt left; the message to answer.
async fn take_over_failed(store: &dyn Store, user: Uuid, thread: Uuid, message: Uuid) -> Result<Message, ChatError> {
    let (request, failed) = failed_attempt(store, user, thread, message).await?;
    // The first failed answer's subtree holds the others.
    if let Some(answer) = failed.first() {
        store.delete_message(user, thread, *answer, None).await?;
    }
    // The new answer follows the message, whatever other answers it has.
    store.set_active(user, thread, Some(request.id), None).await?;
    Ok(request)
}

/// With the thread taken for an edit: saves the new version of the person's message after `parent` (beside the
/// version it replaces); the message to answer.
async fn branch_off(
    store: &dyn Store,
    user: Uuid,
    thread: Uuid,
    parent: Option<Uuid>,
    message: NewMessage,
) -> Result<Message, ChatError> {
    store.set_active(user, thread, parent, None).await?;
    Ok(store.append_message(user, message).await?)
}

/// With the thread taken for another answer: the question, which the new answer follows.
async fn answer_again(store: &dyn Store, user: Uuid, thread: Uuid, question: Uuid) -> Result<Message, ChatError> {
    store.set_active(user, thread, Some(question), None).await?;
    Ok(store.get_message(user, question).await?)
}

/// Who a turn writes for: the conversation's author, whose rows it writes, and who sent it (the author, or an
/// editor of the conversation's project), whose budgets and caps it counts against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Writer {
    pub(super) author: Uuid,
    pub(super) sender: Uuid,
}

/// What a turn answers.
pub(super) struct Plan {
    /// The conversation's author.
    pub(super) user: Uuid,
    /// Who sent it (see [`Writer`]).
    pub(super) sender: Uuid,
    pub(super) thread: Uuid,
    pub(super) silent: bool,
    /// An update of a document to the ledger: `content` is the whole instruction.
    pub(super) update: bool,
    pub(super) content: String,
    pub(super) request_message: Option<Uuid>,
    /// Set on a thread's first message: its current title.
    pub(super) name_thread: Option<String>,
}

/// The message to run again and the failed answers that followed it. Only the person's latest message can be,
/// when every answer after it failed and it made no document; another thread's message is missing.
pub(super) async fn failed_attempt(
    store: &dyn Store,
    user: Uuid,
    thread: Uuid,
    message: Uuid,
) -> Result<(Message, Vec<Uuid>), ChatError> {
    let request = store.get_message(user, message).await?;
    if request.thread_id != thread || request.role != ApiRole::User {
        return Err(ChatError::NotFound);
    }
    let (tree, fulfilled) = tokio::try_join!(store.message_tree(user, thread), store.fulfilled_requests(user, thread))?;
    // The messages after it on the shown path.
    let path = tree.path();
    let Some(at) = path.iter().position(|h| h.id == message) else {
        return Err(ChatError::NotRetryable("Only a message of the branch shown can be sent again."));
    };
    let on_path = path.iter().map(|h| h.id).collect();
    let fulfilled = context::fulfilled_on(&fulfilled, &on_path);
    let later: Vec<Uuid> = path[at + 1..].iter().map(|h| h.id).collect();
    let answers = store.messages_by_id(user, thread, &later).await?;
    let first = &request;
    let failed = |m: &Message| {
        m.role == ApiRole::Assistant && matches!(m.status, MessageStatus::Interrupted | MessageStatus::Error)
    };
    if !answers.iter().all(failed) {
        return Err(ChatError::NotRetryable(
            "Only the latest message can be sent again, and only when its answer failed.",
        ));
    }
    if fulfilled.contains(&message) {
        return Err(ChatError::NotRetryable("This request already made its document."));
    }
    Ok((first.clone(), later))
}
