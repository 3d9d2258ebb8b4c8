//! The Anthropic adapter against a fake Messages API server on real loopback HTTP.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::{Duration, Instant};

use recall_core::{Message, Role};
use recall_llm::{
    AnthropicBackend, Backend, BackendError, BackendErrorKind, BackendEvent, ChatRequest,
    HttpConfig, ReplyStatus, RetryPolicy, Usage,
};
use serde_json::json;
use support::anthropic::*;
use support::{assemble, drain, text_of, FakeServer, Part, Reply};
use tokio_util::sync::CancellationToken;

const KEY: &str = "sk-ant-test-SECRET-0123456789";

fn backend(server: &FakeServer) -> AnthropicBackend {
    let mut cfg = HttpConfig::anthropic().with_key(KEY);
    cfg.base_url = server.base_url();
    cfg.model = "claude-test".into();
    cfg.retry = RetryPolicy {
        initial_backoff: Duration::from_millis(50),
        ..RetryPolicy::default()
    };
    AnthropicBackend::new(cfg).unwrap()
}

fn request() -> ChatRequest {
    let mut r = ChatRequest::new(vec![
        Message::text(Role::User, "My name is Ada."),
        Message::text(Role::Assistant, "Hello Ada."),
        Message::text(Role::User, "What is my name?"),
    ]);
    r.system = Some("Be brief.".into());
    r.max_tokens = 256;
    r
}

async fn run(server: &FakeServer) -> Result<Vec<BackendEvent>, BackendError> {
    let s = backend(server)
        .stream(request(), CancellationToken::new())
        .await?;
    Ok(drain(s).await)
}

fn assert_no_key(e: &BackendError) {
    assert!(!e.to_string().contains(KEY), "key in message: {e}");
    assert!(!format!("{e:?}").contains(KEY), "key in debug: {e:?}");
}

#[tokio::test]
async fn text_reply_streams_and_request_is_well_formed() {
    let mut parts = text_reply(&["Your name ", "is Ada."]);
    // An event type from the future must be ignored.
    parts.insert(3, event(json!({"type":"brand_new_event","foo":1})));
    let server = FakeServer::scripted(vec![Reply::sse(parts)]).await;
    let events = run(&server).await.unwrap();

    assert_eq!(text_of(&events), "Your name is Ada.");
    assert_eq!(
        events.last(),
        Some(&BackendEvent::Done {
            stop_reason: Some("end_turn".into())
        })
    );
    let reply = assemble(&events);
    assert_eq!(reply.status, ReplyStatus::Complete);
    assert_eq!(
        reply.usage,
        Usage {
            input_tokens: Some(25),
            output_tokens: Some(15),
            cache_creation_input_tokens: Some(0),
            cache_read_input_tokens: Some(2),
        }
    );
    assert_eq!(
        reply.message,
        Message::text(Role::Assistant, "Your name is Ada.")
    );

    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.header("x-api-key"), Some(KEY));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(
        r.json(),
        json!({
            "model": "claude-test",
            "max_tokens": 256,
            "system": "Be brief.",
            "messages": [
                {"role": "user", "content": "My name is Ada."},
                {"role": "assistant", "content": "Hello Ada."},
                {"role": "user", "content": "What is my name?"},
            ],
            "stream": true
        })
    );
}

