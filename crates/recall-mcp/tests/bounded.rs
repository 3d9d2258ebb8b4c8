//! `get_context` is bounded by the engine's `max_context_bytes` (issue 50 item 4): over it,
//! a tool error naming the limit, as HTTP's 413; under it, the context. On a real SQLite file.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::call;
use recall_engine::{Engine, Limits};
use recall_mcp::RecallMcp;
use serde_json::json;

#[tokio::test]
async fn get_context_over_max_context_bytes_is_a_tool_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = dir.path().join("recall.db").display().to_string();
    let limits = Limits {
        max_context_bytes: Some(20_000),
        ..Limits::default()
    };
    let engine = Engine::open(&url, limits).await.expect("open engine");
    let mcp = RecallMcp::new(engine, "team-a").expect("server");
    let conv = call(&mcp, "create_conversation", json!({})).await.unwrap();
    let id = conv["id"].as_str().unwrap().to_string();
    for n in 0..10 {
        call(
            &mcp,
            "append_message",
            json!({"conversation_id": id, "role": if n % 2 == 0 { "user" } else { "assistant" },
                "content": format!("{n} {}", "words ".repeat(500))}),
        )
        .await
        .unwrap();
    }
    let err = call(
        &mcp,
        "get_context",
        json!({"conversation_id": id, "max_tokens": 100_000_000}),
    )
    .await
    .expect_err("over the limit");
    assert!(err.contains("max_context_bytes"), "{err}");
    // A context that fits is answered.
    let ok = call(
        &mcp,
        "get_context",
        json!({"conversation_id": id, "max_turns": 1, "recall_tokens": 0}),
    )
    .await
    .expect("within the limit");
    assert!(ok["prompt"].as_str().unwrap().len() < 20_000);
}
