//! The requirements ledger: the model records requirements (`record_requirements`), documents cite them, a later
//! change or drop marks the documents that reflect them out of date, "Update document" revises them with one
//! targeted version, the ledger follows branches, and a person changes it by hand. With a scripted model and with
//! the built-in assistant; on SQLite and, with `scripts/with-postgres`, on PostgreSQL.

use serde_json::json;
use uuid::Uuid;

use crate::common::{created, every_store, read_frames, ScriptedModel, TestServer};
use wire::{
    Artifact, ErrorBody, Ledger, Requirement, RequirementKind, RequirementStatus, ThreadDetail, ThreadExport,
    VersionAuthor,
};

async fn ledger(server: &TestServer, thread: Uuid) -> Ledger {
    server.get_json(&format!("/api/threads/{thread}/requirements")).await
}

async fn patch(server: &TestServer, thread: Uuid, key: &str, body: serde_json::Value) -> reqwest::Response {
    let url = server.url(&format!("/api/threads/{thread}/requirements/{key}"));
    server.client.patch(url).json(&body).send().await.unwrap()
}

async fn update(server: &TestServer, artifact: Uuid) -> reqwest::Response {
    server.client.post(server.url(&format!("/api/artifacts/{artifact}/update"))).send().await.unwrap()
}

async fn document(server: &TestServer, id: Uuid) -> Artifact {
    server.get_json(&format!("/api/artifacts/{id}")).await
}

/// The person's messages of the path shown, oldest first.
async fn person_messages(server: &TestServer, thread: Uuid) -> Vec<Uuid> {
    let detail: ThreadDetail = server.get_json(&format!("/api/threads/{thread}")).await;
    detail.messages.iter().filter(|m| m.role == wire::Role::User).map(|m| m.id).collect()
}

