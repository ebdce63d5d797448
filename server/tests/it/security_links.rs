//! Links that outlive the moment they were made, on both backends: a share link shows only what the path it
//! shares showed (each document at the version written on that path), a disabled account's links answer 404
//! until it is enabled and a deleted account's are gone, and a password reset link ends once a newer one is made
//! or used (and is used once when tried at once), or the account's password changes by any route.

use futures::future::join_all;
use serde_json::{json, Value};
use uuid::Uuid;
use wire::admin::ResetLink;
use wire::{ChatEvent, ErrorBody, ShareLink, SharedArtifact, SharedConversation};

use crate::common::backends::{run_story, stories, Backend, Db};
use crate::common::{read_frames, scripted_server, send, ScriptedModel, Step, TestServer, PASSWORD};

stories!(
    a_share_shows_each_document_as_written_on_the_shared_branch,
    a_share_leaves_out_the_version_of_an_answer_given_again,
    a_disabled_accounts_links_are_a_404_until_it_is_enabled_and_a_deleted_ones_are_gone,
    a_newer_reset_link_ends_the_older_one_and_using_one_ends_all,
    a_password_change_ends_every_reset_link,
);

/// A word that only the branch the owner left holds.
const SECRET: &str = "ZEPHYR";

/// A model's call saving a document of user stories titled `title`, then its words after the tool's result.
fn saves(title: &str, content: &str, then: &str) -> [Vec<Step>; 2] {
    let arguments = json!({ "artifact_type": "user_stories", "title": title, "content": content });
    [ScriptedModel::tool_use("save_artifact", arguments), ScriptedModel::text(&[then])]
}

async fn post(server: &TestServer, path: &str, body: Value) -> reqwest::Response {
    server.client.post(server.url(path)).json(&body).send().await.unwrap()
}

/// Shows the branch through `message`.
async fn switch(server: &TestServer, thread: Uuid, message: Uuid) {
    let switched = post(server, &format!("/api/threads/{thread}/branch"), json!({ "message_id": message })).await;
    assert_eq!(switched.status(), 200);
}

/// A new link to the conversation, made by `client`.
async fn share(server: &TestServer, client: &reqwest::Client, thread: Uuid) -> ShareLink {
    let created = client.post(server.url(&format!("/api/threads/{thread}/shares"))).send().await.unwrap();
    assert_eq!(created.status(), 201);
    created.json().await.unwrap()
}

/// The link's JSON as a stranger reads it, after checking that its page answers too and holds no `SECRET`.
async fn read_shared(server: &TestServer, link: &ShareLink) -> (SharedConversation, String) {
    let (json, page) = (read_json(server, link).await, read_page(server, link).await);
    assert_eq!(json.status(), 200);
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(!html.contains(SECRET), "the page shows nothing of a branch left: {html}");
    let body = json.text().await.unwrap();
    (serde_json::from_str(&body).unwrap(), body)
}

async fn read_json(server: &TestServer, link: &ShareLink) -> reqwest::Response {
    let token = link.path.strip_prefix("/s/").unwrap();
    server.anonymous().get(server.url(&format!("/api/shared/{token}"))).send().await.unwrap()
}

async fn read_page(server: &TestServer, link: &ShareLink) -> reqwest::Response {
    server.anonymous().get(server.url(&link.path)).send().await.unwrap()
}

fn documents(shared: &SharedConversation) -> Vec<(&str, &str, i64)> {
    shared
        .documents
        .iter()
        .map(|SharedArtifact { title, content, version, .. }| (&**title, &**content, *version))
        .collect()
}

