//! Tasks and full-text search, run against SQLite (a temporary file) and PostgreSQL (a fresh
//! database per test; unreachable → skipped with a notice, or a failure when `CI=true`).
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use recall_core::message::{Block, Message, Role};
use recall_core::task::{build_task, Priority, TaskInput};
use recall_store::{NewConversation, NewMessage, Store, StoreError};
use serde_json::json;

const T: &str = "default";

async fn conv(s: &dyn Store, tenant: &str) -> String {
    s.create_conversation(tenant, NewConversation::default())
        .await
        .expect("create")
        .id
}

async fn append(s: &dyn Store, tenant: &str, id: &str, ms: Vec<Message>) {
    s.append(
        tenant,
        id,
        ms.into_iter().map(NewMessage::complete).collect(),
    )
    .await
    .expect("append");
}

fn user(t: &str) -> Message {
    Message::text(Role::User, t)
}

fn assistant(t: &str) -> Message {
    Message::text(Role::Assistant, t)
}

/// (conversation, seq) of every hit, sorted: ranking may differ between databases.
async fn found(s: &dyn Store, tenant: &str, q: &str) -> Vec<(String, i64)> {
    let mut v: Vec<(String, i64)> = s
        .search_messages(tenant, q, 100)
        .await
        .expect("search")
        .into_iter()
        .map(|h| (h.conversation_id, h.seq))
        .collect();
    v.sort();
    v
}

async fn task_round_trip(s: &dyn Store) {
    let task = build_task(TaskInput {
        description: "Fix the bug".into(),
        priority: Priority::P1,
        background_context: Some("ctx".into()),
        relevant_files: Some(vec!["a.rs".into()]),
        conversation_history: Some(json!([
            {"role": "user", "content": "u".repeat(200)},
            null,
            {"role": "assistant", "content": "ok 🙂"}
        ])),
        ..TaskInput::default()
    })
    .expect("valid task");
    let created = s.create_task(T, &task).await.expect("create_task");
    assert_eq!(created.task, task);
    let got = s.get_task(T, &created.id).await.expect("get_task");
    assert_eq!(got, created);
    assert!(got.task.conversation_history[0].truncated);
    assert_eq!(got.task.validation_warnings.len(), 1);
    // Another tenant's task is not found, nor is an unknown id.
    assert!(matches!(
        s.get_task("other", &created.id).await,
        Err(StoreError::TaskNotFound(_))
    ));
    let missing = s.get_task(T, "nope").await.unwrap_err();
    assert!(missing.is_not_found());
    assert_eq!(missing.to_string(), "task 'nope' not found");
    let nul = s.get_task(T, "a\0b").await.unwrap_err();
    assert!(nul.is_not_found());
    let mut bad = task.clone();
    bad.description = "nul\0".into();
    assert!(matches!(
        s.create_task(T, &bad).await,
        Err(StoreError::Invalid(_))
    ));
}

