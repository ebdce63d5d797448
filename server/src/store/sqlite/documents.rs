//! Documents and their versions on SQLite.

use app::api::{Artifact, ArtifactVersion};
use async_trait::async_trait;
use sqlx::SqliteConnection;
use tracing::instrument;
use uuid::Uuid;

use super::{link_artifacts_to, Shared, Sqlite};
use crate::store::columns::convert;
use crate::store::documents::{
    ArtifactRow, Fulfilment, FulfilmentRow, VersionRow, ARTIFACT_COLUMNS, FULFILLED, INSERT_ARTIFACT,
    INSERT_FIRST_VERSION, INSERT_VERSION, VERSIONS,
};
use crate::store::threads::{found, listing};
use crate::store::{now, ArtifactRevision, Documents, NewArtifact, Result, StoreError};

type Row = ArtifactRow<String, i64>;

/// Records that a document answers these earlier requests too: the person's messages of its own thread among
/// them (others are ignored).
async fn answer_requests(tx: &mut SqliteConnection, artifact: Uuid, requests: &[Uuid]) -> Result<()> {
    if requests.is_empty() {
        return Ok(());
    }
    let ids = serde_json::to_string(&requests.iter().map(Uuid::to_string).collect::<Vec<_>>())
        .map_err(|e| StoreError::Corrupt(e.to_string()))?;
    sqlx::query(
        "insert or ignore into artifact_requests (artifact_id, message_id)
         select a.id, m.id from artifacts a join messages m on m.thread_id = a.thread_id and m.user_id = a.user_id
         where a.id = ? and m.role = 'user' and m.id in (select value from json_each(?))",
    )
    .bind(artifact.to_string())
    .bind(ids)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

#[async_trait]
impl Documents for Sqlite {
    #[instrument(skip(self, artifact), fields(thread = %artifact.thread_id))]
    async fn create_artifact(&self, user: Uuid, artifact: NewArtifact) -> Result<Artifact> {
        let id = Uuid::now_v7();
        let created = now();
        self.write(move |tx| {
            Box::pin(async move {
                Shared::must_own(tx, "threads", user, artifact.thread_id).await?;
                // A document may only point at its owner's messages (the foreign key alone would accept anyone's).
                for message in [artifact.request_message_id, artifact.assistant_message_id].into_iter().flatten() {
                    Shared::must_own(tx, "messages", user, message).await?;
                }
                sqlx::query(INSERT_ARTIFACT)
                    .bind(id.to_string())
                    .bind(artifact.thread_id.to_string())
                    .bind(user.to_string())
                    .bind(artifact.artifact_type.as_str())
                    .bind(&artifact.title)
                    .bind(&artifact.content)
                    .bind(artifact.request_message_id.map(|m| m.to_string()))
                    .bind(artifact.assistant_message_id.map(|m| m.to_string()))
                    .bind(created.timestamp_micros())
                    .execute(&mut *tx)
                    .await?;
                sqlx::query(INSERT_FIRST_VERSION)
                    .bind(id.to_string())
                    .bind(&artifact.title)
                    .bind(&artifact.content)
                    .bind(created.timestamp_micros())
                    .execute(&mut *tx)
                    .await?;
                answer_requests(tx, id, &artifact.answers).await?;
                Ok(artifact.saved(id, created))
            })
        })
        .await
    }

    #[instrument(skip(self))]
    async fn list_artifacts(&self, user: Uuid, thread: Uuid) -> Result<Vec<Artifact>> {
        let sql = format!(
            "select {ARTIFACT_COLUMNS} from artifacts where thread_id = ? and user_id = ? order by created_at, pk"
        );
        let rows: Vec<Row> =
            sqlx::query_as(&sql).bind(thread.to_string()).bind(user.to_string()).fetch_all(&self.reader).await?;
        convert(listing(rows, self.owns("threads", user, thread)).await?)
    }

    #[instrument(skip(self))]
    async fn get_artifact(&self, user: Uuid, artifact: Uuid) -> Result<Artifact> {
        let sql = format!("select {ARTIFACT_COLUMNS} from artifacts where id = ? and user_id = ?");
        let row: Option<Row> =
            sqlx::query_as(&sql).bind(artifact.to_string()).bind(user.to_string()).fetch_optional(&self.reader).await?;
        row.ok_or(StoreError::NotFound)?.try_into()
    }

    #[instrument(skip(self))]
    async fn delete_artifact(&self, user: Uuid, artifact: Uuid) -> Result<()> {
        self.delete("delete from artifacts where id = ? and user_id = ?", &[artifact, user]).await
    }

    #[instrument(skip(self, artifacts))]
    async fn link_artifacts(&self, user: Uuid, artifacts: &[Uuid], assistant_message: Uuid) -> Result<()> {
        let artifacts = artifacts.to_vec();
        self.write(move |tx| {
            Box::pin(async move {
                Shared::must_own(tx, "messages", user, assistant_message).await?;
                link_artifacts_to(tx, user, &artifacts, assistant_message).await
            })
        })
        .await
    }

    #[instrument(skip(self, revision))]
    async fn revise_artifact(&self, user: Uuid, artifact: Uuid, revision: ArtifactRevision) -> Result<Artifact> {
        let updated = now();
        self.write(move |tx| {
            Box::pin(async move {
                // A version may only point at its owner's messages (the foreign key alone would accept anyone's).
                if let Some(message) = revision.request_message_id {
                    Shared::must_own(tx, "messages", user, message).await?;
                }
                let version: Option<i64> = sqlx::query_scalar(
                    "update artifacts set title = ?, content = ?, version = version + 1,
                     updated_at = max(updated_at, ?) where id = ? and user_id = ? returning version",
                )
                .bind(&revision.title)
                .bind(&revision.content)
                .bind(updated.timestamp_micros())
                .bind(artifact.to_string())
                .bind(user.to_string())
                .fetch_optional(&mut *tx)
                .await?;
                let version = version.ok_or(StoreError::NotFound)?;
                sqlx::query(INSERT_VERSION)
                    .bind(artifact.to_string())
                    .bind(version)
                    .bind(&revision.title)
                    .bind(&revision.content)
                    .bind(updated.timestamp_micros())
                    .bind(revision.request_message_id.map(|m| m.to_string()))
                    .execute(&mut *tx)
                    .await?;
                answer_requests(tx, artifact, &revision.answers).await?;
                let sql = format!("select {ARTIFACT_COLUMNS} from artifacts where id = ?");
                let row: Row = sqlx::query_as(&sql).bind(artifact.to_string()).fetch_one(&mut *tx).await?;
                row.try_into()
            })
        })
        .await
    }

    #[instrument(skip(self))]
    async fn list_artifact_versions(&self, user: Uuid, artifact: Uuid) -> Result<Vec<ArtifactVersion>> {
        let sql = format!("{VERSIONS} where a.id = ? and a.user_id = ? order by v.version");
        let rows: Vec<VersionRow<String, i64>> =
            sqlx::query_as(&sql).bind(artifact.to_string()).bind(user.to_string()).fetch_all(&self.reader).await?;
        found(!rows.is_empty())?;
        convert(rows)
    }

    #[instrument(skip(self))]
    async fn fulfilled_requests(&self, user: Uuid, thread: Uuid) -> Result<Vec<Fulfilment>> {
        let rows: Vec<FulfilmentRow<String>> =
            sqlx::query_as(FULFILLED).bind(thread.to_string()).bind(user.to_string()).fetch_all(&self.reader).await?;
        convert(rows)
    }

    #[instrument(skip(self))]
    async fn get_artifact_version(&self, user: Uuid, artifact: Uuid, version: i64) -> Result<ArtifactVersion> {
        let sql = format!("{VERSIONS} where a.id = ? and a.user_id = ? and v.version = ?");
        let row: Option<VersionRow<String, i64>> = sqlx::query_as(&sql)
            .bind(artifact.to_string())
            .bind(user.to_string())
            .bind(version)
            .fetch_optional(&self.reader)
            .await?;
        row.ok_or(StoreError::NotFound)?.try_into()
    }
}
