//! Documents and the requests they fulfil.

use super::*;

stories!(artifacts, documents_answer_earlier_requests,);

async fn artifacts(db: Db) {
    let (s, u, t) = someones_thread(&db, "Docs").await;
    let question = say(s, u, t.id, "write the stories").await;
    let mut created = Vec::new();
    for (i, kind) in ArtifactType::ALL.into_iter().enumerate() {
        let doc = NewArtifact {
            artifact_type: kind,
            request_message_id: (i == 0).then_some(question.id),
            ..new_artifact(t.id, &format!("Doc {i}"), &format!("# Heading {i}\n\nbody"))
        };
        let doc = s.create_artifact(u, doc).await.unwrap();
        assert_eq!((doc.version, doc.artifact_type, doc.assistant_message_id), (1, kind, None));
        created.push(doc);
    }
    assert_eq!(created[0].request_message_id, Some(question.id));
    assert_eq!(s.list_artifacts(u, t.id).await.unwrap(), created, "oldest first, every type round-trips");
    assert_eq!(s.get_artifact(u, created[2].id).await.unwrap(), created[2]);
    assert_eq!(db.raw.count("artifact_versions", "artifact_id", created[0].id).await, 1);

    let reply = answer(s, u, t.id, "here they are").await;
    s.link_artifacts(u, &[created[0].id, created[1].id], reply.id).await.unwrap();
    s.link_artifacts(u, &[], reply.id).await.unwrap();
    let listed = s.list_artifacts(u, t.id).await.unwrap();
    assert_eq!(listed[0].assistant_message_id, Some(reply.id));
    assert_eq!(listed[1].assistant_message_id, Some(reply.id));
    assert_eq!(listed[2].assistant_message_id, None);

    // The requests the model no longer sees: the one a document was made from and the one that revised another.
    assert_eq!(fulfilled(s, u, t.id).await, vec![question.id]);
    let change = say(s, u, t.id, "shorten doc 1").await;
    let revision = store::ArtifactRevision {
        title: "Doc 1".into(),
        content: "shorter".into(),
        request_message_id: Some(change.id),
        answers: Vec::new(),
        author: wire::VersionAuthor::default(),
        base_version: None,
        cites: Vec::new(),
    };
    s.revise_artifact(u, created[1].id, revision).await.unwrap();
    let mut both = vec![question.id, change.id];
    both.sort();
    assert_eq!(fulfilled(s, u, t.id).await, both);
    assert!(s.fulfilled_requests(new_user(s).await, t.id).await.unwrap().is_empty(), "another user sees none");

    s.delete_artifact(u, created[0].id).await.unwrap();
    assert_eq!(fulfilled(s, u, t.id).await, vec![change.id], "a deleted document frees its request");
    assert_not_found(s.get_artifact(u, created[0].id).await);
    assert_not_found(s.delete_artifact(u, created[0].id).await);
    assert_eq!(s.list_artifacts(u, t.id).await.unwrap().len(), created.len() - 1);
    assert_eq!(db.raw.count("artifact_versions", "artifact_id", created[0].id).await, 0);

    // A deleted answer unlinks its documents instead of taking them along.
    s.delete_message(u, t.id, reply.id, None).await.unwrap();
    assert_eq!(s.get_artifact(u, created[1].id).await.unwrap().assistant_message_id, None);
    assert_not_found(s.create_artifact(u, new_artifact(Uuid::now_v7(), "x", "y")).await);
}

/// The requests fulfilled in a thread, sorted.
async fn fulfilled(store: &DynStore, user: Uuid, thread: Uuid) -> Vec<Uuid> {
    let mut ids: Vec<Uuid> =
        store.fulfilled_requests(user, thread).await.unwrap().into_iter().map(|f| f.request).collect();
    ids.sort();
    ids
}

fn sorted(mut ids: Vec<Uuid>) -> Vec<Uuid> {
    ids.sort();
    ids
}

/// A document answers earlier requests besides its own turn's, when it is made and when it is revised: they
/// count as fulfilled until it is deleted. Answers, and messages of another thread or person, are ignored.
async fn documents_answer_earlier_requests(db: Db) {
    let (s, u, t) = someones_thread(&db, "Answers").await;
    let failed = say(s, u, t.id, "Generate a BRD").await;
    let apology = answer(s, u, t.id, "Something went wrong.").await;
    let later = say(s, u, t.id, "Generate a BRD, please").await;
    let other_thread = s.create_thread(u, "Other", &[]).await.unwrap();
    let elsewhere = say(s, u, other_thread.id, "Generate a BRD").await;
    let intruder = new_user(s).await;
    let their_thread = s.create_thread(intruder, "Theirs", &[]).await.unwrap();
    let theirs = say(s, intruder, their_thread.id, "Generate a BRD").await;

    let doc = NewArtifact {
        artifact_type: ArtifactType::BusinessRequirements,
        request_message_id: Some(later.id),
        answers: vec![failed.id, apology.id, elsewhere.id, theirs.id],
        ..new_artifact(t.id, "BRD", "# BRD")
    };
    let doc = s.create_artifact(u, doc).await.unwrap();
    assert_eq!(fulfilled(s, u, t.id).await, sorted(vec![failed.id, later.id]));
    assert_eq!(db.raw.count("artifact_requests", "artifact_id", doc.id).await, 1, "only the request of its thread");
    assert!(s.fulfilled_requests(u, other_thread.id).await.unwrap().is_empty());
    assert!(s.fulfilled_requests(intruder, their_thread.id).await.unwrap().is_empty());

    // A version answers the requests it is given too; one answered already is kept once.
    let again = say(s, u, t.id, "Write the BRD again").await;
    let revision = store::ArtifactRevision {
        title: "BRD".into(),
        content: "# BRD, second".into(),
        request_message_id: None,
        answers: vec![again.id, failed.id],
        author: wire::VersionAuthor::default(),
        base_version: None,
        cites: Vec::new(),
    };
    assert_eq!(s.revise_artifact(u, doc.id, revision).await.unwrap().version, 2);
    assert_eq!(fulfilled(s, u, t.id).await, sorted(vec![failed.id, later.id, again.id]));
    assert_eq!(db.raw.count("artifact_requests", "artifact_id", doc.id).await, 2);

    // Deleting a request it answers leaves the rest; deleting the document brings every one back.
    s.delete_message(u, t.id, again.id, None).await.unwrap();
    assert_eq!(db.raw.count("artifact_requests", "artifact_id", doc.id).await, 1);
    s.delete_artifact(u, doc.id).await.unwrap();
    assert!(s.fulfilled_requests(u, t.id).await.unwrap().is_empty(), "every request is open again");
    assert_eq!(db.raw.count("artifact_requests", "artifact_id", doc.id).await, 0);
}
