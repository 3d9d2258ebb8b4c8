//! The REST API over real HTTP on 127.0.0.1, on SQLite and on PostgreSQL: every route, its
//! statuses and error shapes, authentication, tenant isolation, limits, and the operational
//! routes.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use common::{server, server_with, Backend, TENANT_A, TENANT_B};
use recall_core::context::ContextRequest;
use recall_core::policy::Format;
use recall_engine::ConversationRef;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

on_both!(
    conversations_lifecycle,
    conversation_pages,
    append_read_and_idempotency,
    a_conflicting_batch_stores_nothing,
    message_pages,
    context_is_what_recall_context_prints,
    bad_input_is_refused_and_changes_nothing,
    every_body_route_refuses_bad_bodies,
    limits_are_enforced,
    every_route_needs_a_key,
    tenants_never_see_each_other,
    operational_routes,
    rate_limit_answers_429,
);

async fn conversations_lifecycle(b: Backend) {
    let Some(s) = server(b).await else { return };
    let k = &s.key_a;
    let r = s
        .post(
            "/v1/conversations",
            k,
            json!({"title": "Support", "system_prompt": "Be brief.", "metadata": {"team": "x"},
                   "policy": {"format": "xml", "max_turns": 5}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let id = r.json["id"].as_str().unwrap().to_string();
    assert_eq!(r.json["title"], "Support");
    assert_eq!(r.json["system_prompt"], "Be brief.");
    assert_eq!(r.json["metadata"], json!({"team": "x"}));
    assert_eq!(r.json["message_count"], 0);
    assert!(r.json["created_at"].as_str().unwrap().ends_with('Z'));

    // An empty body makes an untitled conversation.
    let r = s
        .raw(Method::POST, "/v1/conversations", Some(k), Some(Vec::new()))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(r.json["title"], Value::Null);

    let r = s.get(&format!("/v1/conversations/{id}"), k).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json["id"], id.as_str());
    assert_eq!(r.json["policy"], json!({"format": "xml", "max_turns": 5}));

    let msgs = json!({"messages": [{"role": "user", "content": "one"},
                                   {"role": "assistant", "content": "two"}]});
    let r = s
        .post(&format!("/v1/conversations/{id}/messages"), k, msgs)
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);

    let r = s
        .call(
            Method::POST,
            &format!("/v1/conversations/{id}/clear"),
            k,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.json, json!({"removed": 2}));
    let r = s.get(&format!("/v1/conversations/{id}"), k).await;
    assert_eq!(r.json["message_count"], 0);
    assert_eq!(r.json["last_seq"], 2, "clearing keeps seq counting");
    // After a clear, seq goes on from where it was.
    let r = s
        .post(
            &format!("/v1/conversations/{id}/messages"),
            k,
            json!({"role": "user", "content": "three"}),
        )
        .await;
    assert_eq!(r.json["messages"][0]["seq"], 3, "{}", r.text);

    let r = s
        .call(Method::DELETE, &format!("/v1/conversations/{id}"), k, None)
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    assert!(r.text.is_empty());
    for (m, path) in [
        (Method::GET, format!("/v1/conversations/{id}")),
        (Method::DELETE, format!("/v1/conversations/{id}")),
        (Method::POST, format!("/v1/conversations/{id}/clear")),
        (Method::GET, format!("/v1/conversations/{id}/messages")),
    ] {
        let r = s.call(m.clone(), &path, k, None).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{m} {path}: {}", r.text);
        assert_eq!(r.error_type(), "not_found");
        assert!(r.message().contains(&id), "{}", r.text);
    }
}

async fn conversation_pages(b: Backend) {
    let Some(s) = server(b).await else { return };
    let k = &s.key_a;
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(
            s.new_conversation(k, json!({"title": format!("c{i}")}))
                .await,
        );
    }
    let mut seen = Vec::new();
    let mut path = "/v1/conversations?limit=2".to_string();
    loop {
        let r = s.get(&path, k).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        let data = r.json["data"].as_array().unwrap();
        assert!(data.len() <= 2);
        seen.extend(data.iter().map(|c| c["id"].as_str().unwrap().to_string()));
        match r.json["next_after"].as_str() {
            Some(c) => path = format!("/v1/conversations?limit=2&after={c}"),
            None => break,
        }
    }
    assert_eq!(
        seen, ids,
        "pages give every conversation once, oldest first"
    );
    let r = s.get("/v1/conversations", k).await;
    assert_eq!(r.json["data"].as_array().unwrap().len(), 5);
    assert_eq!(r.json["next_after"], Value::Null);
    for bad in ["limit=0", "limit=1001", "limit=abc", "color=red"] {
        let r = s.get(&format!("/v1/conversations?{bad}"), k).await;
        assert_eq!(
            r.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{bad}: {}",
            r.text
        );
        assert_eq!(r.error_type(), "invalid_request");
    }
}

