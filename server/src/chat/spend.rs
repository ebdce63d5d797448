//! The tokens of a model call made beside a turn's answer (a title, a summary), put on the person's ledger however
//! the call ends: when its caller gets there, or else when the call is dropped (it timed out, or the task carrying
//! it was aborted), from the call's meter.

use uuid::Uuid;

use llm::{Meter, Metered};
use store::{DynStore, SpentTokens};

/// A call's tokens not yet on the ledger.
pub(super) struct Spend {
    store: DynStore,
    user: Uuid,
    payer: Uuid,
    thread: Uuid,
    model: String,
    meter: Meter,
    settled: bool,
}

impl Spend {
    /// The tokens `meter` reads, to be put on `payer`'s ledger for `thread` (of `user`) and `model`.
    pub(super) fn new(store: DynStore, (user, payer): (Uuid, Uuid), thread: Uuid, model: &str, meter: Meter) -> Self {
        Self { store, user, payer, thread, model: model.to_string(), meter, settled: false }
    }

    fn spent(&self, reading: Metered) -> SpentTokens {
        SpentTokens {
            user: self.user,
            payer: self.payer,
            thread: self.thread,
            model: self.model.clone(),
            usage: wire::Usage { input_tokens: reading.usage.input_tokens, output_tokens: reading.usage.output_tokens },
            counted_tokens: reading.counted_tokens(),
        }
    }

    /// Puts the call's tokens on the ledger now (on a task of its own, so that a caller aborted meanwhile does not
    /// lose them); what they were.
    pub(super) async fn record(mut self) -> Metered {
        self.settled = true;
        let reading = self.meter.reading();
        if reading.total() > 0 {
            let (store, spent) = (self.store.clone(), self.spent(reading));
            let recording = tokio::spawn(async move {
                if let Err(e) = store.record_spent(&spent).await {
                    tracing::warn!(error = %e, "recording a model call's tokens failed");
                }
            });
            let _ = recording.await;
        }
        reading
    }

    /// The tokens the provider reported, which go on the ledger with what the call wrote; the call back when
    /// they were counted by Quire (to be recorded as such).
    pub(super) fn settle_reported(mut self) -> Result<wire::Usage, Self> {
        let reading = self.meter.reading();
        if reading.counted {
            return Err(self);
        }
        self.settled = true;
        Ok(wire::Usage { input_tokens: reading.usage.input_tokens, output_tokens: reading.usage.output_tokens })
    }
}

impl Drop for Spend {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        let reading = self.meter.reading();
        if reading.total() == 0 {
            return;
        }
        let (store, spent) = (self.store.clone(), self.spent(reading));
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    if let Err(e) = store.record_spent(&spent).await {
                        tracing::warn!(error = %e, "recording a dropped model call's tokens failed");
                    }
                });
            }
            Err(_) => tracing::warn!(tokens = reading.total(), "a dropped model call's tokens went unrecorded"),
        }
    }
}
