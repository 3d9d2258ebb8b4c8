//! `append_message` through the MCP handler on a real SQLite file: a client id reused for a
//! different message is a tool error naming the id and its seq (issue 16, defect 2), and
//! nothing is stored; the same message again is a duplicate.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::call;
use recall_engine::{Engine, Limits};
use recall_mcp::RecallMcp;
use serde_json::{json, Value};

#[tokio::test]
async fn a_reused_id_for_a_different_message_is_a_tool_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = dir.path().join("recall.db").display().to_string();
    let engine = Engine::open(&url, Limits::default())
        .await
        .expect("open engine");
    let mcp = RecallMcp::new(engine.clone(), "default").expect("server");
    let conv = call(&mcp, "create_conversation", json!({}))
        .await
        .expect("created");
    let id = conv["id"].as_str().expect("id").to_string();
    let append = |content: &str, meta: Value| {
        json!({"conversation_id": id, "role": "user", "content": content, "id": "d1",
               "metadata": meta})
    };
    let first = call(&mcp, "append_message", append("a", json!({"k": 1})))
        .await
        .expect("first append");
    assert_eq!(
        (first["seq"].clone(), first["duplicate"].clone()),
        (json!(1), json!(false))
    );

    for (content, meta) in [("zzz", json!({"k": 1})), ("a", json!({"k": 2}))] {
        let err = call(&mcp, "append_message", append(content, meta))
            .await
            .expect_err("a conflict");
        assert!(
            err.contains("client id 'd1' was already used for a different message (seq 1)"),
            "{err}"
        );
    }
    let again = call(&mcp, "append_message", append("a", json!({"k": 1})))
        .await
        .expect("a retry");
    assert_eq!(
        (again["seq"].clone(), again["duplicate"].clone()),
        (json!(1), json!(true))
    );
    let stored = engine
        .store()
        .messages("default", &id, 0, 100)
        .await
        .expect("messages");
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].message.to_json()["content"], json!("a"));
}

/// `list_conversations` pages with the cursor name HTTP and the CLI use: `next_after` of a
/// full page, passed back as `after`; `null` once a page is not full.
#[tokio::test]
async fn list_conversations_pages_with_next_after() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = dir.path().join("recall.db").display().to_string();
    let engine = Engine::open(&url, Limits::default())
        .await
        .expect("open engine");
    let mcp = RecallMcp::new(engine, "default").expect("server");
    let mut ids = Vec::new();
    for _ in 0..3 {
        let c = call(&mcp, "create_conversation", json!({}))
            .await
            .expect("created");
        ids.push(c["id"].as_str().expect("id").to_string());
    }
    let mut seen = Vec::new();
    let mut args = json!({"limit": 2});
    loop {
        let page = call(&mcp, "list_conversations", args.clone())
            .await
            .expect("a page");
        assert!(page.get("next_cursor").is_none(), "{page}");
        for c in page["conversations"].as_array().expect("list") {
            seen.push(c["id"].as_str().expect("id").to_string());
        }
        match page["next_after"].as_str() {
            Some(after) => args = json!({"limit": 2, "after": after}),
            None => break,
        }
    }
    assert_eq!(seen, ids);
}