/// The tool results of the `n`-th request the model was sent.
fn tool_results(model: &ScriptedModel, n: usize) -> String {
    let requests = model.requests.lock().unwrap();
    let parts = requests[n].messages.iter().flat_map(|m| m.parts.iter());
    parts
        .filter_map(|p| match p {
            llm::Part::ToolResult { content, .. } => Some(content.clone()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("|")
}

const STORIES: &str = "# Booking Stories\n\n- As a customer, I want to book a 30-minute slot. [R-1]\n\
                       - As a staff member, I want to see the day's bookings. [R-2]\n";

#[tokio::test]
async fn requirements_are_recorded_cited_marked_out_of_date_and_updated() {
    for (store, _guard) in every_store("ledger_story").await {
        let model = ScriptedModel::new(vec![
            ScriptedModel::tool_use(
                "record_requirements",
                json!({"entries": [
                    {"action": "add", "text": "Customers must book 30-minute slots.", "source": "M1"},
                    {"action": "add", "text": "Staff should see the day's bookings.", "kind": "functional"},
                    {"action": "add", "text": "Pages must load in under 2 seconds.", "kind": "quality"}
                ]}),
            ),
            ScriptedModel::tool_use(
                "save_artifact",
                json!({"artifact_type": "user_stories", "title": "Booking Stories", "content": STORIES,
                       "requirements": ["R-1"]}),
            ),
            ScriptedModel::text(&["Saved."]),
        ]);
        let server = TestServer::with(store, model.clone()).await;
        let thread = server.create_thread().await;
        let frames = server
            .chat(thread, "Customers must book 30-minute slots. Staff should see the day's bookings. Write stories.")
            .await;
        let doc = created(&frames)[0].clone();
        let first = person_messages(&server, thread).await[0];

        // The ledger: three requirements, keyed in order, from the message; the model saw the ledger and the
        // message's reference.
        let l = ledger(&server, thread).await;
        let keys: Vec<&str> = l.requirements.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, ["R-1", "R-2", "R-3"]);
        assert_eq!(l.requirements[2].kind, RequirementKind::Quality);
        assert!(l.requirements.iter().all(|r| r.status == RequirementStatus::Active && r.sources == [first]));
        let system = model.requests.lock().unwrap()[0].system.clone();
        assert!(system.contains("The next new requirement will be R-1."), "{system}");
        let system = model.requests.lock().unwrap()[1].system.clone();
        assert!(!system.contains("- R-1"), "the prompt is read once per turn");

        // The document cites R-1 (named) and R-2 (in its Markdown); R-3 is covered by nothing.
        let shown = document(&server, doc.id).await;
        assert_eq!(shown.requirements, ["R-1", "R-2"]);
        assert!(shown.out_of_date.is_empty());
        assert_eq!(l.uncovered, ["R-3"]);
        let coverage = &l.requirements[0].covered_by;
        assert_eq!((coverage.len(), coverage[0].artifact_id, coverage[0].current), (1, doc.id, true));

        // A correction changes R-1: the document is out of date, saying which requirement and which message.
        model.push(ScriptedModel::tool_use(
            "record_requirements",
            json!({"entries": [{"action": "change", "key": "R-1", "text": "Customers must book 45-minute slots."}]}),
        ));
        model.push(ScriptedModel::text(&["Noted."]));
        server.chat(thread, "Slots should be 45 minutes, not 30.").await;
        let second = person_messages(&server, thread).await[1];
        let system = model.requests.lock().unwrap()[3].system.clone();
        assert!(
            system.contains("- R-1 (functional, active, from M1, covered): Customers must book 30-minute slots."),
            "{system}"
        );
        assert!(system.contains("- R-3 (quality, active, from M1): Pages must load"), "{system}");
        let shown = document(&server, doc.id).await;
        assert_eq!(shown.out_of_date.len(), 1);
        let mark = &shown.out_of_date[0];
        assert_eq!((mark.key.as_str(), mark.status), ("R-1", RequirementStatus::Changed));
        assert_eq!(mark.was, "Customers must book 30-minute slots.");
        assert_eq!(mark.now, "Customers must book 45-minute slots.");
        assert_eq!(mark.changed_by, [second]);
        let listed: wire::ArtifactList = server.get_json(&format!("/api/threads/{thread}/artifacts")).await;
        assert_eq!(listed.artifacts[0].out_of_date, shown.out_of_date, "the list carries the marks too");
        let r1 = &ledger(&server, thread).await.requirements[0];
        assert_eq!(r1.status, RequirementStatus::Changed);
        assert_eq!(r1.sources, [first, second]);
        assert_eq!(r1.history.len(), 2);
        assert_eq!(r1.history[1].before.as_deref(), Some("Customers must book 30-minute slots."));
        assert_eq!(r1.history[1].message_id, Some(second));
        assert!(!r1.covered_by[0].current);

        // The person drops R-2 by hand: recorded as theirs, and the document is out of date for it too.
        let response = patch(&server, thread, "R-2", json!({"status": "dropped"})).await;
        assert_eq!(response.status(), 200);
        let r2: Requirement = response.json().await.unwrap();
        assert_eq!(r2.status, RequirementStatus::Dropped);
        assert_eq!(r2.history.last().unwrap().author, VersionAuthor::Person { user_id: server.user.id });
        assert_eq!(r2.history.last().unwrap().message_id, None);
        let marks: Vec<String> = document(&server, doc.id).await.out_of_date.into_iter().map(|o| o.key).collect();
        assert_eq!(marks, ["R-1", "R-2"]);

        // "Update document": one silent turn, one targeted version that reflects the ledger as it stands.
        model.push(ScriptedModel::tool_use(
            "edit_artifact",
            json!({"artifact_id": doc.id, "requirements": ["R-1", "R-2"], "edits": [
                {"find": "30-minute", "replace": "45-minute"},
                {"find": "- As a staff member, I want to see the day's bookings. [R-2]\n", "replace": ""}
            ]}),
        ));
        model.push(ScriptedModel::text(&["Updated."]));
        let response = update(&server, doc.id).await;
        assert_eq!(response.status(), 200);
        read_frames(response).await;
        server.wait_idle(thread).await;
        let instruction = model.sent(5);
        assert!(instruction.contains("R-1 changed from"), "{instruction}");
        assert!(instruction.contains("R-2 was dropped"), "{instruction}");
        let updated = document(&server, doc.id).await;
        assert_eq!(updated.version, 2, "exactly one new version");
        assert!(updated.content.contains("45-minute") && !updated.content.contains("day's bookings"));
        assert!(updated.out_of_date.is_empty(), "{:?}", updated.out_of_date);
        assert_eq!(updated.requirements, ["R-1"], "the dropped requirement left the document");
        let messages = person_messages(&server, thread).await;
        assert_eq!(messages.len(), 2, "an update saves no message");
        let response = update(&server, doc.id).await;
        assert_eq!(response.status(), 409, "an up-to-date document has nothing to update");

        // A restore of version 1 cites what version 1 cited, as it cited it: out of date again.
        let restore = server.url(&format!("/api/artifacts/{}/versions/1/restore", doc.id));
        assert_eq!(server.client.post(restore).send().await.unwrap().status(), 201);
        let marks: Vec<String> = document(&server, doc.id).await.out_of_date.into_iter().map(|o| o.key).collect();
        assert_eq!(marks, ["R-1", "R-2"]);

        // Exports a team can hand on: the ledger and the traceability matrix, as CSV and Markdown.
        let export = |query: &str| {
            let url = server.url(&format!("/api/threads/{thread}/requirements/export?{query}"));
            server.client.get(url).send()
        };
        let response = export("table=requirements&format=csv").await.unwrap();
        assert_eq!(response.status(), 200);
        assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/csv"));
        let csv = response.text().await.unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], "Key,Requirement,Kind,Status,Source,Recorded,Last changed,Covered by");
        assert!(lines[1].starts_with("R-1,Customers must book 45-minute slots.,Functional,Changed,"), "{csv}");
        assert!(lines[2].starts_with("R-2,Staff should see the day's bookings.,Functional,Dropped,"), "{csv}");
        assert!(lines[3].contains("Not covered"), "{csv}");
        let csv = export("table=traceability").await.unwrap().text().await.unwrap();
        let rows: Vec<csv::StringRecord> =
            csv::Reader::from_reader(csv.as_bytes()).records().map(Result::unwrap).collect();
        let cells: Vec<(&str, &str, &str)> = rows.iter().map(|r| (&r[0], &r[6], &r[8])).collect();
        assert_eq!(
            cells,
            [
                ("R-1", "1", "No: changed since"),
                ("R-1", "2", "Yes"),
                ("R-1", "3", "No: changed since"),
                ("R-2", "1", "No: changed since"),
                ("R-2", "3", "No: changed since")
            ],
            "{csv}"
        );
        let md = export("table=traceability&format=md").await.unwrap().text().await.unwrap();
        assert!(md.starts_with("# Traceability matrix: "), "{md}");
        assert!(md.contains("| R-1 | Customers must book 30-minute slots. | Changed |"), "{md}");
        assert_eq!(export("table=everything").await.unwrap().status(), 422);
        assert_eq!(export("format=xlsx").await.unwrap().status(), 422);
        let (other, _) = server.second_user("ledger-export@example.com").await;
        let url = server.url(&format!("/api/threads/{thread}/requirements/export"));
        assert_eq!(other.get(url).send().await.unwrap().status(), 404);

        // The JSON export carries the ledger and what every version cites; an import restores both, so the copy
        // shows the same ledger and the same marks.
        let exported: ThreadExport = server.get_json(&format!("/api/threads/{thread}/export")).await;
        assert_eq!(exported.requirements.len(), 3);
        assert_eq!(exported.requirements[0].revisions.len(), 2);
        let cited: Vec<(i64, Vec<&str>)> = exported
            .artifacts
            .iter()
            .map(|a| (a.version, a.requirements.iter().map(|c| c.key.as_str()).collect()))
            .collect();
        assert_eq!(cited, [(1, vec!["R-1", "R-2"]), (2, vec!["R-1"]), (3, vec!["R-1", "R-2"])]);
        let all: wire::AccountExport = server.get_json("/api/export").await;
        assert_eq!(all.threads[0].requirements, exported.requirements);
        let response = server.client.post(server.url("/api/threads/import")).json(&exported).send().await.unwrap();
        assert_eq!(response.status(), 201);
        let copy = response.json::<wire::ImportResult>().await.unwrap().threads[0].id;
        let (original, restored) = (ledger(&server, thread).await, ledger(&server, copy).await);
        // Each requirement's key, text, status, history (the text before each change), sources and coverage.
        let shape = |l: &Ledger| -> Vec<String> {
            l.requirements
                .iter()
                .map(|r| {
                    let befores: Vec<Option<&str>> = r.history.iter().map(|h| h.before.as_deref()).collect();
                    let (sources, covered) = (r.sources.len(), r.covered_by.len());
                    format!("{} {} {:?} {befores:?} {sources} {covered}", r.key, r.text, r.status)
                })
                .collect()
        };
        assert_eq!(shape(&restored), shape(&original));
        assert_eq!(restored.uncovered, original.uncovered);
        let copied: wire::ArtifactList = server.get_json(&format!("/api/threads/{copy}/artifacts")).await;
        let copied = &copied.artifacts[0];
        assert_eq!(copied.requirements, ["R-1", "R-2"]);
        let original_doc = document(&server, doc.id).await;
        assert_eq!(shown_marks(copied), shown_marks(&original_doc));
        assert_eq!(shown_marks(copied).len(), 2);
        let changed_by = copied.out_of_date[0].changed_by[0];
        assert_eq!(person_messages(&server, copy).await[1], changed_by, "the marks point at the copy's messages");

        // An export whose document cites a requirement that is not in it, or one requirement twice, is refused
        // and nothing is written.
        let threads = server.get_json::<wire::ThreadList>("/api/threads").await.threads.len();
        let mut broken = exported.clone();
        broken.artifacts[0].requirements[0].key = "R-9".into();
        let response = server.client.post(server.url("/api/threads/import")).json(&broken).send().await.unwrap();
        assert_eq!(response.status(), 422);
        let error: ErrorBody = response.json().await.unwrap();
        assert!(error.error.message.contains("not in the export"), "{error:?}");
        let mut broken = exported.clone();
        let twice = broken.artifacts[0].requirements[0].clone();
        broken.artifacts[0].requirements.push(twice);
        let response = server.client.post(server.url("/api/threads/import")).json(&broken).send().await.unwrap();
        assert_eq!(response.status(), 422);
        let mut broken = exported.clone();
        broken.requirements[1].revisions[0].text = " ".into();
        let response = server.client.post(server.url("/api/threads/import")).json(&broken).send().await.unwrap();
        assert_eq!(response.status(), 422);
        assert_eq!(server.get_json::<wire::ThreadList>("/api/threads").await.threads.len(), threads);
    }
}

