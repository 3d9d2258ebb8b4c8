//! The gateway over real HTTP: a real server on a SQLite file, a fake provider on loopback
//! speaking the Anthropic and OpenAI wire formats (recall-testkit's `FakeProvider`, which
//! also computes Anthropic's prompt cache), and reqwest as the client. The official SDKs
//! drive the same routes in recall-cli's `gateway_sdk` test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use std::sync::Arc;

use common::{server_upstreams, server_with, Backend, Server, TENANT_A};
use recall_core::gateway::Provider;
use recall_engine::llm::proxy::Upstream;
use recall_engine::llm::HttpConfig;
use recall_testkit::provider::FakeProvider;
use serde_json::{json, Value};

async fn gateway() -> (Server, FakeProvider) {
    let fake = FakeProvider::start().await;
    let base = fake.base_url();
    let mut upstreams = recall_server::Upstreams::default();
    {
        let c = &mut upstreams;
        let anthropic = HttpConfig {
            base_url: base.clone(),
            ..HttpConfig::anthropic()
        }
        .with_key("sk-upstream-secret");
        let openai = HttpConfig {
            base_url: format!("{base}/v1"),
            ..HttpConfig::openai()
        };
        c.gateway.anthropic = Some(Arc::new(
            Upstream::new(Provider::Anthropic, &anthropic).unwrap(),
        ));
        c.gateway.openai = Some(Arc::new(Upstream::new(Provider::OpenAi, &openai).unwrap()));
    }
    let server = server_upstreams(Backend::Sqlite, upstreams, |_| {})
        .await
        .unwrap();
    (server, fake)
}

