//! Team projects over HTTP: a team lead makes a project, adds colleagues by e-mail with roles, conversations move
//! in and out, and the activity log tells it. A non-member gets 404 on every project route, exactly as for a
//! missing project; a member without the role gets 403; a removed member loses access at once. On SQLite and,
//! with `scripts/with-postgres`, on PostgreSQL.

use reqwest::{Client, Response};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::{every_store, get_json, TestServer};
use wire::{
    ActivityKind, ActivityList, ErrorBody, MemberList, Project, ProjectList, ProjectMember, ProjectRole, Thread,
    ThreadDetail, ThreadList,
};

async fn send(client: &Client, server: &TestServer, method: &str, path: &str, body: Option<Value>) -> Response {
    let url = server.url(path);
    let request = match method {
        "GET" => client.get(url),
        "POST" => client.post(url),
        "PATCH" => client.patch(url),
        "DELETE" => client.delete(url),
        other => panic!("{other}"),
    };
    match body {
        Some(body) => request.json(&body),
        None => request,
    }
    .send()
    .await
    .unwrap()
}

async fn expect(response: Response, status: u16, code: &str, what: &str) {
    assert_eq!(response.status(), status, "{what}");
    assert_eq!(response.json::<ErrorBody>().await.unwrap().error.code, code, "{what}");
}

/// Every project route, with a body where it takes one.
fn every_route(project: Uuid, member: Uuid) -> Vec<(&'static str, String, Option<Value>)> {
    let p = format!("/api/projects/{project}");
    vec![
        ("GET", p.clone(), None),
        ("PATCH", p.clone(), Some(json!({"name": "Taken over"}))),
        ("DELETE", p.clone(), None),
        ("GET", format!("{p}/members"), None),
        ("POST", format!("{p}/members"), Some(json!({"email": "owner@example.com", "role": "viewer"}))),
        ("PATCH", format!("{p}/members/{member}"), Some(json!({"role": "viewer"}))),
        ("DELETE", format!("{p}/members/{member}"), None),
        ("GET", format!("{p}/activity"), None),
        ("GET", format!("{p}/threads"), None),
        ("DELETE", format!("{p}/invitations/{member}"), None),
    ]
}

/// The account id of the member of `project` with `email`.
async fn member_id(server: &TestServer, project: Uuid, email: &str) -> Uuid {
    let members: MemberList = server.get_json(&format!("/api/projects/{project}/members")).await;
    members.members.iter().find(|m| m.email == email).expect("a member").user_id
}

async fn move_thread(client: &Client, server: &TestServer, thread: Uuid, project: Option<Uuid>) -> Response {
    send(client, server, "PATCH", &format!("/api/threads/{thread}"), Some(json!({"project_id": project}))).await
}

