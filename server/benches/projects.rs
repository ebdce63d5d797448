//! Team projects at size: a member of 20 projects of 1,000 conversations each (written by ten other people, who
//! are members too), with 1,000 conversations of their own. Measured (printed as p50 / p95 over 200 runs each):
//!
//! - `projects/sidebar/<backend>`: what the sidebar reads, the member's first page of conversations
//!   (`list_threads`) and their projects (`list_projects`).
//! - `projects/page/<backend>`: a project's page of conversations (`project_threads`, the newest 200).
//! - `projects/search/<backend>`: a page of the project's search for a word in one conversation in ten
//!   (`search_project`), and for one in every conversation.
//!
//! SQLite always; PostgreSQL too when `QUIRE_TEST_POSTGRES_URL` names a database (`scripts/with-postgres`).
//!
//!     cargo bench --profile server-release -p server --bench projects
//!     scripts/with-postgres cargo bench --profile server-release -p server --bench projects
//!
//! `cargo test -p server --benches` runs it once on 2 projects of 10 conversations (the smoke run).

#[path = "support/mode.rs"]
mod mode;
#[path = "support/stores.rs"]
mod stores;

use std::future::Future;
use std::time::{Duration, Instant};

use store::{DynStore, NewMessage, ThreadPatch, ThreadQuery};
use uuid::Uuid;
use wire::{MessageStatus, ProjectRole, Role, Usage};

/// Projects, conversations per project, and the colleagues who write them.
fn sizes() -> (usize, usize, usize) {
    if mode::smoke_run() {
        (2, 10, 2)
    } else {
        (20, 1_000, 10)
    }
}

const RUNS: usize = 200;

/// The member, and one of their projects.
async fn seeded(store: &DynStore) -> (Uuid, Uuid) {
    let (projects, per_project, colleagues) = sizes();
    let member = stores::person(store).await;
    let mut writers = Vec::new();
    for _ in 0..colleagues {
        writers.push(stores::person(store).await);
    }
    for i in 0..per_project {
        store.create_thread(member, &format!("Own {i}"), &[]).await.expect("own conversation");
    }
    let mut first = None;
    for p in 0..projects {
        let lead = writers[p % writers.len()];
        let project = store.create_project(lead, &format!("Project {p}"), "", "").await.expect("project").id;
        first.get_or_insert(project);
        for (w, writer) in writers.iter().enumerate() {
            if *writer != lead {
                let email = store.user_by_id(*writer).await.expect("writer").email;
                let role = if w % 2 == 0 { ProjectRole::Editor } else { ProjectRole::Viewer };
                store.add_member(lead, project, &email, role, 500).await.expect("member");
            }
        }
        let email = store.user_by_id(member).await.expect("member").email;
        store.add_member(lead, project, &email, ProjectRole::Viewer, 500).await.expect("the member");
        for i in 0..per_project {
            // Each conversation is its lead's, moved in; one in ten says the rarer word.
            let thread = store.create_thread(lead, &format!("Conversation {p}-{i}"), &[]).await.expect("thread").id;
            let said = if i % 10 == 0 { "Invoices need a purchase order." } else { "Invoices go out monthly." };
            let message = NewMessage {
                thread_id: thread,
                role: Role::User,
                content: said.into(),
                status: MessageStatus::Complete,
                usage: Usage::default(),
                model: None,
                quote: None,
                author: None,
            };
            store.append_message(lead, message).await.expect("message");
            let patch = ThreadPatch { project: Some(Some(project)), ..Default::default() };
            store.update_thread(lead, thread, &patch).await.expect("moved in");
        }
    }
    (member, first.expect("a project"))
}

/// p50 and p95 of `RUNS` runs of `work`.
async fn percentiles<F, Fut>(mut work: F) -> (Duration, Duration)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    let runs = if mode::smoke_run() { 3 } else { RUNS };
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        work().await;
        times.push(started.elapsed());
    }
    times.sort();
    (times[times.len() / 2], times[(times.len() * 95 / 100).min(times.len() - 1)])
}

fn print(name: &str, (p50, p95): (Duration, Duration)) {
    println!("{name}: p50 {:.2} ms, p95 {:.2} ms", p50.as_secs_f64() * 1e3, p95.as_secs_f64() * 1e3);
}

fn main() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    for (backend, store) in stores::stores(&rt, &dir, "projects") {
        let seeding = Instant::now();
        let (member, project) = rt.block_on(seeded(&store));
        println!("projects/{backend}: seeded in {:.1} s", seeding.elapsed().as_secs_f64());
        if backend == "postgres" {
            // What autovacuum does after this many inserts (the visibility map that index-only scans need, and
            // the planner's statistics), done now rather than at some moment of the measurement.
            let url = std::env::var("QUIRE_TEST_POSTGRES_URL").expect("the PostgreSQL store's address");
            rt.block_on(async {
                let pool = sqlx::PgPool::connect(&url).await.expect("postgres");
                sqlx::query("vacuum analyze").execute(&pool).await.expect("vacuum");
            });
        }
        rt.block_on(async {
            let first_page = ThreadQuery::default();
            let sidebar = percentiles(|| async {
                let (page, projects) =
                    tokio::join!(store.list_threads(member, &first_page), store.list_projects(member));
                assert!(!page.expect("page").threads.is_empty());
                assert_eq!(projects.expect("projects").len(), sizes().0);
            })
            .await;
            print(&format!("projects/sidebar/{backend}"), sidebar);
            let page = percentiles(|| async {
                let threads = store.project_threads(member, project).await.expect("project's conversations");
                assert!(!threads.is_empty());
            })
            .await;
            print(&format!("projects/page/{backend}"), page);
            for word in ["purchase", "invoices"] {
                let search = percentiles(|| async {
                    let found = store.search_project(member, project, word, 20, 0).await.expect("search");
                    assert!(!found.hits.is_empty(), "{word}");
                })
                .await;
                print(&format!("projects/search/{backend}/{word}"), search);
            }
        });
    }
}