/// A document's out-of-date marks: key, the text it reflects, the text now.
fn shown_marks(artifact: &Artifact) -> Vec<(&str, &str, &str)> {
    artifact.out_of_date.iter().map(|o| (o.key.as_str(), o.was.as_str(), o.now.as_str())).collect()
}

#[tokio::test]
async fn a_person_changes_the_ledger_within_limits_and_only_their_own() {
    for (store, _guard) in every_store("ledger_person").await {
        let model = ScriptedModel::new(vec![
            ScriptedModel::tool_use(
                "record_requirements",
                json!({"entries": [{"action": "add", "text": "Customers must book slots."}]}),
            ),
            ScriptedModel::text(&["Noted."]),
            // A model's entry naming a key that is not there comes back as an error naming the entry.
            ScriptedModel::tool_use(
                "record_requirements",
                json!({"entries": [{"action": "add", "text": "Staff see bookings."},
                                   {"action": "drop", "key": "R-7"}]}),
            ),
            ScriptedModel::text(&["Sorry."]),
        ]);
        let server = TestServer::with(store, model.clone()).await;
        let thread = server.create_thread().await;
        server.chat(thread, "Customers must book slots.").await;
        server.chat(thread, "Staff see bookings; drop R-7.").await;
        let results = tool_results(&model, 3);
        assert!(results.contains("Entry 2: there is no R-7"), "{results}");
        assert_eq!(ledger(&server, thread).await.requirements.len(), 1, "all entries or none");

        for (body, status) in [
            (json!({"text": "  "}), 422),
            (json!({"text": "x".repeat(2_001)}), 422),
            (json!({"status": "gone"}), 422),
            (json!({"text": "ok", "extra": 1}), 422),
        ] {
            let response = patch(&server, thread, "R-1", body.clone()).await;
            assert_eq!(response.status(), status, "{body}");
            let _: ErrorBody = response.json().await.unwrap();
        }
        assert_eq!(patch(&server, thread, "R-9", json!({"text": "No"})).await.status(), 404);
        assert_eq!(patch(&server, thread, "nonsense", json!({"text": "No"})).await.status(), 404);
        assert_eq!(ledger(&server, thread).await.requirements[0].history.len(), 1, "nothing refused was written");
        // An update that changes nothing records nothing.
        for body in [json!({}), json!({"text": null, "status": null}), json!({"text": "Customers must book slots."})] {
            let response = patch(&server, thread, "R-1", body.clone()).await;
            assert_eq!(response.status(), 200, "{body}");
        }
        assert_eq!(ledger(&server, thread).await.requirements[0].history.len(), 1, "nothing changed, nothing written");

        // A new text makes it changed; bringing back a dropped one restores it.
        let r: Requirement = patch(&server, thread, "R-1", json!({"text": "Customers must book up to 3 slots."}))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!((r.status, r.text.as_str()), (RequirementStatus::Changed, "Customers must book up to 3 slots."));
        patch(&server, thread, "R-1", json!({"status": "dropped"})).await;
        let r: Requirement = patch(&server, thread, "R-1", json!({"status": "active"})).await.json().await.unwrap();
        assert_eq!(r.status, RequirementStatus::Changed, "back, with its changed text");
        assert_eq!(r.history.len(), 4);

        // Another person sees and changes nothing of it.
        let (other, _) = server.second_user("ledger-other@example.com").await;
        let url = server.url(&format!("/api/threads/{thread}/requirements"));
        assert_eq!(other.get(&url).send().await.unwrap().status(), 404);
        let response = other.patch(format!("{url}/R-1")).json(&json!({"status": "dropped"})).send().await.unwrap();
        assert_eq!(response.status(), 404);
        assert_eq!(ledger(&server, thread).await.requirements[0].status, RequirementStatus::Changed);
    }
}