#[tokio::test]
async fn a_team_shares_a_project_by_role_and_outsiders_see_nothing() {
    for (store, _guard) in every_store("projects_http").await {
        let server = TestServer::builtin(store).await;
        let lead = &server.client;
        let (bob, bob_auth) = server.second_user("bob@example.com").await;
        let (mallory, _) = server.second_user("mallory@example.com").await;
        let bob_id = bob_auth.user.id;

        // The lead makes a project; it is theirs, as owner.
        let made = send(
            lead,
            &server,
            "POST",
            "/api/projects",
            Some(json!({"name": "  Clinic  ", "description": "Bookings"})),
        )
        .await;
        assert_eq!(made.status(), 201);
        let project: Project = made.json().await.unwrap();
        assert_eq!((project.name.as_str(), project.role, project.member_count), ("Clinic", ProjectRole::Owner, 1));
        let blank = send(lead, &server, "POST", "/api/projects", Some(json!({"name": "   "}))).await;
        expect(blank, 422, "validation_failed", "a blank name").await;
        let p = project.id;

        // Colleagues are added by e-mail, written any way; a second time or an unknown address is refused.
        let added = send(
            lead,
            &server,
            "POST",
            &format!("/api/projects/{p}/members"),
            Some(json!({"email": "BOB@example.com", "role": "viewer"})),
        )
        .await;
        assert_eq!(added.status(), 201);
        let member: ProjectMember = added.json().await.unwrap();
        assert_eq!((member.user_id, member.role), (bob_id, ProjectRole::Viewer));
        let again = send(
            lead,
            &server,
            "POST",
            &format!("/api/projects/{p}/members"),
            Some(json!({"email": "bob@example.com", "role": "editor"})),
        )
        .await;
        expect(again, 409, "conflict", "a member added twice").await;
        // An address no account has is invited: whoever signs up with it joins, with the role.
        let invite = json!({"email": "Nina@Example.com", "role": "editor"});
        let invited = send(lead, &server, "POST", &format!("/api/projects/{p}/members"), Some(invite.clone())).await;
        assert_eq!(invited.status(), 202);
        let invitation: wire::ProjectInvitation = invited.json().await.unwrap();
        assert_eq!((invitation.email.as_str(), invitation.role), ("nina@example.com", ProjectRole::Editor));
        let twice = send(lead, &server, "POST", &format!("/api/projects/{p}/members"), Some(invite)).await;
        expect(twice, 409, "conflict", "an address invited twice").await;
        let listed: MemberList = server.get_json(&format!("/api/projects/{p}/members")).await;
        assert_eq!(listed.invitations.iter().map(|i| i.id).collect::<Vec<_>>(), vec![invitation.id]);
        let (nina, _) = server.second_user("nina@example.com").await;
        let ninas: ProjectList = get_json(&nina, &server.url("/api/projects")).await;
        assert_eq!(ninas.projects.iter().map(|x| (x.id, x.role)).collect::<Vec<_>>(), vec![(p, ProjectRole::Editor)]);
        let listed: MemberList = server.get_json(&format!("/api/projects/{p}/members")).await;
        assert!(listed.invitations.is_empty(), "used up");
        // One taken back before it is used invites no one.
        let invite = json!({"email": "olga@example.com", "role": "viewer"});
        let invited = send(lead, &server, "POST", &format!("/api/projects/{p}/members"), Some(invite)).await;
        let invitation: wire::ProjectInvitation = invited.json().await.unwrap();
        let path = format!("/api/projects/{p}/invitations/{}", invitation.id);
        assert_eq!(send(lead, &server, "DELETE", &path, None).await.status(), 204);
        assert_eq!(send(lead, &server, "DELETE", &path, None).await.status(), 404);
        let (olga, _) = server.second_user("olga@example.com").await;
        let olgas: ProjectList = get_json(&olga, &server.url("/api/projects")).await;
        assert!(olgas.projects.is_empty());
        let path = format!("/api/projects/{p}/members/{}", member_id(&server, p, "nina@example.com").await);
        assert_eq!(send(lead, &server, "DELETE", &path, None).await.status(), 204);

        let bobs: ProjectList = get_json(&bob, &server.url("/api/projects")).await;
        assert_eq!(bobs.projects.iter().map(|x| (x.id, x.role)).collect::<Vec<_>>(), vec![(p, ProjectRole::Viewer)]);
        let members: MemberList = get_json(&bob, &server.url(&format!("/api/projects/{p}/members"))).await;
        let listed: Vec<_> = members.members.iter().map(|m| (m.email.as_str(), m.role)).collect();
        assert_eq!(listed, vec![("owner@example.com", ProjectRole::Owner), ("bob@example.com", ProjectRole::Viewer)]);

        // The lead moves a conversation in; a member reads the project's conversations.
        let plans = server.create_titled_thread("Booking plans").await;
        let moved = move_thread(lead, &server, plans, Some(p)).await;
        assert_eq!(moved.status(), 200);
        assert_eq!(moved.json::<Thread>().await.unwrap().project_id, Some(p));
        let seen: ThreadList = get_json(&bob, &server.url(&format!("/api/projects/{p}/threads"))).await;
        assert_eq!(seen.threads.iter().map(|t| t.id).collect::<Vec<_>>(), vec![plans]);

        // A viewer writes nothing: 403 on every write, and their own conversation stays out.
        let own = server.create_thread_as(&bob).await;
        expect(move_thread(&bob, &server, own, Some(p)).await, 403, "role_required", "a viewer moving in").await;
        for (method, path, body) in every_route(p, server.user.id) {
            if method == "GET" {
                assert_eq!(send(&bob, &server, method, &path, body).await.status(), 200, "{method} {path}");
            } else {
                expect(
                    send(&bob, &server, method, &path, body).await,
                    403,
                    "role_required",
                    &format!("{method} {path}"),
                )
                .await;
            }
        }
        // Raised to editor, they move their conversation in.
        let raised = send(
            lead,
            &server,
            "PATCH",
            &format!("/api/projects/{p}/members/{bob_id}"),
            Some(json!({"role": "editor"})),
        )
        .await;
        assert_eq!(raised.status(), 200);
        assert_eq!(move_thread(&bob, &server, own, Some(p)).await.status(), 200);
        let seen: ThreadList = server.get_json(&format!("/api/projects/{p}/threads")).await;
        assert_eq!(seen.threads.len(), 2);

        // A non-member gets 404 on every route, as for a project that does not exist, and moves nothing in.
        let theirs = server.create_thread_as(&mallory).await;
        for target in [p, Uuid::new_v4()] {
            for (method, path, body) in every_route(target, bob_id) {
                expect(
                    send(&mallory, &server, method, &path, body).await,
                    404,
                    "not_found",
                    &format!("{method} {path}"),
                )
                .await;
            }
            expect(move_thread(&mallory, &server, theirs, Some(target)).await, 404, "not_found", "moving in").await;
        }
        let none: ProjectList = get_json(&mallory, &server.url("/api/projects")).await;
        assert!(none.projects.is_empty());
        // Nor does anyone move a conversation that is not theirs: an editor changes its documents, only its author
        // moves it.
        expect(move_thread(&bob, &server, plans, None).await, 403, "author_only", "moving another's out").await;
        expect(move_thread(&mallory, &server, plans, None).await, 404, "not_found", "an outsider moving it").await;

        // A project keeps an owner.
        let me = server.user.id;
        let alone =
            send(lead, &server, "PATCH", &format!("/api/projects/{p}/members/{me}"), Some(json!({"role": "editor"})))
                .await;
        expect(alone, 409, "conflict", "the last owner lowering themselves").await;
        let leave = send(lead, &server, "DELETE", &format!("/api/projects/{p}/members/{me}"), None).await;
        expect(leave, 409, "conflict", "the last owner leaving").await;
        let handed = send(
            lead,
            &server,
            "PATCH",
            &format!("/api/projects/{p}/members/{bob_id}"),
            Some(json!({"role": "owner"})),
        )
        .await;
        assert_eq!(handed.status(), 200);

        // An owner takes anyone's conversation out of the project (it stays its author's, who may move it back).
        let out = move_thread(&bob, &server, plans, None).await;
        assert_eq!(out.status(), 200);
        let out: Thread = out.json().await.unwrap();
        assert_eq!((out.project_id, out.title.as_str()), (None, "Booking plans"));
        expect(send(&bob, &server, "GET", &format!("/api/threads/{plans}"), None).await, 404, "not_found", "out").await;
        assert_eq!(move_thread(lead, &server, plans, Some(p)).await.status(), 200);

        // Bob, now an owner, removes the lead: their access ends at once.
        let removed = send(&bob, &server, "DELETE", &format!("/api/projects/{p}/members/{me}"), None).await;
        assert_eq!(removed.status(), 204);
        expect(server.get(&format!("/api/projects/{p}")).await, 404, "not_found", "a removed member").await;
        expect(server.get(&format!("/api/projects/{p}/threads")).await, 404, "not_found", "a removed member").await;
        // Their conversation stays theirs (and in the project); they can take it out.
        assert_eq!(move_thread(lead, &server, plans, None).await.status(), 200);

        // The log tells it all, newest first, to members only.
        let log: ActivityList = get_json(&bob, &server.url(&format!("/api/projects/{p}/activity"))).await;
        let kinds: Vec<ActivityKind> = log.entries.iter().rev().map(|e| e.kind).collect();
        assert_eq!(
            kinds,
            vec![
                ActivityKind::ProjectCreated,
                ActivityKind::MemberAdded,
                ActivityKind::MemberInvited,
                ActivityKind::MemberJoined,
                ActivityKind::MemberInvited,
                ActivityKind::InvitationCancelled,
                ActivityKind::MemberRemoved,
                ActivityKind::ConversationMovedIn,
                ActivityKind::RoleChanged,
                ActivityKind::ConversationMovedIn,
                ActivityKind::RoleChanged,
                ActivityKind::ConversationMovedOut,
                ActivityKind::ConversationMovedIn,
                ActivityKind::MemberRemoved,
                ActivityKind::ConversationMovedOut,
            ]
        );
        let added = &log.entries[log.entries.len() - 2];
        assert_eq!((added.subject.as_deref(), added.role), (Some("bob@example.com"), Some(ProjectRole::Viewer)));
        assert_eq!(log.entries[0].subject.as_deref(), Some("Booking plans"));
        let page: ActivityList =
            get_json(&bob, &server.url(&format!("/api/projects/{p}/activity?limit=2&before={}", log.entries[1].id)))
                .await;
        assert_eq!(page.entries.iter().map(|e| e.id).collect::<Vec<_>>(), vec![log.entries[2].id, log.entries[3].id]);
        let bad = send(&bob, &server, "GET", &format!("/api/projects/{p}/activity?limit=0"), None).await;
        assert_eq!(bad.status(), 400);

        // Deleting the project leaves its conversations with their authors.
        assert_eq!(send(&bob, &server, "DELETE", &format!("/api/projects/{p}"), None).await.status(), 204);
        let kept: ThreadDetail = get_json(&bob, &server.url(&format!("/api/threads/{own}"))).await;
        assert_eq!(kept.thread.project_id, None);
    }
}

