//! Tasks and full-text search, run against SQLite (a temporary file) and PostgreSQL (a fresh
//! database per test; unreachable → skipped with a notice, or a failure when `CI=true`).

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
    s.delete_conversation(T, &a).await.expect("delete");
    assert_eq!(found(s, T, "django").await, vec![]);
    assert_eq!(found(s, T, "refunds").await, vec![(b, 1)]);
}

macro_rules! suite {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $name() {
                    let db = super::common::sqlite().await;
                    super::$name(&db.store).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test]
                async fn $name() {
                    let Some(db) = super::common::pg().await else { return };
                    super::$name(&db.store).await;
                }
            )*
        }
    };
}

suite!(task_round_trip, search_finds_words_in_every_write_path);

/// Messages stored before migration 0002 are indexed by it.
#[tokio::test]
async fn sqlite_migration_indexes_existing_messages() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("old.db");
    {
        let store = recall_store::SqliteStore::open(&path).await.expect("open");
        let id = conv(&store, T).await;
        append(&store, T, &id, vec![user("legacy message about penguins")]).await;
        // Undo 0002 as if the database predated it.
        let mut c = store.pool().acquire().await.expect("conn");
        for sql in [
            "DROP TRIGGER messages_search_ai",
            "DROP TRIGGER messages_search_ad",
            "DROP TRIGGER messages_search_au",
            "DROP TABLE message_fts",
            "DROP TABLE message_text",
            "DROP TABLE tasks",
            "DELETE FROM _sqlx_migrations WHERE version = 2",
        ] {
            sqlx::query(sql).execute(&mut *c).await.expect(sql);
        }
        drop(c);
        store.pool().close().await;
    }
    let store = recall_store::SqliteStore::open(&path)
        .await
        .expect("reopen");
    assert_eq!(found(&store, T, "penguins").await.len(), 1);
}
