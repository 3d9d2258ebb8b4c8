//! Summary versions and the compaction lease on both databases (migration 0009): the newest
//! version ending before a window is the one found, a lease keeps a second summariser out
//! until it expires, a commit needs the lease and the version it was written from, another
//! tenant sees nothing, and a redaction or a clear drops the versions covering the message.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use recall_core::message::{Message, Role};
use recall_store::{NewConversation, NewMessage, NewSummary, Store, StoreError, SummaryTokens};

const T: &str = "team-a";

fn summary(from: i64, to: i64, text: &str, after: Option<i64>) -> NewSummary {
    NewSummary {
        from_seq: from,
        to_seq: to,
        text: text.into(),
        tokens: SummaryTokens {
            o200k: 10,
            cl100k: 11,
            chars4: 12,
        },
        backend: "openai".into(),
        model: "m".into(),
        after_version: after,
    }
}

fn far() -> i64 {
    i64::MAX / 2
}

async fn conversation_of(s: &dyn Store, n: usize) -> String {
    let id = s
        .create_conversation(T, NewConversation::default())
        .await
        .unwrap()
        .id;
    let ms: Vec<NewMessage> = (0..n)
        .map(|i| {
            let role = if i % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            };
            NewMessage::complete(Message::text(role, format!("message {}", i + 1)))
        })
        .collect();
    s.append(T, &id, ms).await.unwrap();
    id
}

