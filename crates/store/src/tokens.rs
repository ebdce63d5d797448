//! Personal API tokens: what a token is, and their storage, which both backends implement (`sqlite/accounts.rs`,
//! `postgres/accounts.rs`). Only a token's hash is stored; a token is refused once revoked or expired, and while
//! its owner's account is disabled (checked in the statement that finds it); it goes with the account.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;
use wire::TokenScope;

use super::columns::{convert, ids, shared_sql, stored_row, Stored};
use super::{now, Result, StoreError};

/// How stale a token's `last_used_at` may grow before a request writes it again.
pub const TOKEN_TOUCH_EVERY_SECS: i64 = 60;

/// How long a revoked token's row stays, so that every instance sharing the database sees it was revoked.
const REVOKED_KEPT_HOURS: i64 = 1;

/// A personal API token, without its secret.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiToken {
    pub id: Uuid,
    pub user: Uuid,
    pub name: String,
    pub scope: TokenScope,
    /// The secret's first characters, to recognise it by.
    pub prefix: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    /// When it was last used, to within [`TOKEN_TOUCH_EVERY_SECS`]; `None` when never.
    pub last_used_at: Option<DateTime<Utc>>,
}

impl ApiToken {
    /// Whether a request at `now` should record that the token was used.
    pub fn needs_touch(&self, now: DateTime<Utc>) -> bool {
        self.last_used_at.is_none_or(|last| (now - last).num_seconds() >= TOKEN_TOUCH_EVERY_SECS)
    }
}

/// A token to keep.
#[derive(Debug, Clone)]
pub struct NewApiToken {
    pub user: Uuid,
    pub name: String,
    pub scope: TokenScope,
    /// The SHA-256 of the secret, in hex.
    pub hash: String,
    pub prefix: String,
    /// How long it lasts from when it is kept.
    pub lifetime: chrono::Duration,
}

/// A stored scope's name, read.
fn scope(name: &str) -> Result<TokenScope> {
    TokenScope::parse(name).ok_or_else(|| StoreError::Corrupt(format!("token scope {name}")))
}

/// The refusal of a token beyond the person's allowance.
pub(crate) fn too_many_tokens(max: u32) -> StoreError {
    StoreError::Conflict(format!("You have {max} API tokens already; revoke one before making another."))
}

stored_row! {
    /// A token as stored, with the backend's id (`I`) and time (`T`) columns (see [`Stored`]).
    ApiTokenRow<I, T> -> ApiToken {
        id: I,
        name: String,
        prefix: String,
        created_at: T,
        expires_at: T,
        last_used_at: Option<T>,
    } with {
        user_id: I,
        scope: String,
    } => {
        user: user_id.read("user_id")?,
        scope: self::scope(&scope)?,
    }
}

/// The columns an [`ApiTokenRow`] reads, of the table named `t`.
const TOKEN_COLUMNS: &str = "t.id, t.user_id, t.name, t.scope, t.prefix, t.created_at, t.expires_at, t.last_used_at";

