//! The note under a form that says how its last submission went, and the submission that sets it.

use std::future::Future;

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::api::client::ApiError;

/// A note under a form: done (a status) or failed (an alert); nothing before the first submission.
pub fn form_note(note: RwSignal<Option<(bool, String)>>) -> impl IntoView {
    move || {
        note.get().map(|(done, text)| {
            let (class, role) = if done { ("notice", "status") } else { ("error", "alert") };
            view! { <p class=class role=role>{text}</p> }
        })
    }
}

/// Sends a form's `request`, `busy` while it runs; then the note says what `done` makes of the answer, or why the
/// request was refused.
pub fn submit_noted<T: 'static>(
    busy: RwSignal<bool>,
    note: RwSignal<Option<(bool, String)>>,
    request: impl Future<Output = Result<T, ApiError>> + 'static,
    done: impl FnOnce(T) -> String + 'static,
) {
    busy.set(true);
    note.set(None);
    spawn_local(async move {
        let result = request.await;
        busy.set(false);
        note.set(Some(match result {
            Ok(answer) => (true, done(answer)),
            Err(e) => (false, e.message),
        }));
    });
}
