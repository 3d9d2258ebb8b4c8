//! `append_message`'s `created_at` through the MCP handler (issue 37, real times), on a real
//! SQLite file and a fresh PostgreSQL database: kept as given; earlier than the message before
//! it, too far in the future or malformed is a tool error naming the message, and nothing is
//! stored; the tool's input schema lists the field.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::call;
use recall_engine::{Engine, Limits};
use recall_mcp::RecallMcp;
use serde_json::json;

async fn times(url: &str) {
    let engine = Engine::open(url, Limits::default()).await.unwrap();
    let mcp = RecallMcp::new(engine.clone(), "default").unwrap();
    let conv = call(&mcp, "create_conversation", json!({})).await.unwrap();
    let id = conv["id"].as_str().unwrap().to_string();
    let append = |content: &str, at: &str| json!({"conversation_id": id, "role": "user", "content": content, "created_at": at});
    call(
        &mcp,
        "append_message",
        append("a", "2023-05-08T15:56:00+02:00"),
    )
    .await
    .unwrap();
    for (at, says) in [
        (
            "2023-05-08T13:55:59Z",
            "messages[0]: created_at 2023-05-08T13:55:59Z is earlier than the message before it \
             (2023-05-08T13:56:00Z)",
        ),
        (
            "2999-01-01T00:00:00Z",
            "messages[0]: created_at 2999-01-01T00:00:00Z is in the future",
        ),
        ("not a time", "the message has an invalid 'created_at'"),
    ] {
        let err = call(&mcp, "append_message", append("b", at))
            .await
            .expect_err("refused");
        assert!(err.contains(says), "{at}: {err}");
    }
    let stored = engine
        .store()
        .messages("default", &id, 0, 100)
        .await
        .unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(
        stored[0].created_at,
        recall_core::time::parse_rfc3339("2023-05-08T13:56:00Z").unwrap()
    );
    // The schema names the field.
    let append_tool = mcp
        .tools()
        .iter()
        .find(|t| t.name == "append_message")
        .expect("append_message");
    assert!(
        append_tool
            .input_schema
            .get("properties")
            .and_then(|p| p.get("created_at"))
            .is_some(),
        "{:?}",
        append_tool.input_schema
    );
}

#[tokio::test]
async fn created_at_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    times(&dir.path().join("recall.db").display().to_string()).await;
}

#[tokio::test]
async fn created_at_on_postgres() {
    let Some(pg) = recall_testkit::pg::pg_database().await else {
        return;
    };
    times(&pg.url).await;
}
