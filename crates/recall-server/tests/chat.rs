//! Chat over HTTP against a fake Anthropic server on loopback: server-sent events, the
//! WebSocket, a client that disconnects mid-stream, backend failures and bad requests.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{server_with, Backend, Server, TENANT_A};
use futures::{SinkExt, StreamExt};
use recall_engine::llm::{AnthropicBackend, AnthropicConfig, RetryPolicy};
use recall_server::Backends;
use recall_testkit::{anthropic, FakeServer, Part, Reply};
use reqwest::StatusCode;
use serde_json::{json, Value};

async fn chat_server(fake: &FakeServer) -> Option<Server> {
    let mut c = AnthropicConfig::with_key("sk-ant-test-key");
    c.base_url = fake.base_url();
    c.retry = RetryPolicy::none();
    let backend = Arc::new(AnthropicBackend::new(c).expect("backend"));
    server_with(Backend::Sqlite, move |cfg| {
        cfg.backends = Backends::default().with("anthropic", backend);
    })
    .await
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_streams_the_reply_and_stores_the_turn() {
    let fake = FakeServer::scripted(vec![Reply::sse(anthropic::text_reply(&[
        "We use ",
        "Postgres.",
    ]))])
    .await;
    let Some(s) = chat_server(&fake).await else {
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

    let stored = s.stored(TENANT_A, &id).await;
    assert_eq!(stored.len(), 2);
    assert_eq!(stored[0]["message"]["content"], "What database?");
    assert_eq!(stored[1]["message"]["role"], "assistant");
    assert_eq!(stored[1]["status"], "complete");
    // The backend was sent the system prompt and the user message.
    let sent = fake.requests()[0].json();
    assert_eq!(sent["system"], "Be brief.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_leaves_a_partial_reply() {
    let fake = FakeServer::scripted(vec![Reply::sse(vec![
        anthropic::message_start("msg_1", 10),
        anthropic::block_start(0, json!({"type": "text", "text": ""})),
        anthropic::text_delta(0, "Partial words"),
        Part::Pause(Duration::from_secs(30)),
        anthropic::text_delta(0, " never sent"),
    ])])
    .await;
    let Some(s) = chat_server(&fake).await else {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backend_failures_and_bad_requests() {
    let fake = FakeServer::scripted(vec![Reply::json(
        500,
        json!({"type": "error", "error": {"type": "api_error", "message": "overloaded inside"}}),
    )])
    .await;
    let Some(s) = chat_server(&fake).await else {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_backend_is_503() {
    let Some(s) = server_with(Backend::Sqlite, |_| {}).await else {
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
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_runs_turns_with_the_same_events() {
    let fake = FakeServer::scripted(vec![
        Reply::sse(anthropic::text_reply(&["Hi ", "there."])),
        Reply::sse(anthropic::text_reply(&["Again."])),
    ])
    .await;
    let Some(s) = chat_server(&fake).await else {
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
            let msg = tokio::time::timeout(Duration::from_secs(20), ws.next())
                .await
                .expect("frame in time")
                .expect("open")
                .unwrap();
            let Message::Text(t) = msg else { continue };
            let f: Value = serde_json::from_str(t.as_str()).unwrap();
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
