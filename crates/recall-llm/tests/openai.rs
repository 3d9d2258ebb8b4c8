//! The OpenAI-compatible adapter against a fake chat completions server on loopback HTTP.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use recall_core::{Message, Role};
use recall_llm::{
    Backend, BackendErrorKind, BackendEvent, ChatRequest, HttpConfig, OpenAiBackend, ReplyStatus,
    RetryPolicy, Usage,
};
use serde_json::{json, Value};
use support::openai::*;
use support::{assemble, drain, text_of, FakeServer, Part, Reply};
use tokio_util::sync::CancellationToken;

fn backend(server: &FakeServer, key: Option<&str>) -> OpenAiBackend {
    OpenAiBackend::new(HttpConfig {
        base_url: server.base_url(),
        api_key: key.map(Into::into),
        model: "local-model".into(),
        retry: RetryPolicy::none(),
        ..HttpConfig::openai()
    })
    .unwrap()
}

fn request() -> ChatRequest {
    let mut r = ChatRequest::new(vec![
        Message::text(Role::User, "Hi"),
        Message::text(Role::Assistant, "Hello!"),
        Message::text(Role::User, "Weather in Paris?"),
    ]);
    r.system = Some("You are terse.".into());
    r
}

async fn run(server: &FakeServer, key: Option<&str>) -> Vec<BackendEvent> {
    drain(
        backend(server, key)
            .stream(request(), CancellationToken::new())
            .await
            .unwrap(),
    )
    .await
}

#[tokio::test]
async fn text_usage_and_done() {
    let server = FakeServer::scripted(vec![Reply::sse(vec![
        chunk(json!({"role":"assistant","content":""}), Value::Null),
        chunk(json!({"content":"Sunny "}), Value::Null),
        chunk(json!({"content":"and warm."}), Value::Null),
        chunk(json!({}), json!("stop")),
        usage(9, 12),
        done(),
    ])])
    .await;
    let events = run(&server, Some("sk-openai-secret")).await;
    assert_eq!(text_of(&events), "Sunny and warm.");
    let reply = assemble(&events);
    assert_eq!(reply.status, ReplyStatus::Complete);
    assert_eq!(reply.stop_reason.as_deref(), Some("end_turn"));
    assert_eq!(
        reply.usage,
        Usage {
            input_tokens: Some(9),
            output_tokens: Some(12),
            ..Usage::default()
        }
    );
    // Usage comes before Done.
    assert!(matches!(events.last(), Some(BackendEvent::Done { .. })));

    let reqs = server.requests();
    assert_eq!(reqs[0].path, "/v1/chat/completions");
    assert_eq!(
        reqs[0].header("authorization"),
        Some("Bearer sk-openai-secret")
    );
    assert_eq!(
        reqs[0].json(),
        json!({
            "model": "local-model",
            "messages": [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello!"},
                {"role": "user", "content": "Weather in Paris?"},
            ],
            "max_tokens": 4096,
            "stream": true,
            "stream_options": {"include_usage": true}
        })
    );
}

#[tokio::test]
async fn no_key_sends_no_authorization_header() {
    let server = FakeServer::scripted(vec![Reply::sse(vec![
        chunk(json!({"content":"ok"}), json!("stop")),
        done(),
    ])])
    .await;
    let events = run(&server, None).await;
    assert_eq!(text_of(&events), "ok");
    assert_eq!(server.requests()[0].header("authorization"), None);
}

#[tokio::test]
async fn tool_call_fragments_are_assembled_by_index() {
    let server = FakeServer::scripted(vec![Reply::sse(vec![
        chunk(json!({"role":"assistant","content":null}), Value::Null),
        chunk(
            json!({"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"get_time","arguments":"{\"tz\":"}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls":[{"index":1,"function":{"arguments":"\"CET\"}"}}]}),
            Value::Null,
        ),
        chunk(json!({}), json!("tool_calls")),
        usage(20, 30),
        done(),
    ])])
    .await;
    let events = run(&server, None).await;
    let reply = assemble(&events);
    assert_eq!(reply.status, ReplyStatus::Complete);
    assert_eq!(reply.stop_reason.as_deref(), Some("tool_use"));
    assert_eq!(
        reply.message.to_json(),
        json!({"role":"assistant","content":[
            {"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Paris"}},
            {"type":"tool_use","id":"call_2","name":"get_time","input":{"tz":"CET"}}
        ]})
    );
    assert_eq!(reply.usage.output_tokens, Some(30));
}

