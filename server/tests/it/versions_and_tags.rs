//! Bringing back an earlier version of a document, the diff between two versions, and the list of tags with
//! their counts: owner-only (another account's document is a 404 and stays as it was), bad input answered
//! clearly. Run on SQLite and, when `QUIRE_TEST_POSTGRES_URL` is set, on PostgreSQL too.

use crate::common::{every_store, get_json, new_artifact, TestServer};
use store::ArtifactRevision;
use tempfile::TempDir;
use uuid::Uuid;
use wire::{Artifact, ArtifactType, ArtifactVersionList, DiffOp, ErrorBody, TagList, VersionDiff};

/// A server on every configured backend (SQLite always).
async fn servers(test: &str) -> Vec<(TestServer, Option<TempDir>)> {
    let mut servers = Vec::new();
    for (store, dir) in every_store(test).await {
        servers.push((TestServer::builtin(store).await, dir));
    }
    servers
}

/// A document of the server's user with three versions: "One", "Two", "Three".
async fn document_with_versions(server: &TestServer) -> Uuid {
    let thread = server.create_thread().await;
    let store = &server.state.store;
    let new = new_artifact(thread, ArtifactType::RequirementsDoc, "Plan", "# Plan\n\nShip in May.\nOne.");
    let id = store.create_artifact(server.user.id, new).await.unwrap().id;
    for (title, content) in [("Plan", "# Plan\n\nShip in June.\nTwo."), ("Plan B", "# Plan B\n\nShip in July.\nThree.")]
    {
        let revision = ArtifactRevision {
            title: title.into(),
            content: content.into(),
            request_message_id: None,
            answers: Vec::new(),
            author: wire::VersionAuthor::default(),
            base_version: None,
            cites: Vec::new(),
        };
        store.revise_artifact(server.user.id, id, revision).await.unwrap();
    }
    id
}

#[tokio::test]
async fn restoring_a_version_saves_it_again_as_the_newest() {
    for (server, _dir) in servers("restore").await {
        let id = document_with_versions(&server).await;
        let response = server.client.post(server.url(&format!("/api/artifacts/{id}/versions/1/restore"))).send().await;
        let response = response.unwrap();
        assert_eq!(response.status(), 201);
        let restored: Artifact = response.json().await.unwrap();
        assert_eq!((restored.version, restored.title.as_str()), (4, "Plan"));
        assert!(restored.content.contains("Ship in May."), "{}", restored.content);

        let versions: ArtifactVersionList = server.get_json(&format!("/api/artifacts/{id}/versions")).await;
        let kept: Vec<(i64, &str)> = versions.versions.iter().map(|v| (v.version, v.title.as_str())).collect();
        assert_eq!(kept, [(1, "Plan"), (2, "Plan"), (3, "Plan B"), (4, "Plan")], "the versions between stay");
        assert_eq!(versions.versions[3].content, versions.versions[0].content);

        // The current version, a version that does not exist, a number that is not one.
        let current = server.client.post(server.url(&format!("/api/artifacts/{id}/versions/4/restore"))).send().await;
        let current = current.unwrap();
        assert_eq!(current.status(), 409);
        let body: ErrorBody = current.json().await.unwrap();
        assert!(body.error.message.contains("already the current version"), "{}", body.error.message);
        let missing = server.client.post(server.url(&format!("/api/artifacts/{id}/versions/9/restore"))).send().await;
        assert_eq!(missing.unwrap().status(), 404);
        let garbled = server.client.post(server.url(&format!("/api/artifacts/{id}/versions/two/restore"))).send().await;
        assert_eq!(garbled.unwrap().status(), 400);
        let unknown = Uuid::new_v4();
        let nothing =
            server.client.post(server.url(&format!("/api/artifacts/{unknown}/versions/1/restore"))).send().await;
        assert_eq!(nothing.unwrap().status(), 404);
        let anonymous = server.anonymous().post(server.url(&format!("/api/artifacts/{id}/versions/1/restore"))).send();
        assert_eq!(anonymous.await.unwrap().status(), 401);
    }
}

