//! `create_conversation` with a `key` through the MCP handler on a real SQLite file (issue 53):
//! the first call creates, later calls return the same conversation, another tenant's handler
//! has its own, and a bad key is a tool error that creates nothing.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::call;
use recall_engine::{Engine, Limits};
use recall_mcp::RecallMcp;
use serde_json::json;

#[tokio::test]
async fn a_key_opens_one_conversation_per_tenant() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = dir.path().join("recall.db").display().to_string();
    let engine = Engine::open(&url, Limits::default())
        .await
        .expect("open engine");
    let mcp = RecallMcp::new(engine.clone(), "team-a").expect("server");
    let first = call(
        &mcp,
        "create_conversation",
        json!({"key": "user_123", "title": "first"}),
    )
    .await
    .expect("created");
    let again = call(
        &mcp,
        "create_conversation",
        json!({"key": "user_123", "title": "second"}),
    )
    .await
    .expect("opened");
    assert_eq!(again["id"], first["id"]);
    assert_eq!(again["title"], "first");

    let other = RecallMcp::new(engine.clone(), "team-b").expect("server");
    let theirs = call(&other, "create_conversation", json!({"key": "user_123"}))
        .await
        .expect("created");
    assert_ne!(theirs["id"], first["id"]);

    let err = call(&mcp, "create_conversation", json!({"key": ""}))
        .await
        .expect_err("an empty key");
    assert!(err.contains("conversation key is empty"), "{err}");
    let list = call(&mcp, "list_conversations", json!({}))
        .await
        .expect("list");
    assert_eq!(list["conversations"].as_array().unwrap().len(), 1, "{list}");
}