/// The lead's conversation in a project, with an answer and a document, and a viewer and an outsider.
struct Shared {
    server: TestServer,
    project: Uuid,
    thread: Uuid,
    viewer: Client,
    viewer_id: Uuid,
    outsider: Client,
}

async fn shared_conversation(store: store::DynStore) -> Shared {
    let server = TestServer::builtin(store).await;
    let (viewer, viewer_auth) = server.second_user("vera@example.com").await;
    let (outsider, _) = server.second_user("otto@example.com").await;
    let project: Project = server.post_json("/api/projects", &json!({"name": "Payroll"})).await;
    let add = json!({"email": "vera@example.com", "role": "viewer"});
    let _: ProjectMember = server.post_json(&format!("/api/projects/{}/members", project.id), &add).await;
    let thread = server.create_titled_thread("Payroll plans").await;
    server.chat(thread, "Staff must be paid monthly. Please write the user stories.").await;
    server.wait_idle(thread).await;
    assert_eq!(move_thread(&server.client, &server, thread, Some(project.id)).await.status(), 200);
    Shared { project: project.id, thread, viewer, viewer_id: viewer_auth.user.id, outsider, server }
}

#[tokio::test]
async fn members_read_a_project_conversation_and_only_its_author_writes() {
    for (store, _guard) in every_store("projects_reading").await {
        let Shared { server, project, thread, viewer, viewer_id, outsider } = shared_conversation(store).await;
        let own: ThreadDetail = server.detail(thread).await;
        assert_eq!(own.access, wire::ThreadAccess::Author, "the author writes");
        let document = own.artifacts[0].id;
        let answer = own.messages.iter().find(|m| m.role == wire::Role::Assistant).unwrap().id;
        let question = own.messages.iter().find(|m| m.role == wire::Role::User).unwrap().id;

        // The viewer reads what the author reads: the conversation, its documents and versions, its ledger, what
        // the model saw, and its export.
        let seen: ThreadDetail = get_json(&viewer, &server.url(&format!("/api/threads/{thread}"))).await;
        assert_eq!(seen.access, wire::ThreadAccess::Viewer);
        assert_eq!((seen.messages.clone(), seen.artifacts.clone()), (own.messages.clone(), own.artifacts.clone()));
        let reads = [
            format!("/api/threads/{thread}/artifacts"),
            format!("/api/threads/{thread}/requirements"),
            format!("/api/threads/{thread}/export"),
            format!("/api/artifacts/{document}"),
            format!("/api/artifacts/{document}/versions"),
            format!("/api/artifacts/{document}/versions/1"),
            format!("/api/artifacts/{document}/export?format=md"),
            format!("/api/messages/{answer}/context"),
            format!("/api/messages/{answer}/trace"),
        ];
        for path in &reads {
            let owner = server.get(path).await;
            let member = send(&viewer, &server, "GET", path, None).await;
            assert_eq!((owner.status(), member.status()), (reqwest::StatusCode::OK, reqwest::StatusCode::OK), "{path}");
            if !path.contains("export") {
                assert_eq!(owner.text().await.unwrap(), member.text().await.unwrap(), "{path}");
            }
        }

        // Every write is refused with 403 and changes nothing; an outsider gets 404 on reads and writes alike.
        let writes = [
            ("PATCH", format!("/api/threads/{thread}"), Some(json!({"title": "Taken"}))),
            ("DELETE", format!("/api/threads/{thread}"), None),
            ("POST", format!("/api/threads/{thread}/chat"), Some(json!({"content": "Add overtime."}))),
            ("POST", format!("/api/threads/{thread}/messages/{answer}/regenerate"), None),
            ("DELETE", format!("/api/threads/{thread}/messages/{question}"), None),
            ("POST", format!("/api/threads/{thread}/branch"), Some(json!({"message_id": question}))),
            ("PATCH", format!("/api/threads/{thread}/requirements/R-1"), Some(json!({"status": "dropped"}))),
            (
                "PUT",
                format!("/api/artifacts/{document}"),
                Some(json!({"title": "Mine", "content": "# Mine", "base_version": 1})),
            ),
            ("DELETE", format!("/api/artifacts/{document}"), None),
            ("POST", format!("/api/artifacts/{document}/versions/1/restore"), None),
        ];
        for (method, path, body) in &writes {
            let response = match *method {
                "PUT" => viewer.put(server.url(path)).json(body.as_ref().unwrap()).send().await.unwrap(),
                _ => send(&viewer, &server, method, path, body.clone()).await,
            };
            expect(response, 403, "read_only", &format!("viewer {method} {path}")).await;
            let response = match *method {
                "PUT" => outsider.put(server.url(path)).json(body.as_ref().unwrap()).send().await.unwrap(),
                _ => send(&outsider, &server, method, path, body.clone()).await,
            };
            expect(response, 404, "not_found", &format!("outsider {method} {path}")).await;
        }
        for path in reads.iter().chain([&format!("/api/threads/{thread}")]) {
            expect(send(&outsider, &server, "GET", path, None).await, 404, "not_found", &format!("outsider {path}"))
                .await;
        }
        assert_eq!(server.detail(thread).await, own, "nothing changed");

        // Removed from the project, the viewer reads nothing at once.
        let removed =
            send(&server.client, &server, "DELETE", &format!("/api/projects/{project}/members/{viewer_id}"), None)
                .await;
        assert_eq!(removed.status(), 204);
        for path in reads.iter().chain([&format!("/api/threads/{thread}")]) {
            expect(send(&viewer, &server, "GET", path, None).await, 404, "not_found", &format!("removed {path}")).await;
        }
        let (method, path, body) = &writes[0];
        expect(send(&viewer, &server, method, path, body.clone()).await, 404, "not_found", "removed write").await;
    }
}

#[tokio::test]
async fn a_projects_instructions_reach_the_model_between_quires_rules_and_the_persons_own() {
    for (store, _guard) in every_store("projects_instructions").await {
        let model = crate::common::ScriptedModel::new(vec![
            crate::common::ScriptedModel::text(&["First."]),
            crate::common::ScriptedModel::text(&["Second."]),
        ]);
        let server = TestServer::with(store, model.clone()).await;
        let settings = json!({"custom_instructions": "Use British spelling."});
        assert_eq!(send(&server.client, &server, "PATCH", "/api/settings", Some(settings)).await.status(), 200);
        let body = json!({"name": "Ward rota", "instructions": "  Write for the ward staff.  "});
        let project: Project = server.post_json("/api/projects", &body).await;
        assert_eq!(project.instructions, "Write for the ward staff.");
        let long = json!({"instructions": "x".repeat(wire::MAX_INSTRUCTIONS_CHARS + 1)});
        let refused =
            send(&server.client, &server, "PATCH", &format!("/api/projects/{}", project.id), Some(long)).await;
        expect(refused, 422, "validation_failed", "instructions too long").await;

        // Outside the project the model is not given them; inside, it is, below the rules and above the person's.
        let thread = server.create_thread().await;
        server.chat(thread, "Nurses must see the roster.").await;
        assert_eq!(move_thread(&server.client, &server, thread, Some(project.id)).await.status(), 200);
        server.chat(thread, "Nurses must swap shifts.").await;
        let requests = model.requests.lock().unwrap();
        assert!(!requests[0].system.contains("Write for the ward staff."));
        let system = &requests[1].system;
        let (project_at, own_at) =
            (system.find("Write for the ward staff.").unwrap(), system.find("Use British spelling.").unwrap());
        assert!(system.find("CRITICAL RULES").unwrap() < project_at && project_at < own_at, "{system}");
    }
}

