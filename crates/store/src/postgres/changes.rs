//! Document changes between instances: `pg_notify` on one channel, one `LISTEN` connection per instance.

use std::time::Duration;

use async_trait::async_trait;
use futures::stream::{self, BoxStream, StreamExt};
use sqlx::postgres::PgListener;

use super::Postgres;
use crate::changes::{ArtifactChange, SharedChanges};
use crate::Result;

/// The channel every instance listens on.
const CHANNEL: &str = "quire_artifact_changes";

/// Wait before listening again after the connection could not be opened again.
const RELISTEN_AFTER: Duration = Duration::from_secs(1);

#[async_trait]
impl SharedChanges for Postgres {
    #[tracing::instrument(skip(self))]
    async fn announce(&self, change: &ArtifactChange) -> Result<()> {
        sqlx::query("select pg_notify($1, $2)").bind(CHANNEL).bind(change.payload()).execute(&self.pool).await?;
        Ok(())
    }

    async fn listen(&self) -> Result<BoxStream<'static, ArtifactChange>> {
        let mut listener = PgListener::connect_with(&self.pool).await?;
        listener.listen(CHANNEL).await?;
        let changes = stream::unfold(listener, |mut listener| async move {
            loop {
                // `recv` connects again by itself after a lost connection; an error is a failed reconnection.
                match listener.recv().await {
                    Ok(notification) => match ArtifactChange::from_payload(notification.payload()) {
                        Some(change) => return Some((change, listener)),
                        None => tracing::warn!("a document change that is not one was announced"),
                    },
                    Err(e) => {
                        tracing::warn!(error = %e, "listening for document changes failed; trying again");
                        tokio::time::sleep(RELISTEN_AFTER).await;
                    }
                }
            }
        });
        Ok(changes.boxed())
    }
}
