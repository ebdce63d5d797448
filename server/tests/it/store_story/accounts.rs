//! Accounts and sessions.

use super::*;

stories!(users, sessions,);

async fn users(db: Db) {
    let s = &db.store;
    let alice = s
        .create_user(NewUser {
            email: "Alice@Example.com".into(),
            password_hash: "argon2-hash".into(),
            display_name: "Alice".into(),
        })
        .await
        .unwrap();
    assert_eq!(alice.email, "Alice@Example.com", "the address is kept as written");
    assert_eq!(alice.display_name, "Alice");

    let duplicate = s
        .create_user(NewUser { email: "alice@EXAMPLE.com".into(), password_hash: "x".into(), display_name: "".into() })
        .await;
    assert_conflict(duplicate);

    for email in ["alice@example.com", "ALICE@EXAMPLE.COM", "Alice@Example.com"] {
        assert_eq!(s.user_by_email(email).await.unwrap(), alice, "{email}");
    }
    assert_eq!(s.user_by_id(alice.id).await.unwrap(), alice);
    assert_not_found(s.user_by_email("bob@example.com").await);
    assert_not_found(s.user_by_id(Uuid::now_v7()).await);

    let bob = s
        .create_user(NewUser { email: "bob@example.com".into(), password_hash: "y".into(), display_name: "Bob".into() })
        .await
        .unwrap();
    assert_ne!(bob.id, alice.id);
    assert_eq!(s.user_by_email("BOB@example.com").await.unwrap(), bob);
}

async fn sessions(db: Db) {
    let s = &db.store;
    let (alice, bob) = (new_user(s).await, new_user(s).await);
    let later = chrono::Utc::now() + chrono::Duration::hours(1);
    let (a1, a2, a3, b1) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    for (id, user) in [(a1, alice), (a2, alice), (a3, alice), (b1, bob)] {
        s.create_session(&Session::new(id, user, later)).await.unwrap();
    }
    let found = s.session(a1).await.unwrap().unwrap();
    assert_eq!((found.id, found.user, found.ended_at), (a1, alice, None));
    assert!(s.session(Uuid::new_v4()).await.unwrap().is_none());

    // The device and network a session signed in from are kept with it.
    let phone = Uuid::new_v4();
    let from_phone = Session {
        device: Some("Firefox on Android".into()),
        ip_prefix: Some("203.0.113.0/24".into()),
        ..Session::new(phone, bob, later)
    };
    s.create_session(&from_phone).await.unwrap();
    let found = s.session(phone).await.unwrap().unwrap();
    assert_eq!(
        (found.device.as_deref(), found.ip_prefix.as_deref()),
        (Some("Firefox on Android"), Some("203.0.113.0/24"))
    );
    assert_eq!(s.session(a2).await.unwrap().unwrap().device, None);
    s.touch_session(phone).await.unwrap();
    let open: Vec<Uuid> = s.open_sessions(bob).await.unwrap().into_iter().map(|session| session.id).collect();
    assert_eq!(open, vec![phone, b1], "the most recently used first, only the owner's");
    assert_ne!(from_phone.public_id(), phone.to_string());
    assert_eq!(from_phone.public_id(), found.public_id(), "the public id is stable");
    assert!(s.end_session(bob, phone).await.unwrap());

    let started = chrono::Utc::now() - chrono::Duration::seconds(1);
    // Another user cannot end the session; its owner can, twice without harm.
    assert!(!s.end_session(bob, a1).await.unwrap());
    assert!(s.session(a1).await.unwrap().unwrap().ended_at.is_none());
    assert!(s.end_session(alice, a1).await.unwrap());
    assert!(!s.end_session(alice, a1).await.unwrap());
    assert!(s.session(a1).await.unwrap().unwrap().ended_at.is_some());
    let mut open: Vec<Uuid> = s.open_sessions(alice).await.unwrap().into_iter().map(|session| session.id).collect();
    open.sort();
    let mut expected = vec![a2, a3];
    expected.sort();
    assert_eq!(open, expected, "ended sessions are not open");

    // A new password ends every other session of its owner, and only those.
    let ended = s.set_password(alice, "new-hash", a2).await.unwrap();
    assert_eq!(ended, vec![a3]);
    assert_eq!(s.user_by_id(alice).await.unwrap().password_hash, "new-hash");
    assert!(s.session(a2).await.unwrap().unwrap().ended_at.is_none());
    assert!(s.session(b1).await.unwrap().unwrap().ended_at.is_none());
    assert_not_found(s.set_password(Uuid::now_v7(), "x", a2).await);

    let mut recently: Vec<Uuid> =
        s.sessions_ended_since(started).await.unwrap().into_iter().map(|(id, _)| id).collect();
    recently.sort();
    let mut expected = vec![a1, a3, phone];
    expected.sort();
    assert_eq!(recently, expected);

    assert_eq!(s.end_sessions(alice, None).await.unwrap(), vec![a2]);
    assert!(s.session(b1).await.unwrap().unwrap().ended_at.is_none());

    // Use moves `last_seen_at` on; sessions past their expiry are purged by the next sign-in.
    let before = s.session(b1).await.unwrap().unwrap().last_seen_at;
    s.touch_session(b1).await.unwrap();
    assert!(s.session(b1).await.unwrap().unwrap().last_seen_at >= before);
    let old = Uuid::new_v4();
    s.create_session(&Session::new(old, bob, chrono::Utc::now() - chrono::Duration::hours(1))).await.unwrap();
    s.create_session(&Session::new(Uuid::new_v4(), bob, later)).await.unwrap();
    assert!(s.session(old).await.unwrap().is_none());
}