async fn append_read_and_idempotency(b: Backend) {
    let Some(s) = server(b).await else { return };
    let k = &s.key_a;
    let id = s.new_conversation(k, json!({})).await;
    let path = format!("/v1/conversations/{id}/messages");

    let r = s
        .post(
            &path,
            k,
            json!({"role": "user", "content": "Hello", "id": "c1"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(
        r.json,
        json!({"messages": [{"seq": 1, "duplicate": false}], "warnings": []})
    );

    // A batch, OpenAI-shaped, with a tool call and its result.
    let batch = json!({"messages": [
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "search", "arguments": "{\"q\":\"x\"}"}}], "id": "c2"},
        {"role": "tool", "tool_call_id": "call_1", "content": "found"},
        {"role": "assistant", "content": "Done.", "metadata": {"model": "m"}}
    ]});
    let r = s.post(&path, k, batch.clone()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let seqs: Vec<i64> = r.json["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, vec![2, 3, 4]);

    // Retrying with the same client id stores nothing and returns the first seq.
    let r = s
        .post(
            &path,
            k,
            json!({"role": "user", "content": "Hello", "id": "c1"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(r.json["messages"], json!([{"seq": 1, "duplicate": true}]));
    assert_eq!(s.stored(TENANT_A, &id).await.len(), 4);

    // The same client id for a different message is a conflict, and nothing is stored, also
    // for the new messages of the same batch.
    let before = s.stored(TENANT_A, &id).await;
    let r = s
        .post(
            &path,
            k,
            json!({"messages": [{"role": "user", "content": "new one"},
                                {"role": "user", "content": "Not hello", "id": "c1"}]}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.text);
    assert_eq!(r.error_type(), "conflict");
    assert!(r.message().contains("c1"), "{}", r.text);
    assert_eq!(s.stored(TENANT_A, &id).await, before);

    // Reading back: stored messages in the Anthropic shape, with ids and metadata.
    let r = s.get(&path, k).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let data = r.json["data"].as_array().unwrap();
    assert_eq!(data.len(), 4);
    assert_eq!(
        data[0]["message"],
        json!({"role": "user", "content": "Hello", "id": "c1"})
    );
    assert_eq!(data[0]["status"], "complete");
    assert!(data[0]["tokens"].as_i64().unwrap() > 0);
    assert_eq!(data[1]["message"]["content"][0]["type"], "tool_use");
    assert_eq!(data[2]["message"]["content"][0]["type"], "tool_result");
    assert_eq!(data[3]["message"]["metadata"], json!({"model": "m"}));
    assert_eq!(r.json["next_after"], Value::Null);
    let r = s.get(&format!("/v1/conversations/{id}"), k).await;
    assert_eq!(r.json["message_count"], 4);
}

/// Issue 16, defect 1: a batch whose third message reuses the first one's client id for a
/// different message is a 409 naming `messages[2]`, the id and its seq, and nothing of it is
/// stored (before, seq 1 and 2 were).
async fn a_conflicting_batch_stores_nothing(b: Backend) {
    let Some(s) = server(b).await else { return };
    let k = &s.key_a;
    let id = s.new_conversation(k, json!({})).await;
    let path = format!("/v1/conversations/{id}/messages");
    let r = s
        .post(
            &path,
            k,
            json!({"messages": [{"role": "user", "content": "first", "id": "x1"},
                                {"role": "user", "content": "ok2"},
                                {"role": "assistant", "content": "different", "id": "x1"}]}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.text);
    assert_eq!(r.error_type(), "conflict");
    assert!(
        r.message().contains("messages[2]")
            && r.message().contains("'x1'")
            && r.message().contains("seq 1"),
        "{}",
        r.text
    );
    assert_eq!(s.stored(TENANT_A, &id).await, Vec::<Value>::new());
    let r = s.get(&format!("/v1/conversations/{id}"), k).await;
    assert_eq!(
        (r.json["message_count"].clone(), r.json["last_seq"].clone()),
        (json!(0), json!(0))
    );

    // Against a stored message: the entry index counts the request's entries (an OpenAI tool
    // run merges into one message but keeps its entries).
    let r = s
        .post(
            &path,
            k,
            json!({"messages": [{"role": "user", "content": "first", "id": "x1"}]}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let before = s.stored(TENANT_A, &id).await;
    let r = s
        .post(
            &path,
            k,
            json!({"messages": [
                {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
                    "type": "function", "function": {"name": "f", "arguments": "{}"}},
                    {"id": "call_2", "type": "function", "function": {"name": "g",
                    "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "a"},
                {"role": "tool", "tool_call_id": "call_2", "content": "b"},
                {"role": "user", "content": "changed", "id": "x1"}]}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.text);
    assert!(r.message().contains("messages[3]"), "{}", r.text);
    assert_eq!(s.stored(TENANT_A, &id).await, before);
}

async fn message_pages(b: Backend) {
    let Some(s) = server(b).await else { return };
    let k = &s.key_a;
    let id = s.new_conversation(k, json!({})).await;
    let path = format!("/v1/conversations/{id}/messages");
    let msgs: Vec<Value> = (0..7)
        .map(|i| {
            json!({"role": if i % 2 == 0 { "user" } else { "assistant" }, "content": format!("m{i}")})
        })
        .collect();
    let r = s.post(&path, k, json!({ "messages": msgs })).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let mut after = 0;
    let mut seqs = Vec::new();
    loop {
        let r = s.get(&format!("{path}?after={after}&limit=3"), k).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        for m in r.json["data"].as_array().unwrap() {
            seqs.push(m["seq"].as_i64().unwrap());
        }
        match r.json["next_after"].as_i64() {
            Some(n) => after = n,
            None => break,
        }
    }
    assert_eq!(seqs, (1..=7).collect::<Vec<_>>());
    let r = s.get(&format!("{path}?after=5"), k).await;
    assert_eq!(r.json["data"].as_array().unwrap().len(), 2);
    for bad in ["after=-1", "limit=0", "after=x", "since=3"] {
        let r = s.get(&format!("{path}?{bad}"), k).await;
        assert_eq!(
            r.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{bad}: {}",
            r.text
        );
        assert_eq!(r.error_type(), "invalid_request");
    }
}

async fn context_is_what_recall_context_prints(b: Backend) {
    let Some(s) = server(b).await else { return };
    let k = &s.key_a;
    let id = s
        .new_conversation(
            k,
            json!({"system_prompt": "Be brief.", "policy": {"format": "bracket"}}),
        )
        .await;
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/conversation.json"
    ))
    .expect("example conversation");
    let example: Value = serde_json::from_str(&text).expect("example JSON");
    let messages = match example {
        Value::Array(a) => a,
        Value::Object(mut o) => match o.remove("messages") {
            Some(Value::Array(a)) => a,
            _ => panic!("example without messages"),
        },
        _ => panic!("unexpected example"),
    };
    let r = s
        .post(
            &format!("/v1/conversations/{id}/messages"),
            k,
            json!({ "messages": messages }),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let path = format!("/v1/conversations/{id}/context");

    // No format: the conversation's.
    let r = s.post(&path, k, json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.json["format"], "bracket");

    let cases = [
        json!({"format": "transcript"}),
        json!({"format": "xml", "current": "And in Python?"}),
        json!({"format": "task", "max_turns": 2}),
        json!({"format": "anthropic", "max_tokens": 300}),
        json!({"format": "openai", "max_chars": 400, "tokenizer": "chars4"}),
        json!({"format": "transcript", "max_tokens": 200, "trim": "stable", "low_water": 0.5}),
        json!({"format": "bracket", "escape": false, "user_max_chars": 10}),
        json!({"format": "anthropic", "max_tokens": 300, "recall_tokens": 120}),
        json!({"format": "xml", "current": "And in Python?", "max_tokens": 300,
               "recall_tokens": 120, "recall_scope": "tenant", "query": "python list"}),
    ];
    for body in cases {
        let r = s.post(&path, k, body.clone()).await;
        assert_eq!(r.status, StatusCode::OK, "{body}: {}", r.text);
        let format: Format = body["format"].as_str().unwrap().parse().unwrap();
        let mut req = ContextRequest::new(format);
        req.overrides = serde_json::from_value(json!({
            "max_turns": body.get("max_turns"), "max_chars": body.get("max_chars"),
            "max_tokens": body.get("max_tokens"), "tokenizer": body.get("tokenizer"),
            "user_max_chars": body.get("user_max_chars"), "trim": body.get("trim"),
            "low_water": body.get("low_water"), "recall_tokens": body.get("recall_tokens"),
            "recall_scope": body.get("recall_scope"),
        }))
        .unwrap();
        req.current = body["current"].as_str().map(str::to_string);
        req.query = body["query"].as_str().map(str::to_string);
        req.escape = body["escape"].as_bool().unwrap_or(true);
        // What `recall context` computes and prints, from the same database.
        let out = s
            .engine
            .context(ConversationRef::new(TENANT_A, &id), &req)
            .await
            .unwrap();
        let printed = out.prompt.to_text();
        match &r.json["prompt"] {
            Value::String(p) => {
                assert!(format.is_text());
                assert_eq!(p, &printed, "{body}");
            }
            v => {
                assert!(!format.is_text());
                assert_eq!(serde_json::to_string_pretty(v).unwrap(), printed, "{body}");
            }
        }
        assert_eq!(
            r.json["stats"],
            serde_json::to_value(&out.stats).unwrap(),
            "{body}"
        );
        assert_eq!(r.json["format"], format.name());
    }

    // xml without a current message on a conversation ending with an assistant turn.
    let r = s
        .post(
            &format!("/v1/conversations/{id}/messages"),
            k,
            json!({"role": "assistant", "content": "ok"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let r = s.post(&path, k, json!({"format": "xml"})).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
    assert!(r.message().contains("current message"), "{}", r.text);
    for bad in [
        json!({"format": "yaml"}),
        json!({"max_turns": -1}),
        json!({"tokenizer": "gpt2"}),
        json!({"max_tokens": 10, "colour": 1}),
        json!({"current": "   "}),
    ] {
        let r = s.post(&path, k, bad.clone()).await;
        assert_eq!(
            r.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{bad}: {}",
            r.text
        );
        assert_eq!(r.error_type(), "invalid_request");
    }
}

async fn bad_input_is_refused_and_changes_nothing(b: Backend) {
    let Some(s) = server(b).await else { return };
    let k = &s.key_a;
    let id = s.new_conversation(k, json!({"title": "t"})).await;
    let path = format!("/v1/conversations/{id}/messages");
    let r = s
        .post(&path, k, json!({"role": "user", "content": "kept"}))
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let before = s.stored(TENANT_A, &id).await;

    let deep = "[".repeat(100_000) + &"]".repeat(100_000);
    let cases: Vec<(Vec<u8>, StatusCode, &str, &str)> = vec![
        (
            b"{\"role\": \"user\", \"content\": ".to_vec(),
            StatusCode::BAD_REQUEST,
            "invalid_json",
            "JSON",
        ),
        (
            b"not json".to_vec(),
            StatusCode::BAD_REQUEST,
            "invalid_json",
            "JSON",
        ),
        (
            b"".to_vec(),
            StatusCode::BAD_REQUEST,
            "invalid_json",
            "empty",
        ),
        (
            b"{\"role\": \"user\", \"content\": \"\xff\xfe\"}".to_vec(),
            StatusCode::BAD_REQUEST,
            "invalid_json",
            "UTF-8",
        ),
        (
            format!("{{\"role\": \"user\", \"content\": {deep}}}").into_bytes(),
            StatusCode::BAD_REQUEST,
            "invalid_json",
            "nested",
        ),
        (
            b"[1, 2]".to_vec(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            "expected a JSON object, not an array",
        ),
        (
            b"{\"role\": \"robot\", \"content\": \"x\"}".to_vec(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            "robot",
        ),
        (
            b"{\"role\": \"user\", \"content\": 5}".to_vec(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            "content",
        ),
        (
            b"{\"role\": \"user\", \"content\": \"\"}".to_vec(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            "",
        ),
        (
            b"{\"messages\": []}".to_vec(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            "no messages",
        ),
        (
            b"{\"messages\": {}}".to_vec(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            "array",
        ),
        (
            b"{\"messages\": [], \"extra\": 1}".to_vec(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            "extra",
        ),
        // One bad message rejects the whole batch.
        (
            br#"{"messages": [{"role": "user", "content": "fine"}, {"role": "user"}]}"#.to_vec(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            "messages[1]",
        ),
        (
            b"{\"role\": \"user\", \"content\": \"x\", \"id\": \"a\\u0000b\"}".to_vec(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            "NUL",
        ),
    ];
    for (body, status, kind, says) in cases {
        let shown = String::from_utf8_lossy(&body[..body.len().min(80)]).to_string();
        let r = s.raw(Method::POST, &path, Some(k), Some(body)).await;
        assert_eq!(r.status, status, "{shown}: {}", r.text);
        assert_eq!(r.error_type(), kind, "{shown}");
        assert!(r.message().contains(says), "{shown}: {}", r.text);
    }
    // Conversation bodies: wrong types and unknown fields.
    for (body, says) in [
        (json!({"title": 5}), "title"),
        (json!({"name": "x"}), "name"),
        (json!({"metadata": [1]}), "metadata"),
        (json!({"policy": {"max_turns": "many"}}), "policy"),
        (json!({"policy": {"low_water": 0}}), "low_water"),
        (
            json!({"policy": {"max_chars": 9_223_372_036_854_775_808u64}}),
            "max_chars",
        ),
    ] {
        let r = s.post("/v1/conversations", k, body.clone()).await;
        assert_eq!(
            r.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{body}: {}",
            r.text
        );
        assert!(r.message().contains(says), "{body}: {}", r.text);
    }
    // Counts past the document's int64 are refused, not taken.
    let r = s
        .post(
            &format!("/v1/conversations/{id}/context"),
            k,
            json!({"max_tokens": 9_223_372_036_854_775_808u64}),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
    assert!(r.message().contains("9223372036854775807"), "{}", r.text);
    assert_eq!(s.stored(TENANT_A, &id).await, before, "nothing was stored");
    let r = s.get("/v1/conversations", k).await;
    assert_eq!(
        r.json["data"].as_array().unwrap().len(),
        1,
        "no conversation was made"
    );

    // Unknown conversations, routes and methods answer in the same shape.
    let r = s
        .post(
            "/v1/conversations/nope/messages",
            k,
            json!({"role": "user", "content": "x"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.error_type(), "not_found");
    let r = s.get("/v1/nothing-here", k).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.error_type(), "not_found");
    let r = s.call(Method::PUT, "/v1/conversations", k, None).await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(r.error_type(), "method_not_allowed");
}

/// Every route that reads a body refuses the same broken bodies the same way: malformed JSON,
/// invalid UTF-8, deep nesting and an oversized body are 400/413 with a JSON error naming
/// the problem, wrong types and unknown fields 422 naming the field, and nothing changes.
async fn every_body_route_refuses_bad_bodies(b: Backend) {
    let Some(s) = server_with(b, |c| c.limits.max_body_bytes = 16 * 1024).await else {
        return;
    };
    let k = &s.key_a;
    let id = s.new_conversation(k, json!({"title": "t"})).await;
    let r = s
        .post(
            &format!("/v1/conversations/{id}/messages"),
            k,
            json!({"role": "user", "content": "kept"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let conv_before = s.get(&format!("/v1/conversations/{id}"), k).await.json;
    let msgs_before = s.stored(TENANT_A, &id).await;

    let deep = "{\"a\": ".repeat(100) + "1" + &"}".repeat(100);
    let huge = format!("{{\"title\": \"{}\"}}", "x".repeat(20_000));
    let common_cases: Vec<(Vec<u8>, StatusCode, &str, &str)> = vec![
        (
            b"{\"title\": [1, ".to_vec(),
            StatusCode::BAD_REQUEST,
            "invalid_json",
            "not valid JSON",
        ),
        (
            b"{\"title\": \"\xc3\x28\"}".to_vec(),
            StatusCode::BAD_REQUEST,
            "invalid_json",
            "UTF-8",
        ),
        (
            deep.into_bytes(),
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
    ];
    let routes: Vec<(String, Vec<(Value, &str)>)> = vec![
        (
            "/v1/conversations".into(),
            vec![
                (json!({"title": ["x"]}), "title"),
                (json!({"system_prompt": 1}), "system_prompt"),
                (json!({"title": "x", "owner": "me"}), "owner"),
                (json!("just a string"), "invalid request body"),
            ],
        ),
        (
            format!("/v1/conversations/{id}/messages"),
            vec![
                // (A numeric id is accepted as its decimal text, as in imports.)
                (json!({"role": "user", "content": "x", "id": ["x"]}), "'id'"),
                (
                    json!({"role": "user", "content": "x", "metadata": "m"}),
                    "metadata",
                ),
                // Unknown keys inside a message object are not refused (OpenAI messages carry
                // `name`, `refusal`, ...); the envelope's are, as bad_input_... checks.
                (
                    json!({"messages": [{"role": "user", "content": "x"}], "colour": 1}),
                    "colour",
                ),
            ],
        ),
        (
            format!("/v1/conversations/{id}/context"),
            vec![
                (json!({"max_tokens": "lots"}), "max_tokens"),
                (json!({"escape": "no"}), "escape"),
                (json!({"format": "xml", "shape": 1}), "shape"),
                (json!(["xml"]), "invalid request body"),
            ],
        ),
    ];
    for (path, shape_cases) in routes {
        let cases = common_cases
            .iter()
            .cloned()
            .chain(shape_cases.into_iter().map(|(v, says)| {
                (
                    v.to_string().into_bytes(),
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "invalid_request",
                    says,
                )
            }));
        for (body, status, kind, says) in cases {
            let shown = String::from_utf8_lossy(&body[..body.len().min(60)]).to_string();
            let r = s.raw(Method::POST, &path, Some(k), Some(body)).await;
            assert_eq!(r.status, status, "{path} {shown}: {}", r.text);
            assert_eq!(r.error_type(), kind, "{path} {shown}");
            assert!(r.message().contains(says), "{path} {shown}: {}", r.text);
        }
    }
    assert_eq!(
        s.stored(TENANT_A, &id).await,
        msgs_before,
        "nothing was stored"
    );
    assert_eq!(
        s.get(&format!("/v1/conversations/{id}"), k).await.json,
        conv_before
    );
    let r = s.get("/v1/conversations", k).await;
    assert_eq!(
        r.json["data"].as_array().unwrap().len(),
        1,
        "no conversation was made"
    );
}

async fn limits_are_enforced(b: Backend) {
    let Some(s) = server_with(b, |c| {
        c.limits.max_body_bytes = 64 * 1024;
        c.limits.max_message_bytes = 1000;
        c.limits.max_messages_per_request = 3;
    })
    .await
    else {
        return;
    };
    let k = &s.key_a;
    let id = s.new_conversation(k, json!({})).await;
    let path = format!("/v1/conversations/{id}/messages");
    let r = s
        .post(
            &path,
            k,
            json!({"role": "user", "content": "x".repeat(2000)}),
        )
        .await;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", r.text);
    assert_eq!(r.error_type(), "too_large");
    assert!(r.message().contains("1000"), "{}", r.text);

    let four: Vec<Value> = (0..4)
        .map(|_| json!({"role": "user", "content": "x"}))
        .collect();
    let r = s.post(&path, k, json!({ "messages": four })).await;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", r.text);
    assert!(r.message().contains("4 messages"), "{}", r.text);

    let r = s
        .post(
            &path,
            k,
            json!({"role": "user", "content": "y".repeat(100_000)}),
        )
        .await;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", r.text);
    assert_eq!(r.error_type(), "too_large");
    assert!(r.message().contains("65536"), "{}", r.text);

    assert!(s.stored(TENANT_A, &id).await.is_empty());
    let three: Vec<Value> = (0..3)
        .map(|_| json!({"role": "user", "content": "x"}))
        .collect();
    let r = s.post(&path, k, json!({ "messages": three })).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
}

/// Every `/v1` route, as (method, path template, body).
fn v1_routes(id: &str) -> Vec<(Method, String, Option<Value>)> {
    vec![
        (
            Method::POST,
            "/v1/conversations".into(),
            Some(json!({"title": "x"})),
        ),
        (Method::GET, "/v1/conversations".into(), None),
        (Method::GET, format!("/v1/conversations/{id}"), None),
        (Method::DELETE, format!("/v1/conversations/{id}"), None),
        (Method::POST, format!("/v1/conversations/{id}/clear"), None),
        (
            Method::POST,
            format!("/v1/conversations/{id}/messages"),
            Some(json!({"role": "user", "content": "intruder"})),
        ),
        (
            Method::GET,
            format!("/v1/conversations/{id}/messages"),
            None,
        ),
        (
            Method::POST,
            format!("/v1/conversations/{id}/context"),
            Some(json!({"format": "transcript"})),
        ),
    ]
}

async fn every_route_needs_a_key(b: Backend) {
    let Some(s) = server(b).await else { return };
    let id = s.new_conversation(&s.key_a, json!({})).await;
    for (m, path, body) in v1_routes(&id) {
        let bytes = body.map(|b| b.to_string().into_bytes());
        for key in [None, Some("rk_not_a_key_at_all_0000000000"), Some("")] {
            let r = s.raw(m.clone(), &path, key, bytes.clone()).await;
            assert_eq!(
                r.status,
                StatusCode::UNAUTHORIZED,
                "{m} {path} {key:?}: {}",
                r.text
            );
            assert_eq!(r.error_type(), "authentication_error");
        }
        // A scheme other than Bearer.
        let r = s
            .client
            .request(m.clone(), format!("{}{path}", s.base))
            .header("authorization", format!("Basic {}", s.key_a))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{m} {path}");
    }
    // A revoked key stops working.
    let keys = s
        .engine
        .store()
        .list_api_keys(Some(TENANT_B))
        .await
        .unwrap();
    assert_eq!(keys.len(), 1);
    let r = s.get("/v1/conversations", &s.key_b).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(s.engine.store().revoke_api_key(&keys[0].id).await.unwrap());
    let r = s.get("/v1/conversations", &s.key_b).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(r.message().contains("revoked"), "{}", r.text);
    assert_eq!(s.stored(TENANT_A, &id).await.len(), 0);
}

async fn tenants_never_see_each_other(b: Backend) {
    let Some(s) = server(b).await else { return };
    let (a, other) = (&s.key_a, &s.key_b);
    let id = s
        .new_conversation(a, json!({"title": "A's", "system_prompt": "secret"}))
        .await;
    let r = s
        .post(
            &format!("/v1/conversations/{id}/messages"),
            a,
            json!({"role": "user", "content": "A's message", "id": "a1"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let conv_before = s.get(&format!("/v1/conversations/{id}"), a).await.json;
    let msgs_before = s.stored(TENANT_A, &id).await;

    for (m, path, body) in v1_routes(&id) {
        if !path.contains(&id) {
            continue;
        }
        let r = s.call(m.clone(), &path, other, body).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{m} {path}: {}", r.text);
        assert_eq!(r.error_type(), "not_found");
        assert!(
            !r.text.contains("secret") && !r.text.contains("A's"),
            "{}",
            r.text
        );
    }
    // B's list does not show A's conversation; B's own conversation is B's alone.
    let r = s.get("/v1/conversations", other).await;
    assert_eq!(r.json["data"], json!([]));
    let bid = s.new_conversation(other, json!({"title": "B's"})).await;
    let r = s.get(&format!("/v1/conversations/{bid}"), a).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = s.get("/v1/conversations", a).await;
    let ids: Vec<&str> = r.json["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![id.as_str()]);

    // Nothing of A's changed.
    assert_eq!(
        s.get(&format!("/v1/conversations/{id}"), a).await.json,
        conv_before
    );
    assert_eq!(s.stored(TENANT_A, &id).await, msgs_before);
    assert!(s
        .engine
        .get_conversation(ConversationRef::new(TENANT_B, &id))
        .await
        .is_err());
}

async fn operational_routes(b: Backend) {
    let Some(s) = server(b).await else { return };
    let r = s.raw(Method::GET, "/healthz", None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json, json!({"status": "ok"}));
    let r = s.raw(Method::GET, "/readyz", None, None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);

    // A request id is made, or the client's is kept.
    let r = s.raw(Method::GET, "/healthz", None, None).await;
    assert!(r.headers.get("x-request-id").is_some());
    let res = s
        .client
        .get(format!("{}/healthz", s.base))
        .header("x-request-id", "trace-me-42")
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["x-request-id"], "trace-me-42");

    let id = s.new_conversation(&s.key_a, json!({})).await;
    let r = s
        .post(
            &format!("/v1/conversations/{id}/messages"),
            &s.key_a,
            json!({"role": "user", "content": "hi"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let r = s
        .post(
            &format!("/v1/conversations/{id}/context"),
            &s.key_a,
            json!({"format": "xml"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    s.get("/v1/conversations/missing", &s.key_a).await;
    s.raw(Method::GET, "/v1/conversations", None, None).await;

    let r = s.raw(Method::GET, "/metrics", None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    let m = &r.text;
    for line in [
        "recall_http_requests_total{route=\"/v1/conversations\",method=\"POST\",status=\"201\"} 1",
        "recall_http_requests_total{route=\"/v1/conversations/{id}/messages\",method=\"POST\",status=\"201\"} 1",
        "recall_http_requests_total{route=\"/v1/conversations/{id}\",method=\"GET\",status=\"404\"} 1",
        "recall_http_requests_total{route=\"/v1/conversations\",method=\"GET\",status=\"401\"} 1",
        "recall_context_build_seconds_count{format=\"xml\"} 1",
        "recall_internal_errors_total 0",
    ] {
        assert!(m.contains(line), "missing `{line}` in\n{m}");
    }
    assert!(m.contains("recall_http_request_duration_seconds_bucket{route=\"/healthz\",method=\"GET\",le=\"+Inf\"} 3"), "{m}");
    assert!(!m.contains(&id), "ids never become labels");

    let r = s.raw(Method::GET, "/openapi.json", None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    let paths = r.json["paths"].as_object().expect("paths");
    for p in [
        "/v1/conversations",
        "/v1/conversations/{id}",
        "/v1/conversations/{id}/clear",
        "/v1/conversations/{id}/messages",
        "/v1/conversations/{id}/context",
        "/v1/conversations/{id}/chat",
        "/v1/conversations/{id}/ws",
        "/healthz",
        "/readyz",
        "/metrics",
    ] {
        assert!(paths.contains_key(p), "openapi lacks {p}");
    }
    assert!(
        r.json["paths"]["/v1/conversations/{id}/messages"]["post"]["responses"]["409"].is_object()
    );
    // Paging parameters are query parameters, optional.
    for (p, names) in [
        ("/v1/conversations", ["after", "limit"]),
        ("/v1/conversations/{id}/messages", ["after", "limit"]),
    ] {
        let params = r.json["paths"][p]["get"]["parameters"]
            .as_array()
            .expect("parameters");
        for name in names {
            let param = params
                .iter()
                .find(|q| q["name"] == name)
                .unwrap_or_else(|| panic!("{p} lacks {name}"));
            assert_eq!(param["in"], "query", "{p} {name}");
            assert_ne!(param["required"], true, "{p} {name}");
        }
    }
    assert_eq!(
        r.json["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
}

async fn rate_limit_answers_429(b: Backend) {
    let Some(s) = server_with(b, |c| {
        c.rate_limit = Some(recall_server::RateLimit {
            requests_per_second: 0.01,
            burst: 3,
        });
    })
    .await
    else {
        return;
    };
    for _ in 0..3 {
        let r = s.get("/v1/conversations", &s.key_a).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    }
    let r = s.get("/v1/conversations", &s.key_a).await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS, "{}", r.text);
    assert_eq!(r.error_type(), "rate_limited");
    let wait: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!(wait >= 1);
    // Another tenant has its own bucket.
    let r = s.get("/v1/conversations", &s.key_b).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
}

/// `--no-auth`: only on loopback, every request the default tenant.
#[tokio::test]
async fn no_auth_is_loopback_only() {
    let dir = tempfile::tempdir().unwrap();
    let url = dir.path().join("r.db").display().to_string();
    let engine = recall_engine::Engine::open(&url, Default::default())
        .await
        .unwrap();
    let config = recall_server::ServerConfig {
        no_auth: true,
        ..Default::default()
    };
    let err = recall_server::start(
        engine.clone(),
        config.clone(),
        Default::default(),
        "0.0.0.0:0".parse().unwrap(),
    )
    .await
    .err()
    .expect("refused on 0.0.0.0");
    assert!(err.to_string().contains("loopback"), "{err}");
    let running = recall_server::start(
        engine.clone(),
        config,
        Default::default(),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap();
    let base = format!("http://{}", running.addr);
    // A body not declared JSON is refused (a browser's cross-site form or text/plain POST).
    let res = reqwest::Client::new()
        .post(format!("{base}/v1/conversations"))
        .body("{\"title\": \"mine\"}")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let res = reqwest::Client::new()
        .post(format!("{base}/v1/conversations"))
        .header("content-type", "application/json")
        .body("{\"title\": \"mine\"}")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
    let body: Value = res.json().await.unwrap();
    let id = body["id"].as_str().unwrap();
    engine
        .get_conversation(ConversationRef::new(recall_engine::DEFAULT_TENANT, id))
        .await
        .expect("stored for the default tenant");
    running.shutdown().await.unwrap();
}

/// A request that is being answered when shutdown starts still gets its answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_requests_in_flight_finish() {
    let Some(mut s) = server(Backend::Sqlite).await else {
        return;
    };
    let id = s.new_conversation(&s.key_a, json!({})).await;
    // A slow upload: the server is inside the request (reading the body) when it is told to
    // stop.
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(4);
    let body = reqwest::Body::wrap_stream(tokio_stream_of(rx));
    let req = s
        .client
        .post(format!("{}/v1/conversations/{id}/messages", s.base))
        .bearer_auth(&s.key_a)
        .header("content-type", "application/json")
        .body(body)
        .send();
    let pending = tokio::spawn(req);
    tx.send(Ok(b"{\"role\": \"user\", ".to_vec()))
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let stopping = tokio::spawn({
        let running = s.running.take().unwrap();
        async move { running.shutdown().await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(
        !stopping.is_finished(),
        "shutdown waits for the request in flight"
    );
    tx.send(Ok(b"\"content\": \"late\"}".to_vec()))
        .await
        .unwrap();
    drop(tx);
    let res = pending.await.unwrap().unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
    stopping.await.unwrap().unwrap();
    assert_eq!(s.stored(TENANT_A, &id).await.len(), 1);
    // And new connections are refused.
    assert!(s
        .client
        .get(format!("{}/healthz", s.base))
        .send()
        .await
        .is_err());
}

/// A stream of the chunks sent on `rx`.
fn tokio_stream_of(
    rx: tokio::sync::mpsc::Receiver<Result<Vec<u8>, std::io::Error>>,
) -> impl futures::Stream<Item = Result<Vec<u8>, std::io::Error>> {
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|c| (c, rx)) })
}
