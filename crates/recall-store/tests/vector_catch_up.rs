//! The store side of "every stored message embedded" (issue 52), one suite on SQLite (a
//! temporary file) and PostgreSQL (a fresh database per test; unreachable → skipped with a
//! notice, or a failure when `CI=true`): which conversations are behind across tenants, what is
//! left to embed over a scope, and the vector lease that lets two processes embed each message
//! once.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use recall_core::message::{Message, Role};
use recall_store::{
    ConversationRef, NewConversation, NewFork, NewMessage, NewVector, Store, StoreError,
    VectorScope, VectorStatus,
};

const M: &str = "test-model";

async fn conv(s: &dyn Store, tenant: &str, texts: &[&str]) -> String {
    let id = s
        .create_conversation(tenant, NewConversation::default())
        .await
        .expect("create")
        .id;
    if !texts.is_empty() {
        let ms = texts
            .iter()
            .map(|t| NewMessage::complete(Message::text(Role::User, *t)))
            .collect();
        s.append(tenant, &id, ms).await.expect("append");
    }
    id
}

/// Embeds conversation `id` of `tenant` up to `upto` (vectors for every seq up to it).
async fn embed(s: &dyn Store, tenant: &str, id: &str, upto: i64) {
    let vectors = (1..=upto)
        .map(|seq| NewVector {
            conversation_id: id.to_string(),
            seq,
            vector: vec![1.0, 0.0],
        })
        .collect();
    s.save_vectors(tenant, M, 2, vectors, vec![(id.to_string(), upto)])
        .await
        .expect("save");
}

fn status(conversations: u64, messages: u64) -> VectorStatus {
    VectorStatus {
        conversations_behind: conversations,
        messages_behind: messages,
    }
}

async fn behind_across_tenants_and_status_by_scope(s: &dyn Store) {
    let a = conv(s, "acme", &["one", "two", "three"]).await;
    let b = conv(s, "acme", &["four"]).await;
    let g = conv(s, "globex", &["five", "six"]).await;
    let empty = conv(s, "acme", &[]).await;

    // Every tenant's conversations behind, in (tenant, id) order; an empty one is not.
    let mut acme = [a.clone(), b.clone()];
    acme.sort();
    let all = s.vectors_behind(M, None, None, 100).await.expect("behind");
    let mut expected: Vec<(String, String)> = acme
        .iter()
        .map(|id| ("acme".to_string(), id.clone()))
        .collect();
    expected.push(("globex".to_string(), g.clone()));
    assert_eq!(all, expected);
    assert!(!all.iter().any(|(_, id)| *id == empty));
    // Paged: after the first, the rest; limited.
    let first = ConversationRef::new(&all[0].0, &all[0].1);
    assert_eq!(
        s.vectors_behind(M, None, Some(first), 100).await.unwrap(),
        all[1..].to_vec()
    );
    assert_eq!(s.vectors_behind(M, None, None, 1).await.unwrap(), all[..1]);
    // One tenant's only.
    assert_eq!(
        s.vectors_behind(M, Some("globex"), None, 100)
            .await
            .unwrap(),
        vec![("globex".to_string(), g.clone())]
    );

    assert_eq!(
        s.vector_status(VectorScope::Store, M).await.unwrap(),
        status(3, 6)
    );
    assert_eq!(
        s.vector_status(VectorScope::Tenant("acme"), M)
            .await
            .unwrap(),
        status(2, 4)
    );
    let at = ConversationRef::new("acme", &a);
    assert_eq!(
        s.vector_status(VectorScope::Conversation(at), M)
            .await
            .unwrap(),
        status(1, 3)
    );
    // Another tenant's conversation is not found, not "nothing behind".
    let foreign = ConversationRef::new("globex", &a);
    assert!(matches!(
        s.vector_status(VectorScope::Conversation(foreign), M).await,
        Err(StoreError::ConversationNotFound(_))
    ));

    // Embedded in part, then whole: the figures follow, and another model is still behind.
    embed(s, "acme", &a, 2).await;
    assert_eq!(
        s.vector_status(VectorScope::Conversation(at), M)
            .await
            .unwrap(),
        status(1, 1)
    );
    embed(s, "acme", &a, 3).await;
    assert_eq!(
        s.vector_status(VectorScope::Conversation(at), M)
            .await
            .unwrap(),
        status(0, 0)
    );
    assert_eq!(
        s.vector_status(VectorScope::Store, M).await.unwrap(),
        status(2, 3)
    );
    assert_eq!(
        s.vector_status(VectorScope::Store, "other-model")
            .await
            .unwrap(),
        status(3, 6)
    );
    assert!(!s
        .vectors_behind(M, None, None, 100)
        .await
        .unwrap()
        .iter()
        .any(|(_, id)| *id == a));

    // A new message puts it behind again.
    s.append(
        "acme",
        &a,
        vec![NewMessage::complete(Message::text(Role::User, "seven"))],
    )
    .await
    .unwrap();
    assert_eq!(
        s.vector_status(VectorScope::Conversation(at), M)
            .await
            .unwrap(),
        status(1, 1)
    );
}

