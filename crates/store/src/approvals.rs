//! Calls of MCP tools that ask the person first: the question a turn keeps while it waits, decided by someone who
//! writes in the conversation (its author, or an editor of its project), on whichever instance they are. Both
//! backends implement it (`sqlite/turns.rs`, `postgres/turns.rs`).

use async_trait::async_trait;
use uuid::Uuid;
use wire::{ApprovalState, ProjectRole, ToolApproval};

use super::columns::{convert, shared_sql, stored_row};
use super::{now, Result, StoreError};

/// A question a turn asks before it calls a tool.
#[derive(Debug, Clone)]
pub struct NewApproval {
    pub turn: Uuid,
    pub thread: Uuid,
    /// The conversation's author.
    pub user: Uuid,
    /// Who sent the message the turn answers.
    pub sender: Uuid,
    pub server: String,
    pub label: String,
    pub tool: String,
    /// The arguments as they are shown (see [`wire::shown_input`]).
    pub input: serde_json::Value,
}

stored_row! {
    /// A question as stored, with the backend's id (`I`) and time (`T`) columns (see [`Stored`](super::columns::Stored)).
    ApprovalRow<I, T> -> ToolApproval {
        id: I,
        thread_id: I,
        turn_id: I,
        server: String,
        label: String,
        tool: String,
        created_at: T,
        decided_at: Option<T>,
    } with {
        input: String,
        state: String,
    } => {
        input: input.read("input")?,
        state: ApprovalState::parse(&state).ok_or_else(|| StoreError::Corrupt(format!("approval state {state}")))?,
    }
}

/// The columns an [`ApprovalRow`] reads, of the table named `a`.
const APPROVAL_COLUMNS: &str =
    "a.id, a.thread_id, a.turn_id, a.server, a.label, a.tool, a.input, a.state, a.created_at, a.decided_at";

