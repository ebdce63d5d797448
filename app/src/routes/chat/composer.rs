//! The message box with Generate, Send and Stop, and the error banner above it with its Retry.

use leptos::prelude::*;

use super::actions::ChatActions;
use crate::components::generate_menu::GenerateMenu;
use crate::state::ChatState;

/// The message box: Enter sends, Shift+Enter starts a new line; Send turns into Stop while an answer is written.
#[component]
pub(super) fn Composer(state: ChatState, draft: RwSignal<String>, actions: ChatActions) -> impl IntoView {
    let ChatState { current, busy, generating, .. } = state;
    let no_thread = Signal::derive(move || current.get().is_none() || busy.get() || generating.get().is_some());
    let generate = Callback::new(move |kind| actions.generate(kind));
    let on_keydown = move |ev: leptos::ev::KeyboardEvent| {
        if ev.key() == "Enter" && !ev.shift_key() && !ev.is_composing() {
            ev.prevent_default();
            actions.send_draft();
        }
    };
    view! {
        <form class="composer" on:submit=move |ev| ev.prevent_default()>
            <GenerateMenu disabled=no_thread on_pick=generate/>
            <textarea
                aria-label="Message"
                placeholder="Message Quire (Enter to send, Shift+Enter for a new line)"
                rows="2"
                maxlength="10000"
                prop:value=move || draft.get()
                on:input=move |ev| draft.set(event_target_value(&ev))
                on:keydown=on_keydown
            ></textarea>
            {move || if busy.get() {
                view! { <button type="button" class="stop" on:click=move |_| actions.stop()>"Stop"</button> }.into_any()
            } else {
                view! { <button type="button" class="primary" on:click=move |_| actions.send_draft()>"Send"</button> }.into_any()
            }}
        </form>
    }
    .into_any()
}

/// The last error, shown in place, with "Retry" when trying again can help.
#[component]
pub(super) fn ErrorBanner(state: ChatState, actions: ChatActions) -> impl IntoView {
    move || {
        state.error.get().map(|e| {
            let can_retry = e.retry.is_some();
            view! {
                <div class="error" role="alert">
                    <span>{e.message}</span>
                    {can_retry.then(|| view! { <button type="button" on:click=move |_| actions.retry()>"Retry"</button> })}
                </div>
            }
        })
    }
}
