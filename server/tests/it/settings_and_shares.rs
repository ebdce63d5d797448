//! The settings page's API and share links, on both backends: custom instructions reach the model below Quire's
//! rules, the profile and theme round trip; a share link shows a snapshot naming no one, marked `noindex`, until
//! it is revoked; another person can neither list nor revoke it.

use serde_json::json;
use wire::{Role, Settings, ShareLink, ShareList, SharedConversation, Theme, MAX_INSTRUCTIONS_CHARS};

use crate::common::backends::{run_story, stories, Backend, Db};
use crate::common::{read_frames, ExpectJson, ScriptedModel, TestServer};

stories!(
    custom_instructions_reach_the_model_below_the_rules,
    profile_and_theme_round_trip_and_bad_values_change_nothing,
    a_share_link_shows_a_snapshot_until_revoked,
    another_person_can_neither_list_nor_revoke_a_link,
);

async fn patch_settings(server: &TestServer, body: serde_json::Value) -> reqwest::Response {
    server.client.patch(server.url("/api/settings")).json(&body).send().await.unwrap()
}

async fn custom_instructions_reach_the_model_below_the_rules(db: Db) {
    let model = ScriptedModel::new(vec![ScriptedModel::text(&["Bonjour."]), ScriptedModel::text(&["Salut."])]);
    let server = TestServer::with(db.store.clone(), model.clone()).await;
    let thread = server.create_thread().await;
    read_frames(server.send_text(thread, "Hello").await).await;
    let before = model.requests.lock().unwrap()[0].system.clone();
    assert!(!before.contains("Answer in French"));

    let saved = patch_settings(&server, json!({ "custom_instructions": "  Answer in French.  " })).await;
    assert_eq!(saved.status(), 200);
    assert_eq!(saved.json::<Settings>().await.unwrap().custom_instructions, "Answer in French.");
    read_frames(server.send_text(thread, "Again").await).await;
    let system = model.requests.lock().unwrap().last().unwrap().system.clone();
    let dedup = system.find("2. ARTIFACT DEDUPLICATION").expect("the rules are there");
    let last_rule = system.find("6. STYLE").expect("every rule is there");
    let instructions = system.find("Answer in French.").expect("the instructions reach the model");
    assert!(dedup < last_rule && last_rule < instructions, "the instructions come below every rule:\n{system}");
}

async fn profile_and_theme_round_trip_and_bad_values_change_nothing(db: Db) {
    let server = TestServer::with(db.store.clone(), ScriptedModel::new(Vec::new())).await;
    let initial: Settings = server.get_json("/api/settings").await;
    assert_eq!((initial.theme, initial.custom_instructions.as_str()), (Theme::System, ""));

    let saved = patch_settings(&server, json!({ "display_name": " Ada Lovelace ", "theme": "dark" })).await;
    assert_eq!(saved.status(), 200);
    // What another device of the person reads.
    let (other, _) = crate::common::sign_up_or_in(&server.base, "owner@example.com").await;
    let read: Settings = crate::common::get_json(&other, &server.url("/api/settings")).await;
    assert_eq!((read.display_name.as_str(), read.theme), ("Ada Lovelace", Theme::Dark));
    let me: wire::UserProfile = server.get_json("/api/auth/me").await;
    assert_eq!(me.display_name, "Ada Lovelace");

    let too_long = "x".repeat(MAX_INSTRUCTIONS_CHARS + 1);
    for bad in [
        json!({ "display_name": "   " }),
        json!({ "theme": "sepia" }),
        json!({ "custom_instructions": too_long }),
        json!({ "custom_instructions": "a\u{0}b" }),
        json!({ "colour": "red" }),
    ] {
        let response = patch_settings(&server, bad.clone()).await;
        assert_eq!(response.status(), 422, "{bad}");
    }
    let after: Settings = server.get_json("/api/settings").await;
    assert_eq!(after, read, "a refused change changes nothing");
    let anonymous = server.anonymous().get(server.url("/api/settings")).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
}

