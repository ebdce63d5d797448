//! The list of models to choose from, as a `<select>`: the conversation's model on the chat page, the default on
//! the settings page. Shown only when there is more than one model to choose.

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::api::{client, ModelList};

/// A choice made in a [`ModelSelect`]: the new id (empty for the default) and what was chosen before, to put back
/// when the server refuses the choice.
#[derive(Clone, Debug)]
pub struct ModelChoice {
    pub id: String,
    pub before: Option<String>,
}

/// A select of the models on offer, its first option "the default" (`default_label` with the default's id: the
/// person's, or with `server` the server's). It shows `chosen`, sets it at once and calls `on_choose`; whoever saves
/// the choice sets `chosen` back to [`ModelChoice::before`] when it is refused, so the select never shows a model
/// that is not the one in use. `label` is its accessible name.
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
    let list = RwSignal::new(None::<ModelList>);
    Effect::new(move |_| {
        spawn_local(async move {
            // Without the list there is nothing to choose: the default answers, as before.
            if let Ok(found) = client::models().await {
                list.set(Some(found));
            }
        })
    });
    // Selectedness is set as a property: an attribute no longer moves the selection once the person has used it.
    move || {
        let models = list.get().filter(|l| l.models.len() > 1)?;
        let options = models
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
        Some(view! {
            <label class="model-select">
            <span class=if shown_label { "" } else { "visually-hidden" }>{label}</span>
            <select aria-label=label on:change=on_change>
                <option value="" prop:selected=move || chosen.with(Option::is_none)>
                    {format!("{default_label} ({})", if server { &models.server_default } else { &models.default })}
                </option>
                {options}
            </select>
            </label>
        })
    }
}