struct Answer {
    status: u16,
    conversation: Option<String>,
    mode: Option<String>,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

/// Sends a gateway request naming conversation `conv` (if any) and reads the answer.
async fn send(mut req: reqwest::RequestBuilder, conv: Option<&str>) -> Answer {
    if let Some(c) = conv {
        req = req.header("x-recall-conversation", c);
    }
    let res = req.send().await.unwrap();
    let h = |n: &str| {
        res.headers()
            .get(n)
            .map(|v| v.to_str().unwrap().to_string())
    };
    let (conversation, mode) = (h("x-recall-conversation"), h("x-recall-mode"));
    let status = res.status().as_u16();
    let body = res.text().await.unwrap_or_default();
    Answer {
        status,
        conversation,
        mode,
        body,
    }
}

async fn anthropic(s: &Server, conv: Option<&str>, body: Value) -> Answer {
    let req = s
        .client
        .post(format!("{}/anthropic/v1/messages", s.base))
        .header("x-api-key", &s.key_a)
        .header("anthropic-version", "2023-06-01")
        .json(&body);
    send(req, conv).await
}

fn sse_text(body: &str) -> String {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter_map(|v| v["delta"]["text"].as_str().map(str::to_string))
        .collect()
}

async fn stored(s: &Server, id: &str) -> Vec<Value> {
    s.stored(TENANT_A, id).await
}

#[tokio::test]
async fn append_mode_stores_each_turn_and_sends_the_history() {
    let (s, fake) = gateway().await;
    let a = anthropic(
        &s,
        None,
        json!({"model": "claude-test", "max_tokens": 50, "system": "Be brief.",
            "messages": [{"role": "user", "content": "My dog is called Biscuit."}]}),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.mode.as_deref(), Some("append"));
    let id = a.conversation.clone().unwrap();
    assert_eq!(a.json()["content"][0]["text"], "I was sent 1 messages.");
    for (text, stream) in [("I like tea.", true), ("What is my dog called?", false)] {
        let a = anthropic(
            &s,
            Some(&id),
            json!({"model": "claude-test", "max_tokens": 50, "stream": stream,
                "messages": [{"role": "user", "content": text}]}),
        )
        .await;
        assert_eq!(a.status, 200, "{}", a.body);
        assert_eq!(a.conversation.as_deref(), Some(id.as_str()));
        let reply = if stream {
            sse_text(&a.body)
        } else {
            a.json()["content"][0]["text"].as_str().unwrap().to_string()
        };
        let expected = if text.contains('?') {
            "I was sent 5 messages. You said: My dog is called Biscuit. | I like tea. | What is my dog called?"
        } else {
            "I was sent 3 messages."
        };
        assert_eq!(reply, expected, "the history reached the model");
    }
    let msgs = stored(&s, &id).await;
    assert_eq!(msgs.len(), 6, "{msgs:?}");
    assert_eq!(msgs[5]["status"], "complete");
    // The provider got recall's window, its own key, the client's version header.
    let reqs = fake.requests();
    let last = reqs.last().unwrap();
    assert_eq!(last.header("x-api-key"), Some("sk-upstream-secret"));
    assert_eq!(last.header("anthropic-version"), Some("2023-06-01"));
    let body = last.json();
    assert_eq!(body["messages"].as_array().unwrap().len(), 5);
    assert!(
        body.get("system").is_none(),
        "no system prompt sent, none added"
    );
}

#[tokio::test]
async fn mirror_mode_stores_only_the_new_suffix_and_forks_on_divergence() {
    let (s, _fake) = gateway().await;
    let mut history = vec![json!({"role": "user", "content": "My dog is called Biscuit."})];
    let mut id = None;
    for next in ["Tell me more.", "What is my dog called?"] {
        let a = anthropic(
            &s,
            id.as_deref(),
            json!({"model": "m", "max_tokens": 50, "messages": history.clone()}),
        )
        .await;
        assert_eq!(a.status, 200, "{}", a.body);
        id = a.conversation.clone();
        if history.len() > 1 {
            assert_eq!(a.mode.as_deref(), Some("mirror"));
        }
        history.push(json!({"role": "assistant", "content": a.json()["content"].clone()}));
        history.push(json!({"role": "user", "content": next}));
    }
    let a = anthropic(
        &s,
        id.as_deref(),
        json!({"model": "m", "max_tokens": 50, "messages": history.clone()}),
    )
    .await;
    assert_eq!(a.mode.as_deref(), Some("mirror"));
    let id = id.unwrap();
    assert_eq!(stored(&s, &id).await.len(), 6, "each message stored once");

    // An edited earlier turn: a fork from the first difference; the original is unchanged.
    let mut edited = history[..2].to_vec();
    edited.push(json!({"role": "user", "content": "Actually, tell me less."}));
    let a = anthropic(
        &s,
        Some(&id),
        json!({"model": "m", "max_tokens": 50, "messages": edited}),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.mode.as_deref(), Some("fork"));
    let fork = a.conversation.unwrap();
    assert_ne!(fork, id);
    assert_eq!(stored(&s, &id).await.len(), 6);
    let forked = stored(&s, &fork).await;
    assert_eq!(forked.len(), 4, "{forked:?}");
    assert_eq!(forked[2]["message"]["content"], "Actually, tell me less.");
}

#[tokio::test]
async fn errors_come_back_in_the_providers_shape_and_change_nothing() {
    let (s, fake) = gateway().await;
    // A bad recall key: Anthropic's authentication error.
    let res = s
        .client
        .post(format!("{}/anthropic/v1/messages", s.base))
        .header("x-api-key", "rk_wrong")
        .json(
            &json!({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "authentication_error");
    // The same on the OpenAI route, in OpenAI's shape.
    let res = s
        .client
        .post(format!("{}/openai/v1/chat/completions", s.base))
        .bearer_auth("rk_wrong")
        .json(&json!({"model": "m", "messages": [{"role": "user", "content": "x"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["type"], "authentication_error");
    // An unknown conversation, a bad body.
    let a = anthropic(
        &s,
        Some("nope"),
        json!({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}),
    )
    .await;
    assert_eq!(a.status, 404);
    assert_eq!(a.json()["error"]["type"], "not_found_error");
    // An empty conversation header (an unset variable in the client) is refused, not taken
    // for a new conversation on every request.
    let a = anthropic(
        &s,
        Some(""),
        json!({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}),
    )
    .await;
    assert_eq!(a.status, 400);
    assert!(a.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("x-recall-conversation header is empty"));
    let a = anthropic(&s, None, json!({"model": "m", "messages": "x"})).await;
    assert_eq!(a.status, 400);
    assert_eq!(a.json()["error"]["type"], "invalid_request_error");
    assert!(a.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("messages"));
    assert!(fake.requests().is_empty(), "nothing was forwarded");
    // An upstream 429 passes through with its body and retry-after.
    let a = anthropic(
        &s,
        None,
        json!({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "fail 429"}]}),
    )
    .await;
    assert_eq!(a.status, 429);
    assert_eq!(a.json()["error"]["type"], "rate_limit_error");
    let id = a.conversation.unwrap();
    // The same request again is a retry: the user message is not stored twice.
    let a = anthropic(
        &s,
        Some(&id),
        json!({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "fail 429"}]}),
    )
    .await;
    assert_eq!(a.mode.as_deref(), Some("retry"));
    assert_eq!(stored(&s, &id).await.len(), 1);
}

#[tokio::test]
async fn a_dropped_stream_is_stored_as_partial() {
    let (s, _fake) = gateway().await;
    let a = anthropic(
        &s,
        None,
        json!({"model": "m", "max_tokens": 5, "stream": true,
            "messages": [{"role": "user", "content": "drop"}]}),
    )
    .await;
    assert_eq!(a.status, 200);
    let id = a.conversation.unwrap();
    let msgs = stored(&s, &id).await;
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    assert_eq!(msgs[1]["status"], "partial");
    assert_eq!(msgs[1]["message"]["content"], "Half a reply");
}

#[tokio::test]
async fn openai_tool_loop_round_trips() {
    let (s, fake) = gateway().await;
    let post = |conv: Option<String>, body: Value| {
        let mut req = s
            .client
            .post(format!("{}/openai/v1/chat/completions", s.base))
            .bearer_auth(&s.key_a)
            .json(&body);
        if let Some(c) = conv {
            req = req.header("x-recall-conversation", c);
        }
        req.send()
    };
    let res = post(
        None,
        json!({"model": "m", "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Weather in Oslo? use the tool"}]}),
    )
    .await
    .unwrap();
    assert_eq!(res.status(), 200);
    let id = res.headers()["x-recall-conversation"]
        .to_str()
        .unwrap()
        .to_string();
    let body: Value = res.json().await.unwrap();
    let call = body["choices"][0]["message"]["tool_calls"][0].clone();
    assert_eq!(call["function"]["name"], "get_weather");
    let res = post(
        Some(id.clone()),
        json!({"model": "m", "stream": true, "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Weather in Oslo? use the tool"},
            {"role": "assistant", "content": null, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call["id"], "content": "12 C, rain"}]}),
    )
    .await
    .unwrap();
    assert_eq!(res.headers()["x-recall-mode"], "mirror");
    let text = res.text().await.unwrap();
    assert!(text.contains("data: [DONE]"), "{text}");
    let msgs = stored(&s, &id).await;
    assert_eq!(msgs.len(), 4, "{msgs:?}");
    assert_eq!(msgs[2]["message"]["content"][0]["type"], "tool_result");
    // The system prompt went upstream first, never stored.
    let sent = fake.requests().last().unwrap().json();
    assert_eq!(sent["messages"][0]["role"], "system");
    assert!(!msgs.iter().any(|m| m["message"]["role"] == "system"));
}