async fn a_share_shows_each_document_as_written_on_the_shared_branch(db: Db) {
    let [made, made_then] = saves("Rider stories", "- A rider checks the bus times.", "Saved.");
    let [revised, revised_then] = saves("Rider stories", &format!("- A rider boards the {SECRET} tram."), "Saved.");
    let [glossary, glossary_then] = saves("Tram words", &format!("- {SECRET}: the tram line."), "Saved.");
    let scripts = vec![
        ScriptedModel::text(&["Noted plan A."]),
        made,
        made_then,
        ScriptedModel::text(&["Noted plan B."]),
        revised,
        revised_then,
        glossary,
        glossary_then,
    ];
    let (server, _) = scripted_server(&db, scripts).await;
    let thread = server.create_thread().await;
    server.chat(thread, "Plan A: an app for riders of buses.").await;
    send(&server, thread, "Write the user stories.", true).await;
    let first = server.detail(thread).await.messages[0].id;
    // The owner edits the plan, and on that branch silent generation revises the document and makes another.
    let edit = json!({ "content": format!("Plan B: an app for the {SECRET} tram."), "edit_of": first });
    read_frames(post(&server, &format!("/api/threads/{thread}/chat"), edit).await).await;
    send(&server, thread, "Write the user stories.", true).await;
    send(&server, thread, "Write the glossary.", true).await;
    let second = server.detail(thread).await.messages[0].id;

    // Back on the first plan, a link shows the document as it was written there, and nothing of the other.
    switch(&server, thread, first).await;
    let (shared, body) = read_shared(&server, &share(&server, &server.client, thread).await).await;
    assert!(!body.contains(SECRET), "nothing of the branch left is shared: {body}");
    assert_eq!(shared.messages.len(), 2);
    assert_eq!(documents(&shared), [("Rider stories", "- A rider checks the bus times.", 1)]);

    // On the second plan, its own versions.
    switch(&server, thread, second).await;
    let (shared, _) = read_shared_json(&server, &share(&server, &server.client, thread).await).await;
    let tram = format!("- A rider boards the {SECRET} tram.");
    let words = format!("- {SECRET}: the tram line.");
    assert_eq!(documents(&shared), [("Rider stories", tram.as_str(), 2), ("Tram words", words.as_str(), 1)]);
}

/// The link's JSON, which may hold `SECRET`.
async fn read_shared_json(server: &TestServer, link: &ShareLink) -> (SharedConversation, String) {
    let json = read_json(server, link).await;
    assert_eq!(json.status(), 200);
    let body = json.text().await.unwrap();
    (serde_json::from_str(&body).unwrap(), body)
}

async fn a_share_leaves_out_the_version_of_an_answer_given_again(db: Db) {
    let [made, made_then] = saves("Rider stories", "- A rider buys a pass.", "Saved.");
    let [revised, revised_then] = saves("Rider stories", &format!("- A rider pays the {SECRET} fare."), "Added it.");
    let scripts = vec![
        ScriptedModel::text(&["Noted."]),
        made,
        made_then,
        revised,
        revised_then,
        ScriptedModel::text(&["I would leave the stories as they are."]),
    ];
    let (server, _) = scripted_server(&db, scripts).await;
    let thread = server.create_thread().await;
    server.chat(thread, "Plan the ticket app.").await;
    send(&server, thread, "Write the user stories.", true).await;
    let frames = server.chat(thread, &format!("Add the {SECRET} fare to the stories.")).await;
    let answer = match frames.last().map(|f| &f.event) {
        Some(ChatEvent::MessageComplete { message_id: Some(id), .. }) => *id,
        other => panic!("no answer: {other:?}"),
    };
    // Another answer to the same question, which changes nothing: the revision is the first answer's.
    let again = server.client.post(server.url(&format!("/api/threads/{thread}/messages/{answer}/regenerate")));
    let again = again.send().await.unwrap();
    assert_eq!(again.status(), 200);
    read_frames(again).await;

    let (shared, body) = read_shared(&server, &share(&server, &server.client, thread).await).await;
    assert!(!body.contains("Added it.") && body.contains("I would leave the stories"), "{body}");
    assert!(!body.contains(&format!("pays the {SECRET}")), "the first answer's version is not shared: {body}");
    assert_eq!(documents(&shared), [("Rider stories", "- A rider buys a pass.", 1)]);

    // Back on the first answer, its version is.
    switch(&server, thread, answer).await;
    let (shared, _) = read_shared_json(&server, &share(&server, &server.client, thread).await).await;
    let fare = format!("- A rider pays the {SECRET} fare.");
    assert_eq!(documents(&shared), [("Rider stories", fare.as_str(), 2)]);
}

async fn admin_server(db: &Db) -> TestServer {
    TestServer::with_configured(db.store.clone(), ScriptedModel::new(Vec::new()), |_| {}).await
}

async fn put(server: &TestServer, path: &str, body: Value) -> reqwest::Response {
    server.client.put(server.url(path)).json(&body).send().await.unwrap()
}