async fn a_fork_is_behind_only_for_its_own_messages(s: &dyn Store) {
    let parent = conv(s, "acme", &["one", "two", "three"]).await;
    embed(s, "acme", &parent, 3).await;
    let fork = s
        .fork_conversation("acme", &parent, 2, NewFork::default())
        .await
        .expect("fork")
        .id;
    // Its history is its parent's, embedded there: nothing for it to do.
    assert!(s
        .vectors_behind(M, None, None, 100)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        s.vector_status(VectorScope::Store, M).await.unwrap(),
        status(0, 0)
    );
    s.append(
        "acme",
        &fork,
        vec![NewMessage::complete(Message::text(Role::User, "its own"))],
    )
    .await
    .unwrap();
    assert_eq!(
        s.vectors_behind(M, None, None, 100).await.unwrap(),
        vec![("acme".to_string(), fork.clone())]
    );
    assert_eq!(
        s.vector_status(VectorScope::Store, M).await.unwrap(),
        status(1, 1)
    );
}

async fn one_holder_at_a_time(s: &dyn Store) {
    let id = conv(s, "acme", &["one"]).await;
    let c = ConversationRef::new("acme", &id);
    let far = i64::MAX / 2;
    assert!(s.take_vector_lease(c, M, "a", far).await.unwrap());
    // Another holder is refused while it is live; the holder renews; another model is free.
    assert!(!s.take_vector_lease(c, M, "b", far).await.unwrap());
    assert!(s.take_vector_lease(c, M, "a", far).await.unwrap());
    assert!(s
        .take_vector_lease(c, "other-model", "b", far)
        .await
        .unwrap());
    // Given up (by its holder only), it can be taken.
    s.release_vector_lease(c, M, "b").await.unwrap();
    assert!(!s.take_vector_lease(c, M, "b", far).await.unwrap());
    s.release_vector_lease(c, M, "a").await.unwrap();
    assert!(s.take_vector_lease(c, M, "b", 1).await.unwrap());
    // An expired lease (1 ms after the epoch) is taken over.
    assert!(s.take_vector_lease(c, M, "a", far).await.unwrap());
    // Another tenant's conversation is not found; a deleted one takes its leases along.
    let foreign = ConversationRef::new("globex", &id);
    assert!(matches!(
        s.take_vector_lease(foreign, M, "c", far).await,
        Err(StoreError::ConversationNotFound(_))
    ));
    s.delete_conversation("acme", &id, false).await.unwrap();
    assert!(matches!(
        s.take_vector_lease(c, M, "c", far).await,
        Err(StoreError::ConversationNotFound(_))
    ));
}

suite!(
    behind_across_tenants_and_status_by_scope,
    a_fork_is_behind_only_for_its_own_messages,
    one_holder_at_a_time,
);
