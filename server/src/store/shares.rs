//! Share links: read-only snapshots of conversations, readable by anyone holding the link's token until their
//! owner revokes them. Both backends implement it (`sqlite/shares.rs`, `postgres/shares.rs`).

use app::api::ShareLink;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::columns::Stored;
use super::{Result, StoreError};

/// A snapshot to keep under a new link.
#[derive(Debug, Clone)]
pub struct NewShare {
    pub thread: Uuid,
    /// The secret part of the link (`/s/<token>`).
    pub token: String,
    /// The conversation's title now.
    pub title: String,
    /// The shared page's JSON ([`app::api::SharedConversation`]).
    pub snapshot: String,
}

/// The path a share link is read at.
pub fn share_path(token: &str) -> String {
    format!("/s/{token}")
}

/// A share link as stored, with the backend's id (`I`) and time (`T`) columns (see [`Stored`]).
#[derive(sqlx::FromRow)]
pub(crate) struct ShareRow<I, T> {
    id: I,
    thread_id: I,
    token: String,
    title: String,
    created_at: T,
}

impl<I: Stored<Uuid>, T: Stored<DateTime<Utc>>> TryFrom<ShareRow<I, T>> for ShareLink {
    type Error = StoreError;

    fn try_from(row: ShareRow<I, T>) -> Result<Self> {
        Ok(ShareLink {
            id: row.id.read("id")?,
            thread_id: row.thread_id.read("thread_id")?,
            path: share_path(&row.token),
            title: row.title,
            created_at: row.created_at.read("created_at")?,
        })
    }
}

/// The refusal of a link beyond the person's allowance.
pub(crate) fn too_many_shares(max: u32) -> StoreError {
    StoreError::Conflict(format!("You have {max} share links already; revoke one before sharing again."))
}

/// Share links of conversations.
#[async_trait]
pub trait Shares: Send + Sync {
    /// Keeps `share` under a new link of the person's conversation; `NotFound` when the conversation is not
    /// theirs, `Conflict` when they have `max` links already (counted in the same write, so two at once never
    /// both pass).
    async fn create_share(&self, user: Uuid, share: NewShare, max: u32) -> Result<ShareLink>;
    /// The person's links, newest first: of one conversation (`NotFound` when it is not theirs), or of all.
    async fn list_shares(&self, user: Uuid, thread: Option<Uuid>) -> Result<Vec<ShareLink>>;
    /// Revokes one of the person's links; `NotFound` when they have none with this id.
    async fn delete_share(&self, user: Uuid, share: Uuid) -> Result<()>;
    /// The snapshot a link shows; `NotFound` for an unknown or revoked token.
    async fn shared_snapshot(&self, token: &str) -> Result<String>;
}
