//! Chat over HTTP against a fake Anthropic server on loopback, on SQLite and on PostgreSQL:
//! server-sent events, the WebSocket, tool use, a client that disconnects mid-stream, backend
//! failures, bad requests and tenant isolation of the chat routes.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{server_upstreams, server_with, Backend, Server, TENANT_A};
use futures::{SinkExt, StreamExt};
use recall_engine::llm::{AnthropicBackend, HttpConfig, RetryPolicy};
use recall_server::{Backends, Upstreams};
use recall_testkit::{anthropic, FakeServer, Part, Reply};
use reqwest::StatusCode;
use serde_json::{json, Value};

on_both!(
    sse_streams_the_reply_and_stores_the_turn,
    a_client_that_disconnects_leaves_a_partial_reply,
    backend_failures_and_bad_requests,
    no_backend_is_503,
    websocket_runs_turns_with_the_same_events,
    tool_use_is_streamed_stored_and_paired_on_the_next_turn,
    bad_chat_bodies_are_refused_and_change_nothing,
    chat_routes_are_tenant_scoped,
    a_chat_body_takes_the_context_policy,
    replies_past_max_message_bytes_are_cut_on_every_chat_path,
    a_chat_context_over_max_context_bytes_is_refused,
);

async fn chat_server(fake: &FakeServer, db: Backend) -> Option<Server> {
    chat_server_with(fake, db, |_| {}).await
}

async fn chat_server_with(
    fake: &FakeServer,
    db: Backend,
    adjust: impl FnOnce(&mut recall_server::ServerConfig),
) -> Option<Server> {
    let mut c = HttpConfig::anthropic().with_key("sk-ant-test-key");
    c.base_url = fake.base_url();
    c.retry = RetryPolicy::none();
    let backend = Arc::new(AnthropicBackend::new(c).expect("backend"));
    let upstreams = Upstreams {
        backends: Backends::default().with("anthropic", backend),
        ..Upstreams::default()
    };
    server_upstreams(db, upstreams, adjust).await
}

/// Parses a whole SSE body into (event, data) pairs.
fn sse_events(body: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for block in body.split("\n\n") {
        let mut name = String::new();
        let mut data = String::new();
        for line in block.lines() {
            if let Some(n) = line.strip_prefix("event:") {
                name = n.trim().to_string();
            } else if let Some(d) = line.strip_prefix("data:") {
                data.push_str(d.trim_start());
            }
        }
        if !name.is_empty() {
            out.push((
                name,
                serde_json::from_str(&data).expect("event data is JSON"),
            ));
        }
    }
    out
}