#[tokio::test]
async fn breakpoints_keep_the_cache_reading_on_a_long_conversation() {
    let (s, fake) = gateway().await;
    let id = s
        .new_conversation(
            &s.key_a,
            // The window's caching alone: recall (on by default) adds an uncached section to
            // every request, which the cache bench measures (docs/BENCHMARKS.md).
            json!({"policy": {"format": "anthropic", "max_tokens": 3000, "trim": "stable",
                "recall_tokens": 0}}),
        )
        .await;
    let filler = "lorem ipsum dolor sit amet ".repeat(6);
    for turn in 0..150 {
        let a = anthropic(
            &s,
            Some(&id),
            json!({"model": "m", "max_tokens": 20, "system": "You are a patient assistant.",
                "stream": turn % 2 == 0,
                "messages": [{"role": "user", "content": format!("Turn {turn}: {filler}")}]}),
        )
        .await;
        assert_eq!(a.status, 200, "{}", a.body);
    }
    let t = fake.totals();
    let share = t.read_share();
    println!("cache: {t:?}, read share {share:.3}");
    assert!(share >= 0.8, "cache-read share {share:.3} < 0.8 ({t:?})");
    // Every request stayed within the window: the fake never saw the whole conversation.
    let longest = fake
        .requests()
        .iter()
        .map(|r| r.json()["messages"].as_array().map_or(0, Vec::len))
        .max()
        .unwrap();
    assert!(longest < 300, "the window trims: {longest}");
    let metrics = s
        .client
        .get(format!("{}/metrics", s.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("recall_gateway_cache_read_ratio{provider=\"anthropic\"}"),
        "{metrics}"
    );
}

// ---- What a hostile review broke (issue 33): provider errors, sizes, headers ----

const ANTHROPIC_KEY: &str = "sk-ant-operator-0123456789abcdef";
const OPENAI_KEY: &str = "sk-proj-operator-0123456789abcdef";

/// A server on `backend` with `limits`, whose gateway forwards both providers to `handler`
/// with the operator's keys above.
async fn gateway_to(
    backend: common::Backend,
    handler: recall_testkit::Handler,
    limits: recall_server::HttpLimits,
) -> Option<(Server, recall_testkit::FakeServer)> {
    let fake = recall_testkit::FakeServer::start(handler).await;
    let base = fake.base_url();
    let mut upstreams = recall_server::Upstreams::default();
    {
        let c = &mut upstreams;
        let anthropic = HttpConfig {
            base_url: base.clone(),
            ..HttpConfig::anthropic()
        }
        .with_key(ANTHROPIC_KEY);
        let openai = HttpConfig {
            base_url: format!("{base}/v1"),
            ..HttpConfig::openai()
        }
        .with_key(OPENAI_KEY);
        c.gateway.anthropic = Some(Arc::new(
            Upstream::new(Provider::Anthropic, &anthropic).unwrap(),
        ));
        c.gateway.openai = Some(Arc::new(Upstream::new(Provider::OpenAi, &openai).unwrap()));
    }
    let server = server_upstreams(backend, upstreams, move |c| c.limits = limits).await?;
    Some((server, fake))
}

fn message_cap(bytes: usize) -> recall_server::HttpLimits {
    recall_server::HttpLimits {
        max_message_bytes: bytes,
        ..Default::default()
    }
}

async fn openai_call(s: &Server, conv: Option<&str>, body: Value) -> Answer {
    let req = s
        .client
        .post(format!("{}/openai/v1/chat/completions", s.base))
        .bearer_auth(&s.key_a)
        .header("anthropic-beta", "prompt-caching-2024-07-31")
        .json(&body);
    send(req, conv).await
}

/// An upstream 401 that echoes the key it was sent (some providers and proxies do) reaches
/// the client with its status and error type, and without the operator's key, on both
/// routes; the OpenAI upstream never sees Anthropic's headers.
#[tokio::test]
async fn provider_errors_keep_their_type_and_never_carry_a_key() {
    let handler: recall_testkit::Handler = Arc::new(|req, _| {
        if req.path.ends_with("/chat/completions") {
            let key = req.header("authorization").unwrap_or("").to_string();
            recall_testkit::Reply::json(
                401,
                json!({"error": {"message": format!("Incorrect API key provided: {key}. Also tried sk-proj-another-99999999999"),
                    "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}}),
            )
        } else {
            let key = req.header("x-api-key").unwrap_or("").to_string();
            recall_testkit::Reply::json(
                401,
                json!({"type": "error", "error": {"type": "authentication_error",
                    "message": format!("invalid x-api-key {key}")}}),
            )
        }
    });
    let (s, fake) = gateway_to(common::Backend::Sqlite, handler, Default::default())
        .await
        .unwrap();
    let user = json!([{"role": "user", "content": "hello"}]);
    let a = anthropic(
        &s,
        None,
        json!({"model": "m", "max_tokens": 5, "messages": user}),
    )
    .await;
    assert_eq!(a.status, 401, "{}", a.body);
    assert!(!a.body.contains("0123456789abcdef"), "{}", a.body);
    assert_eq!(
        a.json(),
        json!({"type": "error", "error": {"type": "authentication_error",
            "message": "invalid x-api-key [redacted]"}})
    );
    for stream in [false, true] {
        let o = openai_call(
            &s,
            None,
            json!({"model": "m", "stream": stream, "messages": user}),
        )
        .await;
        assert_eq!(o.status, 401, "{}", o.body);
        assert!(!o.body.contains("0123456789abcdef"), "{}", o.body);
        assert!(!o.body.contains("99999999999"), "{}", o.body);
        let e = &o.json()["error"];
        assert_eq!(e["type"], "invalid_request_error");
        assert_eq!(e["code"], "invalid_api_key");
        assert_eq!(
            e["message"],
            "Incorrect API key provided: Bearer [redacted]. Also tried [redacted]"
        );
    }
    let last = fake.last_request().unwrap();
    assert!(last.path.ends_with("/chat/completions"));
    assert_eq!(last.header("anthropic-beta"), None, "{:?}", last.headers);
}

/// An assistant's `tool_calls` is part of its message: over `max_message_bytes` it is a 413
/// in the provider's shape on the OpenAI route, as its content would be, and on `/v1` and
/// the Anthropic route alike; nothing is created, stored or forwarded.
async fn tool_calls_count_toward_the_message_size(backend: common::Backend) {
    let handler: recall_testkit::Handler = Arc::new(|_, _| {
        recall_testkit::Reply::json(500, json!({"error": {"message": "unreached"}}))
    });
    let Some((s, fake)) = gateway_to(backend, handler, message_cap(64 * 1024)).await else {
        return;
    };
    let args = json!({"text": "x".repeat(100 * 1024)}).to_string();
    let history = json!([
        {"role": "user", "content": "Save this."},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "save", "arguments": args}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "saved"},
        {"role": "user", "content": "Thanks?"}
    ]);
    let o = openai_call(&s, None, json!({"model": "m", "messages": history})).await;
    assert_eq!(o.status, 413, "{}", o.body);
    let msg = o.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(msg.contains("messages[1]"), "{msg}");
    assert!(o.conversation.is_none(), "nothing created");
    // The same messages through /v1.
    let id = s.new_conversation(&s.key_a, json!({})).await;
    let res = s
        .post(
            &format!("/v1/conversations/{id}/messages"),
            &s.key_a,
            json!({"messages": history}),
        )
        .await;
    assert_eq!(res.status.as_u16(), 413, "{}", res.text);
    assert!(res.message().contains("messages[1]"), "{}", res.message());
    // Anthropic's tool_use input, on its route.
    let a = anthropic(
        &s,
        None,
        json!({"model": "m", "max_tokens": 5, "messages": [
            {"role": "user", "content": "Save this."},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "save",
                "input": {"text": "x".repeat(100 * 1024)}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}
        ]}),
    )
    .await;
    assert_eq!(a.status, 413, "{}", a.body);
    assert_eq!(a.json()["error"]["type"], "request_too_large");
    assert!(s.stored(TENANT_A, &id).await.is_empty());
    let convs = s.get("/v1/conversations", &s.key_a).await;
    assert_eq!(
        convs.json["data"].as_array().map(Vec::len),
        Some(1),
        "only the /v1 conversation: {}",
        convs.text
    );
    assert!(fake.requests().is_empty(), "nothing was forwarded");
}

/// A streamed reply past `max_message_bytes` stops there: the client gets the chunks that fit
/// and then the provider's error event saying why, and the reply stored is those chunks'
/// text, as `partial`; the same for a whole reply, whose client body breaks off.
async fn replies_past_the_size_cap_are_cut_stored_partial_and_said(backend: common::Backend) {
    let handler: recall_testkit::Handler = Arc::new(|req, _| {
        let body = req.json();
        let piece = "0123456789abcdef".repeat(64); // 1 KiB a chunk, 200 KiB in all
        if req.path.ends_with("/chat/completions") {
            if body["stream"] == json!(true) {
                let mut parts = vec![recall_testkit::openai::chunk(
                    json!({"role": "assistant", "content": ""}),
                    Value::Null,
                )];
                for _ in 0..200 {
                    parts.push(recall_testkit::openai::chunk(
                        json!({"content": piece}),
                        Value::Null,
                    ));
                }
                parts.push(recall_testkit::openai::chunk(json!({}), json!("stop")));
                parts.push(recall_testkit::openai::done());
                recall_testkit::Reply::sse(parts)
            } else {
                recall_testkit::Reply::json(
                    200,
                    json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1,
                        "model": "m", "choices": [{"index": 0, "finish_reason": "stop",
                        "message": {"role": "assistant", "content": piece.repeat(200)}}]}),
                )
            }
        } else {
            let chunks: Vec<&str> = (0..200).map(|_| piece.as_str()).collect();
            recall_testkit::Reply::sse(recall_testkit::anthropic::text_reply(&chunks))
        }
    });
    let cap = 64 * 1024;
    let Some((s, _fake)) = gateway_to(backend, handler, message_cap(cap)).await else {
        return;
    };
    // Anthropic, streamed.
    let a = anthropic(
        &s,
        None,
        json!({"model": "m", "max_tokens": 5, "stream": true,
            "messages": [{"role": "user", "content": "Write a lot."}]}),
    )
    .await;
    assert_eq!(a.status, 200);
    let got = sse_text(&a.body);
    assert!(got.len() <= cap && got.len() >= cap - 1024, "{}", got.len());
    assert!(a.body.contains("event: error"), "the client is told");
    assert!(a.body.contains("max_message_bytes"), "and why");
    let msgs = stored(&s, a.conversation.as_deref().unwrap()).await;
    assert_eq!(msgs[1]["status"], "partial");
    assert_eq!(msgs[1]["message"]["content"].as_str().unwrap(), got);

    // OpenAI, streamed.
    let o = openai_call(
        &s,
        None,
        json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "More."}]}),
    )
    .await;
    assert_eq!(o.status, 200);
    let got: String = o
        .body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter_map(|v| {
            v["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_string)
        })
        .collect();
    assert!(got.len() <= cap && got.len() >= cap - 1024, "{}", got.len());
    assert!(
        o.body.contains("\"code\":\"reply_too_large\""),
        "{}",
        &o.body[o.body.len() - 300..]
    );
    let msgs = stored(&s, o.conversation.as_deref().unwrap()).await;
    assert_eq!(msgs[1]["status"], "partial");
    assert_eq!(msgs[1]["message"]["content"].as_str().unwrap(), got);

    // OpenAI, whole: the body breaks off, nothing over the cap is stored.
    let res = s
        .client
        .post(format!("{}/openai/v1/chat/completions", s.base))
        .bearer_auth(&s.key_a)
        .json(&json!({"model": "m", "messages": [{"role": "user", "content": "All of it."}]}))
        .send()
        .await
        .unwrap();
    let id = res
        .headers()
        .get("x-recall-conversation")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    assert!(res.bytes().await.is_err(), "the body breaks off");
    let msgs = stored(&s, &id).await;
    assert_eq!(
        msgs.len(),
        1,
        "only the question: the reply had no event that fit: {msgs:?}"
    );
}