async fn versions_and_lease(s: &dyn Store) {
    let id = conversation_of(s, 30).await;
    assert_eq!(s.summary_before(T, &id, 100).await.unwrap(), None);

    // A commit needs the lease.
    let e = s
        .commit_summary(T, &id, "a", summary(1, 10, "first", None))
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::CompactionBusy { .. }), "{e}");

    assert!(s
        .take_compaction_lease(T, &id, "a", far(), 1_000)
        .await
        .unwrap());
    // Another holder is kept out while it is live; the holder renews its own.
    assert!(!s
        .take_compaction_lease(T, &id, "b", far(), 1_000)
        .await
        .unwrap());
    assert!(s
        .take_compaction_lease(T, &id, "a", far(), 1_000)
        .await
        .unwrap());

    let v1 = s
        .commit_summary(T, &id, "a", summary(1, 10, "first", None))
        .await
        .unwrap();
    assert_eq!((v1.version, v1.from_seq, v1.to_seq), (1, 1, 10));
    // Written from a version that is no longer the newest: refused, nothing written.
    let e = s
        .commit_summary(T, &id, "a", summary(1, 20, "stale", None))
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::CompactionBusy { .. }), "{e}");
    let v2 = s
        .commit_summary(T, &id, "a", summary(1, 20, "second", Some(1)))
        .await
        .unwrap();
    assert_eq!(v2.version, 2);

    // The newest version ending before the window.
    let found = |before: i64| {
        let id = id.clone();
        async move {
            s.summary_before(T, &id, before)
                .await
                .unwrap()
                .map(|x| x.version)
        }
    };
    assert_eq!(found(21).await, Some(2));
    assert_eq!(found(20).await, Some(1));
    assert_eq!(found(11).await, Some(1));
    assert_eq!(found(10).await, None);
    let got = s.summary_before(T, &id, 25).await.unwrap().unwrap();
    assert_eq!(got.text, "second");
    assert_eq!(got.tokens.get(recall_core::tokens::Tokenizer::Cl100k), 11);
    let all: Vec<i64> = s
        .summaries(T, &id, 10)
        .await
        .unwrap()
        .iter()
        .map(|x| x.version)
        .collect();
    assert_eq!(all, [2, 1]);

    // Released: another holder may take it. An expired lease is taken over too, and the
    // old holder can no longer commit.
    s.release_compaction_lease(T, &id, "a").await.unwrap();
    assert!(s
        .take_compaction_lease(T, &id, "b", 1, 1_000)
        .await
        .unwrap());
    assert!(s
        .take_compaction_lease(T, &id, "c", far(), 1_000)
        .await
        .unwrap());
    let e = s
        .commit_summary(T, &id, "b", summary(1, 25, "late", Some(2)))
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::CompactionBusy { .. }), "{e}");
    assert_eq!(s.summaries(T, &id, 10).await.unwrap().len(), 2);

    // Another tenant: not found, and nothing to read.
    let e = s
        .take_compaction_lease("team-b", &id, "x", far(), 1_000)
        .await
        .unwrap_err();
    assert!(e.is_not_found(), "{e}");
    assert_eq!(s.summary_before("team-b", &id, 100).await.unwrap(), None);
    assert!(s.summaries("team-b", &id, 10).await.unwrap().is_empty());
    let e = s
        .commit_summary("team-b", &id, "c", summary(1, 25, "x", Some(2)))
        .await
        .unwrap_err();
    assert!(e.is_not_found(), "{e}");

    // A redaction drops the versions covering the message; a clear drops them all.
    s.redact_message(T, &id, 15).await.unwrap();
    let left: Vec<i64> = s
        .summaries(T, &id, 10)
        .await
        .unwrap()
        .iter()
        .map(|x| x.version)
        .collect();
    assert_eq!(left, [1]);
    s.clear_conversation(T, &id).await.unwrap();
    assert!(s.summaries(T, &id, 10).await.unwrap().is_empty());
    // Deleting the conversation takes its lease with it.
    s.delete_conversation(T, &id, false).await.unwrap();

    // A redaction or a clear reaching what a summariser reads takes its lease, so what it
    // wrote from the old text cannot be committed; one above it leaves the lease alone.
    let id = conversation_of(s, 30).await;
    assert!(s
        .take_compaction_lease(T, &id, "r", far(), 20)
        .await
        .unwrap());
    s.redact_message(T, &id, 25).await.unwrap();
    s.commit_summary(T, &id, "r", summary(1, 20, "before", None))
        .await
        .unwrap();
    s.redact_message(T, &id, 12).await.unwrap();
    assert!(s.summaries(T, &id, 10).await.unwrap().is_empty());
    let e = s
        .commit_summary(T, &id, "r", summary(1, 20, "stale text", None))
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::CompactionBusy { .. }), "{e}");
    assert!(s
        .take_compaction_lease(T, &id, "r", far(), 20)
        .await
        .unwrap());
    s.clear_conversation(T, &id).await.unwrap();
    let e = s
        .commit_summary(T, &id, "r", summary(1, 20, "cleared text", None))
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::CompactionBusy { .. }), "{e}");
    assert!(s.summaries(T, &id, 10).await.unwrap().is_empty());

    // A fork's summaries may cover its parent's messages: redacting one of those drops them,
    // and clearing the fork drops them all.
    let parent = conversation_of(s, 30).await;
    let fork = s
        .fork_conversation(T, &parent, 20, recall_store::NewFork::default())
        .await
        .unwrap()
        .id;
    s.append(
        T,
        &fork,
        vec![NewMessage::complete(Message::text(
            Role::User,
            "on the fork",
        ))],
    )
    .await
    .unwrap();
    assert!(s
        .take_compaction_lease(T, &fork, "f", far(), 1_000)
        .await
        .unwrap());
    s.commit_summary(T, &fork, "f", summary(1, 8, "early", None))
        .await
        .unwrap();
    s.commit_summary(T, &fork, "f", summary(1, 16, "later", Some(1)))
        .await
        .unwrap();
    s.redact_message(T, &parent, 12).await.unwrap();
    let left: Vec<i64> = s
        .summaries(T, &fork, 10)
        .await
        .unwrap()
        .iter()
        .map(|x| x.version)
        .collect();
    assert_eq!(
        left,
        [1],
        "the version covering the redacted message is gone"
    );
    s.clear_conversation(T, &fork).await.unwrap();
    assert!(s.summaries(T, &fork, 10).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_versions_and_lease() {
    let db = common::sqlite().await;
    versions_and_lease(&db.store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_versions_and_lease() {
    let Some(db) = common::pg().await else { return };
    versions_and_lease(&db.store).await;
}
