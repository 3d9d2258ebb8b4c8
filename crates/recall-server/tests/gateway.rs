//! The gateway over real HTTP: a real server on a SQLite file, a fake provider on loopback
//! speaking the Anthropic and OpenAI wire formats (recall-testkit's `FakeProvider`, which
//! also computes Anthropic's prompt cache), and reqwest as the client. The official SDKs
//! drive the same routes in recall-cli's `gateway_sdk` test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::{server_with, Backend, Server, TENANT_A};
use recall_core::gateway::Provider;
use recall_engine::llm::proxy::Upstream;
use recall_engine::llm::HttpConfig;
use recall_testkit::provider::FakeProvider;
use serde_json::{json, Value};

async fn gateway() -> (Server, FakeProvider) {
    let fake = FakeProvider::start().await;
    let base = fake.base_url();
    let server = server_with(Backend::Sqlite, move |c| {
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
    })
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

async fn anthropic(s: &Server, conv: Option<&str>, body: Value) -> Answer {
    let mut req = s
        .client
        .post(format!("{}/anthropic/v1/messages", s.base))
        .header("x-api-key", &s.key_a)
        .header("anthropic-version", "2023-06-01")
        .json(&body);
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
            json!({"policy": {"format": "anthropic", "max_tokens": 3000, "trim": "stable"}}),
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
