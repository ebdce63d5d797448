//! Team projects in the store: random sequences of membership changes and accesses, checked against a model of
//! who holds which role. A non-member never reads, a viewer never writes, an owner is always left, and every
//! refusal is the one the model expects (`NotFound` to a non-member, `Forbidden` to a lower role).

use super::*;
use store::ProjectPatch;
use wire::ProjectRole;

/// Cases of the property: each is a few dozen round trips to a real database.
const CASES: u32 = 16;

/// People in a case: person 0 makes the project.
const PEOPLE: usize = 4;

#[derive(Debug, Clone)]
enum Step {
    Add {
        by: usize,
        who: usize,
        role: ProjectRole,
    },
    Change {
        by: usize,
        who: usize,
        role: ProjectRole,
    },
    Remove {
        by: usize,
        who: usize,
    },
    /// Reads the project, its members, its activity and its conversations.
    Read {
        by: usize,
    },
    /// Renames the project (owners).
    Rename {
        by: usize,
    },
    /// Moves their own conversation into the project (editors) and out again.
    MoveIn {
        by: usize,
    },
}

fn role() -> impl Strategy<Value = ProjectRole> {
    prop::sample::select(ProjectRole::ALL.to_vec())
}

fn step() -> impl Strategy<Value = Step> {
    let person = 0..PEOPLE;
    prop_oneof![
        3 => (person.clone(), person.clone(), role()).prop_map(|(by, who, role)| Step::Add { by, who, role }),
        2 => (person.clone(), person.clone(), role()).prop_map(|(by, who, role)| Step::Change { by, who, role }),
        2 => (person.clone(), person.clone()).prop_map(|(by, who)| Step::Remove { by, who }),
        2 => person.clone().prop_map(|by| Step::Read { by }),
        1 => person.clone().prop_map(|by| Step::Rename { by }),
        1 => person.prop_map(|by| Step::MoveIn { by }),
    ]
}

/// What the model says a step must end in: done, or refused this way.
#[derive(Debug, PartialEq)]
enum Expect {
    Done,
    NotFound,
    Forbidden,
    Conflict,
}

fn outcome<T: Debug>(result: Result<T, StoreError>) -> Expect {
    match result {
        Ok(_) => Expect::Done,
        Err(StoreError::NotFound) => Expect::NotFound,
        Err(StoreError::Forbidden(_)) => Expect::Forbidden,
        Err(StoreError::Conflict(_)) => Expect::Conflict,
        Err(other) => panic!("unexpected error {other:?}"),
    }
}

/// Who may do what: `None` for a non-member.
fn needs(roles: &HashMap<usize, ProjectRole>, by: usize, least: ProjectRole) -> Option<Expect> {
    match roles.get(&by) {
        None => Some(Expect::NotFound),
        Some(role) if *role < least => Some(Expect::Forbidden),
        Some(_) => None,
    }
}

fn owners(roles: &HashMap<usize, ProjectRole>) -> usize {
    roles.values().filter(|r| **r == ProjectRole::Owner).count()
}