/// Reads an event stream in the background; the receiver says `None` once it ended.
fn follow(response: Response) -> tokio::sync::mpsc::UnboundedReceiver<String> {
    use futures::StreamExt;
    let (sender, received) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut parser = wire::sse::SseParser::new();
        let mut body = response.bytes_stream();
        while let Some(Ok(chunk)) = body.next().await {
            for event in parser.feed(&chunk).expect("an event of a sane size") {
                if sender.send(event.event).is_err() {
                    return;
                }
            }
        }
    });
    received
}

#[tokio::test]
async fn a_members_streams_end_once_they_no_longer_reach_the_conversation() {
    let wait = std::time::Duration::from_secs(10);
    for (store, _guard) in every_store("projects_streams").await {
        let Shared { server, project, thread, viewer, viewer_id, .. } = shared_conversation(store).await;
        let document = server.detail(thread).await.artifacts[0].id;
        let changes = send(&viewer, &server, "GET", &format!("/api/threads/{thread}/changes"), None).await;
        assert_eq!(changes.status(), 200);
        let mut watching = follow(changes);
        // The member sees the author's changes as they happen.
        let edit = json!({"content": "# Payroll\n\n- Staff are paid monthly.\n", "base_version": 1});
        let saved =
            server.client.put(server.url(&format!("/api/artifacts/{document}"))).json(&edit).send().await.unwrap();
        assert_eq!(saved.status(), 200);
        let seen = tokio::time::timeout(wait, watching.recv()).await.expect("a change came");
        assert_eq!(seen.as_deref(), Some("artifact_saved"));

        // Removed from the project, their stream ends within the check's interval.
        let path = format!("/api/projects/{project}/members/{viewer_id}");
        assert_eq!(send(&server.client, &server, "DELETE", &path, None).await.status(), 204);
        let removed_at = std::time::Instant::now();
        let ended = tokio::time::timeout(wait, async { while watching.recv().await.is_some() {} }).await;
        assert!(ended.is_ok(), "the stream ended");
        assert!(removed_at.elapsed() < std::time::Duration::from_secs(2), "{:?}", removed_at.elapsed());

        // A member still in the project keeps theirs until the conversation leaves the project.
        let add = json!({"email": "vera@example.com", "role": "viewer"});
        let _: ProjectMember = server.post_json(&format!("/api/projects/{project}/members"), &add).await;
        let changes = send(&viewer, &server, "GET", &format!("/api/threads/{thread}/changes"), None).await;
        let mut watching = follow(changes);
        tokio::time::sleep(std::time::Duration::from_millis(900)).await;
        assert!(watching.try_recv().is_err_and(|e| e == tokio::sync::mpsc::error::TryRecvError::Empty));
        assert_eq!(move_thread(&server.client, &server, thread, None).await.status(), 200);
        let ended = tokio::time::timeout(wait, async { while watching.recv().await.is_some() {} }).await;
        assert!(ended.is_ok(), "the stream ended with the conversation leaving the project");
    }
}

#[tokio::test]
async fn editors_change_documents_and_requirements_and_the_log_says_who() {
    for (store, _guard) in every_store("projects_editors").await {
        let Shared { server, project, thread, viewer, viewer_id, .. } = shared_conversation(store).await;
        let (editor, editor_auth) = server.second_user("ed@example.com").await;
        let add = json!({"email": "ed@example.com", "role": "editor"});
        let _: ProjectMember = server.post_json(&format!("/api/projects/{project}/members"), &add).await;
        let seen: ThreadDetail = get_json(&editor, &server.url(&format!("/api/threads/{thread}"))).await;
        assert_eq!(seen.access, wire::ThreadAccess::Editor);
        let document = seen.artifacts[0].id;

        // The editor saves a version; the author sees it, written by the editor.
        let edit = json!({"content": "# Payroll\n\n- Staff are paid monthly, on the last day.\n", "base_version": 1});
        let saved = editor.put(server.url(&format!("/api/artifacts/{document}"))).json(&edit).send().await.unwrap();
        assert_eq!(saved.status(), 200);
        let versions: wire::ArtifactVersionList = server.get_json(&format!("/api/artifacts/{document}/versions")).await;
        let newest = versions.versions.last().unwrap();
        assert_eq!(newest.author, wire::VersionAuthor::Person { user_id: editor_auth.user.id });
        assert_eq!(
            newest.author_name.as_deref(),
            Some(editor_auth.user.display_name.as_str()).filter(|n| !n.is_empty()).or(Some("ed@example.com"))
        );
        // A save from the old version is refused with the current one, as for the author.
        let stale = editor.put(server.url(&format!("/api/artifacts/{document}"))).json(&edit).send().await.unwrap();
        assert_eq!(stale.status(), 409);
        // A viewer still changes nothing.
        let refused = viewer
            .put(server.url(&format!("/api/artifacts/{document}")))
            .json(&json!({"content": "# Mine", "base_version": 2}))
            .send()
            .await
            .unwrap();
        expect(refused, 403, "read_only", "a viewer saving").await;

        // The editor changes a requirement; its history says who.
        let ledger: wire::Ledger = server.get_json(&format!("/api/threads/{thread}/requirements")).await;
        let key = ledger.requirements.first().expect("the message stated a requirement").key.clone();
        let path = format!("/api/threads/{thread}/requirements/{key}");
        let changed =
            send(&editor, &server, "PATCH", &path, Some(json!({"text": "Staff must be paid twice a month."}))).await;
        assert_eq!(changed.status(), 200);
        let requirement: wire::Requirement = changed.json().await.unwrap();
        assert_eq!(requirement.text, "Staff must be paid twice a month.");
        let last = requirement.history.last().unwrap();
        assert_eq!(last.author, wire::VersionAuthor::Person { user_id: editor_auth.user.id });

        // What only the author does stays theirs: deleting a document.
        let delete = send(&editor, &server, "DELETE", &format!("/api/artifacts/{document}"), None).await;
        expect(delete, 403, "author_only", "an editor deleting a document").await;

        // The project's log tells who changed what.
        let log: ActivityList = server.get_json(&format!("/api/projects/{project}/activity")).await;
        let mine: Vec<(ActivityKind, Option<String>)> =
            log.entries.iter().take(2).map(|e| (e.kind, e.actor.clone())).collect();
        assert_eq!(
            mine,
            vec![
                (ActivityKind::RequirementsChanged, newest.author_name.clone()),
                (ActivityKind::DocumentEdited, newest.author_name.clone()),
            ]
        );
        assert!(log.entries[0].subject.as_deref().unwrap().contains(&key));

        // Lowered to viewer, their next save is refused at once.
        let path = format!("/api/projects/{project}/members/{}", editor_auth.user.id);
        assert_eq!(send(&server.client, &server, "PATCH", &path, Some(json!({"role": "viewer"}))).await.status(), 200);
        let again = json!({"content": "# Payroll\n\nLater.\n", "base_version": 2});
        let refused = editor.put(server.url(&format!("/api/artifacts/{document}"))).json(&again).send().await.unwrap();
        expect(refused, 403, "read_only", "a lowered editor saving").await;
        let _ = viewer_id;
    }
}