/// A malformed event mid-stream ends the reply there for the client and the store alike:
/// the client gets the text before it and an error event, never the rest, and the stored
/// reply is that text, as `partial`.
#[tokio::test]
async fn a_malformed_event_ends_the_reply_for_client_and_store_alike() {
    use recall_testkit::{anthropic as a, Part};
    let handler: recall_testkit::Handler = Arc::new(|_, _| {
        let pause = || Part::Pause(std::time::Duration::from_millis(30));
        recall_testkit::Reply::sse(vec![
            a::message_start("msg_1", 5),
            a::block_start(0, json!({"type": "text", "text": ""})),
            a::text_delta(0, "Before the break. "),
            pause(),
            Part::Bytes("event: content_block_delta\ndata: {not json\n\n".into()),
            pause(),
            a::text_delta(0, "After the break."),
            a::block_stop(0),
            a::message_delta("end_turn", 9),
            a::message_stop(),
        ])
    });
    let (s, _fake) = gateway_to(common::Backend::Sqlite, handler, Default::default())
        .await
        .unwrap();
    let res = anthropic(
        &s,
        None,
        json!({"model": "m", "max_tokens": 5, "stream": true,
            "messages": [{"role": "user", "content": "Go."}]}),
    )
    .await;
    assert_eq!(res.status, 200);
    assert_eq!(sse_text(&res.body), "Before the break. ");
    assert!(!res.body.contains("After the break"), "{}", res.body);
    assert!(res.body.contains("event: error"), "{}", res.body);
    let msgs = stored(&s, res.conversation.as_deref().unwrap()).await;
    assert_eq!(msgs[1]["status"], "partial");
    assert_eq!(msgs[1]["message"]["content"], "Before the break. ");
}

