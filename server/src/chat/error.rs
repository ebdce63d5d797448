//! What can go wrong when a person starts, retries or follows a turn, in the chat engine's own words. The HTTP
//! layer decides how each is answered (`http::error`).

use wire::validate::Invalid;

use store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    /// The request is not acceptable as sent (an empty or too long message, say).
    #[error("{}", .0.message)]
    Invalid(Invalid),
    /// The conversation, or a message the request names, is missing or another person's.
    #[error("not found")]
    NotFound,
    /// An answer is already being written in the conversation; to another member of its project (their name),
    /// when it is not the caller's own.
    #[error("an answer is already being written in this conversation")]
    Busy(Option<String>),
    /// The message cannot be sent again: it is not the latest, its answer did not fail, or it made its document.
    #[error("{0}")]
    NotRetryable(&'static str),
    /// The request conflicts with the state of what it names (a document already up to date, say).
    #[error("{0}")]
    Conflict(&'static str),
    /// The idempotency key was used for a different request.
    #[error("this idempotency key was already used for a different request")]
    KeyReused,
    /// The request first sent with this idempotency key is still being started.
    #[error("a request with this idempotency key is still being processed")]
    KeyInProgress,
    /// Today's token budget (the person's or everyone's) is spent; it starts again at `resets_at`.
    #[error("the daily token budget is used up")]
    BudgetExceeded { resets_at: chrono::DateTime<chrono::Utc> },
    /// The person already has as many turns running as they may, across their conversations.
    #[error("too many answers are being written at once")]
    TooManyTurns,
    /// Storage failed.
    #[error(transparent)]
    Store(StoreError),
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

pub type Result<T, E = ChatError> = std::result::Result<T, E>;

impl From<StoreError> for ChatError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::NotFound => ChatError::NotFound,
            StoreError::BudgetExceeded { resets_at } => ChatError::BudgetExceeded { resets_at },
            StoreError::TooManyTurns => ChatError::TooManyTurns,
            other => ChatError::Store(other),
        }
    }
}

impl From<Invalid> for ChatError {
    fn from(invalid: Invalid) -> Self {
        ChatError::Invalid(invalid)
    }
}

/// A store error of a write that needs the conversation free: a conflict there means a turn is running.
pub fn busy_or(error: StoreError) -> ChatError {
    match error {
        StoreError::Conflict(_) => ChatError::Busy(None),
        other => other.into(),
    }
}