/// (P) Random membership changes and accesses never let a non-member read or a viewer write, and leave an owner.
fn membership_decides_every_access(backend: Backend, test: &str) {
    let strategy = prop::collection::vec(step(), 1..24);
    check_property(backend, test, CASES, strategy, |db, steps| async move {
        let s = &db.store;
        let mut people = Vec::new();
        let mut emails = Vec::new();
        for n in 0..PEOPLE {
            let email = format!("p{n}-{}@example.test", Uuid::new_v4().simple());
            let user = s
                .create_user(NewUser {
                    email: email.clone(),
                    password_hash: "hash".into(),
                    display_name: String::new(),
                })
                .await
                .unwrap();
            people.push(user.id);
            emails.push(email);
        }
        let own_threads: Vec<Uuid> = {
            let mut ids = Vec::new();
            for person in &people {
                ids.push(s.create_thread(*person, "Mine", &[]).await.unwrap().id);
            }
            ids
        };
        let project = s.create_project(people[0], "Team", "", "").await.unwrap();
        let p = project.id;
        let mut roles: HashMap<usize, ProjectRole> = HashMap::from([(0, ProjectRole::Owner)]);

        for step in &steps {
            match *step {
                Step::Add { by, who, role } => {
                    let got = outcome(s.add_member(people[by], p, &emails[who].to_uppercase(), role, 500).await);
                    let want = needs(&roles, by, ProjectRole::Owner).unwrap_or(if roles.contains_key(&who) {
                        Expect::Conflict
                    } else {
                        Expect::Done
                    });
                    assert_eq!(got, want, "{step:?} with {roles:?}");
                    if want == Expect::Done {
                        roles.insert(who, role);
                    }
                }
                Step::Change { by, who, role } => {
                    let got = outcome(s.change_role(people[by], p, people[who], role).await);
                    let want = needs(&roles, by, ProjectRole::Owner).unwrap_or(match roles.get(&who) {
                        None => Expect::NotFound,
                        Some(ProjectRole::Owner) if role != ProjectRole::Owner && owners(&roles) == 1 => {
                            Expect::Conflict
                        }
                        Some(_) => Expect::Done,
                    });
                    assert_eq!(got, want, "{step:?} with {roles:?}");
                    if want == Expect::Done {
                        roles.insert(who, role);
                    }
                }
                Step::Remove { by, who } => {
                    let got = outcome(s.remove_member(people[by], p, people[who]).await);
                    let least = if by == who { ProjectRole::Viewer } else { ProjectRole::Owner };
                    let want = needs(&roles, by, least).unwrap_or(match roles.get(&who) {
                        None => Expect::NotFound,
                        Some(ProjectRole::Owner) if owners(&roles) == 1 => Expect::Conflict,
                        Some(_) => Expect::Done,
                    });
                    assert_eq!(got, want, "{step:?} with {roles:?}");
                    if want == Expect::Done {
                        roles.remove(&who);
                    }
                }
                Step::Read { by } => {
                    let user = people[by];
                    let want = if roles.contains_key(&by) { Expect::Done } else { Expect::NotFound };
                    assert_eq!(outcome(s.get_project(user, p).await), want, "{step:?} with {roles:?}");
                    assert_eq!(outcome(s.project_members(user, p).await), want);
                    assert_eq!(outcome(s.project_activity(user, p, None, 50).await), want);
                    assert_eq!(outcome(s.project_threads(user, p).await), want);
                    let listed = s.list_projects(user).await.unwrap();
                    assert_eq!(
                        listed.iter().map(|x| (x.id, x.role)).collect::<Vec<_>>(),
                        match roles.get(&by) {
                            Some(role) => vec![(p, *role)],
                            None => vec![],
                        }
                    );
                    if let Some(role) = roles.get(&by) {
                        let members = s.project_members(user, p).await.unwrap();
                        let mut seen: Vec<(Uuid, ProjectRole)> = members.iter().map(|m| (m.user_id, m.role)).collect();
                        let mut want: Vec<(Uuid, ProjectRole)> = roles.iter().map(|(n, r)| (people[*n], *r)).collect();
                        seen.sort();
                        want.sort();
                        assert_eq!(seen, want);
                        assert_eq!(s.get_project(user, p).await.unwrap().role, *role);
                    }
                }
                Step::Rename { by } => {
                    let patch = ProjectPatch { name: Some(format!("Team {by}")), ..Default::default() };
                    let got = outcome(s.update_project(people[by], p, &patch).await);
                    assert_eq!(
                        got,
                        needs(&roles, by, ProjectRole::Owner).unwrap_or(Expect::Done),
                        "{step:?} with {roles:?}"
                    );
                }
                Step::MoveIn { by } => {
                    let (user, thread) = (people[by], own_threads[by]);
                    let into = ThreadPatch { project: Some(Some(p)), ..Default::default() };
                    let got = outcome(s.update_thread(user, thread, &into).await);
                    let want = needs(&roles, by, ProjectRole::Editor).unwrap_or(Expect::Done);
                    assert_eq!(got, want, "{step:?} with {roles:?}");
                    let listed = s.get_thread(user, thread).await.unwrap().project_id;
                    assert_eq!(listed, (want == Expect::Done).then_some(p));
                    let out = ThreadPatch { project: Some(None), ..Default::default() };
                    assert_eq!(s.update_thread(user, thread, &out).await.unwrap().project_id, None);
                }
            }
            assert!(owners(&roles) >= 1);
        }
        // Everything done is in the log, newest first, and every member reads it alike.
        let Some((&member, _)) = roles.iter().next() else { panic!("a project keeps an owner") };
        let log = s.project_activity(people[member], p, None, 200).await.unwrap();
        assert_eq!(log.last().map(|entry| entry.kind), Some(wire::ActivityKind::ProjectCreated));
        assert!(log.windows(2).all(|w| w[0].id > w[1].id));
    });
}

