//! sqlite: see [`crate::store::Documents`].

#[allow(unused_imports)]
use super::*;

#[async_trait]
impl Documents for Sqlite {
    #[instrument(skip(self, artifact), fields(thread = %artifact.thread_id))]
    async fn create_artifact(&self, user: Uuid, artifact: NewArtifact) -> Result<Artifact> {
        let id = Uuid::now_v7();
        let created = now();
        self.write(move |tx| {
            Box::pin(async move {
                let owned: Option<i64> = sqlx::query_scalar("select 1 from threads where id = ? and user_id = ?")
                    .bind(artifact.thread_id.to_string())
                    .bind(user.to_string())
                    .fetch_optional(&mut *tx)
                    .await?;
                owned.ok_or(StoreError::NotFound)?;
                // A document may only point at its owner's messages (the foreign key alone would accept anyone's).
                for message in [artifact.request_message_id, artifact.assistant_message_id].into_iter().flatten() {
                    if !owned_in(tx, "messages", user, message).await? {
                        return Err(StoreError::NotFound);
                    }
                }
                sqlx::query(
            "insert into artifacts (id, thread_id, user_id, artifact_type, title, content, version, request_message_id,
             assistant_message_id, created_at, updated_at) values (?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?)",
        )
        .bind(id.to_string())
        .bind(artifact.thread_id.to_string())
        .bind(user.to_string())
        .bind(artifact.artifact_type.as_str())
        .bind(&artifact.title)
        .bind(&artifact.content)
        .bind(artifact.request_message_id.map(|m| m.to_string()))
        .bind(artifact.assistant_message_id.map(|m| m.to_string()))
        .bind(created.timestamp_micros())
        .bind(created.timestamp_micros())
        .execute(&mut *tx)
        .await?;
                sqlx::query(
            "insert into artifact_versions (artifact_id, version, title, content, created_at) values (?, 1, ?, ?, ?)",
        )
        .bind(id.to_string())
        .bind(&artifact.title)
        .bind(&artifact.content)
        .bind(created.timestamp_micros())
        .execute(&mut *tx)
        .await?;
                answer_requests(tx, id, &artifact.answers).await?;
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
            })
        })
        .await
    }

    #[instrument(skip(self))]
    async fn list_artifacts(&self, user: Uuid, thread: Uuid) -> Result<Vec<Artifact>> {
        let sql = format!(
            "select {ARTIFACT_COLUMNS} from artifacts where thread_id = ? and user_id = ? order by created_at, pk"
        );
        let rows = sqlx::query(&sql).bind(thread.to_string()).bind(user.to_string()).fetch_all(&self.reader).await?;
        if rows.is_empty() && !self.owns("threads", user, thread).await? {
            return Err(StoreError::NotFound);
        }
        rows.iter().map(artifact_from_row).collect()
    }

    #[instrument(skip(self))]
    async fn get_artifact(&self, user: Uuid, artifact: Uuid) -> Result<Artifact> {
        let sql = format!("select {ARTIFACT_COLUMNS} from artifacts where id = ? and user_id = ?");
        let row = sqlx::query(&sql)
            .bind(artifact.to_string())
            .bind(user.to_string())
            .fetch_optional(&self.reader)
            .await?
            .ok_or(StoreError::NotFound)?;
        artifact_from_row(&row)
    }

    #[instrument(skip(self))]
    async fn delete_artifact(&self, user: Uuid, artifact: Uuid) -> Result<()> {
        let deleted = self
            .writer
            .write(Urgency::Waited, move |conn| {
                Box::pin(async move {
                    Ok(sqlx::query("delete from artifacts where id = ? and user_id = ?")
                        .bind(artifact.to_string())
                        .bind(user.to_string())
                        .execute(conn)
                        .await?)
                })
            })
            .await?;
        if deleted.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    #[instrument(skip(self, artifacts))]
    async fn link_artifacts(&self, user: Uuid, artifacts: &[Uuid], assistant_message: Uuid) -> Result<()> {
        let artifacts = artifacts.to_vec();
        self.write(move |tx| {
            Box::pin(async move {
                if !owned_in(tx, "messages", user, assistant_message).await? {
                    return Err(StoreError::NotFound);
                }
                link_artifacts_to(tx, user, &artifacts, assistant_message).await?;
                Ok(())
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
                    if !owned_in(tx, "messages", user, message).await? {
                        return Err(StoreError::NotFound);
                    }
                }
                let version: Option<i64> = sqlx::query_scalar(
            "update artifacts set title = ?, content = ?, version = version + 1, updated_at = max(updated_at, ?)
             where id = ? and user_id = ? returning version",
        )
        .bind(&revision.title)
        .bind(&revision.content)
        .bind(updated.timestamp_micros())
        .bind(artifact.to_string())
        .bind(user.to_string())
        .fetch_optional(&mut *tx)
        .await?;
                let version = version.ok_or(StoreError::NotFound)?;
                sqlx::query(
            "insert into artifact_versions (artifact_id, version, title, content, created_at, request_message_id)
             values (?, ?, ?, ?, ?, ?)",
        )
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
                let row = sqlx::query(&sql).bind(artifact.to_string()).fetch_one(&mut *tx).await?;
                artifact_from_row(&row)
            })
        })
        .await
    }

    #[instrument(skip(self))]
    async fn list_artifact_versions(&self, user: Uuid, artifact: Uuid) -> Result<Vec<ArtifactVersion>> {
        let rows = sqlx::query(
            "select v.artifact_id, v.version, v.title, v.content, v.created_at,
                    coalesce(v.request_message_id, case when v.version = 1 then a.request_message_id end) as request_message_id
             from artifact_versions v
             join artifacts a on a.id = v.artifact_id where a.id = ? and a.user_id = ? order by v.version",
        )
        .bind(artifact.to_string())
        .bind(user.to_string())
        .fetch_all(&self.reader)
        .await?;
        if rows.is_empty() {
            return Err(StoreError::NotFound);
        }
        rows.iter().map(version_from_row).collect()
    }

    #[instrument(skip(self))]
    async fn fulfilled_requests(&self, user: Uuid, thread: Uuid) -> Result<Vec<Uuid>> {
        let ids: Vec<String> = sqlx::query_scalar(
            "select request_message_id from artifacts
             where thread_id = ?1 and user_id = ?2 and request_message_id is not null
             union
             select v.request_message_id from artifact_versions v join artifacts a on a.id = v.artifact_id
             where a.thread_id = ?1 and a.user_id = ?2 and v.request_message_id is not null
             union
             select r.message_id from artifact_requests r join artifacts a on a.id = r.artifact_id
             where a.thread_id = ?1 and a.user_id = ?2",
        )
        .bind(thread.to_string())
        .bind(user.to_string())
        .fetch_all(&self.reader)
        .await?;
        ids.iter().map(|id| Uuid::parse_str(id).map_err(|e| StoreError::Corrupt(format!("request id: {e}")))).collect()
    }

    #[instrument(skip(self))]
    async fn get_artifact_version(&self, user: Uuid, artifact: Uuid, version: i64) -> Result<ArtifactVersion> {
        let row = sqlx::query(
            "select v.artifact_id, v.version, v.title, v.content, v.created_at,
                    coalesce(v.request_message_id, case when v.version = 1 then a.request_message_id end) as request_message_id
             from artifact_versions v
             join artifacts a on a.id = v.artifact_id where a.id = ? and a.user_id = ? and v.version = ?",
        )
        .bind(artifact.to_string())
        .bind(user.to_string())
        .bind(version)
        .fetch_optional(&self.reader)
        .await?
        .ok_or(StoreError::NotFound)?;
        version_from_row(&row)
    }
}
