//! A modal dialog on the browser's own `<dialog>`: it traps focus, makes the page behind it inert and
//! closes on Escape.

use leptos::html;
use leptos::prelude::*;

/// Opens as a modal as soon as it is mounted; `on_close` runs when it closes by itself (Escape).
/// The content decides how to end it otherwise (its buttons call the owner, which unmounts it).
#[component]
pub fn ModalDialog(
    /// The dialog's accessible name, shown as its heading.
    #[prop(into)]
    title: String,
    #[prop(into)] on_close: Callback<()>,
    children: Children,
) -> impl IntoView {
    let node = NodeRef::<html::Dialog>::new();
    // Opened once it is in the page: a dialog drawn off the page first (one loaded lazily) cannot open before.
    Effect::new(move |_| {
        if let Some(dialog) = node.get() {
            request_animation_frame(move || {
                if dialog.is_connected() && !dialog.open() {
                    let _ = dialog.show_modal();
                }
            });
        }
    });
    view! {
        <dialog class="modal" node_ref=node aria-label=title.clone() on:close=move |_| on_close.run(())>
            <h2 class="modal-title">{title.clone()}</h2>
            {children()}
        </dialog>
    }
}
