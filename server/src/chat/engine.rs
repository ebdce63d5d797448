//! The chat engine: what a turn needs (the store, the model provider, the turns running in this process and the
//! limits a turn keeps to), behind one value the HTTP layer calls. Starting a turn, retrying one, following its
//! events and stopping it are methods of [`Engine`] (in `turn.rs` and `replay.rs`); their errors are
//! [`ChatError`](super::error::ChatError)s, which only `http` turns into responses.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use uuid::Uuid;

use super::changes::{ChangeHub, Watcher};
use super::error::Result;
use super::hub::{self, TurnHub};
use super::memory::{ContextMemory, Source};
use crate::config::Config;
use llm::Registry;
use store::{DynStore, TurnLimits};

/// What a turn keeps to.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Token budget of the conversation sent to the model.
    pub context_tokens: usize,
    /// Personal data is replaced before it is stored or reaches a model.
    pub redact_pii: bool,
    /// Daily token budgets and the cap on a person's running turns, checked as a turn starts.
    pub turns: TurnLimits,
    /// How long a call of an MCP tool that asks the person first waits for their decision.
    pub approval_wait: Duration,
}

impl Limits {
    pub fn from_config(config: &Config) -> Self {
        let turns =
            TurnLimits { turn_tokens: super::allowance::turn_estimate(config.context_tokens), ..config.turn_limits() };
        Self {
            context_tokens: config.context_tokens,
            redact_pii: config.redact_pii,
            turns,
            approval_wait: Duration::from_secs(config.mcp_approval_seconds),
        }
    }
}

/// The chat engine of one process. Cloning is cheap: clones share everything.
#[derive(Clone)]
pub struct Engine {
    pub(super) store: DynStore,
    /// The models answers come from.
    pub(super) models: Arc<Registry>,
    /// The turns running in this process.
    pub(super) hub: Arc<TurnHub>,
    pub(super) limits: Limits,
    /// The people whose start was refused lately, and when.
    refusals: Arc<Mutex<HashMap<Uuid, Instant>>>,
    /// Hot conversations' context, kept from their last turn.
    pub(super) memory: Arc<ContextMemory>,
    /// The watchers of conversations' documents here, told of every instance's changes.
    pub(super) changes: Arc<ChangeHub>,
    /// The MCP servers whose tools models are offered.
    pub(super) mcp: Arc<crate::mcp_tools::McpHub>,
}

/// How long a person whose start was refused opens model calls only once a start has committed.
const CAUTIOUS_FOR: Duration = Duration::from_secs(60);
/// Refusals remembered before those older than [`CAUTIOUS_FOR`] are forgotten.
const REFUSALS_KEPT: usize = 4096;

impl Engine {
    /// The engine, with its background work started: the heartbeat of the turns running here, and the release of
    /// answers whose turn died elsewhere.
    pub fn new(store: DynStore, models: Arc<Registry>, limits: Limits, mcp: Arc<crate::mcp_tools::McpHub>) -> Self {
        let hub = Arc::new(TurnHub::default());
        tokio::spawn(hub::keep_alive(hub.clone(), store.clone()));
        tokio::spawn(hub::release_abandoned_answers(store.clone()));
        let changes = ChangeHub::start(store.clone());
        Self { store, models, hub, limits, refusals: Arc::default(), memory: Arc::default(), changes, mcp }
    }

    /// The MCP servers of this Quire.
    pub fn mcp(&self) -> &Arc<crate::mcp_tools::McpHub> {
        &self.mcp
    }

    /// Whether a start in `thread` may open its model call before its commit answers (see `turn::launch`): not
    /// while a turn of this process holds the conversation (the start would be refused), nor for a person whose
    /// start was refused within [`CAUTIOUS_FOR`] (over budget, at the cap of running turns, busy): a start that is
    /// refused costs a model call at most once a minute a person. Never under a configured budget: a call's
    /// `max_tokens` is fitted to what the start reserves; nor, for a minute, for a person whose own budget made an
    /// early call too large (it was opened again, its request paid twice).
    pub(super) fn opens_early(&self, user: Uuid, thread: Uuid) -> bool {
        let budgets = self.limits.turns;
        if budgets.user_daily_tokens > 0 || budgets.daily_tokens > 0 || self.hub.get(thread).is_some() {
            return false;
        }
        let refusals = self.refusals.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        refusals.get(&user).is_none_or(|at| at.elapsed() >= CAUTIOUS_FOR)
    }

    /// Notes that a start of `user`'s was refused, or bounded by a budget of their own.
    pub(super) fn refused(&self, user: Uuid) {
        let mut refusals = self.refusals.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if refusals.len() >= REFUSALS_KEPT {
            refusals.retain(|_, at| at.elapsed() < CAUTIOUS_FOR);
        }
        refusals.insert(user, Instant::now());
    }

    /// The models on offer.
    pub fn models(&self) -> &Registry {
        &self.models
    }

    /// Stops the conversation's running turn, here at once or, on another instance, at its next heartbeat; its
    /// partial answer is kept as stopped. Whether a turn was running; `NotFound` for a conversation the person
    /// may not write in (its author and its project's editors may, whoever started the answer).
    pub async fn stop(&self, user: Uuid, thread: Uuid) -> Result<bool> {
        let author = self.store.thread_author(user, thread, wire::ProjectRole::Editor).await?;
        // A turn stopped here may have closed before the request below reaches the store: it was stopped all the
        // same.
        let here = self.hub.get(thread).filter(|l| l.user_id == author);
        if let Some(live) = &here {
            live.cancel();
        }
        let requested = self.store.request_stop(author, thread).await?;
        Ok(here.is_some() || requested)
    }

    /// The changes to `thread`'s documents from now on, whoever makes them on whichever instance, as SSE frames;
    /// `NotFound` for a conversation the person does not reach; with whether they are its author (else a member of
    /// its project).
    pub async fn watch_changes(&self, user: Uuid, thread: Uuid) -> Result<(Watcher, bool)> {
        let author = match self.store.thread_reach(user, thread).await? {
            Some(reach) => reach == store::projects::ThreadReach::Author,
            None => return Err(super::error::ChatError::NotFound),
        };
        Ok((self.changes.watch(user, thread, author).await, author))
    }

    /// Asks every turn running here to stop (at shutdown), so their partial answers are saved.
    pub fn stop_all(&self) {
        self.hub.cancel_all();
    }

    /// Waits until every turn running here has ended (each saves its answer so far when it stops), asking any
    /// turn that started meanwhile to stop too.
    pub async fn turns_saved(&self) {
        while self.running_turns() > 0 {
            self.hub.cancel_all();
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// Forgets what is kept of `thread`'s context, after a write to it outside a turn (`writes.rs`). (Not needed
    /// to be right: the next start finds the conversation changed by its stamp. Needed to not be wasteful: a start
    /// that opens its model call early would open it with the old context, then drop it.)
    pub(super) fn conversation_changed(&self, thread: Uuid) {
        self.memory.forget(thread);
    }

    /// How many turns' contexts were built from `source` in this process.
    pub fn contexts_from(&self, source: Source) -> u64 {
        self.memory.counted(source)
    }

    /// How many turns run in this process.
    pub fn running_turns(&self) -> usize {
        self.hub.turn_ids().len()
    }
}