async fn search_finds_words_in_every_write_path(s: &dyn Store) {
    let a = conv(s, T).await;
    let b = conv(s, T).await;
    let other = conv(s, "other").await;
    append(
        s,
        T,
        &a,
        vec![
            user("We deploy the Billing service with FastAPI."),
            Message::blocks(
                Role::Assistant,
                vec![
                    Block::Thinking {
                        thinking: "secret thoughts about fastapi".into(),
                        signature: None,
                    },
                    Block::Text {
                        text: "FastAPI it is.".into(),
                    },
                    Block::ToolUse {
                        id: "t1".into(),
                        name: "lookup".into(),
                        input: json!({"q": "zebra"}),
                    },
                ],
            ),
            Message::text(Role::System, "Answer in French."),
        ],
    )
    .await;
    append(
        s,
        T,
        &b,
        vec![
            user("Refunds within 30 days"),
            assistant("Réponse: café 日本語 テキスト"),
        ],
    )
    .await;
    append(
        s,
        "other",
        &other,
        vec![user("fastapi billing for another tenant")],
    )
    .await;

    // Case-insensitive; every word must be present; text blocks only (no thinking, no tool
    // input); system messages are searchable too.
    assert_eq!(
        found(s, T, "fastapi").await,
        vec![(a.clone(), 1), (a.clone(), 2)]
    );
    assert_eq!(found(s, T, "FASTAPI billing").await, vec![(a.clone(), 1)]);
    assert_eq!(found(s, T, "secret").await, vec![]);
    assert_eq!(found(s, T, "zebra").await, vec![]);
    assert_eq!(found(s, T, "french").await, vec![(a.clone(), 3)]);
    assert_eq!(found(s, T, "30 refunds").await, vec![(b.clone(), 1)]);
    assert_eq!(found(s, T, "café").await, vec![(b.clone(), 2)]);
    // Punctuation is not part of a word, and never query syntax.
    assert_eq!(
        found(s, T, "\"fastapi\" (billing*").await,
        vec![(a.clone(), 1)]
    );
    // Tenants never see each other's messages.
    assert_eq!(found(s, "other", "fastapi").await, vec![(other.clone(), 1)]);
    assert_eq!(found(s, "nobody", "fastapi").await, vec![]);

    // Content with NUL (stored JSON-escaped) appends and is searchable: the index must never
    // make a write fail. An escaped backslash before "u0000" is not a NUL.
    let n = conv(s, T).await;
    append(
        s,
        T,
        &n,
        vec![user("quokka before\0after"), user("wombat \\u0000 literal")],
    )
    .await;
    assert_eq!(found(s, T, "quokka").await, vec![(n.clone(), 1)]);
    assert_eq!(found(s, T, "wombat").await, vec![(n.clone(), 2)]);

    let hits = s.search_messages(T, "billing", 10).await.expect("search");
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].role, "user");
    assert!(hits[0].snippet.contains("**Billing**"), "{:?}", hits[0]);
    assert_eq!(
        s.search_messages(T, "fastapi", 1)
            .await
            .expect("search")
            .len(),
        1
    );

    assert!(matches!(
        s.search_messages(T, " ?! ", 10).await,
        Err(StoreError::Invalid(_))
    ));

    // update_message re-indexes; clear and delete remove from the index.
    s.update_message(
        T,
        &a,
        1,
        NewMessage::complete(user("We deploy with Django now.")),
    )
    .await
    .expect("update");
    assert_eq!(found(s, T, "billing").await, vec![]);
    assert_eq!(found(s, T, "django").await, vec![(a.clone(), 1)]);
    s.clear_conversation(T, &a).await.expect("clear");
    assert_eq!(found(s, T, "django").await, vec![]);
    assert_eq!(found(s, T, "fastapi").await, vec![]);
    append(s, T, &a, vec![user("django again")]).await;
    assert_eq!(found(s, T, "django").await, vec![(a.clone(), 4)]);
    s.delete_conversation(T, &a, false).await.expect("delete");
    assert_eq!(found(s, T, "django").await, vec![]);
    assert_eq!(found(s, T, "refunds").await, vec![(b, 1)]);

    // A message changed before any search saw it (a streamed reply saved as it grows) is
    // found by its final words only; one cleared before any search is not found at all.
    let p = conv(s, T).await;
    append(s, T, &p, vec![user("draft about llamas")]).await;
    s.update_message(T, &p, 1, NewMessage::complete(user("final about alpacas")))
        .await
        .expect("update");
    assert_eq!(found(s, T, "llamas").await, vec![]);
    assert_eq!(found(s, T, "alpacas").await, vec![(p.clone(), 1)]);
    append(s, T, &p, vec![user("ephemeral capybara")]).await;
    s.clear_conversation(T, &p).await.expect("clear");
    assert_eq!(found(s, T, "capybara").await, vec![]);
    append(s, T, &p, vec![user("capybara returns")]).await;
    assert_eq!(found(s, T, "capybara").await, vec![(p, 3)]);
}