async fn a_share_link_shows_a_snapshot_until_revoked(db: Db) {
    let model = ScriptedModel::new(vec![ScriptedModel::text(&["The ", "first ", "answer."])]);
    let server = TestServer::with(db.store.clone(), model).await;
    patch_settings(&server, json!({ "display_name": "Ada Secretname" })).await;
    let thread = server.create_thread().await;
    read_frames(server.send_text(thread, "What should the app do?").await).await;

    let created = server.client.post(server.url(&format!("/api/threads/{thread}/shares"))).send().await.unwrap();
    assert_eq!(created.status(), 201);
    let link: ShareLink = created.json().await.unwrap();
    let token = link.path.strip_prefix("/s/").expect("a /s/ path").to_string();
    assert!(token.len() >= 43, "an unguessable token: {token}");
    // A later message is not in the snapshot.
    server
        .state
        .store
        .append_message(
            server.user.id,
            store::NewMessage {
                thread_id: thread,
                role: Role::User,
                content: "A later message".into(),
                status: wire::MessageStatus::Complete,
                usage: Default::default(),
                model: None,
                quote: None,
                author: None,
            },
        )
        .await
        .unwrap();

    let anonymous = server.anonymous();
    let response = anonymous.get(server.url(&format!("/api/shared/{token}"))).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.headers()["x-robots-tag"].to_str().unwrap().contains("noindex"));
    let body = response.text().await.unwrap();
    for private in [server.user.email.as_str(), "Ada Secretname", &server.user.id.to_string(), &thread.to_string()] {
        assert!(!body.contains(private), "the shared JSON names no one: {private} in {body}");
    }
    let shared: SharedConversation = serde_json::from_str(&body).unwrap();
    let texts: Vec<&str> = shared.messages.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(texts, ["What should the app do?", "The first answer."]);

    let page = anonymous.get(server.url(&link.path)).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.headers()["x-robots-tag"].to_str().unwrap().contains("noindex"));
    let html = page.text().await.unwrap();
    assert!(html.contains(r#"<meta name="robots" content="noindex"#), "the page is marked noindex: {html}");

    let listed: ShareList = server.get_json(&format!("/api/threads/{thread}/shares")).await;
    assert_eq!(listed.shares, vec![link.clone()]);
    let all: ShareList = server.get_json("/api/shares").await;
    assert_eq!(all.shares, vec![link.clone()]);

    let revoked = server.client.delete(server.url(&format!("/api/shares/{}", link.id))).send().await.unwrap();
    assert_eq!(revoked.status(), 204);
    for path in [format!("/api/shared/{token}"), link.path.clone(), "/api/shared/not-a-token".into()] {
        let gone = anonymous.get(server.url(&path)).send().await.unwrap();
        assert_eq!(gone.status(), 404, "{path}");
    }
    let unknown = format!("/s/{}", "A".repeat(43));
    assert_eq!(anonymous.get(server.url(&unknown)).send().await.unwrap().status(), 404);
    let again = server.client.delete(server.url(&format!("/api/shares/{}", link.id))).send().await.unwrap();
    assert_eq!(again.status(), 404);
}

async fn another_person_can_neither_list_nor_revoke_a_link(db: Db) {
    let server = TestServer::with(db.store.clone(), ScriptedModel::new(Vec::new())).await;
    let thread = server.create_thread().await;
    let link: ShareLink = server.client.post(server.url(&format!("/api/threads/{thread}/shares"))).expect_json().await;
    let (other, _) = server.second_user("someone-else@example.com").await;
    let listed = other.get(server.url(&format!("/api/threads/{thread}/shares"))).send().await.unwrap();
    assert_eq!(listed.status(), 404);
    let share_it = other.post(server.url(&format!("/api/threads/{thread}/shares"))).send().await.unwrap();
    assert_eq!(share_it.status(), 404);
    let theirs: ShareList = crate::common::get_json(&other, &server.url("/api/shares")).await;
    assert!(theirs.shares.is_empty());
    let revoke = other.delete(server.url(&format!("/api/shares/{}", link.id))).send().await.unwrap();
    assert_eq!(revoke.status(), 404);
    let still = server.anonymous().get(server.url(&format!("/api/shared/{}", &link.path[3..]))).send().await.unwrap();
    assert_eq!(still.status(), 200, "the link still works");

    // A person has a bounded number of links, counted in the store.
    let limit = 2;
    let share =
        |n: u32| store::NewShare { thread, token: format!("{n:043}"), title: "t".into(), snapshot: "{}".into() };
    assert!(db.store.create_share(server.user.id, share(1), limit).await.is_ok());
    let refused = db.store.create_share(server.user.id, share(2), limit).await;
    assert!(matches!(refused, Err(store::StoreError::Conflict(_))), "{refused:?}");

    // Deleting the conversation takes its links with it.
    let deleted = server.client.delete(server.url(&format!("/api/threads/{thread}"))).send().await.unwrap();
    assert_eq!(deleted.status(), 204);
    let gone = server.anonymous().get(server.url(&format!("/api/shared/{}", &link.path[3..]))).send().await.unwrap();
    assert_eq!(gone.status(), 404);
}