async fn tokens_of(server: &TestServer, client: &Client) -> u64 {
    let stats: wire::HistoryStats = get_json(client, &server.url("/api/stats")).await;
    stats.input_tokens + stats.output_tokens
}

#[tokio::test]
async fn editors_write_in_a_project_conversation_as_themselves_and_pay_for_it() {
    for (store, _guard) in every_store("projects_writing").await {
        let Shared { server, project, thread, viewer, outsider, .. } = shared_conversation(store).await;
        let (editor, editor_auth) = server.second_user("ed@example.com").await;
        let add = json!({"email": "ed@example.com", "role": "editor"});
        let _: ProjectMember = server.post_json(&format!("/api/projects/{project}/members"), &add).await;
        let author_tokens = tokens_of(&server, &server.client).await;
        assert_eq!(tokens_of(&server, &editor).await, 0);

        // The editor continues the conversation; the answer streams to them and the message is theirs.
        let path = format!("/api/threads/{thread}/chat");
        let chat = send(&editor, &server, "POST", &path, Some(json!({"content": "Overtime must be paid weekly."})));
        let response = chat.await;
        assert_eq!(response.status(), 200);
        let frames = crate::common::read_frames(response).await;
        assert!(!frames.is_empty(), "the answer streamed to the editor");
        let seen: ThreadDetail = server.wait_idle(thread).await;
        let said = seen.messages.iter().rev().find(|m| m.role == wire::Role::User).unwrap();
        assert_eq!(said.content, "Overtime must be paid weekly.");
        assert_eq!(said.author_id, Some(editor_auth.user.id));
        assert_eq!(seen.messages.last().unwrap().role, wire::Role::Assistant, "answered");
        let first = seen.messages.iter().find(|m| m.role == wire::Role::User).unwrap();
        assert_eq!(first.author_id, None, "the author's own message names no one else");
        let writers: Vec<(Uuid, String)> = seen.writers.iter().map(|w| (w.id, w.name.clone())).collect();
        let expected = vec![
            (server.user.id, crate::common::shown_name(&server.user)),
            (editor_auth.user.id, crate::common::shown_name(&editor_auth.user)),
        ];
        assert_eq!(writers, expected, "the author first");
        // Its Markdown names who wrote each of the person's messages, for any member who downloads it.
        let path_md = format!("/api/threads/{thread}/export?format=markdown");
        let markdown = send(&viewer, &server, "GET", &path_md, None).await.text().await.unwrap();
        let heads: Vec<&str> =
            markdown.lines().filter_map(|l| Some(l.strip_prefix("### ")?.split_once(" · ")?.0)).collect();
        let (author_name, editor_name) = (expected[0].1.as_str(), expected[1].1.as_str());
        assert_eq!(heads, [author_name, "Assistant", editor_name, "Assistant"], "{markdown}");
        // What the editor's turn spent is on their ledger, not the author's.
        assert!(tokens_of(&server, &editor).await > 0, "the sender pays");
        assert_eq!(tokens_of(&server, &server.client).await, author_tokens, "the author pays nothing of it");
        // An administrator sees what the project's conversations spent, whoever sent.
        let usage: wire::admin::AdminProjectList = server.get_json("/api/admin/projects").await;
        let row = usage.projects.iter().find(|p| p.id == project).expect("the project is listed");
        assert_eq!((row.name.as_str(), row.members, row.conversations), ("Payroll", 3, 1));
        let editor_tokens = tokens_of(&server, &editor).await;
        assert_eq!(row.input_tokens + row.output_tokens, author_tokens + editor_tokens);
        let refused = send(&editor, &server, "GET", "/api/admin/projects", None).await;
        assert_eq!(refused.status(), 404, "not an administrator");
        // The editor edits their message (a new branch) and switches back: the branch shown is the conversation's.
        let edited = json!({"content": "Overtime must be paid monthly.", "edit_of": said.id});
        let response = send(&editor, &server, "POST", &path, Some(edited)).await;
        assert_eq!(response.status(), 200);
        crate::common::read_frames(response).await;
        let branched: ThreadDetail = server.wait_idle(thread).await;
        assert!(branched.messages.iter().any(|m| m.content == "Overtime must be paid monthly."));
        let branch_path = format!("/api/threads/{thread}/branch");
        let back = Some(json!({"message_id": said.id}));
        expect(send(&viewer, &server, "POST", &branch_path, back.clone()).await, 403, "read_only", "a viewer").await;
        let switched = send(&editor, &server, "POST", &branch_path, back.clone()).await;
        assert_eq!(switched.status(), 200);
        let shown: ThreadDetail = server.get_json(&format!("/api/threads/{thread}")).await;
        assert!(shown.messages.iter().any(|m| m.id == said.id), "the author sees the branch the editor chose");
        // And asks for another answer.
        let answer = shown.messages.last().unwrap().id;
        let again = format!("/api/threads/{thread}/messages/{answer}/regenerate");
        let response = send(&editor, &server, "POST", &again, None).await;
        assert_eq!(response.status(), 200);
        crate::common::read_frames(response).await;
        server.wait_idle(thread).await;

        // The editor may stop an answer in it (nothing runs now).
        let stop = send(&editor, &server, "POST", &format!("/api/threads/{thread}/stop"), None).await;
        assert_eq!(stop.status(), 204);

        // A viewer still cannot write, nor stop; an outsider finds nothing.
        let body = Some(json!({"content": "Me too."}));
        expect(send(&viewer, &server, "POST", &path, body.clone()).await, 403, "read_only", "a viewer writing").await;
        let stop_path = format!("/api/threads/{thread}/stop");
        expect(send(&viewer, &server, "POST", &stop_path, None).await, 403, "read_only", "a viewer stopping").await;
        expect(send(&outsider, &server, "POST", &path, body).await, 404, "not_found", "an outsider writing").await;

        // While an answer to the author is being written, the editor is told whose it is.
        let turn = Uuid::now_v7();
        server.state.store.begin_turn(server.user.id, thread, turn, 60_000).await.unwrap();
        let busy = send(&editor, &server, "POST", &path, Some(json!({"content": "And holidays?"}))).await;
        assert_eq!(busy.status(), 409);
        assert_eq!(send(&editor, &server, "POST", &branch_path, back).await.status(), 409, "switching while busy");
        let told = busy.json::<ErrorBody>().await.unwrap().error.message;
        assert!(told.contains(&crate::common::shown_name(&server.user)), "{told}");
        server.state.store.finish_turn(turn, store::TurnEnd::default()).await.unwrap();

        // A turn the editor started stops at its next heartbeat once they may no longer write: lowered or removed.
        for (change, method) in [(Some(json!({"role": "viewer"})), "PATCH"), (None, "DELETE")] {
            if method == "DELETE" {
                let back = json!({"role": "editor"});
                let member = format!("/api/projects/{project}/members/{}", editor_auth.user.id);
                assert_eq!(send(&server.client, &server, "PATCH", &member, Some(back)).await.status(), 200);
            }
            let turn = Uuid::now_v7();
            let start = store::TurnStart {
                user: server.user.id,
                sender: editor_auth.user.id,
                thread,
                turn,
                stale_after_ms: 60_000,
                request: None,
                message_id: Uuid::now_v7(),
            };
            server.state.store.start_turn(start, &store::TurnLimits::default()).await.unwrap();
            assert_eq!(server.state.store.heartbeat_turns(&[turn]).await.unwrap(), Vec::<Uuid>::new());
            let member = format!("/api/projects/{project}/members/{}", editor_auth.user.id);
            let status = if method == "DELETE" { 204 } else { 200 };
            assert_eq!(send(&server.client, &server, method, &member, change).await.status(), status);
            assert_eq!(server.state.store.heartbeat_turns(&[turn]).await.unwrap(), vec![turn], "{method}");
            server.state.store.finish_turn(turn, store::TurnEnd::default()).await.unwrap();
        }
        // And a start of theirs is refused in the statement that would take the conversation.
        let start = store::TurnStart {
            user: server.user.id,
            sender: editor_auth.user.id,
            thread,
            turn: Uuid::now_v7(),
            stale_after_ms: 60_000,
            request: None,
            message_id: Uuid::now_v7(),
        };
        let refused = server.state.store.start_turn(start, &store::TurnLimits::default()).await;
        assert!(matches!(refused, Err(store::StoreError::NotFound)), "{refused:?}");
    }
}