async fn sse_streams_the_reply_and_stores_the_turn(b: Backend) {
    let fake = FakeServer::scripted(vec![Reply::sse(anthropic::text_reply(&[
        "We use ",
        "Postgres.",
    ]))])
    .await;
    let Some(s) = chat_server(&fake, b).await else {
        return;
    };
    let id = s
        .new_conversation(&s.key_a, json!({"system_prompt": "Be brief."}))
        .await;
    let res = s
        .client
        .post(format!("{}/v1/conversations/{id}/chat", s.base))
        .bearer_auth(&s.key_a)
        .json(&json!({"content": "What database?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let events = sse_events(&res.text().await.unwrap());
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"user_stored"), "{names:?}");
    assert_eq!(names.last(), Some(&"done"), "{names:?}");
    let text: String = events
        .iter()
        .filter(|(n, _)| n == "assistant_chunk")
        .map(|(_, d)| d["delta"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(text, "We use Postgres.");
    let done = &events.last().unwrap().1;
    assert_eq!(done["message_id"], 2);
    assert!(done["usage"]["output_tokens"].as_u64().is_some(), "{done}");
    // Which backend answered, and the model the request named (null: the backend's own).
    assert_eq!(done["backend"], "anthropic", "{done}");
    assert_eq!(done["model"], Value::Null, "{done}");

    let stored = s.stored(TENANT_A, &id).await;
    assert_eq!(stored.len(), 2);
    assert_eq!(stored[0]["message"]["content"], "What database?");
    assert_eq!(stored[1]["message"]["role"], "assistant");
    assert_eq!(stored[1]["status"], "complete");
    // The backend was sent the system prompt and the user message.
    let sent = fake.requests()[0].json();
    assert_eq!(sent["system"], "Be brief.");
}

async fn a_client_that_disconnects_leaves_a_partial_reply(b: Backend) {
    let fake = FakeServer::scripted(vec![Reply::sse(vec![
        anthropic::message_start("msg_1", 10),
        anthropic::block_start(0, json!({"type": "text", "text": ""})),
        anthropic::text_delta(0, "Partial words"),
        Part::Pause(Duration::from_secs(30)),
        anthropic::text_delta(0, " never sent"),
    ])])
    .await;
    let Some(s) = chat_server(&fake, b).await else {
        return;
    };
    let id = s.new_conversation(&s.key_a, json!({})).await;
    let res = s
        .client
        .post(format!("{}/v1/conversations/{id}/chat", s.base))
        .bearer_auth(&s.key_a)
        .json(&json!({"content": "Tell me a long story"}))
        .send()
        .await
        .unwrap();
    let mut body = res.bytes_stream();
    let mut seen = String::new();
    while !seen.contains("assistant_chunk") {
        let chunk = tokio::time::timeout(Duration::from_secs(20), body.next())
            .await
            .expect("a chunk in time")
            .expect("stream open")
            .unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    drop(body); // the client goes away mid-stream
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let stored = s.stored(TENANT_A, &id).await;
        if stored.len() == 2 && stored[1]["message"]["content"] == json!("Partial words") {
            assert_eq!(stored[1]["status"], "partial");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no partial reply: {stored:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn backend_failures_and_bad_requests(b: Backend) {
    let fake = FakeServer::scripted(vec![Reply::json(
        500,
        json!({"type": "error", "error": {"type": "api_error", "message": "overloaded inside"}}),
    )])
    .await;
    let Some(s) = chat_server(&fake, b).await else {
        return;
    };
    let id = s.new_conversation(&s.key_a, json!({})).await;
    let path = format!("/v1/conversations/{id}/chat");

    // Refused before anything is stored.
    for (body, status) in [
        (json!({"content": ""}), StatusCode::UNPROCESSABLE_ENTITY),
        (
            json!({"content": "x", "backend": "nope"}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            json!({"content": "x", "colour": 1}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (json!({}), StatusCode::UNPROCESSABLE_ENTITY),
    ] {
        let r = s.post(&path, &s.key_a, body.clone()).await;
        assert_eq!(r.status, status, "{body}: {}", r.text);
        assert_eq!(r.error_type(), "invalid_request");
    }
    let r = s.post(&path, &s.key_b, json!({"content": "x"})).await;
    assert_eq!(
        r.status,
        StatusCode::NOT_FOUND,
        "another tenant: {}",
        r.text
    );
    let r = s
        .raw(
            reqwest::Method::POST,
            &path,
            None,
            Some(b"{\"content\":\"x\"}".to_vec()),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(s.stored(TENANT_A, &id).await.is_empty());

    // A backend error ends the stream with an `error` event; the user message is kept.
    let res = s
        .client
        .post(format!("{}{path}", s.base))
        .bearer_auth(&s.key_a)
        .json(&json!({"content": "hello", "id": "u1"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let events = sse_events(&res.text().await.unwrap());
    let (name, data) = events.last().unwrap();
    assert_eq!(name, "error", "{events:?}");
    assert!(
        data["message"]
            .as_str()
            .unwrap()
            .contains("overloaded inside"),
        "{data}"
    );
    assert_eq!(s.stored(TENANT_A, &id).await.len(), 1);
    // The same client id again: the turn ran already.
    let r = s
        .post(&path, &s.key_a, json!({"content": "hello", "id": "u1"}))
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.text);
    let m = s
        .raw(reqwest::Method::GET, "/metrics", None, None)
        .await
        .text;
    assert!(
        m.contains("recall_backend_errors_total{backend=\"anthropic\"} 1"),
        "{m}"
    );
}

async fn no_backend_is_503(b: Backend) {
    let Some(s) = server_with(b, |_| {}).await else {
        return;
    };
    let id = s.new_conversation(&s.key_a, json!({})).await;
    let r = s
        .post(
            &format!("/v1/conversations/{id}/chat"),
            &s.key_a,
            json!({"content": "x"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.text);
    assert_eq!(r.error_type(), "unavailable");
    // The answer says how to give the server a backend.
    let message = r.json["error"]["message"].as_str().unwrap_or_default();
    for what in [
        "restart `recall serve`",
        "ANTHROPIC_API_KEY",
        "OPENAI_BASE_URL",
        "bash scripts/models.sh start",
    ] {
        assert!(message.contains(what), "{what}: {message}");
    }
}

async fn websocket_runs_turns_with_the_same_events(b: Backend) {
    let fake = FakeServer::scripted(vec![
        Reply::sse(anthropic::text_reply(&["Hi ", "there."])),
        Reply::sse(anthropic::text_reply(&["Again."])),
    ])
    .await;
    let Some(s) = chat_server(&fake, b).await else {
        return;
    };
    let id = s.new_conversation(&s.key_a, json!({})).await;
    let url = format!(
        "{}/v1/conversations/{id}/ws",
        s.base.replace("http://", "ws://")
    );

    // Without a key, and for another tenant, the upgrade is refused.
    assert!(tokio_tungstenite::connect_async(url.as_str())
        .await
        .is_err());

    let mut req = tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(
        url.as_str(),
    )
    .unwrap();
    req.headers_mut().insert(
        "authorization",
        format!("Bearer {}", s.key_a).parse().unwrap(),
    );
    let mut other = req.clone();
    other.headers_mut().insert(
        "authorization",
        format!("Bearer {}", s.key_b).parse().unwrap(),
    );
    assert!(tokio_tungstenite::connect_async(other).await.is_err());
    let (mut ws, _) = tokio_tungstenite::connect_async(req)
        .await
        .expect("connect");
    use tokio_tungstenite::tungstenite::Message;
    for (n, (content, expect)) in [("hello", "Hi there."), ("and again", "Again.")]
        .into_iter()
        .enumerate()
    {
        let rid = format!("r{n}");
        ws.send(Message::text(
            json!({"type": "user_message", "content": content, "request_id": rid}).to_string(),
        ))
        .await
        .unwrap();
        let mut text = String::new();
        loop {
            let f = next_json(&mut ws).await;
            assert_eq!(f["request_id"], rid.as_str(), "{f}");
            match f["type"].as_str().unwrap() {
                "assistant_chunk" => text.push_str(f["delta"].as_str().unwrap()),
                "done" => {
                    assert!(f["message_id"].as_i64().is_some());
                    break;
                }
                "user_stored" => {}
                other => panic!("unexpected frame {other}: {f}"),
            }
        }
        assert_eq!(text, expect);
    }
    // A malformed frame gets an error frame and the socket stays usable.
    ws.send(Message::text("{not json")).await.unwrap();
    let msg = ws.next().await.unwrap().unwrap();
    let f: Value = serde_json::from_str(msg.to_text().unwrap()).unwrap();
    assert_eq!(f["type"], "error");
    ws.close(None).await.ok();
    let stored = s.stored(TENANT_A, &id).await;
    assert_eq!(stored.len(), 4);
    assert!(stored.iter().all(|m| m["status"] == "complete"));
}

/// Runs one turn over SSE and reads the whole stream: the status and the events.
async fn sse_turn(s: &Server, id: &str, body: Value) -> (StatusCode, Vec<(String, Value)>) {
    let res = s
        .client
        .post(format!("{}/v1/conversations/{id}/chat", s.base))
        .bearer_auth(&s.key_a)
        .json(&body)
        .send()
        .await
        .expect("chat request");
    let status = res.status();
    let text = res.text().await.expect("chat body");
    assert_eq!(status, StatusCode::OK, "{text}");
    (status, sse_events(&text))
}

/// A reply that says a line, then calls a tool whose input arrives in pieces.
fn tool_use_reply() -> Vec<Part> {
    vec![
        anthropic::message_start("msg_tool", 30),
        anthropic::block_start(0, json!({"type": "text", "text": ""})),
        anthropic::text_delta(0, "Let me check."),
        anthropic::block_stop(0),
        anthropic::block_start(
            1,
            json!({"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {}}),
        ),
        anthropic::delta(1, json!({"type": "input_json_delta", "partial_json": ""})),
        anthropic::delta(
            1,
            json!({"type": "input_json_delta", "partial_json": "{\"location\": \"Par"}),
        ),
        anthropic::delta(
            1,
            json!({"type": "input_json_delta", "partial_json": "is\", \"days\": [1, 2]}"}),
        ),
        anthropic::block_stop(1),
        anthropic::message_delta("tool_use", 40),
        anthropic::message_stop(),
    ]
}

async fn tool_use_is_streamed_stored_and_paired_on_the_next_turn(b: Backend) {
    // Requests arrive one at a time, so the n-th reply goes to the n-th turn below.
    let fake = FakeServer::scripted(vec![
        Reply::sse(tool_use_reply()),
        Reply::sse(tool_use_reply()),
        Reply::sse(anthropic::text_reply(&["No problem."])),
        Reply::sse(anthropic::text_reply(&["It is 18°C ", "in Paris."])),
    ])
    .await;
    let Some(s) = chat_server(&fake, b).await else {
        return;
    };
    let question = "What's the weather in Paris?";
    let tool_use = json!({"type": "tool_use", "id": "toolu_01A", "name": "get_weather",
                          "input": {"location": "Paris", "days": [1, 2]}});
    let reply_blocks = json!([{"type": "text", "text": "Let me check."}, tool_use.clone()]);
    // Two conversations: one answers the tool call, the other moves on without answering.
    let orphaned = s.new_conversation(&s.key_a, json!({})).await;
    let paired = s.new_conversation(&s.key_a, json!({})).await;

    for id in [&orphaned, &paired] {
        let (_, events) = sse_turn(&s, id, json!({ "content": question })).await;
        let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["user_stored", "assistant_chunk", "tool_use", "done"],
            "{events:?}"
        );
        assert_eq!(events[1].1, json!({"delta": "Let me check."}));
        assert_eq!(
            events[2].1,
            json!({"id": "toolu_01A", "name": "get_weather",
                   "input": {"location": "Paris", "days": [1, 2]}})
        );
        assert_eq!(events[3].1["message_id"], 2, "{:?}", events[3]);
        assert_eq!(events[3].1["stop_reason"], "tool_use", "{:?}", events[3]);

        // The Anthropic API backend runs no tools: only the Claude Code CLI reports tool
        // results, which chat_turn would store as a user message after the reply. Here the
        // turn is exactly the user message and the reply, tool_use block and all.
        let stored = s.stored(TENANT_A, id).await;
        assert_eq!(stored.len(), 2, "{stored:?}");
        assert_eq!(stored[1]["status"], "complete");
        assert_eq!(stored[1]["message"]["role"], "assistant");
        assert_eq!(stored[1]["message"]["content"], reply_blocks);
        assert_eq!(stored[1]["message"]["metadata"]["stop_reason"], "tool_use");
        // And the same through the API.
        let r = s
            .get(&format!("/v1/conversations/{id}/messages"), &s.key_a)
            .await;
        assert_eq!(r.json["data"][1]["message"]["content"], reply_blocks);
    }

    // Next turn without a tool_result: the tool_use is an orphan. docs/FORMATS.md §4.4 ("A tool
    // pair ... Selection never keeps one side of a pair without the other") and
    // docs/FORMAT-DECISIONS.md (Selection, "Tool pairs": an unmatched tool_use is removed, the
    // rest of its message kept) — so the backend gets the reply's text without the call,
    // which the Messages API would otherwise reject.
    let (_, events) = sse_turn(&s, &orphaned, json!({"content": "Never mind, thanks."})).await;
    assert_eq!(events.last().unwrap().0, "done", "{events:?}");
    let sent = fake.requests()[2].json();
    assert_eq!(
        sent["messages"],
        json!([
            {"role": "user", "content": question},
            {"role": "assistant", "content": [{"type": "text", "text": "Let me check."}]},
            {"role": "user", "content": "Never mind, thanks."},
        ]),
        "{sent}"
    );
    // Storage keeps what the model said; only the request leaves the orphan out.
    let stored = s.stored(TENANT_A, &orphaned).await;
    assert_eq!(stored[1]["message"]["content"], reply_blocks);
    assert_eq!(stored.len(), 4);

    // Next turn answering the call: the pair goes out whole, the tool_use exactly as the
    // model sent it, followed by the user message holding its tool_result.
    let result = json!([{"type": "tool_result", "tool_use_id": "toolu_01A",
                         "content": "18°C, cloudy"}]);
    let (_, events) = sse_turn(&s, &paired, json!({ "content": result })).await;
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["user_stored", "assistant_chunk", "assistant_chunk", "done"],
        "{events:?}"
    );
    assert_eq!(events[0].1["seq"], 3);
    let sent = fake.requests()[3].json();
    assert_eq!(
        sent["messages"],
        json!([
            {"role": "user", "content": question},
            {"role": "assistant", "content": reply_blocks},
            {"role": "user", "content": result},
        ]),
        "{sent}"
    );
    let stored = s.stored(TENANT_A, &paired).await;
    assert_eq!(stored.len(), 4, "{stored:?}");
    assert_eq!(stored[2]["message"]["content"], result);
    assert_eq!(
        stored[3]["message"]["content"],
        json!("It is 18°C in Paris.")
    );
    assert_eq!(stored[3]["status"], "complete");
    assert_eq!(fake.requests().len(), 4);
}

async fn bad_chat_bodies_are_refused_and_change_nothing(b: Backend) {
    let fake = FakeServer::scripted(vec![]).await;
    let Some(s) = chat_server_with(&fake, b, |c| c.limits.max_body_bytes = 16 * 1024).await else {
        return;
    };
    let id = s.new_conversation(&s.key_a, json!({})).await;
    let r = s
        .post(
            &format!("/v1/conversations/{id}/messages"),
            &s.key_a,
            json!({"role": "user", "content": "kept"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let before = s.stored(TENANT_A, &id).await;
    let path = format!("/v1/conversations/{id}/chat");

    let deep = "[".repeat(200) + &"]".repeat(200);
    let huge = format!("{{\"content\": \"{}\"}}", "x".repeat(20_000));
    let cases: Vec<(Vec<u8>, StatusCode, &str, &str)> = vec![
        (
            b"{\"content\": ".to_vec(),
            StatusCode::BAD_REQUEST,
            "invalid_json",
            "not valid JSON",
        ),
        (
            b"".to_vec(),
            StatusCode::BAD_REQUEST,
            "invalid_json",
            "empty",
        ),
        (
            b"{\"content\": \"caf\xe9\"}".to_vec(),
            StatusCode::BAD_REQUEST,
            "invalid_json",
            "UTF-8",
        ),
        (
            format!("{{\"content\": {deep}}}").into_bytes(),
            StatusCode::BAD_REQUEST,
            "invalid_json",
            "nested deeper than 64",
        ),
        (
            huge.into_bytes(),
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            "16384 bytes",
        ),
        (
            b"[\"hello\"]".to_vec(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            "invalid request body",
        ),
        (
            b"{\"content\": 5}".to_vec(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            "content",
        ),
        (
            b"{\"content\": \"x\", \"max_tokens\": \"many\"}".to_vec(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            "max_tokens",
        ),
        (
            b"{\"content\": \"x\", \"model\": 3}".to_vec(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            "model",
        ),
        (
            b"{\"content\": \"x\", \"temperature\": 0.5}".to_vec(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            "temperature",
        ),
        (
            b"{\"content\": \"   \"}".to_vec(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            "empty",
        ),
        // Each field is valid alone; together they are not a policy. Refused before the user
        // message is stored (it was stored, then an `error` event, before 2026-11-29).
        (
            b"{\"content\": \"x\", \"max_tokens\": 10, \"recall_tokens\": 20}".to_vec(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            "recall_tokens (20) must be less than max_tokens (10)",
        ),
    ];
    for (body, status, kind, says) in cases {
        let shown = String::from_utf8_lossy(&body[..body.len().min(60)]).to_string();
        let r = s
            .raw(reqwest::Method::POST, &path, Some(&s.key_a), Some(body))
            .await;
        assert_eq!(r.status, status, "{shown}: {}", r.text);
        assert_eq!(r.error_type(), kind, "{shown}");
        assert!(r.message().contains(says), "{shown}: {}", r.text);
    }

    // The WebSocket answers bad frames with an error frame naming the problem.
    let (mut ws, _) = tokio_tungstenite::connect_async(ws_request(&s, &id, Some(&s.key_a)))
        .await
        .expect("connect");
    use tokio_tungstenite::tungstenite::Message;
    for (frame, says) in [
        (
            "{\"type\": \"user_message\", \"content\": ".to_string(),
            "not valid JSON",
        ),
        (
            format!("{{\"type\": \"user_message\", \"content\": {deep}}}"),
            "nested deeper than 64",
        ),
        (
            "{\"type\": \"user_message\", \"content\": \"x\", \"colour\": 1}".to_string(),
            "colour",
        ),
        (
            "{\"type\": \"user_message\", \"content\": \"x\", \"max_tokens\": -1}".to_string(),
            "max_tokens",
        ),
        (
            "{\"type\": \"shout\", \"content\": \"x\"}".to_string(),
            "shout",
        ),
        (
            "{\"type\": \"user_message\", \"content\": \"\"}".to_string(),
            "empty",
        ),
        (
            "{\"type\": \"user_message\", \"content\": \"x\", \"max_tokens\": 10, \"recall_tokens\": 20}"
                .to_string(),
            "recall_tokens (20) must be less than max_tokens (10)",
        ),
    ] {
        ws.send(Message::text(frame.clone())).await.unwrap();
        let msg = tokio::time::timeout(Duration::from_secs(20), ws.next())
            .await
            .expect("frame in time")
            .expect("open")
            .unwrap();
        let f: Value = serde_json::from_str(msg.to_text().unwrap()).unwrap();
        assert_eq!(f["type"], "error", "{frame}: {f}");
        assert!(
            f["message"].as_str().unwrap_or("").contains(says),
            "{frame}: {f}"
        );
    }
    ws.close(None).await.ok();

    // Retry and edit refuse a bad policy before they fork.
    for (route, body) in [
        (
            "retry",
            json!({"seq": 1, "max_tokens": 10, "recall_tokens": 20}),
        ),
        (
            "edit",
            json!({"seq": 1, "content": "y", "max_tokens": 10, "recall_tokens": 20}),
        ),
    ] {
        let r = s
            .post(&format!("/v1/conversations/{id}/{route}"), &s.key_a, body)
            .await;
        assert_eq!(
            r.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{route}: {}",
            r.text
        );
        assert!(
            r.message().contains("recall_tokens (20)"),
            "{route}: {}",
            r.text
        );
    }
    let forks = s
        .get(&format!("/v1/conversations/{id}/forks"), &s.key_a)
        .await;
    assert_eq!(forks.json["data"], json!([]), "no fork was made");

    assert_eq!(s.stored(TENANT_A, &id).await, before, "nothing was stored");
    let r = s.get(&format!("/v1/conversations/{id}"), &s.key_a).await;
    assert_eq!(r.json["message_count"], 1);
    assert!(fake.requests().is_empty(), "the backend was never called");
}

/// A WebSocket upgrade request for conversation `id`, with `key` as the bearer when given.
fn ws_request(
    s: &Server,
    id: &str,
    key: Option<&str>,
) -> tokio_tungstenite::tungstenite::handshake::client::Request {
    let url = format!(
        "{}/v1/conversations/{id}/ws",
        s.base.replace("http://", "ws://")
    );
    let mut req =
        tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(url)
            .unwrap();
    if let Some(k) = key {
        req.headers_mut()
            .insert("authorization", format!("Bearer {k}").parse().unwrap());
    }
    req
}

/// The HTTP status a refused WebSocket upgrade gets (panics when the upgrade succeeds).
async fn ws_refusal(s: &Server, id: &str, key: Option<&str>) -> (u16, String) {
    match tokio_tungstenite::connect_async(ws_request(s, id, key)).await {
        Ok(_) => panic!("the upgrade to {id} with {key:?} was accepted"),
        Err(tokio_tungstenite::tungstenite::Error::Http(res)) => {
            let body = res
                .body()
                .as_ref()
                .map(|b| String::from_utf8_lossy(b).to_string())
                .unwrap_or_default();
            (res.status().as_u16(), body)
        }
        Err(e) => panic!("not an HTTP refusal: {e}"),
    }
}

async fn chat_routes_are_tenant_scoped(b: Backend) {
    let fake = FakeServer::scripted(vec![]).await;
    let Some(s) = chat_server(&fake, b).await else {
        return;
    };
    let a_id = s
        .new_conversation(&s.key_a, json!({"system_prompt": "A's secret prompt"}))
        .await;
    let r = s
        .post(
            &format!("/v1/conversations/{a_id}/messages"),
            &s.key_a,
            json!({"role": "user", "content": "A's message"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let b_id = s.new_conversation(&s.key_b, json!({})).await;
    let body = b"{\"content\": \"intruder\"}".to_vec();

    // Another tenant's conversation is answered like one that does not exist.
    for (id, key) in [
        (&a_id, &s.key_b),
        (&b_id, &s.key_a),
        (&"no-such-id".to_string(), &s.key_a),
    ] {
        let path = format!("/v1/conversations/{id}/chat");
        let r = s
            .raw(reqwest::Method::POST, &path, Some(key), Some(body.clone()))
            .await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{path}: {}", r.text);
        assert_eq!(r.error_type(), "not_found");
        assert!(!r.text.contains("secret"), "{}", r.text);
        let (status, text) = ws_refusal(&s, id, Some(key)).await;
        assert_eq!(status, 404, "ws {id}: {text}");
        assert!(!text.contains("secret"), "{text}");
    }
    // Without a key, or with a wrong one, both routes are 401, whoever's the id.
    for key in [None, Some("rk_not_a_key_at_all_0000000000")] {
        for id in [&a_id, &b_id] {
            let path = format!("/v1/conversations/{id}/chat");
            let r = s
                .raw(reqwest::Method::POST, &path, key, Some(body.clone()))
                .await;
            assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{path}: {}", r.text);
            assert_eq!(r.error_type(), "authentication_error");
            let (status, text) = ws_refusal(&s, id, key).await;
            assert_eq!(status, 401, "ws {id} {key:?}: {text}");
        }
    }
    assert_eq!(s.stored(TENANT_A, &a_id).await.len(), 1);
    assert!(s.stored(common::TENANT_B, &b_id).await.is_empty());
    assert!(fake.requests().is_empty(), "the backend was never called");
}

/// Issue 34: a chat body takes the policy fields of `/context`, so `max_tokens` is the history
/// budget (as everywhere else) and `max_output_tokens` the reply limit; a retry takes them too.
async fn a_chat_body_takes_the_context_policy(b: Backend) {
    let fake = FakeServer::scripted(vec![
        Reply::sse(anthropic::text_reply(&["Noted."])),
        Reply::sse(anthropic::text_reply(&["Again."])),
    ])
    .await;
    let Some(s) = chat_server(&fake, b).await else {
        return;
    };
    let id = s.new_conversation(&s.key_a, json!({})).await;
    // An old turn of about 60 tokens, then a short question.
    let long = "an old remark about the garden shed and its roof ".repeat(6);
    for (role, text) in [("user", long.as_str()), ("assistant", "I see.")] {
        let r = s
            .post(
                &format!("/v1/conversations/{id}/messages"),
                &s.key_a,
                json!({"role": role, "content": text}),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    }
    let (status, events) = sse_turn(
        &s,
        &id,
        json!({"content": "Short question?", "max_tokens": 20, "max_output_tokens": 7}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{events:?}");
    let sent = fake.requests()[0].json();
    // The reply limit is max_output_tokens; the 20-token history budget left the old turn out.
    assert_eq!(sent["max_tokens"], 7, "{sent}");
    let messages = sent["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 1, "{sent}");

    // A retry of that reply with a budget that holds everything.
    let res = s
        .client
        .post(format!("{}/v1/conversations/{id}/retry", s.base))
        .bearer_auth(&s.key_a)
        .json(&json!({"seq": 4, "max_tokens": 4000, "recall_tokens": 0}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let _ = res.text().await.unwrap();
    let sent = fake.requests()[1].json();
    assert_eq!(sent["messages"].as_array().map(Vec::len), Some(3), "{sent}");
    // A policy field's error names it; an unknown field is refused.
    for (body, says) in [
        (
            json!({"content": "x", "summary_tokens": 5}),
            "summary_tokens",
        ),
        (json!({"content": "x", "colour": "red"}), "colour"),
    ] {
        let r = s
            .post(&format!("/v1/conversations/{id}/chat"), &s.key_a, body)
            .await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
        assert!(r.message().contains(says), "{}", r.text);
    }
}

/// A text reply of 200 KiB, in 1 KiB chunks.
fn long_reply() -> Reply {
    let piece = "0123456789abcdef".repeat(64);
    let chunks: Vec<&str> = (0..200).map(|_| piece.as_str()).collect();
    Reply::sse(anthropic::text_reply(&chunks))
}

/// Issue 49 item 7: one reply cap on every chat path. `/v1` chat stored a 100 MB reply as
/// complete and the WebSocket path 4 MB; a streamed tool input grew without bound. With
/// `max_message_bytes` 64 KiB: over SSE and over the WebSocket the client gets at most the
/// cap and an error, the stored reply is `partial` within the cap, and a tool input that
/// streams past the cap stops the reply there.
async fn replies_past_max_message_bytes_are_cut_on_every_chat_path(b: Backend) {
    let cap = 64 * 1024;
    let mut tool_input = vec![
        anthropic::message_start("msg_big_tool", 30),
        anthropic::block_start(0, json!({"type": "text", "text": ""})),
        anthropic::text_delta(0, "Let me check."),
        anthropic::block_stop(0),
        anthropic::block_start(
            1,
            json!({"type": "tool_use", "id": "toolu_big", "name": "write", "input": {}}),
        ),
        anthropic::delta(
            1,
            json!({"type": "input_json_delta", "partial_json": "{\"text\": \""}),
        ),
    ];
    let piece = "x".repeat(1024);
    for _ in 0..200 {
        tool_input.push(anthropic::delta(
            1,
            json!({"type": "input_json_delta", "partial_json": piece}),
        ));
    }
    tool_input.extend([
        anthropic::delta(
            1,
            json!({"type": "input_json_delta", "partial_json": "\"}"}),
        ),
        anthropic::block_stop(1),
        anthropic::message_delta("tool_use", 40),
        anthropic::message_stop(),
    ]);
    let fake = FakeServer::scripted(vec![long_reply(), long_reply(), Reply::sse(tool_input)]).await;
    let Some(s) = chat_server_with(&fake, b, |c| c.limits.max_message_bytes = cap).await else {
        return;
    };
    let id = s.new_conversation(&s.key_a, json!({})).await;

    // SSE.
    let (_, events) = sse_turn(&s, &id, json!({"content": "Write a lot."})).await;
    let text: String = events
        .iter()
        .filter(|(n, _)| n == "assistant_chunk")
        .map(|(_, d)| d["delta"].as_str().unwrap().to_string())
        .collect();
    assert!(
        text.len() <= cap && text.len() >= cap - 1024,
        "{}",
        text.len()
    );
    let error = events
        .iter()
        .find(|(n, _)| n == "error")
        .expect("an error event");
    assert!(
        error.1.to_string().contains("max_message_bytes"),
        "{}",
        error.1
    );
    let stored = s.stored(TENANT_A, &id).await;
    assert_eq!(stored[1]["status"], "partial");
    assert_eq!(stored[1]["message"]["content"].as_str().unwrap(), text);

    // The WebSocket.
    use tokio_tungstenite::tungstenite::Message;
    let (mut ws, _) = tokio_tungstenite::connect_async(ws_request(&s, &id, Some(&s.key_a)))
        .await
        .expect("connect");
    ws.send(Message::text(
        json!({"type": "user_message", "content": "More.", "request_id": "w"}).to_string(),
    ))
    .await
    .unwrap();
    let mut text = String::new();
    let mut said = String::new();
    loop {
        let f = next_json(&mut ws).await;
        match f["type"].as_str().unwrap() {
            "assistant_chunk" => text.push_str(f["delta"].as_str().unwrap()),
            "error" => {
                said = f.to_string();
                break;
            }
            "done" => break,
            _ => {}
        }
    }
    ws.close(None).await.ok();
    assert!(said.contains("max_message_bytes"), "{said}");
    assert!(text.len() <= cap, "{}", text.len());
    let stored = s.stored(TENANT_A, &id).await;
    assert_eq!(stored[3]["status"], "partial");
    assert_eq!(stored[3]["message"]["content"].as_str().unwrap(), text);

    // A tool input streaming past the cap: stopped there; the call is not stored.
    let (_, events) = sse_turn(&s, &id, json!({"content": "Write it to a file."})).await;
    assert!(
        events
            .iter()
            .any(|(n, d)| n == "error" && d.to_string().contains("max_message_bytes")),
        "{events:?}"
    );
    let stored = s.stored(TENANT_A, &id).await;
    assert_eq!(stored.len(), 6, "{stored:?}");
    assert_eq!(stored[5]["status"], "partial");
    let bytes = stored[5]["message"].to_string().len();
    assert!(bytes < cap, "{bytes}");
    assert!(!stored[5]["message"].to_string().contains("toolu_big"));
}

/// Issue 50 item 4: a chat turn builds its context under `max_context_bytes` like the context
/// route: over it, the turn ends with an error naming the limit and nothing is sent to the
/// backend (the user message is stored, as when the backend fails).
async fn a_chat_context_over_max_context_bytes_is_refused(b: Backend) {
    let fake = FakeServer::scripted(vec![]).await;
    let Some(s) = chat_server_with(&fake, b, |c| c.limits.max_context_bytes = 20_000).await else {
        return;
    };
    let id = s.new_conversation(&s.key_a, json!({})).await;
    let msgs: Vec<Value> = (0..10)
        .map(|i| {
            json!({"role": if i % 2 == 0 { "user" } else { "assistant" },
                "content": format!("{i} {}", "words ".repeat(500))})
        })
        .collect();
    let r = s
        .post(
            &format!("/v1/conversations/{id}/messages"),
            &s.key_a,
            json!({ "messages": msgs }),
        )
        .await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.text);
    let (_, events) = sse_turn(
        &s,
        &id,
        json!({"content": "And now?", "max_tokens": 100_000_000}),
    )
    .await;
    let error = events
        .iter()
        .find(|(n, _)| n == "error")
        .expect("an error event");
    assert!(
        error.1.to_string().contains("max_context_bytes"),
        "{}",
        error.1
    );
    assert!(fake.requests().is_empty(), "nothing sent to the backend");
}

/// The next text frame of a chat WebSocket, as JSON (within 20 s).
async fn next_json(
    ws: &mut tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
) -> Value {
    use tokio_tungstenite::tungstenite::Message;
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(20), ws.next())
            .await
            .expect("frame in time")
            .expect("open")
            .unwrap();
        if let Message::Text(t) = msg {
            return serde_json::from_str(t.as_str()).unwrap();
        }
    }
}
