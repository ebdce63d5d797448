//! What a turn reads before it asks the model, besides the conversation itself: the settings, and then only what
//! they say the conversation has. Both backends implement it (`sqlite/settings.rs`, `postgres/settings.rs`).

use async_trait::async_trait;
use uuid::Uuid;

use super::requirements::{ForeignLedger, LedgerRows};
use super::{ArtifactBrief, Result, TurnSettings};

/// Everything a turn reads before it asks the model, besides the conversation itself: see
/// [`TurnInputs::turn_reads`].
#[derive(Debug, Clone, Default)]
pub struct TurnReads {
    pub settings: TurnSettings,
    /// The conversation's newest documents, the text of the short ones with them (empty when it has none).
    pub documents: Vec<ArtifactBrief>,
    /// The conversation's ledger without its tree (empty when it has neither requirements nor documents).
    pub ledger: LedgerRows,
    /// In a project, the most recently active other conversations' ledgers (empty out of one). A failure to read
    /// them is not the turn's: it is logged, and the turn goes on without them.
    pub foreign: Vec<ForeignLedger>,
}

/// How much of a conversation's documents and of its project's ledgers a turn reads.
#[derive(Debug, Clone, Copy)]
pub struct TurnReadLimits {
    /// Newest documents, at most.
    pub documents: u32,
    /// A document's text is read only up to this many characters.
    pub document_text_chars: u32,
    /// Other conversations' ledgers in a project, at most.
    pub project_ledgers: u32,
}

#[async_trait]
pub trait TurnInputs {
    /// What a turn of `sender` in `user`'s `thread` reads before it asks the model, on one connection and in as
    /// few statements as the conversation needs: [`turn_settings`](crate::Preferences::turn_settings), then only
    /// what they say is there (the documents' briefs when it has documents, the ledger when it has requirements
    /// or documents, the project's other ledgers when it is in a project). A conversation with none of them costs
    /// one statement. `NotFound` as for the settings, or for a conversation missing or another person's once its
    /// ledger is read.
    async fn turn_reads(&self, user: Uuid, thread: Uuid, sender: Uuid, limits: TurnReadLimits) -> Result<TurnReads>;
}

/// Implements [`TurnInputs`] for a backend, written once for both, as
/// [`accounts_for`](super::accounts::accounts_for) does.
macro_rules! turn_inputs_for {
    ($backend:ty) => {
        const _: () = {
            use tracing::instrument;
            use uuid::Uuid;
            use $crate::requirements::{ForeignPick, LedgerRows};
            use $crate::turn_reads::{TurnInputs, TurnReadLimits, TurnReads};
            use $crate::{Result, StoreError};

            #[async_trait::async_trait]
            impl TurnInputs for $backend {
                #[instrument(skip(self))]
                async fn turn_reads(
                    &self,
                    user: Uuid,
                    thread: Uuid,
                    sender: Uuid,
                    limits: TurnReadLimits,
                ) -> Result<TurnReads> {
                    let mut conn = self.read().await?;
                    let settings = Shared::turn_settings(&mut *conn, user, thread, sender).await?;
                    let documents = match settings.has_artifacts {
                        true => {
                            Shared::briefs(&mut *conn, user, thread, limits.documents, limits.document_text_chars)
                                .await?
                        }
                        false => Vec::new(),
                    };
                    // A ledger is its requirements and what the documents cite: with neither, it is empty.
                    let ledger = match settings.has_requirements || settings.has_artifacts {
                        true => Shared::ledger_rows_without_tree(&mut *conn, user, thread)
                            .await?
                            .ok_or(StoreError::NotFound)?,
                        false => LedgerRows::default(),
                    };
                    let foreign = match settings.in_project {
                        true => {
                            let pick = ForeignPick::Recent(limits.project_ledgers);
                            Shared::foreign_ledgers(&mut *conn, user, thread, pick).await.unwrap_or_else(|e| {
                                tracing::warn!(error = %e, "reading the project's other ledgers failed");
                                Vec::new()
                            })
                        }
                        false => Vec::new(),
                    };
                    Ok(TurnReads { settings, documents, ledger, foreign })
                }
            }
        };
    };
}
pub(crate) use turn_inputs_for;
