//! postgres: see [`crate::store::Documents`].

#[allow(unused_imports)]
use super::*;

#[async_trait]
impl Documents for Postgres {
    #[instrument(skip(self, artifact), fields(thread = %artifact.thread_id))]
    async fn create_artifact(&self, user: Uuid, artifact: NewArtifact) -> Result<Artifact> {
        let id = Uuid::now_v7();
        let created = now();
        let mut tx = self.pool.begin().await?;
        if !owned_in(&mut tx, "threads", user, artifact.thread_id).await? {
            return Err(StoreError::NotFound);
        }
        // A document may only point at its owner's messages (the foreign key alone would accept anyone's).
        for message in [artifact.request_message_id, artifact.assistant_message_id].into_iter().flatten() {
            if !owned_in(&mut tx, "messages", user, message).await? {
                return Err(StoreError::NotFound);
            }
        }
        sqlx::query(
            "insert into artifacts (id, thread_id, user_id, artifact_type, title, content, version, request_message_id,
             assistant_message_id, created_at, updated_at) values ($1, $2, $3, $4, $5, $6, 1, $7, $8, $9, $9)",
        )
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
        sqlx::query(
            "insert into artifact_versions (artifact_id, version, title, content, created_at) values ($1, 1, $2, $3, $4)",
        )
        .bind(id)
        .bind(&artifact.title)
        .bind(&artifact.content)
        .bind(created)
        .execute(&mut *tx)
        .await?;
        answer_requests(&mut tx, id, &artifact.answers).await?;
        tx.commit().await?;
        Ok(Artifact {
            id,
            thread_id: artifact.thread_id,
            artifact_type: artifact.artifact_type,
            title: artifact.title,
            content: artifact.content,
            version: 1,
            request_message_id: artifact.request_message_id,
            assistant_message_id: artifact.assistant_message_id,
            created_at: created,
        })
    }

    #[instrument(skip(self))]
    async fn list_artifacts(&self, user: Uuid, thread: Uuid) -> Result<Vec<Artifact>> {
        let sql = format!(
            "select {ARTIFACT_COLUMNS} from artifacts where thread_id = $1 and user_id = $2 order by created_at, pk"
        );
        let rows = sqlx::query(&sql).bind(thread).bind(user).fetch_all(&self.pool).await?;
        if rows.is_empty() && !self.owns("threads", user, thread).await? {
            return Err(StoreError::NotFound);
        }
        rows.iter().map(artifact_from_row).collect()
    }

    #[instrument(skip(self))]
    async fn get_artifact(&self, user: Uuid, artifact: Uuid) -> Result<Artifact> {
        let sql = format!("select {ARTIFACT_COLUMNS} from artifacts where id = $1 and user_id = $2");
        let row = sqlx::query(&sql)
            .bind(artifact)
            .bind(user)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)?;
        artifact_from_row(&row)
    }

    #[instrument(skip(self))]
    async fn delete_artifact(&self, user: Uuid, artifact: Uuid) -> Result<()> {
        let deleted = sqlx::query("delete from artifacts where id = $1 and user_id = $2")
            .bind(artifact)
            .bind(user)
            .execute(&self.pool)
            .await?;
        if deleted.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    #[instrument(skip(self, artifacts))]
    async fn link_artifacts(&self, user: Uuid, artifacts: &[Uuid], assistant_message: Uuid) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        if !owned_in(&mut tx, "messages", user, assistant_message).await? {
            return Err(StoreError::NotFound);
        }
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
            if !owned_in(&mut tx, "messages", user, message).await? {
                return Err(StoreError::NotFound);
            }
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
        sqlx::query(
            "insert into artifact_versions (artifact_id, version, title, content, created_at, request_message_id)
             values ($1, $2, $3, $4, $5, $6)",
        )
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
        let row = sqlx::query(&sql).bind(artifact).fetch_one(&mut *tx).await?;
        tx.commit().await?;
        artifact_from_row(&row)
    }

    #[instrument(skip(self))]
    async fn list_artifact_versions(&self, user: Uuid, artifact: Uuid) -> Result<Vec<ArtifactVersion>> {
        let rows = sqlx::query(
            "select v.artifact_id, v.version, v.title, v.content, v.created_at,
                    coalesce(v.request_message_id, case when v.version = 1 then a.request_message_id end) as request_message_id
             from artifact_versions v
             join artifacts a on a.id = v.artifact_id where a.id = $1 and a.user_id = $2 order by v.version",
        )
        .bind(artifact)
        .bind(user)
        .fetch_all(&self.pool)
        .await?;
        if rows.is_empty() {
            return Err(StoreError::NotFound);
        }
        rows.iter().map(version_from_row).collect()
    }

    #[instrument(skip(self))]
    async fn fulfilled_requests(&self, user: Uuid, thread: Uuid) -> Result<Vec<Uuid>> {
        Ok(sqlx::query_scalar(
            "select request_message_id from artifacts
             where thread_id = $1 and user_id = $2 and request_message_id is not null
             union
             select v.request_message_id from artifact_versions v join artifacts a on a.id = v.artifact_id
             where a.thread_id = $1 and a.user_id = $2 and v.request_message_id is not null
             union
             select r.message_id from artifact_requests r join artifacts a on a.id = r.artifact_id
             where a.thread_id = $1 and a.user_id = $2",
        )
        .bind(thread)
        .bind(user)
        .fetch_all(&self.pool)
        .await?)
    }

    #[instrument(skip(self))]
    async fn get_artifact_version(&self, user: Uuid, artifact: Uuid, version: i64) -> Result<ArtifactVersion> {
        let row = sqlx::query(
            "select v.artifact_id, v.version, v.title, v.content, v.created_at,
                    coalesce(v.request_message_id, case when v.version = 1 then a.request_message_id end) as request_message_id
             from artifact_versions v
             join artifacts a on a.id = v.artifact_id where a.id = $1 and a.user_id = $2 and v.version = $3",
        )
        .bind(artifact)
        .bind(user)
        .bind(version)
        .fetch_optional(&self.pool)
        .await?
        .ok_or(StoreError::NotFound)?;
        version_from_row(&row)
    }
}
