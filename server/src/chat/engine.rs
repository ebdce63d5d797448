//! The chat engine: what a turn needs (the store, the model provider, the turns running in this process and the
//! limits a turn keeps to), behind one value the HTTP layer calls. Starting a turn, retrying one, following its
//! events and stopping it are methods of [`Engine`] (in `turn.rs` and `replay.rs`); their errors are
//! [`ChatError`](super::error::ChatError)s, which only `http` turns into responses.

use std::sync::Arc;

use uuid::Uuid;

use super::error::Result;
use super::hub::{self, TurnHub};
use crate::config::Config;
use crate::llm::Registry;
use crate::store::{DynStore, TurnLimits};

/// What a turn keeps to.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Token budget of the conversation sent to the model.
    pub context_tokens: usize,
    /// Personal data is replaced before it is stored or reaches a model.
    pub redact_pii: bool,
    /// Daily token budgets and the cap on a person's running turns, checked as a turn starts.
    pub turns: TurnLimits,
}

impl Limits {
    pub fn from_config(config: &Config) -> Self {
        Self { context_tokens: config.context_tokens, redact_pii: config.redact_pii, turns: config.turn_limits() }
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
}

impl Engine {
    /// The engine, with its background work started: the heartbeat of the turns running here, and the release of
    /// answers whose turn died elsewhere.
    pub fn new(store: DynStore, models: Arc<Registry>, limits: Limits) -> Self {
        let hub = Arc::new(TurnHub::default());
        tokio::spawn(hub::keep_alive(hub.clone(), store.clone()));
        tokio::spawn(hub::release_abandoned_answers(store.clone()));
        Self { store, models, hub, limits }
    }

    /// The models on offer.
    pub fn models(&self) -> &Registry {
        &self.models
    }

    /// Stops the conversation's running turn, here at once or, on another instance, at its next heartbeat; its
    /// partial answer is kept as stopped. Whether a turn was running; `NotFound` for a conversation that is
    /// missing or another person's.
    pub async fn stop(&self, user: Uuid, thread: Uuid) -> Result<bool> {
        self.store.get_thread(user, thread).await?;
        // A turn stopped here may have closed before the request below reaches the store: it was stopped all the
        // same.
        let here = self.hub.get(thread).filter(|l| l.user_id == user);
        if let Some(live) = &here {
            live.cancel();
        }
        let requested = self.store.request_stop(user, thread).await?;
        Ok(here.is_some() || requested)
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

    /// How many turns run in this process.
    pub fn running_turns(&self) -> usize {
        self.hub.turn_ids().len()
    }
}
