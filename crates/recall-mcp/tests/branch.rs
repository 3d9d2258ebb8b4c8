//! `fork_conversation` and `retry_turn` through the MCP handler on a real SQLite file, with a
//! local server speaking the Anthropic wire format as the chat backend: the retried reply is
//! on a new fork and the old one stays; another tenant's conversations and tasks are "not
//! found" and nothing of them leaks or changes.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::call;
use recall_engine::llm::{AnthropicBackend, Backend, HttpConfig, RetryPolicy};
use recall_engine::{Engine, Limits};
use recall_mcp::RecallMcp;
use recall_testkit::{anthropic, FakeServer, Reply};
use serde_json::json;

async fn replies() -> FakeServer {
    let n = Arc::new(AtomicUsize::new(0));
    FakeServer::start(Arc::new(move |req, _| {
        if req.json()["stream"] != json!(true) {
            return Reply::json(404, json!({}));
        }
        let k = n.fetch_add(1, Ordering::SeqCst) + 1;
        Reply::sse(vec![
            anthropic::message_start("msg_1", 10),
            anthropic::block_start(0, json!({"type":"text","text":""})),
            anthropic::text_delta(0, &format!("Reply number {k}.")),
            anthropic::block_stop(0),
            anthropic::message_delta("end_turn", 4),
            anthropic::message_stop(),
        ])
    }))
    .await
}

fn backend(server: &FakeServer) -> Arc<dyn Backend> {
    let mut c = HttpConfig::anthropic().with_key("sk-ant-test-key");
    c.base_url = server.base_url();
    c.retry = RetryPolicy::none();
    Arc::new(AnthropicBackend::new(c).expect("backend"))
}