/// A conversation whose context the context route refuses (over `max_context_bytes`) is
/// refused on the gateway too, in the provider's shape, and nothing reaches the provider.
async fn the_gateway_keeps_max_context_bytes(backend: common::Backend) {
    let handler: recall_testkit::Handler = Arc::new(|_, _| {
        recall_testkit::Reply::json(200, recall_testkit::anthropic::message_json("ok"))
    });
    let limits = recall_server::HttpLimits {
        max_context_bytes: 20_000,
        ..Default::default()
    };
    let Some((s, fake)) = gateway_to(backend, handler, limits).await else {
        return;
    };
    let id = s.new_conversation(&s.key_a, json!({})).await;
    // 4 × 3,000 control characters: 12 kB of UTF-8, 72 kB as JSON.
    let msgs: Vec<Value> = (0..4)
        .map(|i| {
            json!({"role": if i % 2 == 0 { "user" } else { "assistant" },
            "content": format!("{i} {}", "\u{1}".repeat(3000))})
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
    let r = s
        .post(
            &format!("/v1/conversations/{id}/context"),
            &s.key_a,
            json!({"format": "anthropic"}),
        )
        .await;
    assert_eq!(r.status.as_u16(), 413, "the context route: {}", r.text);
    let a = anthropic(
        &s,
        Some(&id),
        json!({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "And?"}]}),
    )
    .await;
    assert_eq!(a.status, 413, "{}", a.body);
    assert_eq!(a.json()["error"]["type"], "request_too_large");
    assert!(a.body.contains("max_context_bytes"), "{}", a.body);
    let o = openai_call(
        &s,
        Some(&id),
        json!({"model": "m", "messages": [{"role": "user", "content": "And?"}]}),
    )
    .await;
    assert_eq!(o.status, 413, "{}", o.body);
    assert_eq!(o.json()["error"]["type"], "invalid_request_error");
    assert!(fake.requests().is_empty(), "nothing was forwarded");
}