#[tokio::test]
async fn a_diff_shows_the_lines_changed_between_two_versions() {
    for (server, _dir) in servers("diff").await {
        let id = document_with_versions(&server).await;
        let diff: VersionDiff = server.get_json(&format!("/api/artifacts/{id}/diff?from=1&to=3")).await;
        assert_eq!((diff.from, diff.to), (1, 3));
        let changed =
            |op: DiffOp| diff.lines.iter().filter(|l| l.op == op).map(|l| l.text.as_str()).collect::<Vec<_>>();
        assert_eq!(changed(DiffOp::Delete), ["# Plan", "Ship in May.", "One."]);
        assert_eq!(changed(DiffOp::Insert), ["# Plan B", "Ship in July.", "Three."]);
        assert_eq!(changed(DiffOp::Equal), [""], "the blank line is common");

        // Backwards works too: the roles swap.
        let back: VersionDiff = server.get_json(&format!("/api/artifacts/{id}/diff?from=3&to=1")).await;
        assert!(back.lines.iter().any(|l| l.op == DiffOp::Insert && l.text == "Ship in May."));

        for (query, status) in [("from=1&to=8", 404), ("from=1", 400), ("from=a&to=2", 400), ("from=1&to=2&x=1", 400)] {
            let response = server.client.get(server.url(&format!("/api/artifacts/{id}/diff?{query}"))).send().await;
            let response = response.unwrap();
            assert_eq!(response.status(), status, "{query}");
            let body: ErrorBody = response.json().await.unwrap();
            assert!(!body.error.message.is_empty());
        }
    }
}

#[tokio::test]
async fn another_accounts_versions_cannot_be_restored_or_compared() {
    for (server, _dir) in servers("versions_isolation").await {
        let id = document_with_versions(&server).await;
        let (other, _) = server.second_user("other@example.com").await;
        let restore = other.post(server.url(&format!("/api/artifacts/{id}/versions/1/restore"))).send().await;
        assert_eq!(restore.unwrap().status(), 404);
        let diff = other.get(server.url(&format!("/api/artifacts/{id}/diff?from=1&to=2"))).send().await;
        assert_eq!(diff.unwrap().status(), 404);
        let still = server.state.store.get_artifact(server.user.id, id).await.unwrap();
        assert_eq!((still.version, still.title.as_str()), (3, "Plan B"), "nothing changed");
    }
}

#[tokio::test]
async fn the_tag_list_counts_each_tag_over_the_accounts_own_conversations() {
    for (server, _dir) in servers("tags").await {
        let tagged = [vec!["billing", "urgent"], vec!["billing"], vec!["ops", "billing"], vec![]];
        for tags in &tagged {
            let body = serde_json::json!({ "tags": tags });
            let response = server.client.post(server.url("/api/threads")).json(&body).send().await.unwrap();
            assert_eq!(response.status(), 201);
        }
        // An archived conversation's tags count too: the list filters the archive as well.
        let archived = server.create_thread().await;
        let body = serde_json::json!({ "tags": ["ops"], "archived": true });
        assert_eq!(server.patch_thread(archived, &body).await.status(), 200);
        let (other, _) = server.second_user("tagger@example.com").await;
        let response = other.post(server.url("/api/threads")).json(&serde_json::json!({"tags": ["secret", "billing"]}));
        assert_eq!(response.send().await.unwrap().status(), 201);

        let list: TagList = server.get_json("/api/tags").await;
        let counts: Vec<(&str, u64)> = list.tags.iter().map(|t| (t.tag.as_str(), t.count)).collect();
        assert_eq!(counts, [("billing", 3), ("ops", 2), ("urgent", 1)]);
        let theirs: TagList = get_json(&other, &server.url("/api/tags")).await;
        let counts: Vec<(&str, u64)> = theirs.tags.iter().map(|t| (t.tag.as_str(), t.count)).collect();
        assert_eq!(counts, [("billing", 1), ("secret", 1)]);
        assert_eq!(server.anonymous().get(server.url("/api/tags")).send().await.unwrap().status(), 401);
    }
}