const POLICY: &str = "# Pay policy\n\nOvertime is paid at one and a half times the hourly rate, within thirty days.\n";

/// Says `content` in `thread` as `client`'s person; the answer's text and whether it searched the files.
async fn ask(server: &TestServer, client: &Client, thread: Uuid, content: &str) -> (String, bool) {
    let path = format!("/api/threads/{thread}/chat");
    let response = send(client, server, "POST", &path, Some(json!({ "content": content }))).await;
    assert_eq!(response.status(), 200);
    let frames = crate::common::read_frames(response).await;
    let searched = frames
        .iter()
        .any(|f| matches!(&f.event, wire::ChatEvent::ToolExecuting { tool, .. } if tool == "document_search"));
    (crate::common::text_of(&frames), searched)
}

#[tokio::test]
async fn a_projects_files_are_searched_from_each_of_its_conversations_and_say_where_they_come_from() {
    for (store, _guard) in every_store("projects_files").await {
        let Shared { server, project, thread, .. } = shared_conversation(store).await;
        let response = server.upload(thread, "pay-policy.md", "text/markdown", POLICY.as_bytes().to_vec()).await;
        assert_eq!(response.status(), 201);
        let (editor, _) = server.second_user("ed@example.com").await;
        let add = json!({"email": "ed@example.com", "role": "editor"});
        let _: ProjectMember = server.post_json(&format!("/api/projects/{project}/members"), &add).await;

        // The editor's own conversation in the project finds the file attached to the author's.
        let theirs = server.create_thread_as(&editor).await;
        assert_eq!(move_thread(&editor, &server, theirs, Some(project)).await.status(), 200);
        let question = "What does the attached document say about overtime?";
        let (answer, searched) = ask(&server, &editor, theirs, question).await;
        assert!(searched, "the project's files were searched");
        assert!(answer.contains("one and a half times"), "{answer}");
        let seen: ThreadDetail = get_json(&editor, &server.url(&format!("/api/threads/{theirs}"))).await;
        let answered = seen.messages.last().unwrap().id;
        let record: wire::ContextRecord =
            get_json(&editor, &server.url(&format!("/api/messages/{answered}/context"))).await;
        let sources: Vec<(&str, Option<&str>)> =
            record.passages.iter().map(|p| (p.filename.as_str(), p.conversation.as_deref())).collect();
        assert_eq!(sources.first(), Some(&("pay-policy.md", Some("Payroll plans"))), "{sources:?}");

        // Outside the project the file is nobody's business: a conversation of the editor's own is not offered it,
        // nor is the one moved out.
        let own = server.create_thread_as(&editor).await;
        let (answer, searched) = ask(&server, &editor, own, question).await;
        assert!(!searched && !answer.contains("one and a half times"), "{answer}");
        assert_eq!(move_thread(&editor, &server, theirs, None).await.status(), 200);
        let (answer, searched) = ask(&server, &editor, theirs, question).await;
        assert!(!searched && !answer.contains("one and a half times"), "{answer}");
    }
}

/// `GET path` as `client`: its status, and its body when it is 200.
async fn read<T: serde::de::DeserializeOwned>(client: &Client, server: &TestServer, path: &str) -> (u16, Option<T>) {
    let response = send(client, server, "GET", path, None).await;
    let status = response.status().as_u16();
    (status, if status == 200 { Some(response.json().await.unwrap()) } else { None })
}

/// Tags a conversation of `client`'s person.
async fn tag(client: &Client, server: &TestServer, thread: Uuid, tags: &[&str]) {
    let tagged = send(client, server, "PATCH", &format!("/api/threads/{thread}"), Some(json!({ "tags": tags }))).await;
    assert_eq!(tagged.status(), 200);
}

fn counted(tags: &[wire::TagCount]) -> Vec<(&str, u64)> {
    tags.iter().map(|t| (t.tag.as_str(), t.count)).collect()
}

