//! Documents and their versions on SQLite.

use sqlx::SqliteConnection;
use uuid::Uuid;

use super::{link_artifacts_to, Shared, Sqlite};
use crate::store::{Result, StoreError};

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

crate::store::documents::documents_for!(Sqlite);
