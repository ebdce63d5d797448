//! The note under a form that says how its last submission went.

use leptos::prelude::*;

/// A note under a form: done (a status) or failed (an alert); nothing before the first submission.
pub fn form_note(note: RwSignal<Option<(bool, String)>>) -> impl IntoView {
    move || {
        note.get().map(|(done, text)| {
            let (class, role) = if done { ("notice", "status") } else { ("error", "alert") };
            view! { <p class=class role=role>{text}</p> }
        })
    }
}