#[tokio::test]
async fn a_project_is_searched_and_counted_by_its_members_across_everyones_conversations() {
    for (store, _guard) in every_store("projects_search").await {
        let Shared { server, project, thread, viewer, outsider, .. } = shared_conversation(store).await;
        let (editor, _) = server.second_user("ed@example.com").await;
        let add = json!({"email": "ed@example.com", "role": "editor"});
        let _: ProjectMember = server.post_json(&format!("/api/projects/{project}/members"), &add).await;
        // The editor's conversation in the project, one of their own outside it, and the author's outside it.
        let theirs = server.create_thread_as(&editor).await;
        assert_eq!(move_thread(&editor, &server, theirs, Some(project)).await.status(), 200);
        let _ = ask(&server, &editor, theirs, "Payslips must show the overtime hours.").await;
        let own = server.create_thread_as(&editor).await;
        let _ = ask(&server, &editor, own, "Payslips must be printable at home.").await;
        let elsewhere = server.create_titled_thread("Garden").await;
        server.chat(elsewhere, "Payslips for the gardeners too.").await;
        server.wait_idle(elsewhere).await;

        let search = |client: &Client, query: &str| {
            let request = client.get(server.url(&format!("/api/search?q={query}&project={project}")));
            async move { request.send().await.unwrap() }
        };
        // Every member finds both conversations of the project, and nothing outside it.
        for client in [&viewer, &editor, &server.client] {
            let response = search(client, "payslips").await;
            assert_eq!(response.status(), 200);
            let found: wire::SearchResults = response.json().await.unwrap();
            let mut threads: Vec<Uuid> = found.results.iter().map(|h| h.thread_id).collect();
            threads.sort();
            threads.dedup();
            let mut expected = vec![theirs];
            expected.sort();
            assert_eq!(threads, expected, "{:?}", found.results);
            let staff: wire::SearchResults = search(client, "staff").await.json().await.unwrap();
            assert!(staff.results.iter().all(|h| h.thread_id == thread) && !staff.results.is_empty());
        }
        // An outsider's search of the project is a missing project's.
        expect(search(&outsider, "payslips").await, 404, "not_found", "an outsider").await;

        // Its tags and statistics are its conversations', whoever wrote and tagged them, the same for every member;
        // nobody's own conversations count in them.
        tag(&server.client, &server, thread, &["payroll", "urgent"]).await;
        tag(&editor, &server, theirs, &["payroll"]).await;
        tag(&editor, &server, own, &["private"]).await;
        tag(&server.client, &server, elsewhere, &["garden"]).await;
        let outsiders = server.create_thread_as(&outsider).await;
        tag(&outsider, &server, outsiders, &["payroll", "secret"]).await;
        let (tags, stats) = (format!("/api/tags?project={project}"), format!("/api/stats?project={project}"));
        let listed: ThreadList = server.get_json(&format!("/api/projects/{project}/threads")).await;
        let messages: i64 = listed.threads.iter().map(|t| t.message_count).sum();
        let usage: wire::admin::AdminProjectList = server.get_json("/api/admin/projects").await;
        let spent = usage.projects.iter().find(|p| p.id == project).map(|p| p.input_tokens + p.output_tokens);
        let mut seen = Vec::new();
        for client in [&viewer, &editor, &server.client] {
            let (status, list) = read::<wire::TagList>(client, &server, &tags).await;
            assert_eq!(status, 200);
            assert_eq!(counted(&list.unwrap().tags), [("payroll", 2), ("urgent", 1)]);
            let (status, counts) = read::<wire::HistoryStats>(client, &server, &stats).await;
            assert_eq!(status, 200);
            let counts = counts.unwrap();
            assert_eq!(counted(&counts.top_tags), [("payroll", 2), ("urgent", 1)]);
            assert_eq!((counts.total_threads, counts.total_messages as i64), (2, messages));
            assert_eq!(counts.tokens_per_day.iter().map(|d| d.messages as i64).sum::<i64>(), messages);
            assert_eq!(Some(counts.input_tokens + counts.output_tokens), spent, "what its conversations spent");
            assert!(counts.tokens_per_day.iter().any(|d| d.output_tokens > 0));
            assert_eq!(counts.artifacts_by_type.iter().map(|t| t.count).sum::<u64>(), 1, "the author's document");
            seen.push(wire::HistoryStats { budget: None, ..counts });
        }
        assert!(seen.windows(2).all(|w| w[0] == w[1]), "the same for every member");
        // One's own counts are unchanged: the editor's two conversations, the outsider's one.
        let (_, mine) = read::<wire::TagList>(&editor, &server, "/api/tags").await;
        assert_eq!(counted(&mine.unwrap().tags), [("payroll", 1), ("private", 1)]);
        let (_, mine) = read::<wire::HistoryStats>(&editor, &server, "/api/stats").await;
        assert_eq!(mine.unwrap().total_threads, 2);
        // An outsider, and anyone asking of a project that does not exist, gets a missing project's 404.
        for path in [&tags, &stats] {
            expect(send(&outsider, &server, "GET", path, None).await, 404, "not_found", path).await;
            let missing = path.replace(&project.to_string(), &Uuid::new_v4().to_string());
            expect(send(&viewer, &server, "GET", &missing, None).await, 404, "not_found", &missing).await;
        }

        // A conversation moved out is no longer found or counted in it.
        assert_eq!(move_thread(&editor, &server, theirs, None).await.status(), 200);
        let found: wire::SearchResults = search(&viewer, "payslips").await.json().await.unwrap();
        assert!(found.results.is_empty(), "{:?}", found.results);
        let (_, list) = read::<wire::TagList>(&viewer, &server, &tags).await;
        assert_eq!(counted(&list.unwrap().tags), [("payroll", 1), ("urgent", 1)]);
    }
}

#[tokio::test]
async fn the_projects_requirements_view_gathers_every_conversations_ledger() {
    for (store, _guard) in every_store("projects_requirements").await {
        let Shared { server, project, thread, viewer, outsider, .. } = shared_conversation(store).await;
        let second = server.create_titled_thread("Rota").await;
        server.chat(second, "Nurses must swap shifts with each other.").await;
        server.wait_idle(second).await;
        assert_eq!(move_thread(&server.client, &server, second, Some(project)).await.status(), 200);
        let empty = server.create_titled_thread("Nothing yet").await;
        assert_eq!(move_thread(&server.client, &server, empty, Some(project)).await.status(), 200);

        let view: wire::ProjectLedger =
            get_json(&viewer, &server.url(&format!("/api/projects/{project}/requirements"))).await;
        let by_thread: Vec<(Uuid, String)> =
            view.conversations.iter().map(|c| (c.thread_id, c.title.clone())).collect();
        assert_eq!(by_thread.len(), 2, "{by_thread:?}");
        assert!(by_thread.iter().any(|(id, _)| *id == thread));
        assert!(by_thread.iter().any(|(id, title)| *id == second && title == "Rota"));
        // Each as the conversation's own ledger shows it.
        for conversation in &view.conversations {
            let own: wire::Ledger =
                server.get_json(&format!("/api/threads/{}/requirements", conversation.thread_id)).await;
            assert_eq!(own, conversation.ledger);
        }
        let path = format!("/api/projects/{project}/requirements");
        expect(send(&outsider, &server, "GET", &path, None).await, 404, "not_found", "an outsider").await;
    }
}

#[tokio::test]
async fn a_project_exports_with_its_members_activity_and_conversations() {
    for (store, _guard) in every_store("projects_export").await {
        let Shared { server, project, thread, viewer, outsider, .. } = shared_conversation(store).await;
        let response = send(&viewer, &server, "GET", &format!("/api/projects/{project}/export"), None).await;
        assert_eq!(response.status(), 200);
        assert!(response.headers()["content-disposition"].to_str().unwrap().contains("Payroll"));
        let export: Value = response.json().await.unwrap();
        assert_eq!(export["format"], "quire-project");
        assert_eq!(export["project"]["name"], "Payroll");
        assert_eq!(export["members"].as_array().unwrap().len(), 2);
        let kinds: Vec<&str> =
            export["activity"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, vec!["conversation_moved_in", "member_added", "project_created"]);
        let threads = export["threads"].as_array().unwrap();
        assert_eq!(threads.len(), 1);
        assert_eq!(threads[0]["thread"]["id"], thread.to_string());
        // The conversation as its own export gives it.
        let own: Value = server.get_json(&format!("/api/threads/{thread}/export")).await;
        assert_eq!(threads[0]["messages"], own["messages"]);
        assert_eq!(threads[0]["artifacts"], own["artifacts"]);
        let refused = send(&outsider, &server, "GET", &format!("/api/projects/{project}/export"), None).await;
        expect(refused, 404, "not_found", "an outsider's export").await;
    }
}

