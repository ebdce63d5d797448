//! `/s/<token>`: a shared conversation, read-only, for anyone with the link. It shows the snapshot taken when the
//! link was made and nothing about its owner; search engines are asked not to index it.

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_meta::{Meta, Title};
use leptos_router::hooks::use_params_map;

use crate::api::{client, SharedArtifact, SharedConversation};
use crate::components::message_bubble::MessageBubble;
use crate::format::moment;
use crate::markdown::Renderer;

/// The shared page.
#[component]
pub fn SharedPage() -> impl IntoView {
    let params = use_params_map();
    let shared = RwSignal::new(None::<Result<SharedConversation, (u16, String)>>);
    Effect::new(move |_| {
        let token = params.with(|p| p.get("token").unwrap_or_default());
        spawn_local(async move { shared.set(Some(client::shared(&token).await.map_err(|e| (e.status, e.message)))) });
    });
    view! {
        <Meta name="robots" content="noindex, nofollow"/>
        <Title text="Shared conversation · Quire"/>
        <section class="page shared" aria-labelledby="shared-title">
            {move || match shared.get() {
                None => view! { <p class="muted" role="status">"Loading…"</p> }.into_any(),
                Some(Err((404, _))) => view! {
                    <h1 id="shared-title">"Not found"</h1>
                    <p data-testid="share-missing">"This shared conversation does not exist, or its owner stopped sharing it."</p>
                }.into_any(),
                Some(Err((_, message))) => view! {
                    <h1 id="shared-title">"Shared conversation"</h1>
                    <p class="error" role="alert">{message}</p>
                }.into_any(),
                Some(Ok(conversation)) => view! { <SharedView conversation/> }.into_any(),
            }}
        </section>
    }
}

#[component]
fn SharedView(conversation: SharedConversation) -> impl IntoView {
    let documents = conversation.documents;
    view! {
        <h1 id="shared-title">{conversation.title}</h1>
        <p class="hint">{format!("A read-only copy, shared {}.", moment(conversation.shared_at))}</p>
        <div class="messages" data-testid="shared-messages">
            {conversation.messages.into_iter().map(|m| view! {
                <MessageBubble role=m.role content=m.content/>
            }).collect_view()}
        </div>
        {(!documents.is_empty()).then(|| view! {
            <h2>"Documents"</h2>
            {documents.into_iter().map(|document| view! { <SharedArtifactView document/> }).collect_view()}
        })}
    }
}

#[component]
fn SharedArtifactView(document: SharedArtifact) -> impl IntoView {
    let markdown = expect_context::<Renderer>();
    let content = document.content;
    let heading = format!("{} · {} (v{})", document.title, document.artifact_type.label(), document.version);
    view! {
        <article class="shared-document" data-testid="shared-document" aria-label=document.title.clone()>
            <h3>{heading}</h3>
            <div class="md" inner_html=move || markdown.html(&content)></div>
        </article>
    }
}