/// Turns sent at once on one conversation are taken one after the other: every reply is
/// stored right after its own question, and each turn's context holds the turns before it.
async fn concurrent_turns_on_one_conversation_are_serialised(backend: common::Backend) {
    use recall_testkit::{anthropic as a, Part};
    let handler: recall_testkit::Handler = Arc::new(|req, _| {
        let body = req.json();
        let last = body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_str().map(str::to_string))
            .unwrap_or_default();
        let sent = body["messages"].as_array().map_or(0, Vec::len);
        let mut parts = vec![
            a::message_start("msg_1", 5),
            a::block_start(0, json!({"type": "text", "text": ""})),
            Part::Pause(std::time::Duration::from_millis(150)),
            a::text_delta(0, &format!("re: {last} ({sent} sent)")),
        ];
        parts.extend([
            a::block_stop(0),
            a::message_delta("end_turn", 3),
            a::message_stop(),
        ]);
        recall_testkit::Reply::sse(parts)
    });
    let Some((s, _fake)) = gateway_to(backend, handler, Default::default()).await else {
        return;
    };
    let id = s.new_conversation(&s.key_a, json!({})).await;
    let turns = (0..4).map(|i| {
        let (s, id) = (&s, id.clone());
        async move {
            anthropic(
                s,
                Some(&id),
                json!({"model": "m", "max_tokens": 5, "stream": true,
                    "messages": [{"role": "user", "content": format!("q{i}")}]}),
            )
            .await
        }
    });
    for a in futures::future::join_all(turns).await {
        assert_eq!(a.status, 200, "{}", a.body);
    }
    let msgs = stored(&s, &id).await;
    assert_eq!(msgs.len(), 8, "{msgs:?}");
    for (k, pair) in msgs.chunks(2).enumerate() {
        let q = pair[0]["message"]["content"].as_str().unwrap();
        assert_eq!(pair[0]["message"]["role"], "user", "{msgs:?}");
        // The reply to this question, after the k turns before it (2k messages) and it.
        assert_eq!(
            pair[1]["message"]["content"],
            format!("re: {q} ({} sent)", 2 * k + 1),
            "{msgs:?}"
        );
    }
}

/// A conversation of `turns` exchanges built through the gateway in mirror mode (the client
/// sends its whole history each time), on a provider answering "ok N"; returns its id and
/// the client's history (ending with a reply).
async fn mirrored(s: &Server, texts: &[&str]) -> (String, Vec<Value>) {
    let mut history: Vec<Value> = Vec::new();
    let mut id: Option<String> = None;
    for text in texts {
        history.push(json!({"role": "user", "content": text}));
        let a = anthropic(
            s,
            id.as_deref(),
            json!({"model": "m", "max_tokens": 5, "messages": history.clone()}),
        )
        .await;
        assert_eq!(a.status, 200, "{}", a.body);
        if id.is_some() {
            assert_eq!(a.mode.as_deref(), Some("mirror"));
        }
        id = a.conversation.clone();
        history.push(json!({"role": "assistant", "content": a.json()["content"].clone()}));
    }
    (id.unwrap(), history)
}

fn counting_provider() -> recall_testkit::Handler {
    Arc::new(|req, _| {
        let n = req.json()["messages"].as_array().map_or(0, Vec::len);
        recall_testkit::Reply::json(
            200,
            recall_testkit::anthropic::message_json(&format!("ok {n}")),
        )
    })
}

/// After a redaction, an SDK still sends the text it had (older than the anchor, and among
/// the newest messages): the request continues the conversation, the text is neither
/// stored again nor forwarded, and no fork holds it.
async fn mirror_mode_never_resurrects_a_redacted_message(backend: common::Backend) {
    let Some((s, fake)) = gateway_to(backend, counting_provider(), Default::default()).await else {
        return;
    };
    let (id, mut history) = mirrored(
        &s,
        &[
            "My card is 4111-SECRET-OLD.",
            "q2",
            "q3",
            "q4",
            "My pin is 9-SECRET-NEW.",
            "q6",
        ],
    )
    .await;
    assert_eq!(stored(&s, &id).await.len(), 12);
    for seq in [1, 9] {
        let r = s
            .call(
                reqwest::Method::DELETE,
                &format!("/v1/conversations/{id}/messages/{seq}"),
                &s.key_a,
                None,
            )
            .await;
        assert_eq!(r.status.as_u16(), 204, "{}", r.text);
    }
    let before = fake.requests().len();
    for next in ["q7", "q8"] {
        history.push(json!({"role": "user", "content": next}));
        let a = anthropic(
            &s,
            Some(&id),
            json!({"model": "m", "max_tokens": 5, "messages": history.clone()}),
        )
        .await;
        assert_eq!(a.status, 200, "{}", a.body);
        assert_eq!(a.mode.as_deref(), Some("mirror"), "no fork");
        assert_eq!(a.conversation.as_deref(), Some(id.as_str()));
        history.push(json!({"role": "assistant", "content": a.json()["content"].clone()}));
    }
    let msgs = stored(&s, &id).await;
    assert_eq!(msgs.len(), 16, "each new message stored once: {msgs:?}");
    let all = serde_json::to_string(&msgs).unwrap();
    assert!(!all.contains("SECRET"), "a redacted text came back: {all}");
    for r in &fake.requests()[before..] {
        let body = String::from_utf8_lossy(&r.body);
        assert!(!body.contains("SECRET"), "forwarded: {body}");
    }
    let forks = s
        .get(&format!("/v1/conversations/{id}/forks"), &s.key_a)
        .await;
    assert_eq!(
        forks.json["data"].as_array().map(Vec::len),
        Some(0),
        "{}",
        forks.text
    );
}

