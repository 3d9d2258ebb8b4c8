//! The REAL `claude` binary (npm `@anthropic-ai/claude-code`) driven by the ClaudeCli backend,
//! offline, against a fake Anthropic server on loopback (`ANTHROPIC_BASE_URL` points the CLI at
//! it; the CLI's own network features are switched off).
//!
//! The binary is found through `RECALL_CLAUDE_PATH` (scripts/test.sh sets it), the
//! project-local install `.tools/node_modules/.bin/claude` (scripts/setup.sh), or `PATH`.
//! Without it the test fails when `CI=true` and is skipped with a notice otherwise.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use recall_llm::{ApiKey, Backend, ClaudeCliBackend, ClaudeCliConfig, ReplyStatus};
use recall_testkit::{claude_offline_env, require_claude};
use serde_json::{json, Value};
use support::anthropic::{
    block_start, message_delta, message_json, message_start, message_stop, ping, text_delta,
};
use support::{assemble, drain, text_of, three_turns, FakeServer, Recorded, Reply};
use tokio_util::sync::CancellationToken;

/// The texts of a message's content (a string or text blocks), joined with newlines.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// What the fake model answers: derived from the request, so the test can tell the reply
/// was computed from what the CLI sent.
fn derive_reply(body: &Value) -> String {
    let last_user = body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .map(|m| content_text(&m["content"]))
        .unwrap_or_default();
    let (history, current) = last_user
        .split_once("The human says:\n")
        .unwrap_or(("", last_user.as_str()));
    let current = current.lines().next().unwrap_or("").trim();
    let earlier = history
        .lines()
        .filter(|l| l.starts_with("Human: ") || l.starts_with("Assistant: "))
        .count();
    format!("You asked \"{current}\" after {earlier} earlier messages.")
}

fn handler() -> support::Handler {
    Arc::new(|req: &Recorded, _| {
        if req.method == "HEAD" {
            return Reply::empty(200);
        }
        let path = req.path.split('?').next().unwrap_or("");
        match path {
            "/v1/messages" => {
                let body = req.json();
                let text = derive_reply(&body);
                if body["stream"] == json!(true) {
                    let mid = text.len() / 2;
                    let mid = (0..=mid)
                        .rev()
                        .find(|&i| text.is_char_boundary(i))
                        .unwrap_or(0);
                    Reply::sse(vec![
                        message_start("msg_fake_real", 12),
                        block_start(0, json!({"type":"text","text":""})),
                        ping(),
                        text_delta(0, &text[..mid]),
                        text_delta(0, &text[mid..]),
                        support::anthropic::block_stop(0),
                        message_delta("end_turn", 9),
                        message_stop(),
                    ])
                } else {
                    Reply::json(200, message_json(&text))
                }
            }
            "/v1/messages/count_tokens" => Reply::json(200, json!({"input_tokens": 42})),
            _ => Reply::json(200, json!({})),
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_sends_the_history_and_streams_the_reply() {
    let Some(claude) = require_claude() else {
        return;
    };
    let version = std::process::Command::new(&claude)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", claude.display()));
    eprintln!("real claude: {} ({version})", claude.display());

    let server = FakeServer::start(handler()).await;
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let cfg = ClaudeCliConfig {
        claude_path: claude,
        api_key: Some(ApiKey::new("test")),
        timeout: Some(Duration::from_secs(120)),
        working_dir: Some(work.path().to_path_buf()),
        env: claude_offline_env(&server.base_url(), home.path()),
        ..ClaudeCliConfig::default()
    };
    let mut req = three_turns();
    req.system = Some("You are the recall integration test.".into());

    let events = drain(
        ClaudeCliBackend::new(cfg)
            .stream(req, CancellationToken::new())
            .await
            .expect("the claude CLI did not start"),
    )
    .await;
    let reply = assemble(&events);
    let requests = server.requests();
    let messages_calls: Vec<&Recorded> = requests
        .iter()
        .filter(|r| r.method == "POST" && r.path.starts_with("/v1/messages"))
        .collect();
    for r in &requests {
        eprintln!("fake server got: {} {}", r.method, r.path);
    }
    assert_eq!(
        reply.status,
        ReplyStatus::Complete,
        "events: {events:?}\nrequests: {:?}",
        requests.iter().map(|r| &r.path).collect::<Vec<_>>()
    );

    // The CLI sent the whole history, inside one user message, to the fake server.
    let turn = messages_calls
        .iter()
        .find(|r| r.json()["stream"] == json!(true))
        .expect("no streaming /v1/messages call");
    let body = turn.json();
    let sent = body.to_string();
    assert!(
        sent.contains("My name is Zorblax and I collect teapots."),
        "{sent}"
    );
    assert!(
        sent.contains("Nice to meet you, Zorblax! Teapots are lovely."),
        "{sent}"
    );
    assert!(sent.contains("What do I collect?"), "{sent}");
    assert!(sent.contains("<conversation_history>"), "{sent}");
    assert!(
        body["system"]
            .to_string()
            .contains("You are the recall integration test."),
        "our --system-prompt is in system: {}",
        body["system"]
    );
    assert_eq!(body["tools"], json!([]), "--tools \"\" disables every tool");
    assert_eq!(turn.header("x-api-key"), Some("test"));
    assert_eq!(turn.header("anthropic-version"), Some("2023-06-01"));
    eprintln!(
        "CLI request: keys {:?}, max_tokens {}, model {}",
        body.as_object()
            .map(|o| o.keys().cloned().collect::<Vec<_>>()),
        body["max_tokens"],
        body["model"]
    );

    // The reply the fake derived from that request came back as events.
    let expected = "You asked \"What do I collect?\" after 2 earlier messages.";
    assert_eq!(text_of(&events), expected, "events: {events:?}");
    assert_eq!(reply.text(), expected);
    assert_eq!(reply.stop_reason.as_deref(), Some("end_turn"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_auth_failure_is_cli_auth() {
    let Some(claude) = require_claude() else {
        return;
    };
    // The fake server rejects every key.
    let server = FakeServer::start(Arc::new(|req: &Recorded, _| {
        if req.method == "HEAD" {
            return Reply::empty(200);
        }
        Reply::json(
            401,
            json!({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}),
        )
    }))
    .await;
    let home = tempfile::tempdir().unwrap();
    let cfg = ClaudeCliConfig {
        claude_path: claude,
        api_key: Some(ApiKey::new("sk-ant-wrong-key-000000")),
        timeout: Some(Duration::from_secs(120)),
        working_dir: Some(home.path().to_path_buf()),
        env: {
            let mut env = claude_offline_env(&server.base_url(), home.path());
            env.push(("CLAUDE_CODE_MAX_RETRIES".into(), "0".into()));
            env
        },
        ..ClaudeCliConfig::default()
    };
    let events = drain(
        ClaudeCliBackend::new(cfg)
            .stream(three_turns(), CancellationToken::new())
            .await
            .expect("the claude CLI did not start"),
    )
    .await;
    let reply = assemble(&events);
    assert_eq!(reply.status, ReplyStatus::Partial, "{events:?}");
    assert!(
        !reply.has_content(),
        "an error text is not a reply: {events:?}"
    );
    let e = reply.error.expect("an error");
    assert!(
        matches!(e.kind, recall_llm::BackendErrorKind::CliAuth { .. }),
        "expected CliAuth, got {e:?}"
    );
    assert!(!e.to_string().contains("sk-ant-wrong-key-000000"), "{e}");
    eprintln!("auth failure reads: {e}");
}