#[tokio::test]
async fn the_ledger_follows_the_branch_shown() {
    for (store, _guard) in every_store("ledger_branches").await {
        let model = ScriptedModel::new(vec![
            ScriptedModel::tool_use(
                "record_requirements",
                json!({"entries": [{"action": "add", "text": "Slots are 30 minutes."}]}),
            ),
            ScriptedModel::text(&["Noted."]),
            ScriptedModel::tool_use(
                "record_requirements",
                json!({"entries": [{"action": "add", "text": "Slots are 60 minutes."}]}),
            ),
            ScriptedModel::text(&["Noted."]),
        ]);
        let server = TestServer::with(store, model.clone()).await;
        let thread = server.create_thread().await;
        server.chat(thread, "Slots are 30 minutes.").await;
        let original = person_messages(&server, thread).await[0];
        let body = json!({"content": "Slots are 60 minutes.", "edit_of": original});
        read_frames(server.send_chat(thread, &body).await).await;
        server.wait_idle(thread).await;

        // The edited-away message's requirement is not on the new branch; keys are never reused.
        let l = ledger(&server, thread).await;
        let shown: Vec<(&str, &str)> = l.requirements.iter().map(|r| (r.key.as_str(), r.text.as_str())).collect();
        assert_eq!(shown, [("R-2", "Slots are 60 minutes.")]);
        assert_eq!(l.elsewhere, ["R-1"], "stated on the other branch only");

        // Switching back restores it.
        let url = server.url(&format!("/api/threads/{thread}/branch"));
        let response = server.client.post(url).json(&json!({"message_id": original})).send().await.unwrap();
        assert!(response.status().is_success(), "{}", response.status());
        let l = ledger(&server, thread).await;
        let shown: Vec<(&str, &str)> = l.requirements.iter().map(|r| (r.key.as_str(), r.text.as_str())).collect();
        assert_eq!(shown, [("R-1", "Slots are 30 minutes.")]);
        assert_eq!(l.elsewhere, ["R-2"]);
    }
}

