//! The notice shown when a message is refused because today's token budget is spent: plain text naming when
//! it resets, apart from the error banner (sending again will not help before then).

use leptos::prelude::*;

use crate::api::client::ApiError;
use crate::state::ChatState;

/// The code of a refusal over the daily token budget.
const BUDGET_EXCEEDED: &str = "budget_exceeded";

/// Shows `error` in the budget notice when it is a refusal over the budget; whether it was.
pub(super) fn show_if_over_budget(state: ChatState, error: &ApiError) -> bool {
    let over = error.code == BUDGET_EXCEEDED;
    if over {
        state.budget.set(Some(error.message.clone()));
    }
    over
}

/// The budget notice, while there is one.
#[component]
pub(super) fn BudgetBanner(state: ChatState) -> impl IntoView {
    move || {
        state.budget.get().map(|message| {
            view! {
                <div class="budget-banner" role="alert" data-testid="budget-banner">
                    <span>{message}</span>
                </div>
            }
        })
    }
}