#[tokio::test]
async fn tool_use_with_fragmented_input_json() {
    let parts = vec![
        message_start("msg_tool", 30),
        block_start(0, json!({"type":"text","text":""})),
        text_delta(0, "Let me check."),
        block_stop(0),
        block_start(
            1,
            json!({"type":"tool_use","id":"toolu_01","name":"get_weather","input":{}}),
        ),
        delta(1, json!({"type":"input_json_delta","partial_json":""})),
        delta(
            1,
            json!({"type":"input_json_delta","partial_json":"{\"location\":"}),
        ),
        ping(),
        delta(
            1,
            json!({"type":"input_json_delta","partial_json":" \"Paris\", \"unit\": \"c"}),
        ),
        delta(
            1,
            json!({"type":"input_json_delta","partial_json":"elsius\"}"}),
        ),
        block_stop(1),
        message_delta("tool_use", 40),
        message_stop(),
    ];
    // Deliver it in awkward pieces: split every event in two across TCP writes.
    let mut split = Vec::new();
    for p in parts {
        if let Part::Bytes(s) = p {
            let mid = s.len() / 2;
            let mid = (0..=mid).rev().find(|&i| s.is_char_boundary(i)).unwrap();
            split.push(Part::Bytes(s[..mid].to_string()));
            split.push(Part::Pause(Duration::from_millis(2)));
            split.push(Part::Bytes(s[mid..].to_string()));
        }
    }
    let server = FakeServer::scripted(vec![Reply::sse(split)]).await;
    let events = run(&server).await.unwrap();
    let reply = assemble(&events);
    assert_eq!(reply.status, ReplyStatus::Complete);
    assert_eq!(reply.stop_reason.as_deref(), Some("tool_use"));
    assert_eq!(
        reply.message.to_json(),
        json!({"role":"assistant","content":[
            {"type":"text","text":"Let me check."},
            {"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"location":"Paris","unit":"celsius"}}
        ]})
    );
}

#[tokio::test]
async fn thinking_with_signature() {
    let parts = vec![
        message_start("msg_think", 10),
        block_start(0, json!({"type":"thinking","thinking":"","signature":""})),
        delta(0, json!({"type":"thinking_delta","thinking":"The user "})),
        delta(
            0,
            json!({"type":"thinking_delta","thinking":"asked for 2+2."}),
        ),
        delta(
            0,
            json!({"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA"}),
        ),
        block_stop(0),
        block_start(1, json!({"type":"text","text":""})),
        text_delta(1, "4"),
        block_stop(1),
        message_delta("end_turn", 12),
        message_stop(),
    ];
    let server = FakeServer::scripted(vec![Reply::sse(parts)]).await;
    let events = run(&server).await.unwrap();
    let reply = assemble(&events);
    assert_eq!(
        reply.message.to_json(),
        json!({"role":"assistant","content":[
            {"type":"thinking","thinking":"The user asked for 2+2.","signature":"EqQBCgIYAhIM1gbcDa9GJwZA"},
            {"type":"text","text":"4"}
        ]})
    );
    assert!(reply.is_complete());
}

#[tokio::test]
async fn pings_alone_keep_the_stream_alive() {
    let mut parts = vec![message_start("msg_p", 1)];
    for _ in 0..5 {
        parts.push(ping());
        parts.push(Part::Pause(Duration::from_millis(10)));
    }
    parts.extend(text_reply(&["ok"]).into_iter().skip(1));
    let server = FakeServer::scripted(vec![Reply::sse(parts)]).await;
    let events = run(&server).await.unwrap();
    assert_eq!(text_of(&events), "ok");
    assert!(assemble(&events).is_complete());
}

#[tokio::test]
async fn mid_stream_error_event_gives_a_partial_reply() {
    let parts = vec![
        message_start("msg_err", 10),
        block_start(0, json!({"type":"text","text":""})),
        text_delta(0, "Partial ans"),
        event(json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})),
        // Anything after the error must not be read.
        text_delta(0, "IGNORED"),
    ];
    let server = FakeServer::scripted(vec![Reply::sse(parts)]).await;
    let events = run(&server).await.unwrap();
    let last = events.last().cloned();
    match last {
        Some(BackendEvent::Error(e)) => {
            assert_eq!(e.kind, BackendErrorKind::Overloaded);
            assert!(e.output_started);
            assert_eq!(e.to_string(), "the provider is overloaded: try again later");
        }
        other => panic!("expected an error, got {other:?}"),
    }
    let reply = assemble(&events);
    assert_eq!(reply.status, ReplyStatus::Partial);
    assert_eq!(reply.text(), "Partial ans");
    assert_eq!(server.requests().len(), 1, "no retry after output began");
}

#[tokio::test]
async fn rate_limit_with_retry_after_is_retried_after_waiting() {
    let server = FakeServer::scripted(vec![
        Reply::json(
            429,
            json!({"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"},"request_id":"req_1"}),
        )
        .header("retry-after", "1"),
        Reply::sse(text_reply(&["after retry"])),
    ])
    .await;
    let start = Instant::now();
    let events = run(&server).await.unwrap();
    let elapsed = start.elapsed();
    assert_eq!(text_of(&events), "after retry");
    assert_eq!(server.requests().len(), 2, "one retry");
    assert!(
        elapsed >= Duration::from_millis(950),
        "retry-after: 1 was not honoured (took {elapsed:?})"
    );
    // The retry sends the same body.
    let reqs = server.requests();
    assert_eq!(reqs[0].body, reqs[1].body);
}

#[tokio::test]
async fn overloaded_529_retries_then_gives_up_with_a_clear_error() {
    let overloaded = Reply::json(
        529,
        json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}),
    );
    let server =
        FakeServer::scripted(vec![overloaded.clone(), overloaded.clone(), overloaded]).await;
    let e = run(&server).await.unwrap_err();
    assert_eq!(e.kind, BackendErrorKind::Overloaded);
    assert!(!e.output_started);
    assert_eq!(server.requests().len(), 3, "first try plus max_retries (2)");
}

