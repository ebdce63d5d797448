//! Settings and share links on SQLite. The one writer makes every link, so a count made in the insert's own
//! write sees every link made before it.

use app::api::{Settings, ShareLink, UpdateSettings};
use async_trait::async_trait;
use tracing::instrument;
use uuid::Uuid;

use super::Sqlite;
use crate::store::columns::convert;
use crate::store::settings::SettingsRow;
use crate::store::shares::{share_path, too_many_shares, ShareRow};
use crate::store::threads::found;
use crate::store::{now, NewShare, Preferences, Result, Shares, StoreError};

type Row = ShareRow<String, i64>;

#[async_trait]
impl Preferences for Sqlite {
    #[instrument(skip(self))]
    async fn settings(&self, user: Uuid) -> Result<Settings> {
        let row: Option<SettingsRow> =
            sqlx::query_as("select display_name, custom_instructions, theme from users where id = ?")
                .bind(user.to_string())
                .fetch_optional(&self.reader)
                .await?;
        row.ok_or(StoreError::NotFound)?.try_into()
    }

    #[instrument(skip_all, fields(user = %user))]
    async fn update_settings(&self, user: Uuid, change: &UpdateSettings) -> Result<Settings> {
        let change = change.clone();
        let row: Option<SettingsRow> = self
            .write(move |conn| {
                Box::pin(async move {
                    Ok(sqlx::query_as(
                        "update users set display_name = coalesce(?, display_name),
                           custom_instructions = coalesce(?, custom_instructions), theme = coalesce(?, theme)
                         where id = ? returning display_name, custom_instructions, theme",
                    )
                    .bind(change.display_name)
                    .bind(change.custom_instructions)
                    .bind(change.theme.map(|t| t.as_str()))
                    .bind(user.to_string())
                    .fetch_optional(conn)
                    .await?)
                })
            })
            .await?;
        row.ok_or(StoreError::NotFound)?.try_into()
    }
}

#[async_trait]
impl Shares for Sqlite {
    #[instrument(skip(self, share), fields(thread = %share.thread))]
    async fn create_share(&self, user: Uuid, share: NewShare, max: u32) -> Result<ShareLink> {
        let id = Uuid::now_v7();
        let created = now();
        self.write(move |conn| {
            Box::pin(async move {
                let owned: bool =
                    sqlx::query_scalar("select exists (select 1 from threads where id = ? and user_id = ?)")
                        .bind(share.thread.to_string())
                        .bind(user.to_string())
                        .fetch_one(&mut *conn)
                        .await?;
                found(owned)?;
                let count: i64 = sqlx::query_scalar("select count(*) from shares where user_id = ?")
                    .bind(user.to_string())
                    .fetch_one(&mut *conn)
                    .await?;
                if count >= i64::from(max) {
                    return Err(too_many_shares(max));
                }
                sqlx::query(
                    "insert into shares (id, token, user_id, thread_id, title, snapshot, created_at)
                     values (?, ?, ?, ?, ?, ?, ?)",
                )
                .bind(id.to_string())
                .bind(&share.token)
                .bind(user.to_string())
                .bind(share.thread.to_string())
                .bind(&share.title)
                .bind(&share.snapshot)
                .bind(created.timestamp_micros())
                .execute(&mut *conn)
                .await?;
                Ok(ShareLink {
                    id,
                    thread_id: share.thread,
                    title: share.title,
                    path: share_path(&share.token),
                    created_at: created,
                })
            })
        })
        .await
    }

    #[instrument(skip(self))]
    async fn list_shares(&self, user: Uuid, thread: Option<Uuid>) -> Result<Vec<ShareLink>> {
        let rows: Vec<Row> = sqlx::query_as(
            "select id, thread_id, token, title, created_at from shares
             where user_id = ?1 and (?2 is null or thread_id = ?2) order by created_at desc, id desc",
        )
        .bind(user.to_string())
        .bind(thread.map(|t| t.to_string()))
        .fetch_all(&self.reader)
        .await?;
        if let (true, Some(thread)) = (rows.is_empty(), thread) {
            found(self.owns("threads", user, thread).await?)?;
        }
        convert(rows)
    }

    #[instrument(skip(self))]
    async fn delete_share(&self, user: Uuid, share: Uuid) -> Result<()> {
        self.delete("delete from shares where id = ? and user_id = ?", &[share, user]).await
    }

    #[instrument(skip_all)]
    async fn shared_snapshot(&self, token: &str) -> Result<String> {
        let snapshot: Option<String> = sqlx::query_scalar("select snapshot from shares where token = ?")
            .bind(token)
            .fetch_optional(&self.reader)
            .await?;
        snapshot.ok_or(StoreError::NotFound)
    }
}