/// An edit to a turn older than the newest four messages forks, whether the client sends
/// its whole history or trims it; the edited text is what goes upstream.
async fn mirror_mode_forks_on_an_edit_older_than_the_anchor(backend: common::Backend) {
    let Some((s, fake)) = gateway_to(backend, counting_provider(), Default::default()).await else {
        return;
    };
    let (id, history) = mirrored(&s, &["q1", "q2", "q3", "q4", "q5", "q6"]).await;
    assert_eq!(stored(&s, &id).await.len(), 12);
    // The whole history, with the second question (seq 3) edited.
    let mut edited = history.clone();
    edited[2] = json!({"role": "user", "content": "q2, EDITED"});
    edited.push(json!({"role": "user", "content": "q7"}));
    let a = anthropic(
        &s,
        Some(&id),
        json!({"model": "m", "max_tokens": 5, "messages": edited}),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.mode.as_deref(), Some("fork"));
    let fork = a.conversation.clone().unwrap();
    assert_ne!(fork, id);
    let forked = stored(&s, &fork).await;
    // Seqs 1–2 shared, then the edited history from seq 3 on, and the reply.
    assert_eq!(forked.len(), 14, "{forked:?}");
    assert_eq!(forked[2]["message"]["content"], "q2, EDITED");
    assert_eq!(stored(&s, &id).await.len(), 12, "the original is unchanged");
    let sent = String::from_utf8_lossy(&fake.requests().last().unwrap().body).to_string();
    assert!(sent.contains("q2, EDITED"), "{sent}");

    // A client that keeps its last eight messages, one of them (older than the anchor)
    // edited.
    let mut trimmed = history[4..].to_vec();
    trimmed[1] = json!({"role": "assistant", "content": "ok EDITED"});
    trimmed.push(json!({"role": "user", "content": "q7"}));
    let a = anthropic(
        &s,
        Some(&id),
        json!({"model": "m", "max_tokens": 5, "messages": trimmed}),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.mode.as_deref(), Some("fork"));
    let forked = stored(&s, a.conversation.as_deref().unwrap()).await;
    assert_eq!(forked.len(), 14, "{forked:?}");
    assert_eq!(forked[5]["message"]["content"], "ok EDITED");
    assert_eq!(forked[4]["message"]["content"], "q3");

    // The same trimmed history unedited continues the conversation.
    let mut same = history[4..].to_vec();
    same.push(json!({"role": "user", "content": "q7"}));
    let a = anthropic(
        &s,
        Some(&id),
        json!({"model": "m", "max_tokens": 5, "messages": same}),
    )
    .await;
    assert_eq!(a.mode.as_deref(), Some("mirror"), "{}", a.body);
    assert_eq!(stored(&s, &id).await.len(), 14);
}

/// Issue 49 item 7: a streamed tool input (157 MB reached the client, nothing stored) and
/// 30,000 small tool calls (stored as one 2 MB message) count toward `max_message_bytes` as
/// they arrive: the client gets about the cap and an error, the stream is not read to its
/// end, and nothing over the cap is stored.
async fn tool_input_and_many_tool_calls_count_toward_the_reply_cap(backend: common::Backend) {
    let handler: recall_testkit::Handler = Arc::new(|req, _| {
        if req.path.ends_with("/chat/completions") {
            let mut parts = vec![recall_testkit::openai::chunk(
                json!({"role": "assistant", "content": null}),
                Value::Null,
            )];
            for batch in 0..300 {
                let calls: Vec<Value> = (0..100)
                    .map(|k| {
                        let i = batch * 100 + k;
                        json!({"index": i, "id": format!("call_{i}"), "type": "function",
                            "function": {"name": "f", "arguments": "{}"}})
                    })
                    .collect();
                parts.push(recall_testkit::openai::chunk(
                    json!({"tool_calls": calls}),
                    Value::Null,
                ));
            }
            parts.push(recall_testkit::openai::chunk(
                json!({}),
                json!("tool_calls"),
            ));
            parts.push(recall_testkit::openai::done());
            recall_testkit::Reply::sse(parts)
        } else {
            use recall_testkit::anthropic as a;
            let mut parts = vec![
                a::message_start("msg_1", 5),
                a::block_start(
                    0,
                    json!({"type": "tool_use", "id": "toolu_big", "name": "write", "input": {}}),
                ),
            ];
            let piece = "x".repeat(1024);
            for _ in 0..400 {
                parts.push(a::delta(
                    0,
                    json!({"type": "input_json_delta", "partial_json": piece}),
                ));
            }
            parts.extend([
                a::block_stop(0),
                a::message_delta("tool_use", 9),
                a::message_stop(),
            ]);
            recall_testkit::Reply::sse(parts)
        }
    });
    let cap = 64 * 1024;
    let Some((s, _fake)) = gateway_to(backend, handler, message_cap(cap)).await else {
        return;
    };
    let a = anthropic(
        &s,
        None,
        json!({"model": "m", "max_tokens": 5, "stream": true,
            "messages": [{"role": "user", "content": "Write a file."}]}),
    )
    .await;
    assert_eq!(a.status, 200);
    assert!(
        a.body.len() < 2 * cap,
        "the client got {} bytes",
        a.body.len()
    );
    assert!(a.body.contains("max_message_bytes"), "and why");
    assert!(!a.body.contains("message_stop"), "not read to the end");
    let msgs = stored(&s, a.conversation.as_deref().unwrap()).await;
    assert!(
        msgs.len() == 1 || msgs[1]["status"] == "partial",
        "{msgs:?}"
    );
    assert!(msgs.iter().all(|m| m.to_string().len() < cap));

    let o = openai_call(
        &s,
        None,
        json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "Call f a lot."}]}),
    )
    .await;
    assert_eq!(o.status, 200);
    // A call's chunk JSON is about half again what its stored block counts.
    assert!(
        o.body.len() < 3 * cap,
        "the client got {} bytes",
        o.body.len()
    );
    assert!(
        o.body.contains("reply_too_large"),
        "{}",
        &o.body[o.body.len().saturating_sub(300)..]
    );
    assert!(!o.body.contains("[DONE]"));
    let msgs = stored(&s, o.conversation.as_deref().unwrap()).await;
    assert!(
        msgs.iter().all(|m| m.to_string().len() < cap),
        "a stored message over the cap"
    );
    assert!(
        msgs.len() == 1 || msgs[1]["status"] == "partial",
        "{msgs:?}"
    );
}