#[tokio::test]
async fn server_error_500_is_retried() {
    let server = FakeServer::scripted(vec![
        Reply::json(
            500,
            json!({"type":"error","error":{"type":"api_error","message":"Internal server error"}}),
        ),
        Reply::sse(text_reply(&["fine"])),
    ])
    .await;
    let events = run(&server).await.unwrap();
    assert_eq!(text_of(&events), "fine");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn unauthorized_gives_a_clear_error_without_the_key() {
    let server = FakeServer::scripted(vec![Reply::json(
        401,
        json!({"type":"error","error":{"type":"authentication_error","message":format!("invalid x-api-key: {KEY}")}}),
    )])
    .await;
    let e = run(&server).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "authentication failed: check the API key (ANTHROPIC_API_KEY)"
    );
    assert_no_key(&e);
    assert_eq!(server.requests().len(), 1, "401 is not retried");
}

#[tokio::test]
async fn bad_request_message_is_shown_with_the_key_redacted() {
    let server = FakeServer::scripted(vec![Reply::json(
        400,
        json!({"type":"error","error":{"type":"invalid_request_error","message":format!("messages: roles must alternate (key {KEY})")}}),
    )])
    .await;
    let e = run(&server).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "HTTP 400 from the provider: invalid_request_error: messages: roles must alternate (key [redacted])"
    );
    assert_no_key(&e);
}

#[tokio::test]
async fn dropped_connection_mid_stream_keeps_the_partial_text() {
    let mut parts = text_reply(&["Hello, ", "wor"]);
    parts.truncate(5); // message_start, block_start, ping, "Hello, ", "wor"
    parts.push(Part::Pause(Duration::from_millis(20)));
    parts.push(Part::Drop);
    let server = FakeServer::scripted(vec![Reply::sse(parts)]).await;
    let events = run(&server).await.unwrap();
    match events.last() {
        Some(BackendEvent::Error(e)) => {
            assert!(
                matches!(e.kind, BackendErrorKind::Stream { .. }),
                "expected a stream error, got {e:?}"
            );
            assert!(e.output_started);
            assert!(
                e.to_string().starts_with("connection dropped mid-stream"),
                "{e}"
            );
            assert_no_key(e);
        }
        other => panic!("expected an error, got {other:?}"),
    }
    let reply = assemble(&events);
    assert_eq!(reply.status, ReplyStatus::Partial);
    assert_eq!(reply.message, Message::text(Role::Assistant, "Hello, wor"));
    assert_eq!(
        server.requests().len(),
        1,
        "never retried after output began"
    );
}

#[tokio::test]
async fn stream_ending_without_message_stop_is_an_error() {
    let mut parts = text_reply(&["cut"]);
    parts.truncate(4);
    let server = FakeServer::scripted(vec![Reply::sse(parts)]).await;
    let events = run(&server).await.unwrap();
    assert!(
        matches!(events.last(), Some(BackendEvent::Error(e)) if matches!(e.kind, BackendErrorKind::Stream { .. }) && e.output_started),
        "{events:?}"
    );
}

#[tokio::test]
async fn cancel_mid_stream_ends_with_cancelled() {
    let mut parts = text_reply(&["first"]);
    parts.insert(4, Part::Pause(Duration::from_secs(30)));
    let server = FakeServer::scripted(vec![Reply::sse(parts)]).await;
    let cancel = CancellationToken::new();
    let s = backend(&server)
        .stream(request(), cancel.clone())
        .await
        .unwrap();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        c.cancel();
    });
    let start = Instant::now();
    let events = drain(s).await;
    assert!(start.elapsed() < Duration::from_secs(10));
    assert_eq!(text_of(&events), "first");
    assert!(
        matches!(events.last(), Some(BackendEvent::Error(e)) if e.kind == BackendErrorKind::Cancelled && e.output_started),
        "{events:?}"
    );
}

#[tokio::test]
async fn idle_stream_times_out() {
    let mut parts = text_reply(&["slow"]);
    parts.insert(2, Part::Pause(Duration::from_secs(30)));
    let server = FakeServer::scripted(vec![Reply::sse(parts)]).await;
    let mut cfg = backend(&server).config().clone();
    cfg.timeouts.idle = Duration::from_millis(300);
    let b = AnthropicBackend::new(cfg).unwrap();
    let events = drain(b.stream(request(), CancellationToken::new()).await.unwrap()).await;
    assert!(
        matches!(events.last(), Some(BackendEvent::Error(e)) if matches!(e.kind, BackendErrorKind::Timeout { .. })),
        "{events:?}"
    );
}

#[tokio::test]
async fn unreachable_server_is_a_connect_error() {
    // Bind then drop a listener to get a port nobody listens on.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut cfg = HttpConfig::anthropic().with_key(KEY);
    cfg.base_url = format!("http://127.0.0.1:{port}");
    let e = support::expect_err(
        AnthropicBackend::new(cfg)
            .unwrap()
            .stream(request(), CancellationToken::new())
            .await,
    );
    assert!(matches!(e.kind, BackendErrorKind::Connect { .. }), "{e:?}");
    assert!(!e.to_string().contains("127.0.0.1"), "no URL in {e}");
}
