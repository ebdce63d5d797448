//! The field where a person chooses a new password.

use leptos::prelude::*;

use crate::api::MIN_PASSWORD_CHARS;

/// A labelled field for a new password, held in `value`, that asks for at least [`MIN_PASSWORD_CHARS`]
/// characters and lets password managers offer one. `name` is its field in the form's plain post.
#[component]
pub fn NewPassword(id: &'static str, name: &'static str, value: RwSignal<String>) -> impl IntoView {
    view! {
        <label for=id>"New password"</label>
        <input id=id name=name type="password" autocomplete="new-password" required
            minlength=MIN_PASSWORD_CHARS.to_string()
            prop:value=move || value.get() on:input=move |ev| value.set(event_target_value(&ev))/>
    }
}