shared_sql! {
    rows(ApiTokenRow<D::Id, D::Time>);

    /// See [`ApiTokens::create_api_token`]; the caller makes it one transaction.
    pub(crate) async fn create_api_token(conn: &mut D::Connection, token: NewApiToken, max: u32) -> Result<ApiToken> {
        let (id, created) = (Uuid::now_v7(), now());
        let expires_at = created + token.lifetime;
        // Held until the commit where rows can be locked: the next token of the person counts this one.
        let sql = format!("select 1 from users where id = $1 {}", D::FOR_UPDATE);
        let person: Option<i32> = sqlx::query_scalar(&sql).bind(D::id(token.user)).fetch_optional(&mut *conn).await?;
        person.ok_or(StoreError::NotFound)?;
        sqlx::query("delete from api_tokens where user_id = $1 and (expires_at <= $2 or revoked_at < $3)")
            .bind(D::id(token.user))
            .bind(D::time(created))
            .bind(D::time(created - chrono::Duration::hours(REVOKED_KEPT_HOURS)))
            .execute(&mut *conn)
            .await?;
        let live: i64 = sqlx::query_scalar(
            "select count(*) from api_tokens where user_id = $1 and revoked_at is null and expires_at > $2",
        )
        .bind(D::id(token.user))
        .bind(D::time(created))
        .fetch_one(&mut *conn)
        .await?;
        if live >= i64::from(max) {
            return Err(too_many_tokens(max));
        }
        sqlx::query(
            "insert into api_tokens (id, user_id, name, scope, token_hash, prefix, created_at, expires_at)
             values ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(D::id(id))
        .bind(D::id(token.user))
        .bind(token.name.clone())
        .bind(token.scope.as_str())
        .bind(token.hash)
        .bind(token.prefix.clone())
        .bind(D::time(created))
        .bind(D::time(expires_at))
        .execute(conn)
        .await?;
        Ok(ApiToken {
            id,
            user: token.user,
            name: token.name,
            scope: token.scope,
            prefix: token.prefix,
            created_at: created,
            expires_at,
            last_used_at: None,
        })
    }

    /// See [`ApiTokens::api_tokens`].
    pub(crate) async fn api_tokens(conn: &mut D::Connection, user: Uuid) -> Result<Vec<ApiToken>> {
        let sql = format!(
            "select {TOKEN_COLUMNS} from api_tokens t
             where t.user_id = $1 and t.revoked_at is null and t.expires_at > $2
             order by t.created_at desc, t.id desc"
        );
        let rows: Vec<ApiTokenRow<D::Id, D::Time>> =
            sqlx::query_as(&sql).bind(D::id(user)).bind(D::time(now())).fetch_all(conn).await?;
        convert(rows)
    }

    /// See [`ApiTokens::api_token_by_hash`]: the owner's state is read in the statement that finds the token.
    pub(crate) async fn api_token_by_hash(conn: &mut D::Connection, hash: String) -> Result<Option<ApiToken>> {
        let sql = format!(
            "select {TOKEN_COLUMNS} from api_tokens t join users u on u.id = t.user_id
             where t.token_hash = $1 and t.revoked_at is null and t.expires_at > $2 and u.disabled_at is null"
        );
        let row: Option<ApiTokenRow<D::Id, D::Time>> =
            sqlx::query_as(&sql).bind(hash).bind(D::time(now())).fetch_optional(conn).await?;
        row.map(ApiToken::try_from).transpose()
    }

    pub(crate) async fn touch_api_token(conn: &mut D::Connection, id: Uuid) -> Result<()> {
        let touch = sqlx::query("update api_tokens set last_used_at = $1 where id = $2");
        touch.bind(D::time(now())).bind(D::id(id)).execute(conn).await?;
        Ok(())
    }

    /// Revokes the live token `id`, of `owner` when given; its owner, `NotFound` when there is no such token.
    pub(crate) async fn revoke_api_token(
        conn: &mut D::Connection,
        owner: Option<Uuid>,
        id: Uuid,
    ) -> Result<Uuid> {
        let revoked: Option<D::Id> = sqlx::query_scalar(
            "update api_tokens set revoked_at = $1
             where id = $2 and ($3 is null or user_id = $3) and revoked_at is null and expires_at > $1
             returning user_id",
        )
        .bind(D::time(now()))
        .bind(D::id(id))
        .bind(owner.map(D::id))
        .fetch_optional(conn)
        .await?;
        revoked.ok_or(StoreError::NotFound)?.read("user_id")
    }

    pub(crate) async fn api_tokens_revoked_since(
        conn: &mut D::Connection,
        since: DateTime<Utc>,
    ) -> Result<Vec<Uuid>> {
        let revoked: Vec<D::Id> = sqlx::query_scalar("select id from api_tokens where revoked_at >= $1")
            .bind(D::time(since))
            .fetch_all(conn)
            .await?;
        ids(revoked, "id")
    }
}

/// Personal API tokens, beside the rest of [`Store`](super::Store).
#[async_trait]
pub trait ApiTokens: Send + Sync {
    /// Keeps a new token of `token.user`; `Conflict` when they have `max` live ones already (counted in the same
    /// transaction, so two at once never both pass), `NotFound` when the account is gone. The person's expired
    /// tokens, and those revoked a while ago, are cleared out on the way.
    async fn create_api_token(&self, token: NewApiToken, max: u32) -> Result<ApiToken>;
    /// The person's tokens that are neither revoked nor expired, the newest first.
    async fn api_tokens(&self, user: Uuid) -> Result<Vec<ApiToken>>;
    /// The token whose secret hashes to `hash`, when it is neither revoked nor expired and its account is enabled.
    async fn api_token_by_hash(&self, hash: &str) -> Result<Option<ApiToken>>;
    /// Records that the token was used now.
    async fn touch_api_token(&self, id: Uuid) -> Result<()>;
    /// Revokes one live token of `user`; `NotFound` when they have none with this id.
    async fn revoke_api_token(&self, user: Uuid, id: Uuid) -> Result<()>;
    /// Revokes any account's live token (an administrator's act); its owner, `NotFound` when there is no such
    /// token.
    async fn revoke_any_api_token(&self, id: Uuid) -> Result<Uuid>;
    /// The tokens revoked at or after `since`.
    async fn api_tokens_revoked_since(&self, since: DateTime<Utc>) -> Result<Vec<Uuid>>;
}

/// Implements [`ApiTokens`] for a backend, written once for both, as
/// [`accounts_for`](super::accounts::accounts_for) does.
macro_rules! api_tokens_for {
    ($backend:ty) => {
        const _: () = {
            use chrono::{DateTime, Utc};
            use tracing::instrument;
            use uuid::Uuid;
            use $crate::tokens::{ApiToken, ApiTokens, NewApiToken};
            use $crate::Result;

            #[async_trait::async_trait]
            impl ApiTokens for $backend {
                #[instrument(skip(self, token), fields(user = %token.user))]
                async fn create_api_token(&self, token: NewApiToken, max: u32) -> Result<ApiToken> {
                    self.write_together(move |conn| Box::pin(Shared::create_api_token(conn, token, max))).await
                }

                #[instrument(skip(self))]
                async fn api_tokens(&self, user: Uuid) -> Result<Vec<ApiToken>> {
                    Shared::api_tokens(&mut *self.read().await?, user).await
                }

                #[instrument(skip_all)]
                async fn api_token_by_hash(&self, hash: &str) -> Result<Option<ApiToken>> {
                    Shared::api_token_by_hash(&mut *self.read().await?, hash.to_owned()).await
                }

                #[instrument(skip(self))]
                async fn touch_api_token(&self, id: Uuid) -> Result<()> {
                    self.write(move |conn| Box::pin(Shared::touch_api_token(conn, id))).await
                }

                #[instrument(skip(self))]
                async fn revoke_api_token(&self, user: Uuid, id: Uuid) -> Result<()> {
                    self.write(move |conn| Box::pin(Shared::revoke_api_token(conn, Some(user), id))).await.map(drop)
                }

                #[instrument(skip(self))]
                async fn revoke_any_api_token(&self, id: Uuid) -> Result<Uuid> {
                    self.write(move |conn| Box::pin(Shared::revoke_api_token(conn, None, id))).await
                }

                #[instrument(skip(self))]
                async fn api_tokens_revoked_since(&self, since: DateTime<Utc>) -> Result<Vec<Uuid>> {
                    Shared::api_tokens_revoked_since(&mut *self.read().await?, since).await
                }
            }
        };
    };
}
pub(crate) use api_tokens_for;