suite!(task_round_trip, search_finds_words_in_every_write_path);

/// A SQLite file migrated up to `version` only, as an older recall left it, holding one
/// conversation with the given user messages (written with that schema's SQL).
async fn sqlite_at_version(path: &std::path::Path, version: i64, texts: &[&str]) -> String {
    use sqlx::sqlite::{SqliteConnectOptions, SqlitePool};
    let opts = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true);
    let pool = SqlitePool::connect_with(opts).await.expect("open");
    let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/sqlite"));
    let mut migrator = sqlx::migrate::Migrator::new(dir).await.expect("migrations");
    let older: Vec<_> = migrator
        .migrations
        .iter()
        .filter(|m| m.version <= version)
        .cloned()
        .collect();
    assert_eq!(older.len() as i64, version, "migrations 1..={version}");
    migrator.migrations = older.into();
    migrator.run(&pool).await.expect("migrate");
    let id = "0192f0a0-0000-7000-8000-000000000001";
    let n = texts.len() as i64;
    sqlx::query(
        "INSERT INTO conversations (id, tenant, created_at, updated_at, message_count, last_seq) \
         VALUES ($1, 'default', 0, 0, $2, $2)",
    )
    .bind(id)
    .bind(n)
    .execute(&pool)
    .await
    .expect("conversation");
    for (i, t) in texts.iter().enumerate() {
        let seq = i as i64 + 1;
        sqlx::query(
            "INSERT INTO messages (conversation_id, seq, role, content, created_at, tokens_o200k, \
             tokens_cl100k, chars, flags, cum_o200k, cum_cl100k, cum_chars, cum_chars4, cum_cuts) \
             VALUES ($1, $2, 'user', $3, 0, 1, 1, 1, 3, $2, $2, $2, $2, $2)",
        )
        .bind(id)
        .bind(seq)
        .bind(json!(t).to_string())
        .execute(&pool)
        .await
        .expect("message");
    }
    pool.close().await;
    id.to_string()
}

/// Messages stored before migration 0002 are indexed by it.
#[tokio::test]
async fn sqlite_migration_indexes_existing_messages() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("v1.db");
    let id = sqlite_at_version(&path, 1, &["legacy message about penguins"]).await;
    let store = recall_store::SqliteStore::open(&path).await.expect("open");
    assert_eq!(found(&store, T, "penguins").await, vec![(id, 1)]);
}

/// Migration 0004 (search catches up at search time): messages the insert trigger indexed
/// before it are found once, not indexed again; messages appended after it are found by the
/// catch-up, and an indexed message changed afterwards is found by its new words only.
#[tokio::test]
async fn sqlite_migration_0004_keeps_the_index() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("v3.db");
    let id = sqlite_at_version(&path, 3, &["walrus one", "walrus two"]).await;
    let store = recall_store::SqliteStore::open(&path).await.expect("open");
    assert_eq!(
        found(&store, T, "walrus").await,
        vec![(id.clone(), 1), (id.clone(), 2)]
    );
    append(&store, T, &id, vec![user("walrus three")]).await;
    assert_eq!(
        found(&store, T, "walrus").await,
        vec![(id.clone(), 1), (id.clone(), 2), (id.clone(), 3)]
    );
    store
        .update_message(T, &id, 1, NewMessage::complete(user("otter one")))
        .await
        .expect("update");
    assert_eq!(found(&store, T, "otter").await, vec![(id.clone(), 1)]);
    assert_eq!(
        found(&store, T, "walrus").await,
        vec![(id.clone(), 2), (id.clone(), 3)]
    );
    let indexed: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM message_text")
        .fetch_one(store.pool())
        .await
        .expect("count");
    assert_eq!(indexed, 3, "each message indexed once");
}