#[tokio::test]
async fn dropped_connection_keeps_the_partial_text() {
    let server = FakeServer::scripted(vec![Reply::sse(vec![
        chunk(json!({"content":"Half a "}), Value::Null),
        chunk(json!({"content":"sentence"}), Value::Null),
        Part::Pause(Duration::from_millis(20)),
        Part::Drop,
    ])])
    .await;
    let events = run(&server, None).await;
    match events.last() {
        Some(BackendEvent::Error(e)) => {
            assert!(matches!(e.kind, BackendErrorKind::Stream { .. }), "{e:?}");
            assert!(e.output_started);
        }
        other => panic!("expected an error, got {other:?}"),
    }
    let reply = assemble(&events);
    assert_eq!(reply.status, ReplyStatus::Partial);
    assert_eq!(reply.text(), "Half a sentence");
}

/// Issue 36 item 1: a local model server that goes away mid-reply (someone stopped it) is
/// named as such, not only as the transport's "unexpected EOF"; a dropped connection from a
/// server that still listens stays a plain dropped stream.
#[tokio::test]
async fn a_local_server_that_stops_mid_reply_is_named() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serve = tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 64 * 1024];
        let mut got = Vec::new();
        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = sock.read(&mut buf).await.unwrap();
            assert!(n > 0, "the request ended early");
            got.extend_from_slice(&buf[..n]);
        }
        let event = format!(
            "data: {}\n\n",
            json!({"choices":[{"index":0,"delta":{"content":"Half a "}}]})
        );
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                    transfer-encoding: chunked\r\n\r\n";
        let chunk = format!("{:x}\r\n{event}\r\n", event.len());
        sock.write_all(head.as_bytes()).await.unwrap();
        sock.write_all(chunk.as_bytes()).await.unwrap();
        sock.flush().await.unwrap();
        // The server stops: its socket and its listener close together.
        drop(sock);
        drop(listener);
    });
    let b = OpenAiBackend::new(HttpConfig {
        base_url: format!("http://{addr}/v1"),
        model: "local-model".into(),
        retry: RetryPolicy::none(),
        ..HttpConfig::openai()
    })
    .unwrap();
    let events = drain(b.stream(request(), CancellationToken::new()).await.unwrap()).await;
    serve.await.unwrap();
    match events.last() {
        Some(BackendEvent::Error(e)) => {
            assert!(matches!(e.kind, BackendErrorKind::Stream { .. }), "{e:?}");
            let text = e.to_string();
            assert!(
                text.contains(&format!(
                    "the model server at {addr} stopped while answering"
                )),
                "{text}"
            );
        }
        other => panic!("expected an error, got {other:?}"),
    }
    assert_eq!(text_of(&events), "Half a ");

    // A server that still listens: no such claim.
    let server = FakeServer::scripted(vec![Reply::sse(vec![
        chunk(json!({"content":"Half"}), Value::Null),
        Part::Pause(Duration::from_millis(20)),
        Part::Drop,
    ])])
    .await;
    match run(&server, None).await.last() {
        Some(BackendEvent::Error(e)) => assert!(!e.to_string().contains("stopped"), "{e}"),
        other => panic!("expected an error, got {other:?}"),
    }
}

#[tokio::test]
async fn unauthorized_is_clear_and_keyless() {
    let key = "sk-proj-very-secret-key";
    let server = FakeServer::scripted(vec![Reply::json(
        401,
        json!({"error":{"message":format!("Incorrect API key provided: {key}"),"type":"invalid_request_error","code":"invalid_api_key"}}),
    )])
    .await;
    let e = support::expect_err(
        backend(&server, Some(key))
            .stream(request(), CancellationToken::new())
            .await,
    );
    assert_eq!(
        e.to_string(),
        "authentication failed: check the API key (OPENAI_API_KEY)"
    );
    assert!(!format!("{e:?}").contains(key));
}

#[tokio::test]
async fn http_error_shows_the_server_message() {
    let server = FakeServer::scripted(vec![Reply::json(
        404,
        json!({"error":{"message":"model 'nope' not found","type":"not_found_error"}}),
    )])
    .await;
    let e = support::expect_err(
        backend(&server, None)
            .stream(request(), CancellationToken::new())
            .await,
    );
    assert_eq!(
        e.to_string(),
        "HTTP 404 from the provider: model 'nope' not found"
    );
}