properties!(membership_decides_every_access);

/// Deleting a project leaves its conversations with their authors; deleting an account leaves the projects it
/// was in.
async fn a_deleted_project_leaves_its_conversations(db: Db) {
    let s = &db.store;
    let (ann, bob) = (new_user(s).await, new_user(s).await);
    let project = s.create_project(ann, "Launch", "The spring launch", "").await.unwrap();
    let bob_email = s.user_by_id(bob).await.unwrap().email;
    s.add_member(ann, project.id, &bob_email, ProjectRole::Editor, 500).await.unwrap();
    let thread = s.create_thread(bob, "Bob's notes", &[]).await.unwrap();
    let into = ThreadPatch { project: Some(Some(project.id)), ..Default::default() };
    assert_eq!(s.update_thread(bob, thread.id, &into).await.unwrap().project_id, Some(project.id));
    let listed = s.project_threads(ann, project.id).await.unwrap();
    assert_eq!(listed.iter().map(|t| t.id).collect::<Vec<_>>(), vec![thread.id]);
    assert_eq!(s.get_project(ann, project.id).await.unwrap().conversation_count, 1);

    assert!(matches!(s.delete_project(bob, project.id).await, Err(StoreError::Forbidden(_))));
    s.delete_project(ann, project.id).await.unwrap();
    assert!(matches!(s.get_project(ann, project.id).await, Err(StoreError::NotFound)));
    assert_eq!(s.get_thread(bob, thread.id).await.unwrap().project_id, None);
    assert_eq!(db.raw.int("select count(*) from project_members where project_id = ?", project.id).await, 0);
    assert_eq!(db.raw.int("select count(*) from project_activity where project_id = ?", project.id).await, 0);

    // The only owner's account goes: the editor who was there longest becomes the owner, before the viewer.
    let (cat, dan) = (new_user(s).await, new_user(s).await);
    let team = s.create_project(ann, "Team", "", "").await.unwrap();
    let cat_email = s.user_by_id(cat).await.unwrap().email;
    let dan_email = s.user_by_id(dan).await.unwrap().email;
    s.add_member(ann, team.id, &dan_email, ProjectRole::Viewer, 500).await.unwrap();
    s.add_member(ann, team.id, &bob_email, ProjectRole::Editor, 500).await.unwrap();
    s.add_member(ann, team.id, &cat_email, ProjectRole::Editor, 500).await.unwrap();
    let alone = s.create_project(ann, "Alone", "", "").await.unwrap();
    s.delete_user(ann).await.unwrap();
    let roles: HashMap<Uuid, ProjectRole> =
        s.project_members(dan, team.id).await.unwrap().into_iter().map(|m| (m.user_id, m.role)).collect();
    assert_eq!(
        roles,
        HashMap::from([(bob, ProjectRole::Owner), (cat, ProjectRole::Editor), (dan, ProjectRole::Viewer)])
    );
    assert_eq!(db.raw.int("select count(*) from projects where id = ?", alone.id).await, 0);
}

stories!(a_deleted_project_leaves_its_conversations);
