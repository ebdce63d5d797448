//! The requirements ledger on the chat page: read again whenever it may have changed (with the documents'
//! out-of-date marks, which follow it), and a cited key followed to the message its requirement came from.

use leptos::prelude::*;
use leptos::task::spawn_local;
use uuid::Uuid;

use super::actions::ChatActions;
use crate::api::{client, Requirement};

/// How long the message a followed requirement came from stays highlighted.
const SPOTLIGHT_MS: u64 = 4_000;

/// Reads conversation `id`'s ledger again; with `marks`, its documents too, whose out-of-date marks follow the
/// ledger (a message or a change by hand may leave documents behind without a new version of any).
pub(super) fn refresh(actions: ChatActions, id: Uuid, marks: bool) {
    let (state, panel) = (actions.state(), actions.ledger_panel());
    spawn_local(async move {
        let result = client::get_requirements(id).await;
        if state.current.get_untracked() != Some(id) {
            return;
        }
        match result {
            Ok(ledger) => {
                state.ledger.set(Some(ledger));
                panel.error.try_set(None);
                if marks {
                    super::read_documents(state, id).await;
                }
            }
            Err(e) => {
                panel.error.try_set(Some(e.message));
            }
        }
    });
}

impl ChatActions {
    /// A requirement changed in the panel: shown at once, then the ledger and the documents are read again (what
    /// covers it, and which documents it leaves out of date).
    pub(super) fn requirement_changed(self, requirement: Requirement) {
        let state = self.state();
        state.ledger.update(|ledger| {
            if let Some(shown) =
                ledger.as_mut().and_then(|l| l.requirements.iter_mut().find(|r| r.key == requirement.key))
            {
                *shown = requirement;
            }
        });
        if let Some(id) = state.current.get_untracked() {
            refresh(self, id, true);
        }
    }

    /// Follows a cited requirement: the panel opens on it, and the conversation shows the message it came from,
    /// highlighted a while in `spotlight`, or the panel says that message is on another branch (as is every
    /// requirement a document cites that this branch's ledger does not hold).
    pub(super) fn follow_requirement(self, key: String, spotlight: RwSignal<Option<Uuid>>) {
        let (state, panel) = (self.state(), self.ledger_panel());
        panel.note.set(None);
        panel.wanted.set(Some(key.clone()));
        if !panel.open.get_untracked() {
            panel.open.set(true);
        }
        // `None` until the ledger is read, or for a key the conversation does not have; then whether this branch
        // holds the requirement, and where it came from.
        let held = state.ledger.with_untracked(|ledger| {
            let ledger = ledger.as_ref()?;
            match ledger.requirements.iter().find(|r| r.key == key) {
                Some(r) => Some(Some(r.sources.first().copied())),
                None => ledger.elsewhere.contains(&key).then_some(None),
            }
        });
        let source = match held {
            None | Some(Some(None)) => return,
            Some(None) => {
                let note = format!("{key} is not in this branch's ledger: it came from a message on another branch.");
                panel.note.set(Some((key, note)));
                return;
            }
            Some(Some(Some(source))) => source,
        };
        spawn_local(async move {
            let shown = move || state.messages.with_untracked(|list| list.iter().any(|m| m.id == source));
            let mut found = shown();
            // Messages sent from this page carry ids of the page's own until the conversation is read again.
            let local = state.messages.with_untracked(|list| list.iter().any(|m| m.seq == 0));
            if let (false, true, false, Some(id)) = (found, local, self.occupied(), state.current.get_untracked()) {
                if let Ok(detail) = client::get_thread(id).await {
                    if !detail.running {
                        self.show(detail);
                    }
                }
                found = shown();
            }
            if found {
                spotlight.try_set(Some(source));
                set_timeout(
                    move || {
                        if spotlight.try_get_untracked().flatten() == Some(source) {
                            spotlight.try_set(None);
                        }
                    },
                    std::time::Duration::from_millis(SPOTLIGHT_MS),
                );
            } else {
                let note = "This requirement came from a message on another branch.".to_string();
                panel.note.try_set(Some((key, note)));
            }
        });
    }
}
