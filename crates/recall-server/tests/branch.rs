//! Branching and MCP parity over real HTTP on 127.0.0.1, on SQLite and PostgreSQL: fork,
//! forks, PATCH, redaction, alternatives, retry and edit over SSE against a fake Anthropic
//! server, search, delete with cascade, the OpenAPI document, bad input that changes nothing,
//! and tenant isolation of every new route.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use std::sync::Arc;

use common::{server_upstreams, server_with, Backend, Server, TENANT_A};
use recall_engine::llm::{AnthropicBackend, HttpConfig, RetryPolicy};
use recall_server::{Backends, Upstreams};
use recall_testkit::{anthropic, FakeServer, Reply};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

on_both!(
    fork_patch_redact_and_search,
    retry_and_edit_stream_on_forks,
    new_routes_are_tenant_scoped,
    tasks_over_http_match_mcp,
    bad_requests_change_nothing,
);

async fn chat_server(fake: &FakeServer, db: Backend) -> Option<Server> {
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
            out.push((name, serde_json::from_str(&data).unwrap()));
        }
    }
    out
}

async fn sse(s: &Server, path: &str, body: Value) -> Vec<(String, Value)> {
    let res = s
        .client
        .post(format!("{}{path}", s.base))
        .bearer_auth(&s.key_a)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = res.status();
    let text = res.text().await.unwrap();
    assert_eq!(status, StatusCode::OK, "{text}");
    sse_events(&text)
}

fn texts(stored: &[Value]) -> Vec<String> {
    stored
        .iter()
        .map(|m| m["message"]["content"].as_str().unwrap_or("").to_string())
        .collect()
}

