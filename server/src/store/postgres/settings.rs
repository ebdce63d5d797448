//! Settings and share links on PostgreSQL. A new link locks its owner's account row before it counts, so links
//! made at once, on any instance, are counted one after the other.

use app::api::{Settings, ShareLink, UpdateSettings};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tracing::instrument;
use uuid::Uuid;

use super::Postgres;
use crate::store::columns::convert;
use crate::store::settings::SettingsRow;
use crate::store::shares::{share_path, too_many_shares, ShareRow};
use crate::store::threads::found;
use crate::store::{now, NewShare, Preferences, Result, Shares, StoreError};

type Row = ShareRow<Uuid, DateTime<Utc>>;

#[async_trait]
impl Preferences for Postgres {
    #[instrument(skip(self))]
    async fn settings(&self, user: Uuid) -> Result<Settings> {
        let row: Option<SettingsRow> =
            sqlx::query_as("select display_name, custom_instructions, theme from users where id = $1")
                .bind(user)
                .fetch_optional(&self.pool)
                .await?;
        row.ok_or(StoreError::NotFound)?.try_into()
    }

    #[instrument(skip_all, fields(user = %user))]
    async fn update_settings(&self, user: Uuid, change: &UpdateSettings) -> Result<Settings> {
        let row: Option<SettingsRow> = sqlx::query_as(
            "update users set display_name = coalesce($1, display_name),
               custom_instructions = coalesce($2, custom_instructions), theme = coalesce($3, theme)
             where id = $4 returning display_name, custom_instructions, theme",
        )
        .bind(change.display_name.as_deref())
        .bind(change.custom_instructions.as_deref())
        .bind(change.theme.map(|t| t.as_str()))
        .bind(user)
        .fetch_optional(&self.pool)
        .await?;
        row.ok_or(StoreError::NotFound)?.try_into()
    }
}

#[async_trait]
impl Shares for Postgres {
    #[instrument(skip(self, share), fields(thread = %share.thread))]
    async fn create_share(&self, user: Uuid, share: NewShare, max: u32) -> Result<ShareLink> {
        let id = Uuid::now_v7();
        let created = now();
        let mut tx = self.pool.begin().await?;
        // Held until the commit: the next link of the person counts this one.
        let person: Option<i32> = sqlx::query_scalar("select 1 from users where id = $1 for update")
            .bind(user)
            .fetch_optional(&mut *tx)
            .await?;
        person.ok_or(StoreError::NotFound)?;
        let owned: bool = sqlx::query_scalar("select exists (select 1 from threads where id = $1 and user_id = $2)")
            .bind(share.thread)
            .bind(user)
            .fetch_one(&mut *tx)
            .await?;
        found(owned)?;
        let count: i64 =
            sqlx::query_scalar("select count(*) from shares where user_id = $1").bind(user).fetch_one(&mut *tx).await?;
        if count >= i64::from(max) {
            return Err(too_many_shares(max));
        }
        sqlx::query(
            "insert into shares (id, token, user_id, thread_id, title, snapshot, created_at)
             values ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(id)
        .bind(&share.token)
        .bind(user)
        .bind(share.thread)
        .bind(&share.title)
        .bind(&share.snapshot)
        .bind(created)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(ShareLink {
            id,
            thread_id: share.thread,
            title: share.title,
            path: share_path(&share.token),
            created_at: created,
        })
    }

    #[instrument(skip(self))]
    async fn list_shares(&self, user: Uuid, thread: Option<Uuid>) -> Result<Vec<ShareLink>> {
        let rows: Vec<Row> = sqlx::query_as(
            "select id, thread_id, token, title, created_at from shares
             where user_id = $1 and ($2::uuid is null or thread_id = $2) order by created_at desc, id desc",
        )
        .bind(user)
        .bind(thread)
        .fetch_all(&self.pool)
        .await?;
        if let (true, Some(thread)) = (rows.is_empty(), thread) {
            found(self.owns("threads", user, thread).await?)?;
        }
        convert(rows)
    }

    #[instrument(skip(self))]
    async fn delete_share(&self, user: Uuid, share: Uuid) -> Result<()> {
        self.delete("delete from shares where id = $1 and user_id = $2", &[share, user]).await
    }

    #[instrument(skip_all)]
    async fn shared_snapshot(&self, token: &str) -> Result<String> {
        let snapshot: Option<String> = sqlx::query_scalar("select snapshot from shares where token = $1")
            .bind(token)
            .fetch_optional(&self.pool)
            .await?;
        snapshot.ok_or(StoreError::NotFound)
    }
}