shared_sql! {
    rows(ApprovalRow<D::Id, D::Time>);

    /// See [`Approvals::ask_approval`].
    pub(crate) async fn ask_approval(conn: &mut D::Connection, approval: NewApproval) -> Result<ToolApproval> {
        let (id, created) = (Uuid::now_v7(), now());
        sqlx::query(
            "insert into tool_approvals
               (id, thread_id, turn_id, user_id, sender_id, server, label, tool, input, created_at)
             values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(D::id(id))
        .bind(D::id(approval.thread))
        .bind(D::id(approval.turn))
        .bind(D::id(approval.user))
        .bind(D::id(approval.sender))
        .bind(approval.server.clone())
        .bind(approval.label.clone())
        .bind(approval.tool.clone())
        .bind(approval.input.to_string())
        .bind(D::time(created))
        .execute(conn)
        .await?;
        Ok(ToolApproval {
            id,
            thread_id: approval.thread,
            turn_id: approval.turn,
            server: approval.server,
            label: approval.label,
            tool: approval.tool,
            input: approval.input,
            state: ApprovalState::Pending,
            created_at: created,
            decided_at: None,
        })
    }

    /// See [`Approvals::approval_state`].
    pub(crate) async fn approval_state(conn: &mut D::Connection, id: Uuid) -> Result<ApprovalState> {
        let state: Option<String> = sqlx::query_scalar("select state from tool_approvals where id = $1")
            .bind(D::id(id))
            .fetch_optional(conn)
            .await?;
        let state = state.ok_or(StoreError::NotFound)?;
        ApprovalState::parse(&state).ok_or_else(|| StoreError::Corrupt(format!("approval state {state}")))
    }

    /// See [`Approvals::decide_approval`]; the caller makes it one transaction.
    pub(crate) async fn decide_approval(
        conn: &mut D::Connection,
        user: Uuid,
        thread: Uuid,
        id: Uuid,
        approve: bool,
    ) -> Result<ToolApproval> {
        let state = if approve { ApprovalState::Approved } else { ApprovalState::Denied };
        // Decided by those who write in the conversation, while its turn waits (a turn that died leaves its
        // question undecided: nobody would carry it out).
        let sql = format!(
            "update tool_approvals set state = $4, decided_at = $5, decided_by = $3
             where id = $1 and thread_id = $2 and state = 'pending' and {}
               and exists (select 1 from turns tu where tu.id = tool_approvals.turn_id and tu.status = 'running')
             returning id, thread_id, turn_id, server, label, tool, input, state, created_at, decided_at",
            crate::projects::thread_access("$2", "$3", ProjectRole::Editor)
        );
        let decided: Option<ApprovalRow<D::Id, D::Time>> = sqlx::query_as(&sql)
            .bind(D::id(id))
            .bind(D::id(thread))
            .bind(D::id(user))
            .bind(state.as_str())
            .bind(D::time(now()))
            .fetch_optional(&mut *conn)
            .await?;
        if let Some(row) = decided {
            return row.try_into();
        }
        // Nothing changed: a question of theirs already decided (or whose turn is over), or none they may decide.
        let sql = format!(
            "select exists (select 1 from tool_approvals where id = $1 and thread_id = $2 and {})",
            crate::projects::thread_access("$2", "$3", ProjectRole::Editor)
        );
        let theirs: bool =
            sqlx::query_scalar(&sql).bind(D::id(id)).bind(D::id(thread)).bind(D::id(user)).fetch_one(conn).await?;
        Err(match theirs {
            true => StoreError::Conflict("This call was decided already, or its answer is over.".into()),
            false => StoreError::NotFound,
        })
    }

    /// See [`Approvals::expire_approval`].
    pub(crate) async fn expire_approval(conn: &mut D::Connection, id: Uuid) -> Result<ApprovalState> {
        sqlx::query("update tool_approvals set state = 'expired', decided_at = $2 where id = $1 and state = 'pending'")
            .bind(D::id(id))
            .bind(D::time(now()))
            .execute(&mut *conn)
            .await?;
        Self::approval_state(conn, id).await
    }

    /// See [`Approvals::pending_approvals`].
    pub(crate) async fn pending_approvals(
        conn: &mut D::Connection,
        user: Uuid,
        thread: Uuid,
    ) -> Result<Vec<ToolApproval>> {
        let sql = format!(
            "select {APPROVAL_COLUMNS} from tool_approvals a join turns tu on tu.id = a.turn_id
             where a.thread_id = $1 and a.state = 'pending' and tu.status = 'running' and {}
             order by a.created_at, a.id",
            crate::projects::readable("$1", "$2")
        );
        let rows: Vec<ApprovalRow<D::Id, D::Time>> =
            sqlx::query_as(&sql).bind(D::id(thread)).bind(D::id(user)).fetch_all(conn).await?;
        convert(rows)
    }
}

/// The questions of calls that ask the person first, beside the rest of [`Store`](super::Store).
#[async_trait]
pub trait Approvals: Send + Sync {
    /// Keeps a new question, pending.
    async fn ask_approval(&self, approval: &NewApproval) -> Result<ToolApproval>;
    /// Where the question stands now (whoever decided it, on whichever instance); `NotFound` when it is gone
    /// (its conversation was deleted).
    async fn approval_state(&self, id: Uuid) -> Result<ApprovalState>;
    /// Approves or denies the pending question `id` of `thread` as `user`, who must write in the conversation (its
    /// author, or an editor of its project), while its turn waits; the question as decided. `Conflict` when it was
    /// decided already (or expired, or its turn is over); `NotFound` when it is not one they may decide.
    async fn decide_approval(&self, user: Uuid, thread: Uuid, id: Uuid, approve: bool) -> Result<ToolApproval>;
    /// Marks the question expired unless it was decided; where it stands then (a decision made at the last moment
    /// stands).
    async fn expire_approval(&self, id: Uuid) -> Result<ApprovalState>;
    /// The questions of `thread` waiting for a decision while their turn runs, oldest first, for a person who reads
    /// it (none for anyone else).
    async fn pending_approvals(&self, user: Uuid, thread: Uuid) -> Result<Vec<ToolApproval>>;
}

/// Implements [`Approvals`] for a backend, written once for both, as
/// [`accounts_for`](super::accounts::accounts_for) does.
macro_rules! approvals_for {
    ($backend:ty) => {
        const _: () = {
            use tracing::instrument;
            use uuid::Uuid;
            use wire::{ApprovalState, ToolApproval};
            use $crate::approvals::{Approvals, NewApproval};
            use $crate::Result;

            #[async_trait::async_trait]
            impl Approvals for $backend {
                #[instrument(skip_all, fields(turn = %approval.turn))]
                async fn ask_approval(&self, approval: &NewApproval) -> Result<ToolApproval> {
                    let approval = approval.clone();
                    self.write(move |conn| Box::pin(Shared::ask_approval(conn, approval))).await
                }

                #[instrument(skip(self))]
                async fn approval_state(&self, id: Uuid) -> Result<ApprovalState> {
                    Shared::approval_state(&mut *self.read().await?, id).await
                }

                #[instrument(skip(self))]
                async fn decide_approval(
                    &self,
                    user: Uuid,
                    thread: Uuid,
                    id: Uuid,
                    approve: bool,
                ) -> Result<ToolApproval> {
                    self.write_together(move |conn| Box::pin(Shared::decide_approval(conn, user, thread, id, approve)))
                        .await
                }

                #[instrument(skip(self))]
                async fn expire_approval(&self, id: Uuid) -> Result<ApprovalState> {
                    self.write(move |conn| Box::pin(Shared::expire_approval(conn, id))).await
                }

                #[instrument(skip(self))]
                async fn pending_approvals(&self, user: Uuid, thread: Uuid) -> Result<Vec<ToolApproval>> {
                    Shared::pending_approvals(&mut *self.read().await?, user, thread).await
                }
            }
        };
    };
}
pub(crate) use approvals_for;
