//! Share links: read-only snapshots of conversations, readable by anyone holding the link's token until their
//! owner revokes them, while the owner's account is enabled (a deleted account's links are deleted with it). Both
//! backends implement it (`sqlite/settings.rs`, `postgres/settings.rs`).

use async_trait::async_trait;
use uuid::Uuid;
use wire::{ArtifactType, ShareLink, SharedArtifact};

use super::columns::{convert, shared_sql, stored_row};
use super::threads::found;
use super::{now, Result, StoreError};

/// A snapshot to keep under a new link.
#[derive(Debug, Clone)]
pub struct NewShare {
    pub thread: Uuid,
    /// The secret part of the link (`/s/<token>`).
    pub token: String,
    /// The conversation's title now.
    pub title: String,
    /// The shared page's JSON ([`wire::SharedConversation`]).
    pub snapshot: String,
}

/// The path a share link is read at.
pub fn share_path(token: &str) -> String {
    format!("/s/{token}")
}

stored_row! {
    /// A share link as stored, with the backend's id (`I`) and time (`T`) columns (see [`Stored`]).
    ShareRow<I, T> -> ShareLink {
        id: I,
        thread_id: I,
        title: String,
        created_at: T,
    } with {
        token: String,
    } => {
        path: share_path(&token),
    }
}

/// The refusal of a link beyond the person's allowance.
pub(crate) fn too_many_shares(max: u32) -> StoreError {
    StoreError::Conflict(format!("You have {max} share links already; revoke one before sharing again."))
}

