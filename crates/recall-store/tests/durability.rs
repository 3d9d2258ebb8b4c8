//! The durability setting reaches every connection the SQLite store opens: sqlx's pool and the
//! direct (rusqlite) writer and readers, including readers opened after the store was.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use recall_core::message::{Message, Role};
use recall_store::{Durability, NewConversation, NewMessage, SqliteOptions, SqliteStore, Store};

async fn levels_under(durability: Durability) -> Vec<(String, i64)> {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("recall.db");
    let store = SqliteStore::open_with(&path, SqliteOptions { durability })
        .await
        .expect("open");
    // Use the store first: appends and reads run on the direct connections.
    let c = store
        .create_conversation("t", NewConversation::default())
        .await
        .expect("create");
    store
        .append(
            "t",
            &c.id,
            vec![NewMessage::complete(Message::text(Role::User, "hello"))],
        )
        .await
        .expect("append");
    assert_eq!(
        store.messages("t", &c.id, 0, 10).await.expect("read").len(),
        1
    );
    store.synchronous_levels().await.expect("pragmas")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_connection_runs_the_chosen_durability() {
    for durability in Durability::ALL {
        let levels = levels_under(durability).await;
        for kind in [
            "sqlx pool connection",
            "direct writer",
            "direct reader",
            "new direct reader",
        ] {
            assert!(
                levels.iter().any(|(name, _)| name.starts_with(kind)),
                "{kind} missing from {levels:?}"
            );
        }
        for (name, level) in &levels {
            assert_eq!(
                *level,
                durability.sqlite_level(),
                "{name} under durability {durability}: {levels:?}"
            );
        }
    }
}

/// The default stays `normal` (WAL with `synchronous=NORMAL`), and `open` is `open_with` the
/// default options.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_is_normal() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(&dir.path().join("d.db"))
        .await
        .expect("open");
    for (name, level) in store.synchronous_levels().await.expect("pragmas") {
        assert_eq!(level, 1, "{name}");
    }
}
