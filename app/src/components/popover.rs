//! What the page's small popovers (a button and the menu it opens) share.

use leptos::prelude::*;

/// Escape closes the popover `open` says is open, wherever focus is, and gives focus back to its `button`.
/// Call it in the popover's component: the listener goes with it.
pub fn close_on_escape(open: RwSignal<bool>, button: NodeRef<leptos::html::Button>) {
    let escape = window_event_listener(leptos::ev::keydown, move |ev| {
        if ev.key() == "Escape" && open.get_untracked() {
            open.set(false);
            if let Some(button) = button.get_untracked() {
                let _ = button.focus();
            }
        }
    });
    on_cleanup(move || escape.remove());
}