async fn a_disabled_accounts_links_are_a_404_until_it_is_enabled_and_a_deleted_ones_are_gone(db: Db) {
    let server = admin_server(&db).await;
    let (bob, session) = server.second_user("bob@example.com").await;
    let id = session.user.id;
    let thread = server.create_thread_as(&bob).await;
    let link = share(&server, &bob, thread).await;
    assert_eq!(read_json(&server, &link).await.status(), 200);
    // The owner's own link on another account stays readable throughout.
    let own = share(&server, &server.client, server.create_thread().await).await;

    let path = format!("/api/admin/users/{id}/disabled");
    let disable = |disabled: bool| put(&server, &path, json!({ "disabled": disabled }));
    assert_eq!(disable(true).await.status(), 204);
    assert_eq!(read_json(&server, &link).await.status(), 404, "a disabled account's link");
    assert_eq!(read_page(&server, &link).await.status(), 404, "a disabled account's page");
    assert_eq!(read_json(&server, &own).await.status(), 200);

    assert_eq!(disable(false).await.status(), 204);
    assert_eq!(read_json(&server, &link).await.status(), 200, "enabled again");
    assert_eq!(read_page(&server, &link).await.status(), 200);

    let deleted = server.client.delete(server.url(&format!("/api/admin/users/{id}"))).send().await.unwrap();
    assert_eq!(deleted.status(), 204);
    assert_eq!(read_json(&server, &link).await.status(), 404, "a deleted account's link");
    assert_eq!(read_page(&server, &link).await.status(), 404);
    assert_eq!(db.raw.count("shares", "user_id", id).await, 0, "its links are gone");
    assert_eq!(read_json(&server, &own).await.status(), 200);
}

/// A new reset link of the account `id`, made by the administrator.
async fn reset_link(server: &TestServer, id: Uuid) -> ResetLink {
    let made = server.client.post(server.url(&format!("/api/admin/users/{id}/reset-link"))).send().await.unwrap();
    assert_eq!(made.status(), 201);
    made.json().await.unwrap()
}

async fn reset(server: &TestServer, link: &ResetLink, password: &str) -> reqwest::Response {
    let body = json!({ "token": link.token, "new_password": password });
    server.anonymous().post(server.url("/api/auth/reset-password")).json(&body).send().await.unwrap()
}

async fn refused(response: reqwest::Response, code: &str) {
    assert_eq!(response.status(), 422, "expected {code}");
    let body: ErrorBody = response.json().await.unwrap();
    assert_eq!(body.error.code, code, "{}", body.error.message);
}

async fn signs_in(server: &TestServer, password: &str) -> bool {
    server.sign_in("bob@example.com", password).await.status() == 200
}

async fn a_newer_reset_link_ends_the_older_one_and_using_one_ends_all(db: Db) {
    let server = admin_server(&db).await;
    let (_, session) = server.second_user("bob@example.com").await;
    let id = session.user.id;
    let older = reset_link(&server, id).await;
    let newer = reset_link(&server, id).await;
    refused(reset(&server, &older, "an older link's long passphrase").await, "reset_ended").await;
    assert!(signs_in(&server, PASSWORD).await, "a refused link changes nothing");

    // Tried several times at once, the newer link sets one password.
    let passwords: Vec<String> = (0..4).map(|n| format!("attempt number {n} long passphrase")).collect();
    let tried = join_all(passwords.iter().map(|password| reset(&server, &newer, password))).await;
    let statuses: Vec<u16> = tried.iter().map(|r| r.status().as_u16()).collect();
    assert_eq!(statuses.iter().filter(|s| **s == 204).count(), 1, "{statuses:?}");
    assert!(statuses.iter().all(|s| [204, 422].contains(s)), "{statuses:?}");
    let set = &passwords[statuses.iter().position(|s| *s == 204).unwrap()];
    assert!(signs_in(&server, set).await);
    refused(reset(&server, &newer, "a second use's long passphrase").await, "reset_used").await;
    refused(reset(&server, &older, "an older link's long passphrase").await, "reset_ended").await;
    assert!(signs_in(&server, set).await, "the links refused changed nothing");
}

async fn a_password_change_ends_every_reset_link(db: Db) {
    let server = admin_server(&db).await;
    let (bob, session) = server.second_user("bob@example.com").await;
    let id = session.user.id;
    let link = reset_link(&server, id).await;
    let change = json!({ "current_password": PASSWORD, "new_password": "violet orchard lantern ninety" });
    let changed = bob.post(server.url("/api/auth/password")).json(&change).send().await.unwrap();
    assert_eq!(changed.status(), 204);
    refused(reset(&server, &link, "whoever holds the link's passphrase").await, "reset_ended").await;
    assert!(signs_in(&server, "violet orchard lantern ninety").await, "the password chosen stays");

    // A link made after the change works, once.
    let later = reset_link(&server, id).await;
    assert_eq!(reset(&server, &later, "a later link's long passphrase").await.status(), 204);
    assert!(signs_in(&server, "a later link's long passphrase").await);
}
