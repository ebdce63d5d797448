//! Documents and their versions on PostgreSQL.

use sqlx::PgConnection;
use uuid::Uuid;

use super::{link_artifacts_to, Postgres, Shared};
use crate::store::Result;

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

crate::store::documents::documents_for!(Postgres);
