//! Documents and their versions on PostgreSQL.

use app::api::{Artifact, ArtifactVersion};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use tracing::instrument;
use uuid::Uuid;

use super::{link_artifacts_to, Postgres, Shared};
use crate::store::columns::convert;
use crate::store::documents::{
    ArtifactRow, Fulfilment, FulfilmentRow, VersionRow, ARTIFACT_COLUMNS, FULFILLED, INSERT_ARTIFACT,
    INSERT_FIRST_VERSION, INSERT_VERSION, VERSIONS,
};
use crate::store::threads::{found, listing};
use crate::store::{now, ArtifactRevision, Documents, NewArtifact, Result, StoreError};

type Row = ArtifactRow<Uuid, DateTime<Utc>>;

/// Records that a document answers these earlier requests too: the person's messages of its own thread among
/// them (others are ignored).
async fn answer_requests(tx: &mut PgConnection, artifact: Uuid, requests: &[Uuid]) -> Result<()> {
    if requests.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "insert into artifact_requests (artifact_id, message_id)
         select a.id, m.id from artifacts a join messages m on m.thread_id = a.thread_id and m.user_id = a.user_id
         where a.id = $1 and m.role = 'user' and m.id = any($2)
         on conflict do nothing",
    )
    .bind(artifact)
    .bind(requests)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

#[async_trait]
impl Documents for Postgres {
    #[instrument(skip(self, artifact), fields(thread = %artifact.thread_id))]
    async fn create_artifact(&self, user: Uuid, artifact: NewArtifact) -> Result<Artifact> {
        let id = Uuid::now_v7();
        let created = now();
        let mut tx = self.pool.begin().await?;
        Shared::must_own(&mut tx, "threads", user, artifact.thread_id).await?;
        // A document may only point at its owner's messages (the foreign key alone would accept anyone's).
        for message in [artifact.request_message_id, artifact.assistant_message_id].into_iter().flatten() {
            Shared::must_own(&mut tx, "messages", user, message).await?;
        }
        sqlx::query(INSERT_ARTIFACT)
            .bind(id)
            .bind(artifact.thread_id)
            .bind(user)
            .bind(artifact.artifact_type.as_str())
            .bind(&artifact.title)
            .bind(&artifact.content)
            .bind(artifact.request_message_id)
            .bind(artifact.assistant_message_id)
            .bind(created)
            .execute(&mut *tx)
            .await?;
        sqlx::query(INSERT_FIRST_VERSION)
            .bind(id)
            .bind(&artifact.title)
            .bind(&artifact.content)
            .bind(created)
            .execute(&mut *tx)
            .await?;
        answer_requests(&mut tx, id, &artifact.answers).await?;
        tx.commit().await?;
        Ok(artifact.saved(id, created))
    }

    #[instrument(skip(self))]
    async fn list_artifacts(&self, user: Uuid, thread: Uuid) -> Result<Vec<Artifact>> {
        let sql = format!(
            "select {ARTIFACT_COLUMNS} from artifacts where thread_id = $1 and user_id = $2 order by created_at, pk"
        );
        let rows: Vec<Row> = sqlx::query_as(&sql).bind(thread).bind(user).fetch_all(&self.pool).await?;
        convert(listing(rows, self.owns("threads", user, thread)).await?)
    }

    #[instrument(skip(self))]
    async fn get_artifact(&self, user: Uuid, artifact: Uuid) -> Result<Artifact> {
        let sql = format!("select {ARTIFACT_COLUMNS} from artifacts where id = $1 and user_id = $2");
        let row: Option<Row> = sqlx::query_as(&sql).bind(artifact).bind(user).fetch_optional(&self.pool).await?;
        row.ok_or(StoreError::NotFound)?.try_into()
    }

    #[instrument(skip(self))]
    async fn delete_artifact(&self, user: Uuid, artifact: Uuid) -> Result<()> {
        self.delete("delete from artifacts where id = $1 and user_id = $2", &[artifact, user]).await
    }

    #[instrument(skip(self, artifacts))]
    async fn link_artifacts(&self, user: Uuid, artifacts: &[Uuid], assistant_message: Uuid) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        Shared::must_own(&mut tx, "messages", user, assistant_message).await?;
        link_artifacts_to(&mut tx, user, artifacts, assistant_message).await?;
        tx.commit().await?;
        Ok(())
    }

    #[instrument(skip(self, revision))]
    async fn revise_artifact(&self, user: Uuid, artifact: Uuid, revision: ArtifactRevision) -> Result<Artifact> {
        let updated = now();
        let mut tx = self.pool.begin().await?;
        // A version may only point at its owner's messages (the foreign key alone would accept anyone's).
        if let Some(message) = revision.request_message_id {
            Shared::must_own(&mut tx, "messages", user, message).await?;
        }
        let version: Option<i64> = sqlx::query_scalar(
            "update artifacts set title = $1, content = $2, version = version + 1, updated_at = greatest(updated_at, $3)
             where id = $4 and user_id = $5 returning version",
        )
        .bind(&revision.title)
        .bind(&revision.content)
        .bind(updated)
        .bind(artifact)
        .bind(user)
        .fetch_optional(&mut *tx)
        .await?;
        let version = version.ok_or(StoreError::NotFound)?;
        sqlx::query(INSERT_VERSION)
            .bind(artifact)
            .bind(version)
            .bind(&revision.title)
            .bind(&revision.content)
            .bind(updated)
            .bind(revision.request_message_id)
            .execute(&mut *tx)
            .await?;
        answer_requests(&mut tx, artifact, &revision.answers).await?;
        let sql = format!("select {ARTIFACT_COLUMNS} from artifacts where id = $1");
        let row: Row = sqlx::query_as(&sql).bind(artifact).fetch_one(&mut *tx).await?;
        tx.commit().await?;
        row.try_into()
    }

    #[instrument(skip(self))]
    async fn list_artifact_versions(&self, user: Uuid, artifact: Uuid) -> Result<Vec<ArtifactVersion>> {
        let sql = format!("{VERSIONS} where a.id = $1 and a.user_id = $2 order by v.version");
        let rows: Vec<VersionRow<Uuid, DateTime<Utc>>> =
            sqlx::query_as(&sql).bind(artifact).bind(user).fetch_all(&self.pool).await?;
        found(!rows.is_empty())?;
        convert(rows)
    }

    #[instrument(skip(self))]
    async fn fulfilled_requests(&self, user: Uuid, thread: Uuid) -> Result<Vec<Fulfilment>> {
        let rows: Vec<FulfilmentRow<Uuid>> =
            sqlx::query_as(FULFILLED).bind(thread).bind(user).fetch_all(&self.pool).await?;
        convert(rows)
    }

    #[instrument(skip(self))]
    async fn get_artifact_version(&self, user: Uuid, artifact: Uuid, version: i64) -> Result<ArtifactVersion> {
        let sql = format!("{VERSIONS} where a.id = $1 and a.user_id = $2 and v.version = $3");
        let row: Option<VersionRow<Uuid, DateTime<Utc>>> =
            sqlx::query_as(&sql).bind(artifact).bind(user).bind(version).fetch_optional(&self.pool).await?;
        row.ok_or(StoreError::NotFound)?.try_into()
    }
}
