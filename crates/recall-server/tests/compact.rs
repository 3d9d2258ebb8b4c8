//! `POST /v1/conversations/{id}/compact` over real HTTP on both databases, with a fake
//! Anthropic summariser: the summary committed and shown by `GET …/{id}` and carried by a
//! context with `summarize`, another tenant's conversation not found (and never summarised),
//! a bad body refused with nothing changed, 409 while another summariser holds the
//! conversation, 502 when the summariser fails (the summary in force stays), 503 without a
//! backend.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::{server, server_upstreams, Backend, Server};
use recall_engine::llm::{AnthropicBackend, HttpConfig, RetryPolicy};
use recall_server::{Backends, Upstreams};
use recall_testkit::{anthropic, FakeServer, Reply};
use reqwest::StatusCode;
use serde_json::{json, Value};

on_both!(compact_route, compact_without_a_backend_is_503);

/// Answers every call with a summary naming the messages it was given, or a 500 while `fail`.
async fn summariser(fail: Arc<AtomicBool>) -> FakeServer {
    FakeServer::start(Arc::new(move |r, _| {
        if fail.load(Ordering::SeqCst) {
            return Reply::json(
                500,
                json!({"type": "error", "error": {"type": "api_error", "message": "down"}}),
            );
        }
        let prompt = r.json()["messages"][0]["content"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let n = prompt.matches("\n[seq ").count();
        Reply::sse(anthropic::text_reply(&[&format!(
            "The user sent {n} more messages; the code word is w1."
        )]))
    }))
    .await
}

async fn with_summariser(fake: &FakeServer, db: Backend) -> Option<Server> {
    let mut c = HttpConfig::anthropic().with_key("sk-ant-test-key");
    c.base_url = fake.base_url();
    c.retry = RetryPolicy::none();
    let backend = Arc::new(AnthropicBackend::new(c).unwrap());
    let upstreams = Upstreams {
        backends: Backends::default().with("anthropic", backend),
        ..Upstreams::default()
    };
    server_upstreams(db, upstreams, |_| {}).await
}

const POLICY: &str = r#"{"max_tokens": 700, "trim": "stable", "summary_tokens": 200}"#;

async fn long_conversation(s: &Server) -> String {
    let policy: Value = serde_json::from_str(POLICY).unwrap();
    let id = s
        .new_conversation(&s.key_a, json!({"policy": policy}))
        .await;
    let messages: Vec<Value> = (1..=40)
        .map(|i| {
            let role = if i % 2 == 1 { "user" } else { "assistant" };
            json!({"role": role, "content": format!("message {i}: {}", "filler words ".repeat(8))})
        })
        .collect();
    let r = s
        .post(
            &format!("/v1/conversations/{id}/messages"),
            &s.key_a,
            json!({ "messages": messages }),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    id
}

async fn compact_route(db: Backend) {
    let fail = Arc::new(AtomicBool::new(false));
    let fake = summariser(fail.clone()).await;
    let Some(s) = with_summariser(&fake, db).await else {
        return;
    };
    let id = long_conversation(&s).await;
    let path = format!("/v1/conversations/{id}/compact");

    // Nothing yet: the conversation view has no summary.
    let view = s.get(&format!("/v1/conversations/{id}"), &s.key_a).await;
    assert!(view.json.get("summary").is_none(), "{}", view.text);

    // A bad body changes nothing and calls nothing.
    let r = s.post(&path, &s.key_a, json!({"summary_tokens": 5})).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
    assert!(r.message().contains("summary_tokens"), "{}", r.text);
    let r = s.post(&path, &s.key_a, json!({"model": 3})).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
    // Another tenant: not found, nothing called.
    let r = s.post(&path, &s.key_b, json!({})).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.text);
    assert!(fake.requests().is_empty());

    let r = s.post(&path, &s.key_a, json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.json["status"], "compacted");
    assert_eq!(r.json["calls"], 1);
    let summary = r.json["summary"].clone();
    assert_eq!(summary["version"], 1);
    assert_eq!(summary["from_seq"], 1);
    assert_eq!(summary["backend"], "anthropic");
    let to = summary["to_seq"].as_i64().unwrap();

    let view = s.get(&format!("/v1/conversations/{id}"), &s.key_a).await;
    assert_eq!(view.json["summary"], summary, "{}", view.text);
    let other = s.get(&format!("/v1/conversations/{id}"), &s.key_b).await;
    assert_eq!(other.status, StatusCode::NOT_FOUND);

    // A context with `summarize` carries it before the history.
    let ctx = s
        .post(
            &format!("/v1/conversations/{id}/context"),
            &s.key_a,
            json!({"format": "anthropic", "summarize": true}),
        )
        .await;
    assert_eq!(ctx.status, StatusCode::OK, "{}", ctx.text);
    assert_eq!(ctx.json["stats"]["summary"]["to_seq"], to);
    // Leading the first user message, never in the system prompt (issue 49 item 1); and as
    // data in `sections`, the same bytes.
    let placed = ctx.json["prompt"]["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(placed.starts_with("<conversation_summary>\nA summary of messages 1 to "));
    assert!(ctx.json["prompt"].get("system").is_none(), "{}", ctx.text);
    assert_eq!(ctx.json["sections"]["summary"]["text"], placed);
    assert_eq!(ctx.json["sections"]["summary"]["to_seq"], to);

    // Up to date: nothing called.
    let r = s.post(&path, &s.key_a, json!({})).await;
    assert_eq!(r.json["status"], "up_to_date", "{}", r.text);
    assert_eq!(fake.requests().len(), 1);

    // More messages; the summariser fails: 502, the summary in force stays.
    let more: Vec<Value> = (41..=80)
        .map(|i| {
            let role = if i % 2 == 1 { "user" } else { "assistant" };
            json!({"role": role, "content": format!("message {i}: {}", "filler words ".repeat(8))})
        })
        .collect();
    s.post(
        &format!("/v1/conversations/{id}/messages"),
        &s.key_a,
        json!({ "messages": more }),
    )
    .await;
    fail.store(true, Ordering::SeqCst);
    let r = s.post(&path, &s.key_a, json!({})).await;
    assert_eq!(r.status, StatusCode::BAD_GATEWAY, "{}", r.text);
    assert_eq!(r.error_type(), "upstream_error");
    let view = s.get(&format!("/v1/conversations/{id}"), &s.key_a).await;
    assert_eq!(view.json["summary"], summary);

    // Another summariser holds the conversation: 409.
    fail.store(false, Ordering::SeqCst);
    let far = i64::MAX / 2;
    let tenant = common::TENANT_A;
    assert!(s
        .engine
        .store()
        .take_compaction_lease(tenant, &id, "elsewhere", far, i64::MAX)
        .await
        .unwrap());
    let r = s.post(&path, &s.key_a, json!({})).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.text);
    assert!(r.message().contains("another summariser"), "{}", r.text);
    s.engine
        .store()
        .release_compaction_lease(tenant, &id, "elsewhere")
        .await
        .unwrap();
    let r = s
        .post(&path, &s.key_a, json!({"backend": "anthropic"}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.json["summary"]["version"], 2);
    // An unknown backend is the caller's mistake.
    let r = s.post(&path, &s.key_a, json!({"backend": "nope"})).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
}

async fn compact_without_a_backend_is_503(db: Backend) {
    let Some(s) = server(db).await else { return };
    let id = long_conversation(&s).await;
    let r = s
        .post(
            &format!("/v1/conversations/{id}/compact"),
            &s.key_a,
            json!({}),
        )
        .await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.text);
}
