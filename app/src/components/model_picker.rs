//! The list of models to choose from, as a `<select>`: the conversation's model on the chat page, the default on
//! the settings page. Shown only when there is more than one model to choose.

use leptos::prelude::*;
use send_wrapper::SendWrapper;

use crate::api::{client, ModelList};

/// A choice made in a [`ModelSelect`]: the new id (empty for the default) and what was chosen before, to put back
/// when the server refuses the choice.
#[derive(Clone, Debug)]
pub struct ModelChoice {
    pub id: String,
    pub before: Option<String>,
}

/// A select of the models on offer, first "the default" (the person's, or with `server` the server's); a refused
/// choice is set back to [`ModelChoice::before`]. Loaded apart from the main bundle: most servers offer one model.
#[component]
pub fn ModelSelect(
    label: &'static str,
    default_label: &'static str,
    #[prop(optional)] server: bool,
    chosen: RwSignal<Option<String>>,
    on_choose: Callback<ModelChoice>,
    /// Whether the label shows (otherwise only assistive technology reads it).
    #[prop(optional)]
    shown_label: bool,
) -> impl IntoView {
    let interactive = RwSignal::new(false);
    Effect::new(move |_| interactive.set(true));
    let options = SelectOptions { label, default_label, server, shown_label };
    move || {
        interactive.get().then(|| {
            // Only ever awaited in the browser, on its one thread: the page has become interactive. The select's
            // code is fetched only when there is a choice to make.
            let select = SendWrapper::new(async move {
                match client::models().await.ok().filter(|list| list.models.len() > 1) {
                    Some(models) => model_select(options, models, chosen, on_choose).await,
                    None => ().into_any(),
                }
            });
            view! { <Suspense fallback=|| ()>{Suspend::new(select)}</Suspense> }
        })
    }
}

/// How a [`ModelSelect`] is labelled.
#[derive(Clone, Copy)]
struct SelectOptions {
    label: &'static str,
    default_label: &'static str,
    server: bool,
    shown_label: bool,
}

/// The `models` on offer (more than one) as a select. Without a choice (one model, or a list that cannot be
/// read) there is no select: the default answers.
#[lazy]
fn model_select(
    options: SelectOptions,
    models: ModelList,
    chosen: RwSignal<Option<String>>,
    on_choose: Callback<ModelChoice>,
) -> AnyView {
    let SelectOptions { label, default_label, server, shown_label } = options;
    // Selectedness is set as a property: an attribute no longer moves the selection once the person has used it.
    let entries = models
        .models
        .into_iter()
        .map(|m| {
            let (value, text) = (m.id.clone(), m.id.clone());
            let selected = move || chosen.with(|c| c.as_deref() == Some(value.as_str()));
            view! { <option value=m.id prop:selected=selected>{text}</option> }
        })
        .collect_view();
    let on_change = move |ev| {
        let id = event_target_value(&ev);
        let before = chosen.get_untracked();
        chosen.set((!id.is_empty()).then(|| id.clone()));
        on_choose.run(ModelChoice { id, before });
    };
    let default = if server { models.server_default } else { models.default };
    view! {
        <label class="model-select">
        <span class=if shown_label { "" } else { "visually-hidden" }>{label}</span>
        <select aria-label=label on:change=on_change>
            <option value="" prop:selected=move || chosen.with(Option::is_none)>
                {format!("{default_label} ({default})")}
            </option>
            {entries}
        </select>
        </label>
    }
    .into_any()
}
