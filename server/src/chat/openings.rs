//! How a turn opens: a new message, an edit of one, another answer, a retry of a failed one, or a silent
//! generation. What each checks before the thread is taken, and the changes to the conversation each makes once
//! it is taken (see [`launch`]).

use std::sync::Arc;

use uuid::Uuid;
use wire::validate::Invalid;
use wire::{ChatRequest, Message, MessageStatus, Role as ApiRole, Usage, MAX_MESSAGE_CHARS};

use super::context;
use super::engine::Engine;
use super::error::ChatError;
use super::hub::LiveTurn;
use super::turn::{launch, Plan};
use store::{NewMessage, Store};

impl Engine {
    /// The text of a person's message as it is stored: checked (not empty, not too long) and, when so
    /// configured, with personal data replaced.
    pub fn person_message(&self, content: &str) -> Result<String, ChatError> {
        let content = wire::validate::message(content, MAX_MESSAGE_CHARS)?;
        // Personal data is replaced before the message is stored or reaches a model.
        Ok(if self.limits.redact_pii { crate::privacy::redact(&content) } else { content })
    }

    /// Checks the request, takes the thread, saves the person's message and starts the turn in the background.
    pub async fn start(&self, user: Uuid, thread: Uuid, request: ChatRequest) -> Result<Arc<LiveTurn>, ChatError> {
        let content = self.person_message(&request.content)?;
        let message = NewMessage {
            thread_id: thread,
            role: ApiRole::User,
            content,
            status: MessageStatus::Complete,
            usage: Usage::default(),
            model: None,
        };
        let opening = match (request.edit_of, request.artifact_generation.unwrap_or(false)) {
            (Some(_), true) => {
                return Err(Invalid::new("edit_of", "A silent generation edits no message.").into());
            }
            (Some(edited), false) => {
                // Checked before the thread is taken; the message stays, and the new version goes beside it.
                let parent = edited_message(self.store.as_ref(), user, thread, edited).await?;
                Opening::Edit { parent, message }
            }
            (None, true) => Opening::Silent(message.content),
            (None, false) => Opening::Message(message),
        };
        launch(self, user, thread, opening).await
    }

    /// Another answer to the question `answer` answered: an ordinary turn whose answer is a sibling of it, the
    /// old branch kept.
    pub async fn regenerate(&self, user: Uuid, thread: Uuid, answer: Uuid) -> Result<Arc<LiveTurn>, ChatError> {
        let question = answered_question(self.store.as_ref(), user, thread, answer).await?;
        launch(self, user, thread, Opening::Again(question)).await
    }

    /// Runs the turn of a stored message again, after its answer failed, without storing the message again. The
    /// failed attempt's partial answer, if one was kept, makes way for the new one.
    pub async fn retry(&self, user: Uuid, thread: Uuid, message: Uuid) -> Result<Arc<LiveTurn>, ChatError> {
        // Checked before the thread is taken, so a refused retry leaves the last turn as it is; and again once it is
        // taken, against a retry that ran meanwhile.
        failed_attempt(self.store.as_ref(), user, thread, message).await?;
        launch(self, user, thread, Opening::Retry(message)).await
    }
}

/// The message to run again and the failed answers that followed it. Only the person's latest message can be,
/// when every answer after it failed and it made no document; another thread's message is missing.
async fn failed_attempt(
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

/// The parent of the person's message `edited`, which an edit goes beside; another thread's message, or an
/// answer, is missing.
async fn edited_message(store: &dyn Store, user: Uuid, thread: Uuid, edited: Uuid) -> Result<Option<Uuid>, ChatError> {
    let message = store.get_message(user, edited).await?;
    if message.thread_id != thread || message.role != ApiRole::User {
        return Err(ChatError::NotFound);
    }
    Ok(message.parent_id)
}

/// The person's message `answer` answers, which a new answer follows; another thread's message, a person's
/// message, or an answer that follows none, is missing.
async fn answered_question(store: &dyn Store, user: Uuid, thread: Uuid, answer: Uuid) -> Result<Uuid, ChatError> {
    let message = store.get_message(user, answer).await?;
    if message.thread_id != thread || message.role != ApiRole::Assistant {
        return Err(ChatError::NotFound);
    }
    let question = store.get_message(user, message.parent_id.ok_or(ChatError::NotFound)?).await?;
    if question.role != ApiRole::User {
        return Err(ChatError::NotFound);
    }
    Ok(question.id)
}

/// What a turn starts from.
pub(super) enum Opening {
    /// A message the person sends now, saved in the commit that takes the thread.
    Message(NewMessage),
    /// Silent generation: the request is never stored.
    Silent(String),
    /// A stored message whose turn failed.
    Retry(Uuid),
    /// Edit and resend: a new version of a person's message, saved after `parent` (beside the old version).
    Edit { parent: Option<Uuid>, message: NewMessage },
    /// Regenerate: another answer to a stored message of the person's.
    Again(Uuid),
}

/// With the thread taken: what the turn answers, once the opening's changes to the conversation are made.
pub(super) async fn plan_taken(
    engine: &Engine,
    user: Uuid,
    thread: Uuid,
    opening: Opening,
    saved: Option<Message>,
) -> Result<Plan, ChatError> {
    // A stored message to answer: the turn's answer goes after it.
    let stored = |request: Message| (request.content, false, Some(request.id));
    let store = engine.store.as_ref();
    let (content, silent, request_message) = match opening {
        Opening::Message(message) => (message.content, false, saved.map(|m| m.id)),
        Opening::Silent(content) => (content, true, None),
        Opening::Retry(message) => Box::pin(take_over_failed(store, user, thread, message)).await.map(stored)?,
        Opening::Edit { parent, message } => {
            Box::pin(branch_off(store, user, thread, parent, message)).await.map(stored)?
        }
        Opening::Again(question) => Box::pin(answer_again(store, user, thread, question)).await.map(stored)?,
    };
    Ok(Plan { user, thread, silent, content, request_message, name_thread: None })
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
