//! Conversations a client names (issue 53), on both databases: a key opens the same
//! conversation every time and creates it on first use, is per tenant, and is safe when many
//! callers open one new key at once.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use recall_core::message::{Message, Role};
use recall_store::{NewConversation, NewMessage, Store, StoreError};

fn titled(t: &str) -> NewConversation {
    NewConversation {
        title: Some(t.into()),
        ..NewConversation::default()
    }
}

/// The first open creates, the next ones return the same conversation (their settings are
/// not applied), and what is appended through one is read through the other.
async fn a_key_opens_one_conversation(s: &dyn Store) {
    let (first, created) = s
        .open_conversation("acme", "user_123", titled("first"))
        .await
        .unwrap();
    assert!(created);
    assert_eq!(first.title.as_deref(), Some("first"));
    s.append(
        "acme",
        &first.id,
        vec![NewMessage::complete(Message::text(Role::User, "hello"))],
    )
    .await
    .unwrap();
    let (again, created) = s
        .open_conversation("acme", "user_123", titled("second"))
        .await
        .unwrap();
    assert!(!created);
    assert_eq!(again.id, first.id);
    assert_eq!(
        again.title.as_deref(),
        Some("first"),
        "settings of a later open are ignored"
    );
    assert_eq!(again.message_count, 1);
    // Another key is another conversation.
    let (other, created) = s
        .open_conversation("acme", "user_456", NewConversation::default())
        .await
        .unwrap();
    assert!(created);
    assert_ne!(other.id, first.id);
}

/// One tenant's key is not another's: the same key in two tenants is two conversations, and
/// neither tenant can read the other's through it.
async fn keys_are_per_tenant(s: &dyn Store) {
    let (a, _) = s
        .open_conversation("tenant-a", "shared-name", titled("a"))
        .await
        .unwrap();
    let (b, created) = s
        .open_conversation("tenant-b", "shared-name", titled("b"))
        .await
        .unwrap();
    assert!(created, "tenant b's key is new to tenant b");
    assert_ne!(a.id, b.id);
    assert_eq!(b.tenant, "tenant-b");
    assert!(matches!(
        s.get_conversation("tenant-b", &a.id).await,
        Err(StoreError::ConversationNotFound(_))
    ));
    let (a_again, _) = s
        .open_conversation("tenant-a", "shared-name", NewConversation::default())
        .await
        .unwrap();
    assert_eq!(a_again.id, a.id);
}

/// Eight callers opening one new key at once get one conversation, exactly one of them
/// created it, and no stray conversation is left.
async fn racing_opens_make_one_conversation(s: &dyn Store) {
    let opens = (0..8).map(|i| s.open_conversation("race", "brand-new", titled(&format!("{i}"))));
    let results = futures::future::join_all(opens).await;
    let results: Vec<_> = results.into_iter().map(Result::unwrap).collect();
    let id = &results[0].0.id;
    assert!(results.iter().all(|(c, _)| &c.id == id), "{results:?}");
    assert_eq!(results.iter().filter(|(_, created)| *created).count(), 1);
    let all = s.list_conversations("race", None, 100).await.unwrap();
    assert_eq!(all.len(), 1, "{all:?}");
}

/// A bad key is refused with what is wrong, and nothing is created.
async fn bad_keys_are_refused(s: &dyn Store) {
    for (key, why) in [
        ("", "is empty"),
        ("   ", "is empty"),
        ("a\nb", "control character"),
        ("a\0b", "control character"),
    ] {
        match s
            .open_conversation("acme", key, NewConversation::default())
            .await
        {
            Err(StoreError::Invalid(m)) => assert!(m.contains(why), "{key:?}: {m}"),
            other => panic!("{key:?}: {other:?}"),
        }
    }
    let long = "k".repeat(257);
    match s
        .open_conversation("acme", &long, NewConversation::default())
        .await
    {
        Err(StoreError::Invalid(m)) => assert!(m.contains("256 bytes"), "{m}"),
        other => panic!("{other:?}"),
    }
    let ok = "k".repeat(256);
    s.open_conversation("acme", &ok, NewConversation::default())
        .await
        .unwrap();
    let all = s.list_conversations("acme", None, 100).await.unwrap();
    assert_eq!(all.len(), 1, "only the good key made a conversation");
}

/// Deleting a named conversation frees its key: the next open creates a new one.
async fn deleting_frees_the_key(s: &dyn Store) {
    let (c, _) = s
        .open_conversation("acme", "temp", NewConversation::default())
        .await
        .unwrap();
    s.delete_conversation("acme", &c.id, false).await.unwrap();
    let (again, created) = s
        .open_conversation("acme", "temp", NewConversation::default())
        .await
        .unwrap();
    assert!(created);
    assert_ne!(again.id, c.id);
}

suite!(
    a_key_opens_one_conversation,
    keys_are_per_tenant,
    racing_opens_make_one_conversation,
    bad_keys_are_refused,
    deleting_frees_the_key,
);