#[tokio::test]
async fn the_builtin_assistant_keeps_the_ledger_and_updates_documents() {
    for (store, _guard) in every_store("ledger_builtin").await {
        let server = TestServer::builtin(store).await;
        let thread = server.create_thread().await;
        let frames = server
            .chat(
                thread,
                "We are building a salon booking app. Customers must be able to book 30-minute slots. Staff \
                 should see the day's bookings. Write user stories.",
            )
            .await;
        assert_eq!(created(&frames).len(), 1, "{}", crate::common::text_of(&frames));
        let doc = created(&frames)[0].clone();
        let l = ledger(&server, thread).await;
        let texts: Vec<&str> = l.requirements.iter().map(|r| r.text.as_str()).collect();
        assert_eq!(texts, ["Customers must be able to book 30-minute slots.", "Staff should see the day's bookings."]);
        assert_eq!(document(&server, doc.id).await.requirements, ["R-1", "R-2"]);
        assert!(l.uncovered.is_empty());

        // A correction changes the requirement and the document in the same answer: it stays current.
        let frames = server.chat(thread, "Slots should be 45 minutes, not 30.").await;
        let answer = crate::common::text_of(&frames);
        let l = ledger(&server, thread).await;
        assert_eq!(l.requirements[0].text, "Customers must be able to book 45-minute slots.");
        assert_eq!(l.requirements[0].status, RequirementStatus::Changed);
        let shown = document(&server, doc.id).await;
        assert_eq!(shown.version, 2, "{answer}\n{}", shown.content);
        assert!(shown.content.contains("45-minute") && !shown.content.contains("30-minute"), "{}", shown.content);
        assert!(shown.out_of_date.is_empty(), "{:?}", shown.out_of_date);

        // A change by hand marks it out of date; "Update document" brings it up to date in one version.
        let response =
            patch(&server, thread, "R-1", json!({"text": "Customers must be able to book 60-minute slots."}));
        assert_eq!(response.await.status(), 200);
        assert_eq!(document(&server, doc.id).await.out_of_date.len(), 1);
        let response = update(&server, doc.id).await;
        assert_eq!(response.status(), 200);
        read_frames(response).await;
        server.wait_idle(thread).await;
        let updated = document(&server, doc.id).await;
        assert_eq!(updated.version, 3, "exactly one new version");
        assert!(updated.content.contains("60-minute") && !updated.content.contains("45-minute"), "{}", updated.content);
        assert!(updated.out_of_date.is_empty(), "{:?}", updated.out_of_date);

        // A requirement no document covers; "Generate" to cover it writes a document of it alone.
        server.chat(thread, "Customers should get an email reminder the day before.").await;
        let l = ledger(&server, thread).await;
        assert_eq!(l.uncovered, ["R-3"]);
        let frames = crate::common::send(
            &server,
            thread,
            "Generate a requirements document covering R-3 from this conversation",
            true,
        )
        .await;
        let made = created(&frames);
        assert_eq!(made.len(), 1, "{}", crate::common::text_of(&frames));
        assert_eq!(made[0].requirements, ["R-3"]);
        assert!(
            made[0].content.contains("email reminder") && !made[0].content.contains("slots"),
            "{}",
            made[0].content
        );
        assert!(ledger(&server, thread).await.uncovered.is_empty());
    }
}