async fn append(s: &Server, id: &str, messages: Value) {
    let r = s
        .post(
            &format!("/v1/conversations/{id}/messages"),
            &s.key_a,
            json!({"messages": messages}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
}

async fn fork_patch_redact_and_search(b: Backend) {
    let Some(s) = server_with(b, |_| {}).await else {
        return;
    };
    let id = s
        .new_conversation(
            &s.key_a,
            json!({"title": "main", "system_prompt": "Be brief."}),
        )
        .await;
    append(
        &s,
        &id,
        json!([
            {"role": "user", "content": "my locker code is 4471 orange"},
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": "what else?"},
            {"role": "assistant", "content": "Nothing."},
        ]),
    )
    .await;
    let r = s
        .post(
            &format!("/v1/conversations/{id}/fork"),
            &s.key_a,
            json!({"at": 2, "title": "branch"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let fork = r.json["id"].as_str().unwrap().to_string();
    assert_eq!(
        r.json["forked_from"],
        json!({"conversation_id": id, "seq": 2})
    );
    assert_eq!(r.json["title"], "branch");
    assert_eq!(r.json["system_prompt"], "Be brief.");
    assert_eq!(
        (r.json["message_count"].clone(), r.json["last_seq"].clone()),
        (json!(2), json!(2))
    );
    append(
        &s,
        &fork,
        json!([{"role": "user", "content": "a different question"}]),
    )
    .await;
    let page = s
        .get(
            &format!("/v1/conversations/{fork}/messages?limit=2"),
            &s.key_a,
        )
        .await;
    assert_eq!(page.json["data"].as_array().unwrap().len(), 2);
    assert_eq!(page.json["next_after"], 2);
    let rest = s
        .get(
            &format!("/v1/conversations/{fork}/messages?after=2"),
            &s.key_a,
        )
        .await;
    assert_eq!(
        rest.json["data"][0]["message"]["content"],
        "a different question"
    );
    assert_eq!(rest.json["data"][0]["seq"], 3);
    let forks = s
        .get(&format!("/v1/conversations/{id}/forks"), &s.key_a)
        .await;
    assert_eq!(forks.json["data"][0]["id"], json!(fork));

    // The context of the fork: the parent's first two messages, then its own.
    let ctx = s
        .post(
            &format!("/v1/conversations/{fork}/context"),
            &s.key_a,
            json!({}),
        )
        .await;
    let prompt = ctx.json["prompt"].as_str().unwrap();
    assert!(
        prompt.contains("4471")
            && prompt.contains("a different question")
            && !prompt.contains("what else"),
        "{prompt}"
    );

    // PATCH: title removed, prompt changed, policy set; fields left out are kept.
    let r = s
        .call(
            Method::PATCH,
            &format!("/v1/conversations/{fork}"),
            &s.key_a,
            Some(json!({"title": null, "policy": {"format": "xml", "max_turns": 5}})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.json["title"], Value::Null);
    assert_eq!(r.json["system_prompt"], "Be brief.");
    assert_eq!(r.json["policy"], json!({"format": "xml", "max_turns": 5}));
    let ctx = s
        .post(
            &format!("/v1/conversations/{fork}/context"),
            &s.key_a,
            json!({}),
        )
        .await;
    assert_eq!(ctx.json["format"], "xml");

    // Search finds the shared message once, under the parent that holds it.
    let r = s.get("/v1/search?q=locker%20orange", &s.key_a).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.json["data"].as_array().unwrap().len(), 1, "{}", r.text);
    assert_eq!(r.json["data"][0]["conversation_id"], json!(id));
    assert_eq!(r.json["data"][0]["seq"], 1);

    // Redact through the fork: gone from both, from search and from contexts.
    let r = s
        .call(
            Method::DELETE,
            &format!("/v1/conversations/{fork}/messages/1?compact=true"),
            &s.key_a,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    for c in [&id, &fork] {
        let st = s.stored(TENANT_A, c).await;
        assert_eq!(st[0]["status"], "redacted");
        assert_eq!(st[0]["message"]["content"], "[redacted]");
        let ctx = s
            .post(
                &format!("/v1/conversations/{c}/context"),
                &s.key_a,
                json!({"format": "transcript"}),
            )
            .await;
        assert!(!ctx.text.contains("4471"), "{}", ctx.text);
    }
    let r = s.get("/v1/search?q=locker", &s.key_a).await;
    assert_eq!(r.json["data"], json!([]));

    // Delete: refused with forks (409, nothing deleted), then with cascade.
    let r = s
        .call(
            Method::DELETE,
            &format!("/v1/conversations/{id}"),
            &s.key_a,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.text);
    assert!(r.message().contains("cascade"), "{}", r.text);
    let r = s
        .post(
            &format!("/v1/conversations/{id}/clear"),
            &s.key_a,
            json!({}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.text);
    assert_eq!(s.stored(TENANT_A, &id).await.len(), 4);
    let r = s
        .call(
            Method::DELETE,
            &format!("/v1/conversations/{id}?cascade=true"),
            &s.key_a,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    for c in [&id, &fork] {
        let r = s.get(&format!("/v1/conversations/{c}"), &s.key_a).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND);
    }

    // The OpenAPI document has every new route.
    let doc = s
        .client
        .get(format!("{}/openapi.json", s.base))
        .send()
        .await
        .unwrap();
    let doc: Value = doc.json().await.unwrap();
    for (path, method) in [
        ("/v1/conversations/{id}/fork", "post"),
        ("/v1/conversations/{id}/forks", "get"),
        ("/v1/conversations/{id}", "patch"),
        ("/v1/conversations/{id}/messages/{seq}", "delete"),
        ("/v1/conversations/{id}/messages/{seq}/alternatives", "get"),
        ("/v1/conversations/{id}/retry", "post"),
        ("/v1/conversations/{id}/edit", "post"),
        ("/v1/search", "get"),
    ] {
        assert!(
            doc["paths"][path][method].is_object(),
            "{method} {path} missing from OpenAPI"
        );
    }
}

async fn retry_and_edit_stream_on_forks(b: Backend) {
    let fake = FakeServer::scripted(vec![
        Reply::sse(anthropic::text_reply(&["Paris."])),
        Reply::sse(anthropic::text_reply(&["Paris, ", "of course."])),
        Reply::sse(anthropic::text_reply(&["Madrid."])),
    ])
    .await;
    let Some(s) = chat_server(&fake, b).await else {
        return;
    };
    let id = s.new_conversation(&s.key_a, json!({})).await;
    let ev = sse(
        &s,
        &format!("/v1/conversations/{id}/chat"),
        json!({"content": "Capital of France?"}),
    )
    .await;
    assert_eq!(ev.last().unwrap().0, "done");

    let ev = sse(
        &s,
        &format!("/v1/conversations/{id}/retry"),
        json!({"seq": 2}),
    )
    .await;
    assert_eq!(ev[0].0, "forked", "{ev:?}");
    let fork = ev[0].1["conversation_id"].as_str().unwrap().to_string();
    let chunks: String = ev
        .iter()
        .filter(|e| e.0 == "assistant_chunk")
        .map(|e| e.1["delta"].as_str().unwrap())
        .collect();
    assert_eq!(chunks, "Paris, of course.");
    let done = ev.last().unwrap();
    assert_eq!(done.0, "done");
    assert_eq!(done.1["message_id"], 2);
    assert_eq!(
        texts(&s.stored(TENANT_A, &fork).await),
        ["Capital of France?", "Paris, of course."]
    );
    assert_eq!(
        texts(&s.stored(TENANT_A, &id).await),
        ["Capital of France?", "Paris."]
    );
    let alts = s
        .get(
            &format!("/v1/conversations/{fork}/messages/2/alternatives"),
            &s.key_a,
        )
        .await;
    assert_eq!(alts.status, StatusCode::OK, "{}", alts.text);
    let got: Vec<(String, bool)> = alts.json["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["message"]["message"]["content"]
                    .as_str()
                    .unwrap()
                    .to_string(),
                a["current"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("Paris.".to_string(), false),
            ("Paris, of course.".to_string(), true)
        ]
    );

    let ev = sse(
        &s,
        &format!("/v1/conversations/{fork}/edit"),
        json!({"seq": 1, "content": "Capital of Spain?"}),
    )
    .await;
    assert_eq!(ev[0].0, "forked");
    let edited = ev[0].1["conversation_id"].as_str().unwrap().to_string();
    assert!(
        ev.iter().any(|e| e.0 == "user_stored" && e.1["seq"] == 1),
        "{ev:?}"
    );
    assert_eq!(ev.last().unwrap().0, "done");
    assert_eq!(
        texts(&s.stored(TENANT_A, &edited).await),
        ["Capital of Spain?", "Madrid."]
    );
    let sent = fake.requests()[2].json();
    assert_eq!(sent["messages"].as_array().unwrap().len(), 1, "{sent}");
    assert!(sent.to_string().contains("Capital of Spain?") && !sent.to_string().contains("France"));

    // Refusals are answered before any stream: nothing forked, the backend not called.
    let before = s
        .get(&format!("/v1/conversations/{id}/forks"), &s.key_a)
        .await
        .json["data"]
        .as_array()
        .unwrap()
        .len();
    for (path, body, status) in [
        ("retry", json!({"seq": 1}), StatusCode::UNPROCESSABLE_ENTITY),
        // A seq the conversation does not hold is bad input (the conversation exists).
        ("retry", json!({"seq": 7}), StatusCode::UNPROCESSABLE_ENTITY),
        ("retry", json!({"seq": 0}), StatusCode::UNPROCESSABLE_ENTITY),
        (
            "edit",
            json!({"seq": 2, "content": "x"}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            "edit",
            json!({"seq": 1, "content": ""}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            "retry",
            json!({"seq": 2, "nope": 1}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        ("edit", json!({"seq": 1}), StatusCode::UNPROCESSABLE_ENTITY),
    ] {
        let r = s
            .post(
                &format!("/v1/conversations/{id}/{path}"),
                &s.key_a,
                body.clone(),
            )
            .await;
        assert_eq!(r.status, status, "{path} {body}: {}", r.text);
    }
    let after = s
        .get(&format!("/v1/conversations/{id}/forks"), &s.key_a)
        .await
        .json["data"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(before, after);
    assert_eq!(fake.requests().len(), 3);
}

async fn new_routes_are_tenant_scoped(b: Backend) {
    let fake = FakeServer::scripted(vec![]).await;
    let Some(s) = chat_server(&fake, b).await else {
        return;
    };
    let a_id = s
        .new_conversation(&s.key_a, json!({"title": "A's secret title"}))
        .await;
    append(
        &s,
        &a_id,
        json!([
            {"role": "user", "content": "A's secret words"},
            {"role": "assistant", "content": "ok"},
        ]),
    )
    .await;
    let a_fork = s
        .post(
            &format!("/v1/conversations/{a_id}/fork"),
            &s.key_a,
            json!({"at": 1}),
        )
        .await;
    let a_fork = a_fork.json["id"].as_str().unwrap().to_string();
    let a_task = s
        .post(
            "/v1/tasks",
            &s.key_a,
            json!({"description": "A's secret task"}),
        )
        .await;
    assert_eq!(a_task.status, StatusCode::CREATED, "{}", a_task.text);
    let a_task = a_task.json["task_id"].as_str().unwrap().to_string();
    let calls: Vec<(Method, String, Option<Value>)> = vec![
        (Method::GET, format!("/v1/tasks/{a_task}"), None),
        (
            Method::POST,
            format!("/v1/conversations/{a_id}/fork"),
            Some(json!({"at": 1})),
        ),
        (Method::GET, format!("/v1/conversations/{a_id}/forks"), None),
        (
            Method::PATCH,
            format!("/v1/conversations/{a_id}"),
            Some(json!({"title": "stolen"})),
        ),
        (
            Method::DELETE,
            format!("/v1/conversations/{a_id}/messages/1"),
            None,
        ),
        (
            Method::GET,
            format!("/v1/conversations/{a_id}/messages/1/alternatives"),
            None,
        ),
        (
            Method::POST,
            format!("/v1/conversations/{a_id}/retry"),
            Some(json!({"seq": 2})),
        ),
        (
            Method::POST,
            format!("/v1/conversations/{a_id}/edit"),
            Some(json!({"seq": 1, "content": "x"})),
        ),
        (
            Method::DELETE,
            format!("/v1/conversations/{a_id}?cascade=true"),
            None,
        ),
        (
            Method::GET,
            format!("/v1/conversations/{a_fork}/messages"),
            None,
        ),
        (
            Method::POST,
            format!("/v1/conversations/{a_fork}/context"),
            Some(json!({})),
        ),
    ];
    for (m, path, body) in &calls {
        let r = s.call(m.clone(), path, &s.key_b, body.clone()).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{m} {path}: {}", r.text);
        assert!(!r.text.contains("secret"), "{}", r.text);
        let r = s
            .raw(
                m.clone(),
                path,
                None,
                body.as_ref().map(|b| b.to_string().into_bytes()),
            )
            .await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{m} {path}");
    }
    // B's search sees none of A's messages.
    let r = s.get("/v1/search?q=secret", &s.key_b).await;
    assert_eq!(r.json["data"], json!([]));
    let r = s.get("/v1/search?q=secret", &s.key_a).await;
    assert_eq!(r.json["data"].as_array().unwrap().len(), 1);
    let r = s.get(&format!("/v1/tasks/{a_task}"), &s.key_a).await;
    assert_eq!(r.json["description"], "A's secret task");
    // Nothing of A changed.
    let st = s.stored(TENANT_A, &a_id).await;
    assert_eq!(st[0]["status"], "complete");
    let c = s.get(&format!("/v1/conversations/{a_id}"), &s.key_a).await;
    assert_eq!(c.json["title"], "A's secret title");
    assert!(fake.requests().is_empty());
}

async fn bad_requests_change_nothing(b: Backend) {
    let Some(s) = server_with(b, |_| {}).await else {
        return;
    };
    let id = s.new_conversation(&s.key_a, json!({"title": "t"})).await;
    append(&s, &id, json!([{"role": "user", "content": "hi"}])).await;
    for (m, path, body, status) in [
        (
            Method::POST,
            format!("/v1/conversations/{id}/fork"),
            json!({"at": 2}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            Method::POST,
            format!("/v1/conversations/{id}/fork"),
            json!({"at": -1}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            Method::POST,
            format!("/v1/conversations/{id}/fork"),
            json!({"at": "1"}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            Method::POST,
            format!("/v1/conversations/{id}/fork"),
            json!({}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            Method::PATCH,
            format!("/v1/conversations/{id}"),
            json!({"colour": "red"}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            Method::PATCH,
            format!("/v1/conversations/{id}"),
            json!({"policy": {"low_water": 5}}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            Method::PATCH,
            format!("/v1/conversations/{id}"),
            json!({"metadata": [1]}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            Method::DELETE,
            format!("/v1/conversations/{id}/messages/0"),
            Value::Null,
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            Method::DELETE,
            format!("/v1/conversations/{id}/messages/x"),
            Value::Null,
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            Method::DELETE,
            format!("/v1/conversations/{id}/messages/9"),
            Value::Null,
            StatusCode::NOT_FOUND,
        ),
        (
            Method::DELETE,
            format!("/v1/conversations/{id}?cascade=maybe"),
            Value::Null,
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            Method::GET,
            "/v1/search?q=%20%20".to_string(),
            Value::Null,
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            Method::GET,
            "/v1/search".to_string(),
            Value::Null,
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            Method::GET,
            "/v1/search?q=hi&limit=0".to_string(),
            Value::Null,
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
    ] {
        let body = (!body.is_null()).then_some(body);
        let r = s.call(m.clone(), &path, &s.key_a, body).await;
        assert_eq!(r.status, status, "{m} {path}: {}", r.text);
        r.error_type();
    }
    // A PATCH body that is not JSON is 400; one without the JSON type is 415.
    let r = s
        .raw(
            Method::PATCH,
            &format!("/v1/conversations/{id}"),
            Some(&s.key_a),
            Some(b"{".to_vec()),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = s
        .client
        .patch(format!("{}/v1/conversations/{id}", s.base))
        .bearer_auth(&s.key_a)
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let c = s.get(&format!("/v1/conversations/{id}"), &s.key_a).await;
    assert_eq!(c.json["title"], "t");
    assert_eq!(c.json["policy"], Value::Null);
    assert_eq!(s.stored(TENANT_A, &id).await[0]["status"], "complete");
    assert_eq!(
        s.get(&format!("/v1/conversations/{id}/forks"), &s.key_a)
            .await
            .json["data"],
        json!([])
    );
}

/// `POST /v1/tasks` and `GET /v1/tasks/{id}` (the bodies of MCP's `create_task` and
/// `get_task`: `recall_mcp::tasks`); bad input is a 422 that names the problem.
async fn tasks_over_http_match_mcp(b: Backend) {
    let Some(s) = common::server(b).await else {
        return;
    };
    let body = json!({
        "description": "Port the parser to Rust",
        "priority": "P1",
        "success_criteria": ["all tests pass"],
        "conversation_history": [
            {"role": "user", "content": "the parser is slow"},
            {"role": "robot", "content": "skipped: not a role"},
        ],
    });
    let r = s.post("/v1/tasks", &s.key_a, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let id = r.json["task_id"].as_str().unwrap().to_string();
    assert_eq!(r.json["priority"], "P1");
    assert_eq!(r.json["conversation_messages_count"], 1);
    assert_eq!(r.json["validation_warnings"].as_array().unwrap().len(), 1);
    assert!(r.json["prompt"]
        .as_str()
        .unwrap()
        .contains("Port the parser to Rust"));
    let g = s.get(&format!("/v1/tasks/{id}"), &s.key_a).await;
    assert_eq!(g.status, StatusCode::OK, "{}", g.text);
    assert_eq!(g.json["prompt"], r.json["prompt"]);
    assert_eq!(g.json["success_criteria"], json!(["all tests pass"]));
    assert_eq!(
        g.json["conversation_history"][0]["content"],
        "the parser is slow"
    );
    for bad in [
        json!({}),
        json!({"description": "x", "priority": "P9"}),
        json!({"description": "x", "unknown": 1}),
        json!({"description": ""}),
    ] {
        let r = s.post("/v1/tasks", &s.key_a, bad.clone()).await;
        assert_eq!(
            r.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{bad}: {}",
            r.text
        );
        assert_eq!(r.error_type(), "invalid_request", "{bad}: {}", r.text);
    }
    let r = s.get("/v1/tasks/no-such-task", &s.key_a).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.text);
    assert!(r.message().contains("no-such-task"), "{}", r.text);
}
