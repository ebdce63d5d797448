//! The MCP servers whose tools answers may use, as checkboxes: a conversation's in the "Tools" menu of the chat
//! header, the person's own default on the settings page. The list is read when the menu opens (or the settings
//! page shows it), never before.

use leptos::prelude::*;
use leptos::task::spawn_local;
use send_wrapper::SendWrapper;
use uuid::Uuid;

use crate::api::{client, McpServer, UpdateThread};

/// The servers a choice turns on: the choice, or where there is none the default.
fn turned_on(chosen: Option<&Vec<String>>, default: &[String]) -> Vec<String> {
    chosen.cloned().unwrap_or_else(|| default.to_vec())
}

/// `names` with `server` turned on or off, in the servers' order.
fn switched(servers: &[McpServer], names: &[String], server: &str, on: bool) -> Vec<String> {
    servers
        .iter()
        .map(|s| s.name.clone())
        .filter(|name| if name == server { on } else { names.contains(name) })
        .collect()
}

/// When a server's tools ask before they run, said beside its checkbox.
pub fn asks_first(server: &McpServer) -> Option<String> {
    if server.approve {
        Some("asks you before each call".into())
    } else if !server.approve_tools.is_empty() {
        Some(format!("asks you before {}", server.approve_tools.join(", ")))
    } else {
        None
    }
}

/// One checkbox per server, named by its label; `names` are those turned on, `on_change` gets the new list.
pub fn server_checkboxes(
    servers: Vec<McpServer>,
    names: Signal<Vec<String>>,
    disabled: Signal<bool>,
    on_change: Callback<Vec<String>>,
) -> impl IntoView {
    let all = StoredValue::new(servers.clone());
    view! {
        <ul class="server-choices">
            {servers
                .into_iter()
                .map(|server| {
                    let name = server.name.clone();
                    let checked = {
                        let name = name.clone();
                        move || names.with(|n| n.contains(&name))
                    };
                    let toggle = move |ev| {
                        let on = event_target_checked(&ev);
                        let next = all.with_value(|all| names.with_untracked(|n| switched(all, n, &name, on)));
                        on_change.run(next);
                    };
                    let notes: Vec<String> = asks_first(&server)
                        .into_iter()
                        .chain((!server.connected).then(|| "not connected now".to_string()))
                        .collect();
                    view! {
                        <li>
                            <label class="choice">
                                <input type="checkbox" prop:checked=checked disabled=move || disabled.get()
                                    on:change=toggle/>
                                {server.label}
                            </label>
                            {(!notes.is_empty()).then(|| view! { <span class="hint">{format!(" ({})", notes.join("; "))}</span> })}
                        </li>
                    }
                })
                .collect_view()}
        </ul>
    }
}

/// The "Tools" button of a conversation and its popover. Only the conversation's author (`can_choose`) changes the
/// choice; others see it.
#[component]
pub fn ToolsMenu(
    thread: Uuid,
    /// The conversation's choice; `None`: as in the person's settings.
    chosen: RwSignal<Option<Vec<String>>>,
    #[prop(into)] can_choose: Signal<bool>,
) -> impl IntoView {
    let open = RwSignal::new(false);
    let button = NodeRef::<leptos::html::Button>::new();
    super::popover::close_on_escape(open, button);
    view! {
        <div class="tools-menu" data-testid="mcp-servers">
            <button type="button" node_ref=button class="button panel-toggle" aria-haspopup="dialog"
                aria-expanded=move || open.get().to_string() on:click=move |_| open.update(|o| *o = !*o)>
                "Tools"
            </button>
            <Show when=move || open.get()>
                // Only ever awaited in the browser, on its one thread: the menu opens at a click.
                <Suspense fallback=|| ()>
                    {Suspend::new(SendWrapper::new(server_choices(open, thread, chosen, can_choose)))}
                </Suspense>
            </Show>
        </div>
    }
}

/// The open popover: the servers, read now, with the person's default for a conversation that did not choose.
/// Loaded when the menu first opens (split out of the main wasm bundle in release builds).
#[lazy]
async fn server_choices(
    open: RwSignal<bool>,
    thread: Uuid,
    chosen: RwSignal<Option<Vec<String>>>,
    can_choose: Signal<bool>,
) -> AnyView {
    let (servers, settings) = (client::mcp_servers().await, client::settings().await);
    let error = RwSignal::new(None::<String>);
    let body = match servers {
        Err(e) => view! { <p class="error" role="alert">{e.message}</p> }.into_any(),
        Ok(list) => {
            let default: Vec<String> = settings
                .ok()
                .and_then(|s| s.mcp_servers)
                .unwrap_or_else(|| list.servers.iter().filter(|s| s.on_by_default).map(|s| s.name.clone()).collect());
            let names = Signal::derive(move || chosen.with(|c| turned_on(c.as_ref(), &default)));
            let saving = RwSignal::new(false);
            let save = move |choice: Option<Vec<String>>| {
                saving.set(true);
                error.set(None);
                spawn_local(async move {
                    let change = UpdateThread { mcp_servers: Some(choice), ..Default::default() };
                    match client::update_thread(thread, &change).await {
                        Ok(saved) => chosen.set(saved.mcp_servers),
                        Err(e) => error.set(Some(e.message)),
                    }
                    saving.set(false);
                });
            };
            let disabled = Signal::derive(move || saving.get() || !can_choose.get());
            let on_change = Callback::new(move |names| save(Some(names)));
            view! {
                {server_checkboxes(list.servers, names, disabled, on_change)}
                {move || match chosen.with(Option::is_some) {
                    true => view! {
                        <button type="button" disabled=move || disabled.get() on:click=move |_| save(None)>
                            "Use my settings"
                        </button>
                    }
                    .into_any(),
                    false => view! { <p class="hint">"As in your settings."</p> }.into_any(),
                }}
            }
            .into_any()
        }
    };
    view! {
        <div class="popover-backdrop" on:click=move |_| open.set(false)></div>
        <div class="tools-popover" role="dialog" aria-label="Tools for this conversation">
            <p class="hint">"The tool servers this conversation's answers may use."</p>
            {body}
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
        </div>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(name: &str) -> McpServer {
        McpServer {
            name: name.into(),
            label: name.to_uppercase(),
            connected: true,
            on_by_default: true,
            approve: false,
            approve_tools: Vec::new(),
        }
    }

    #[test]
    fn a_switch_keeps_the_servers_order_and_the_others_as_they_were() {
        let servers = [server("a"), server("b"), server("c")];
        let on = vec!["c".to_string(), "a".to_string()];
        assert_eq!(switched(&servers, &on, "b", true), ["a", "b", "c"]);
        assert_eq!(switched(&servers, &on, "a", false), ["c"]);
        assert_eq!(turned_on(None, &on), on);
        assert_eq!(turned_on(Some(&Vec::new()), &on), Vec::<String>::new());
    }

    #[test]
    fn servers_that_ask_first_say_so() {
        assert_eq!(asks_first(&server("a")), None);
        let every = McpServer { approve: true, ..server("a") };
        assert_eq!(asks_first(&every).as_deref(), Some("asks you before each call"));
        let some = McpServer { approve_tools: vec!["echo".into(), "add".into()], ..server("a") };
        assert_eq!(asks_first(&some).as_deref(), Some("asks you before echo, add"));
    }
}