/// Issue 49 item 9: a message inserted in, or deleted from, the middle of the client's whole
/// history forks right there, and upstream gets exactly the client's history: nothing
/// dropped (an insertion aligned on the tail forked too early and stored from the wrong
/// message) and nothing twice (a deletion did).
async fn mirror_mode_forks_where_a_message_was_inserted_or_deleted(backend: common::Backend) {
    let Some((s, _fake)) = gateway_to(backend, counting_provider(), Default::default()).await
    else {
        return;
    };
    let (id, history) = mirrored(&s, &["q1", "q2", "q3", "q4", "q5", "q6"]).await;
    assert_eq!(stored(&s, &id).await.len(), 12);
    // A message's text, from its `content` as a string or its first block.
    let text = |c: &Value| {
        c.as_str().map_or_else(
            || c[0]["text"].as_str().unwrap_or("").to_string(),
            str::to_string,
        )
    };
    // Inserted: an exchange after the second one (after seq 4).
    let mut inserted = history.clone();
    inserted.splice(
        4..4,
        [
            json!({"role": "user", "content": "an inserted question"}),
            json!({"role": "assistant", "content": "an inserted reply"}),
        ],
    );
    // Deleted: the third exchange (seqs 5 and 6).
    let mut deleted = history.clone();
    deleted.drain(4..6);
    for mut sent in [inserted, deleted] {
        sent.push(json!({"role": "user", "content": "q7"}));
        let a = anthropic(
            &s,
            Some(&id),
            json!({"model": "m", "max_tokens": 5, "messages": sent.clone()}),
        )
        .await;
        assert_eq!(a.status, 200, "{}", a.body);
        assert_eq!(a.mode.as_deref(), Some("fork"));
        // Upstream got the client's messages, none dropped and none twice.
        let n = sent.len();
        assert_eq!(
            a.json()["content"][0]["text"],
            format!("ok {n}"),
            "{}",
            a.body
        );
        // The fork is the client's history, then the reply.
        let fork = stored(&s, a.conversation.as_deref().unwrap()).await;
        let forked: Vec<String> = fork
            .iter()
            .map(|m| text(&m["message"]["content"]))
            .collect();
        let client: Vec<String> = sent.iter().map(|m| text(&m["content"])).collect();
        assert_eq!(forked[..n], client[..]);
        assert_eq!(fork.len(), n + 1);
        assert_eq!(stored(&s, &id).await.len(), 12, "the original is unchanged");
    }
}

on_both!(
    tool_input_and_many_tool_calls_count_toward_the_reply_cap,
    mirror_mode_forks_where_a_message_was_inserted_or_deleted,
    mirror_mode_never_resurrects_a_redacted_message,
    mirror_mode_forks_on_an_edit_older_than_the_anchor,
    concurrent_turns_on_one_conversation_are_serialised,
    the_gateway_keeps_max_context_bytes,
    tool_calls_count_toward_the_message_size,
    replies_past_the_size_cap_are_cut_stored_partial_and_said
);

/// A provider with no upstream is a configuration problem: a 4xx the providers' SDKs do not
/// retry (they retry 408, 409, 429 and every 5xx), saying what to set, and nothing stored.
#[tokio::test]
async fn a_provider_without_an_upstream_is_a_4xx_no_sdk_retries() {
    let s = server_with(Backend::Sqlite, |_| {}).await.unwrap();
    let a = anthropic(
        &s,
        None,
        json!({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}),
    )
    .await;
    assert_eq!(a.status, 404, "{}", a.body);
    assert_eq!(a.json()["type"], "error");
    assert_eq!(a.json()["error"]["type"], "not_found_error");
    let message = a.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("ANTHROPIC_API_KEY"), "{message}");
    let o = openai_call(
        &s,
        None,
        json!({"model": "m", "messages": [{"role": "user", "content": "x"}]}),
    )
    .await;
    assert_eq!(o.status, 404, "{}", o.body);
    assert_eq!(o.json()["error"]["type"], "not_found_error");
    assert_eq!(o.json()["error"]["code"], "no_upstream");
    let message = o.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("OPENAI_API_KEY"), "{message}");
    for status in [a.status, o.status] {
        assert!((400..500).contains(&status) && ![408, 409, 429].contains(&status));
    }
    assert!(a.conversation.is_none() && o.conversation.is_none());
    let list = s
        .client
        .get(format!("{}/v1/conversations", s.base))
        .bearer_auth(&s.key_a)
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(list["data"], json!([]), "{list}");
}
