//! The stats page: how much the person has talked, about what, and the last 30 days in two small charts; or, from
//! a project's page (`?project=<id>`), the same of the project's conversations, whoever wrote them.

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::use_query_map;
use uuid::Uuid;

use crate::api::{client, project_calls, HistoryStats, TokenBudget};
use crate::components::day_chart::{DayChart, Series};
use crate::format::{day, grouped, moment, one_decimal};

/// `/stats`, and `/stats?project=<id>`.
#[component]
pub fn StatsPage() -> impl IntoView {
    let query = use_query_map();
    let project = Memo::new(move |_| query.with(|m| m.get("project").and_then(|p| Uuid::parse_str(&p).ok())));
    let stats = RwSignal::new(None::<Result<HistoryStats, String>>);
    // The project's name, once read (its heading says whose stats these are).
    let name = RwSignal::new(None::<String>);
    Effect::new(move |_| {
        let asked = project.get();
        stats.set(None);
        name.set(None);
        spawn_local(async move {
            if let Some(id) = asked {
                if let Ok(read) = project_calls::project(id).await {
                    name.set(Some(read.name));
                }
            }
            let read = client::stats(asked).await.map_err(|e| e.message);
            // Dropped if the page moved to other stats meanwhile.
            if project.get_untracked() == asked {
                stats.set(Some(read));
            }
        });
    });
    let heading = move || match (project.get(), name.get()) {
        (None, _) => "Stats".to_string(),
        (Some(_), Some(name)) => format!("Stats of {name}"),
        (Some(_), None) => "Stats of the project".to_string(),
    };
    view! {
        <section class="page stats" aria-labelledby="stats-title">
            <h1 id="stats-title">{heading}</h1>
            {move || project.get().map(|id| view! {
                <p class="hint">
                    "The project's conversations, whoever wrote them; the token budget is your own. "
                    <a href=format!("/projects/{id}")>"Back to the project"</a>
                </p>
            })}
            {move || match stats.get() {
                None => view! { <p class="muted" role="status">"Loading…"</p> }.into_any(),
                Some(Err(message)) => view! { <p class="error" role="alert">{message}</p> }.into_any(),
                Some(Ok(stats)) => view! { <StatsView stats/> }.into_any(),
            }}
        </section>
    }
}

#[component]
fn StatsView(stats: HistoryStats) -> impl IntoView {
    let days: Vec<_> = stats.tokens_per_day.iter().map(|d| d.day).collect();
    let messages = Series {
        name: "Messages",
        class: "bar-messages",
        values: stats.tokens_per_day.iter().map(|d| d.messages).collect(),
    };
    let tokens = vec![
        Series {
            name: "Tokens in",
            class: "bar-in",
            values: stats.tokens_per_day.iter().map(|d| d.input_tokens).collect(),
        },
        Series {
            name: "Tokens out",
            class: "bar-out",
            values: stats.tokens_per_day.iter().map(|d| d.output_tokens).collect(),
        },
    ];
    let month_messages: u64 = messages.values.iter().sum();
    let month_tokens: u64 = tokens.iter().flat_map(|s| s.values.iter()).sum();
    let when = |t: Option<chrono::DateTime<chrono::Utc>>| t.map(moment).unwrap_or_else(|| "—".to_string());
    let rows = stats
        .tokens_per_day
        .iter()
        .rev()
        .map(|d| {
            view! {
                <tr>
                    <th scope="row">{day(d.day)}</th>
                    <td>{grouped(d.messages)}</td>
                    <td>{grouped(d.input_tokens)}</td>
                    <td>{grouped(d.output_tokens)}</td>
                </tr>
            }
        })
        .collect_view();
    let tags = stats
        .top_tags
        .iter()
        .map(|t| view! { <li><span class="stat-tag">{t.tag.clone()}</span>" "<span class="count">{grouped(t.count)}</span></li> })
        .collect_view();
    let documents = stats
        .artifacts_by_type
        .iter()
        .map(|t| view! { <li>{t.artifact_type.label()}" "<span class="count">{grouped(t.count)}</span></li> })
        .collect_view();
    let budget = stats.budget.clone().map(|b| view! { <BudgetLeft budget=b/> });
    view! {
        {budget}
        <dl class="stat-tiles">
            <div><dt>"Conversations"</dt><dd data-testid="stat-threads">{grouped(stats.total_threads)}</dd></div>
            <div><dt>"Messages"</dt><dd data-testid="stat-messages">{grouped(stats.total_messages)}</dd></div>
            <div><dt>"Messages per conversation"</dt><dd>{one_decimal(stats.average_messages_per_thread)}</dd></div>
            <div><dt>"Tokens in"</dt><dd data-testid="stat-tokens-in">{grouped(stats.input_tokens)}</dd></div>
            <div><dt>"Tokens out"</dt><dd data-testid="stat-tokens-out">{grouped(stats.output_tokens)}</dd></div>
            <div><dt>"First conversation"</dt><dd class="stat-date">{when(stats.first_conversation_at)}</dd></div>
            <div><dt>"Latest activity"</dt><dd class="stat-date">{when(stats.last_conversation_at)}</dd></div>
        </dl>
        <h2>"Last 30 days"</h2>
        <div class="charts">
            <div>
                <h3>"Messages per day"</h3>
                <DayChart
                    label=format!("Bar chart of messages per day over the last 30 days: {} in all.", grouped(month_messages))
                    days=days.clone()
                    series=vec![messages]
                />
            </div>
            <div>
                <h3>"Tokens per day"</h3>
                <DayChart
                    label=format!("Bar chart of tokens per day over the last 30 days, in and out stacked: {} in all.", grouped(month_tokens))
                    days=days
                    series=tokens
                />
            </div>
        </div>
        <details class="chart-table">
            <summary>"The last 30 days as a table"</summary>
            <div class="table-scroll">
                <table>
                    <caption>"Messages and tokens per day, newest first (UTC days)"</caption>
                    <thead>
                        <tr><th scope="col">"Day"</th><th scope="col">"Messages"</th><th scope="col">"Tokens in"</th><th scope="col">"Tokens out"</th></tr>
                    </thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
        </details>
        <div class="stat-lists">
            <section aria-labelledby="top-tags">
                <h2 id="top-tags">"Top tags"</h2>
                {if stats.top_tags.is_empty() {
                    view! { <p class="muted">"No tags yet."</p> }.into_any()
                } else {
                    view! { <ol class="count-list">{tags}</ol> }.into_any()
                }}
            </section>
            <section aria-labelledby="documents-by-type">
                <h2 id="documents-by-type">"Documents by type"</h2>
                {if stats.artifacts_by_type.is_empty() {
                    view! { <p class="muted">"No documents yet."</p> }.into_any()
                } else {
                    view! { <ul class="count-list" data-testid="stat-documents">{documents}</ul> }.into_any()
                }}
            </section>
        </div>
    }
}

/// The person's daily token budget and what is left of it today.
#[component]
fn BudgetLeft(budget: TokenBudget) -> impl IntoView {
    view! {
        <section class="budget" aria-labelledby="budget-title" data-testid="stat-budget">
            <h2 id="budget-title">"Today's token budget"</h2>
            <p>
                <span data-testid="stat-budget-left">{grouped(budget.left)}</span>
                " of "{grouped(budget.limit)}" tokens left today ("{grouped(budget.used_today)}" used). "
                "It resets at "{budget.resets_at.format("%H:%M").to_string()}" UTC."
            </p>
            <progress max=budget.limit.to_string() value=budget.used_today.min(budget.limit).to_string()>
                {grouped(budget.used_today)}
            </progress>
        </section>
    }
}