fn texts(engine: &Engine, tenant: &str, id: &str) -> Vec<String> {
    let rt = tokio::runtime::Handle::current();
    tokio::task::block_in_place(|| {
        rt.block_on(engine.store().messages(tenant, id, 0, 100))
            .expect("messages")
            .iter()
            .map(|m| m.message.to_json()["content"].to_string())
            .collect()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fork_and_retry_keep_the_old_path_and_the_tenants_apart() {
    let server = replies().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let url = dir.path().join("recall.db").display().to_string();
    let engine = Engine::open(&url, Limits::default()).await.expect("open");
    let a = RecallMcp::new(engine.clone(), "a")
        .expect("server")
        .with_backend(Some(backend(&server)));
    let b = RecallMcp::new(engine.clone(), "b")
        .expect("server")
        .with_backend(Some(backend(&server)));

    let conv = call(&a, "create_conversation", json!({"title": "A's secret"}))
        .await
        .expect("created");
    let id = conv["id"].as_str().expect("id").to_string();
    for (role, content) in [("user", "What is two plus two?"), ("assistant", "Five.")] {
        call(
            &a,
            "append_message",
            json!({"conversation_id": id, "role": role, "content": content}),
        )
        .await
        .expect("append");
    }

    // fork_conversation: the fork reads the prefix, the original is unchanged.
    let fork = call(
        &a,
        "fork_conversation",
        json!({"conversation_id": id, "at": 1, "title": "branch"}),
    )
    .await
    .expect("fork");
    let fork_id = fork["id"].as_str().expect("fork id").to_string();
    assert_ne!(fork_id, id);
    assert_eq!(texts(&engine, "a", &fork_id), ["\"What is two plus two?\""]);

    // retry_turn: a new reply on a new fork made before seq 2; the old reply stays.
    let r = call(&a, "retry_turn", json!({"conversation_id": id, "seq": 2}))
        .await
        .expect("retry");
    assert_eq!(r["status"], "complete", "{r}");
    assert_eq!(r["text"], "Reply number 1.");
    assert_eq!(r["reply_seq"], 2);
    let retried = r["conversation_id"].as_str().expect("id").to_string();
    assert_ne!(retried, id);
    assert_eq!(
        texts(&engine, "a", &retried),
        ["\"What is two plus two?\"", "\"Reply number 1.\""]
    );
    assert_eq!(
        texts(&engine, "a", &id),
        ["\"What is two plus two?\"", "\"Five.\""]
    );
    // Retrying a user message is refused with a reason.
    let err = call(&a, "retry_turn", json!({"conversation_id": id, "seq": 1}))
        .await
        .expect_err("a user message has no reply to retry");
    assert!(err.contains("message 1 is a user message"), "{err}");

    // Tenant b sees none of it, and changes nothing.
    let task = call(&a, "create_task", json!({"description": "A's secret task"}))
        .await
        .expect("task");
    let task_id = task["task_id"].as_str().expect("task id").to_string();
    let requests_before = server.requests().len();
    for (tool, args) in [
        ("fork_conversation", json!({"conversation_id": id, "at": 1})),
        ("retry_turn", json!({"conversation_id": id, "seq": 2})),
        ("get_task", json!({"task_id": task_id})),
        ("get_context", json!({"conversation_id": fork_id})),
        ("clear_conversation", json!({"conversation_id": id})),
    ] {
        let err = call(&b, tool, args).await.expect_err(tool);
        assert!(err.contains("not found"), "{tool}: {err}");
        assert!(
            !err.contains("secret") && !err.contains("two plus"),
            "{tool}: {err}"
        );
    }
    assert_eq!(
        server.requests().len(),
        requests_before,
        "b reached the model"
    );
    let b_search = call(&b, "search_history", json!({"query": "secret"}))
        .await
        .expect("search");
    assert_eq!(b_search["hits"], json!([]), "{b_search}");
    let listed = engine.store().forks("a", &id).await.expect("forks");
    assert_eq!(listed.len(), 2, "b made no fork of a's conversation");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_conversation_summarises_for_its_tenant_only() {
    let server = replies().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let url = dir.path().join("recall.db").display().to_string();
    let engine = Engine::open(&url, Limits::default()).await.expect("open");
    let a = RecallMcp::new(engine.clone(), "a")
        .expect("server")
        .with_backend(Some(backend(&server)));
    let b = RecallMcp::new(engine.clone(), "b")
        .expect("server")
        .with_backend(Some(backend(&server)));
    let conv = call(&a, "create_conversation", json!({}))
        .await
        .expect("created");
    let id = conv["id"].as_str().expect("id").to_string();
    for i in 0..40 {
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        let content = format!("message {i}: {}", "a few words of filler ".repeat(5));
        call(
            &a,
            "append_message",
            json!({"conversation_id": id, "role": role, "content": content}),
        )
        .await
        .expect("append");
    }
    let policy = json!({"max_tokens": 700, "trim": "stable", "summary_tokens": 200});
    let mut args = policy.clone();
    args["conversation_id"] = json!(id);
    let done = call(&a, "compact_conversation", args.clone())
        .await
        .expect("compacted");
    assert_eq!(done["status"], "compacted");
    assert_eq!(done["calls"], 1);
    assert_eq!(done["summary"]["from_seq"], 1);
    assert!(done["summary"]["text"]
        .as_str()
        .expect("text")
        .starts_with("Reply number"));
    // The context carries it with `summarize`.
    let mut ctx_args = args.clone();
    ctx_args["summarize"] = json!(true);
    let ctx = call(&a, "get_context", ctx_args).await.expect("context");
    assert_eq!(ctx["stats"]["summary"]["to_seq"], done["summary"]["to_seq"]);
    assert!(ctx["prompt"]
        .as_str()
        .expect("transcript")
        .starts_with("<conversation_summary>\n"));
    assert_eq!(
        ctx["sections"]["summary"]["to_seq"],
        done["summary"]["to_seq"]
    );
    // Another tenant's conversation is not found, and nothing is called for it.
    let calls = server.requests().len();
    let err = call(&b, "compact_conversation", args).await.unwrap_err();
    assert!(err.contains("not found"), "{err}");
    assert_eq!(server.requests().len(), calls);
}
