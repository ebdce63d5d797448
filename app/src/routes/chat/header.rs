//! The conversation's title, its documents and files, its requirements, and its downloads.

use leptos::prelude::*;
use uuid::Uuid;

use crate::api::{client, Artifact, Attachment, Ledger};
use crate::components::artifacts_panel::ArtifactsPanel;
use crate::components::model_picker::{ModelChoice, ModelSelect};
use crate::components::requirements_panel::{LedgerPanel, RequirementsToggle};
use crate::components::tools_menu::ToolsMenu;
use crate::state::ChatState;

/// The title ("New conversation" until it has one), the model picker and, where Quire has MCP servers, the Tools
/// menu; the documents panel, the requirements panel's toggle and the exports once the conversation exists.
#[component]
pub(super) fn ChatHeader(
    title: RwSignal<String>,
    current: RwSignal<Option<Uuid>>,
    artifacts: RwSignal<Vec<Artifact>>,
    files: RwSignal<Vec<Attachment>>,
    on_open: Callback<Artifact>,
    on_remove_file: Callback<Attachment>,
    model: RwSignal<Option<String>>,
    on_model: Callback<ModelChoice>,
    ledger: RwSignal<Option<Ledger>>,
    panel: LedgerPanel,
    state: ChatState,
) -> impl IntoView {
    let offered = crate::has_mcp_servers();
    let tools = move || {
        let thread = current.get().filter(|_| offered)?;
        let can_choose = Signal::derive(move || state.access.get() == crate::api::ThreadAccess::Author);
        Some(view! { <ToolsMenu thread chosen=state.mcp_servers can_choose/> })
    };
    // Erased: the chat page's view type is deep enough without this one nested in it.
    view! {
        <header class="chat-head">
            <h1>{move || if title.get().is_empty() { "New conversation".to_string() } else { title.get() }}</h1>
            <ModelSelect label="Model" default_label="Default" chosen=model on_choose=on_model/>
            {tools}
            {move || current.get().map(|id| view! {
                <ArtifactsPanel artifacts files on_open on_remove_file/>
                <RequirementsToggle ledger panel/>
                <div class="chat-actions" role="group" aria-label="Export conversation">
                    <a class="button" href=client::thread_export_url(id, "json") download>"Export JSON"</a>
                    <a class="button" href=client::thread_export_url(id, "markdown") download>"Export Markdown"</a>
                </div>
            })}
        </header>
    }
    .into_any()
}