#[tokio::test]
async fn a_document_cites_a_requirement_of_another_conversation_of_the_project_and_follows_it() {
    use crate::common::{created, read_frames, ScriptedModel};
    for (store, _guard) in every_store("projects_citations").await {
        let model = ScriptedModel::new(vec![
            ScriptedModel::tool_use(
                "record_requirements",
                json!({"entries": [{"action": "add", "text": "Shifts must be 8 hours long."}]}),
            ),
            ScriptedModel::text(&["Noted."]),
        ]);
        let server = TestServer::with(store, model.clone()).await;
        let (viewer, _) = server.second_user("vera@example.com").await;
        let project: Project = server.post_json("/api/projects", &json!({"name": "Ward"})).await;
        let add = json!({"email": "vera@example.com", "role": "viewer"});
        let _: ProjectMember = server.post_json(&format!("/api/projects/{}/members", project.id), &add).await;
        let (rota, plans) = (server.create_titled_thread("Rota").await, server.create_titled_thread("Plans").await);
        for thread in [rota, plans] {
            assert_eq!(move_thread(&server.client, &server, thread, Some(project.id)).await.status(), 200);
        }
        server.chat(rota, "Shifts must be 8 hours long.").await;

        // A turn in Plans is shown Rota's requirement with the key it cites it by, and cites it.
        let key = wire::foreign_key(1, rota);
        let content = format!("# Staffing plan\n- Staff work 8-hour shifts [{key}]\n");
        model.push(ScriptedModel::tool_use(
            "save_artifact",
            json!({"artifact_type": "requirements_doc", "title": "Staffing plan", "content": content,
                   "requirements": [key]}),
        ));
        model.push(ScriptedModel::text(&["Saved."]));
        let doc = created(&server.chat(plans, "Write the staffing plan.").await)[0].clone();
        let system = model.requests.lock().unwrap()[2].system.clone();
        assert!(system.contains("Conversation \"Rota\":") && system.contains(&format!("- {key} (")), "{system}");
        assert_eq!(doc.requirements, std::slice::from_ref(&key));
        let rota_named =
            wire::CitedConversation { thread_id: rota, title: "Rota".into(), reference: wire::conversation_ref(rota) };
        assert_eq!(doc.cited_conversations, std::slice::from_ref(&rota_named));

        // Rota's ledger says who covers its requirement: Plans' document, named with its conversation.
        let ledger: wire::Ledger = get_json(&viewer, &server.url(&format!("/api/threads/{rota}/requirements"))).await;
        let covered = &ledger.requirements[0].covered_by;
        assert_eq!(covered.len(), 1, "{covered:?}");
        assert_eq!((covered[0].artifact_id, covered[0].current), (doc.id, true));
        assert_eq!(covered[0].conversation.as_ref().map(|c| c.thread_id), Some(plans));
        assert!(ledger.uncovered.is_empty());

        // A change in Rota marks the document in Plans out of date, for every member who reads it.
        let patch = json!({"text": "Shifts must be 12 hours long."});
        let path = format!("/api/threads/{rota}/requirements/R-1");
        assert_eq!(send(&server.client, &server, "PATCH", &path, Some(patch)).await.status(), 200);
        let seen: wire::Artifact = get_json(&viewer, &server.url(&format!("/api/artifacts/{}", doc.id))).await;
        assert_eq!(seen.out_of_date.len(), 1, "{:?}", seen.out_of_date);
        let mark = &seen.out_of_date[0];
        assert_eq!(mark.key, key);
        assert_eq!(
            (mark.was.as_str(), mark.now.as_str()),
            ("Shifts must be 8 hours long.", "Shifts must be 12 hours long.")
        );
        assert_eq!(mark.conversation.as_ref(), Some(&rota_named));
        let listed: wire::ArtifactList =
            get_json(&viewer, &server.url(&format!("/api/threads/{plans}/artifacts"))).await;
        assert_eq!(listed.artifacts[0].out_of_date, seen.out_of_date);
        let ledger: wire::Ledger = server.get_json(&format!("/api/threads/{rota}/requirements")).await;
        assert!(!ledger.requirements[0].covered_by[0].current);

        // "Update document" revises it with one version that reflects Rota's requirement as it stands.
        model.push(ScriptedModel::tool_use(
            "edit_artifact",
            json!({"artifact_id": doc.id, "requirements": [key],
                   "edits": [{"find": "8-hour", "replace": "12-hour"}]}),
        ));
        model.push(ScriptedModel::text(&["Updated."]));
        let response = send(&server.client, &server, "POST", &format!("/api/artifacts/{}/update", doc.id), None).await;
        assert_eq!(response.status(), 200);
        read_frames(response).await;
        server.wait_idle(plans).await;
        let instruction = model.sent(4);
        assert!(instruction.contains(&format!("{key} changed from")), "{instruction}");
        let updated: wire::Artifact = server.get_json(&format!("/api/artifacts/{}", doc.id)).await;
        assert_eq!(updated.version, 2, "exactly one new version");
        assert!(updated.content.contains("12-hour"));
        assert!(updated.out_of_date.is_empty(), "{:?}", updated.out_of_date);
        assert_eq!(updated.requirements, std::slice::from_ref(&key));

        // A key of no conversation of the project is an error for the model, and nothing is saved.
        let stranger = wire::foreign_key(1, Uuid::now_v7());
        model.push(ScriptedModel::tool_use(
            "save_artifact",
            json!({"artifact_type": "requirements_doc", "title": "Other", "content": "- x", "requirements": [stranger]}),
        ));
        model.push(ScriptedModel::text(&["Sorry."]));
        server.chat(plans, "Write another.").await;
        let results = model.requests.lock().unwrap().last().map(|r| format!("{:?}", r.messages)).unwrap_or_default();
        assert!(results.contains("among the requirements of this project's other conversations"), "{results}");
        let documents: wire::ArtifactList = server.get_json(&format!("/api/threads/{plans}/artifacts")).await;
        assert_eq!(documents.artifacts.len(), 1);

        // Once Rota leaves the project, Plans' document no longer shows (nor reads) its requirement.
        assert_eq!(move_thread(&server.client, &server, rota, None).await.status(), 200);
        let after: wire::Artifact = get_json(&viewer, &server.url(&format!("/api/artifacts/{}", doc.id))).await;
        assert!(after.requirements.is_empty() && after.cited_conversations.is_empty(), "{after:?}");
    }
}