shared_sql! {
    rows(ShareRow<D::Id, D::Time>);
    /// See [`Shares::create_share`]; the caller makes it one write.
    pub(crate) async fn create_share(
        conn: &mut D::Connection,
        user: Uuid,
        share: NewShare,
        max: u32,
    ) -> Result<ShareLink> {
        let (id, created) = (Uuid::now_v7(), now());
        // Held until the commit where rows can be locked: the next link of the person counts this one.
        let sql = format!("select 1 from users where id = $1 {}", D::FOR_UPDATE);
        let person: Option<i32> = sqlx::query_scalar(&sql).bind(D::id(user)).fetch_optional(&mut *conn).await?;
        person.ok_or(StoreError::NotFound)?;
        let owned: bool = sqlx::query_scalar("select exists (select 1 from threads where id = $1 and user_id = $2)")
            .bind(D::id(share.thread))
            .bind(D::id(user))
            .fetch_one(&mut *conn)
            .await?;
        found(owned)?;
        let count: i64 = sqlx::query_scalar("select count(*) from shares where user_id = $1")
            .bind(D::id(user))
            .fetch_one(&mut *conn)
            .await?;
        if count >= i64::from(max) {
            return Err(too_many_shares(max));
        }
        sqlx::query(
            "insert into shares (id, token, user_id, thread_id, title, snapshot, created_at)
             values ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(D::id(id))
        .bind(share.token.clone())
        .bind(D::id(user))
        .bind(D::id(share.thread))
        .bind(share.title.clone())
        .bind(share.snapshot)
        .bind(D::time(created))
        .execute(conn)
        .await?;
        Ok(ShareLink {
            id,
            thread_id: share.thread,
            title: share.title,
            path: share_path(&share.token),
            created_at: created,
        })
    }

    /// The person's links, newest first, of one conversation or of all (an empty list when the conversation is
    /// not theirs).
    pub(crate) async fn list_shares(
        conn: &mut D::Connection,
        user: Uuid,
        thread: Option<Uuid>,
    ) -> Result<Vec<ShareLink>> {
        let rows: Vec<ShareRow<D::Id, D::Time>> = sqlx::query_as(
            "select id, thread_id, token, title, created_at from shares
             where user_id = $1 and ($2 is null or thread_id = $2) order by created_at desc, id desc",
        )
        .bind(D::id(user))
        .bind(thread.map(D::id))
        .fetch_all(conn)
        .await?;
        convert(rows)
    }

    /// See [`Shares::shared_snapshot`]: the owner's state is read in the statement that reads the snapshot.
    pub(crate) async fn shared_snapshot(conn: &mut D::Connection, token: String) -> Result<String> {
        let snapshot: Option<String> = sqlx::query_scalar(
            "select s.snapshot from shares s join users u on u.id = s.user_id
             where s.token = $1 and u.disabled_at is null",
        )
        .bind(token)
        .fetch_optional(conn)
        .await?;
        snapshot.ok_or(StoreError::NotFound)
    }

    /// See [`Shares::documents_on_path`].
    pub(crate) async fn documents_on_path(
        conn: &mut D::Connection,
        user: Uuid,
        thread: Uuid,
        path: &[Uuid],
    ) -> Result<Vec<SharedArtifact>> {
        let sql = format!(
            "select a.artifact_type, v.title, v.content, v.version
             from artifacts a join artifact_versions v on v.artifact_id = a.id
             where a.thread_id = $1 and a.user_id = $2 and v.version = (
                 select max(w.version) from artifact_versions w
                 where w.artifact_id = a.id and (w.written_on is null or {}))
             order by a.created_at, a.pk",
            D::in_ids("w.written_on", "$3")
        );
        let rows: Vec<(String, String, String, i64)> =
            sqlx::query_as(&sql).bind(D::id(thread)).bind(D::id(user)).bind(D::ids(path)).fetch_all(conn).await?;
        rows.into_iter()
            .map(|(artifact_type, title, content, version)| {
                let kind = ArtifactType::parse(&artifact_type)
                    .ok_or_else(|| StoreError::Corrupt(format!("type {artifact_type}")))?;
                Ok(SharedArtifact { artifact_type: kind, title, content, version })
            })
            .collect()
    }
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
    /// The snapshot a link shows; `NotFound` for an unknown or revoked token, and while its owner's account is
    /// disabled (checked in the same statement).
    async fn shared_snapshot(&self, token: &str) -> Result<String>;
    /// The person's documents of `thread` as a link to the path `path` (the messages shown, first to last)
    /// shows them, oldest first: each at the newest version written on that path, none written on it left out.
    /// Empty for a conversation that is not theirs.
    async fn documents_on_path(&self, user: Uuid, thread: Uuid, path: &[Uuid]) -> Result<Vec<SharedArtifact>>;
}

/// Implements [`Shares`] for a backend, written once for both, as
/// [`accounts_for`](super::accounts::accounts_for) does; the backend adds `owns` and `delete` (see
/// [`Threads`](super::Threads)' listings).
macro_rules! shares_for {
    ($backend:ty) => {
        const _: () = {
            use tracing::instrument;
            use uuid::Uuid;
            use wire::ShareLink;
            use $crate::threads::found;
            use $crate::{NewShare, Result, Shares};

            #[async_trait::async_trait]
            impl Shares for $backend {
                #[instrument(skip(self, share), fields(thread = %share.thread))]
                async fn create_share(&self, user: Uuid, share: NewShare, max: u32) -> Result<ShareLink> {
                    self.write_together(move |conn| Box::pin(Shared::create_share(conn, user, share, max))).await
                }

                #[instrument(skip(self))]
                async fn list_shares(&self, user: Uuid, thread: Option<Uuid>) -> Result<Vec<ShareLink>> {
                    let links = Shared::list_shares(&mut *self.read().await?, user, thread).await?;
                    if let (true, Some(thread)) = (links.is_empty(), thread) {
                        found(self.owns("threads", user, thread).await?)?;
                    }
                    Ok(links)
                }

                #[instrument(skip(self))]
                async fn delete_share(&self, user: Uuid, share: Uuid) -> Result<()> {
                    self.delete("delete from shares where id = $1 and user_id = $2", &[share, user]).await
                }

                #[instrument(skip_all)]
                async fn shared_snapshot(&self, token: &str) -> Result<String> {
                    Shared::shared_snapshot(&mut *self.read().await?, token.to_owned()).await
                }

                #[instrument(skip(self, path))]
                async fn documents_on_path(
                    &self,
                    user: Uuid,
                    thread: Uuid,
                    path: &[Uuid],
                ) -> Result<Vec<wire::SharedArtifact>> {
                    Shared::documents_on_path(&mut *self.read().await?, user, thread, path).await
                }
            }
        };
    };
}
pub(crate) use shares_for;
