//! Large reads over real HTTP, on SQLite and PostgreSQL: pages of messages capped by bytes as
//! well as by count (and written out as they are read), and contexts over
//! `max_context_bytes` refused with a 413 naming the limit.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use common::{server_with, Backend};
use reqwest::StatusCode;
use serde_json::{json, Value};

on_both!(
    pages_are_capped_by_bytes,
    a_large_page_is_streamed,
    context_over_the_limit_is_413,
);

const PAGE_BYTES: usize = 10_000;

/// Sizes of the messages' text: some pages fill by bytes, one message alone is over the cap.
const SIZES: [usize; 12] = [
    3000, 2500, 40, 4000, 15_000, 10, 9000, 900, 3000, 3000, 3000, 5,
];

async fn pages_are_capped_by_bytes(b: Backend) {
    let Some(s) = server_with(b, |c| c.limits.max_page_bytes = PAGE_BYTES).await else {
        return;
    };
    let k = &s.key_a;
    let id = s.new_conversation(k, json!({})).await;
    let path = format!("/v1/conversations/{id}/messages");
    let msgs: Vec<Value> = SIZES
        .iter()
        .enumerate()
        .map(|(i, n)| {
            json!({"role": if i % 2 == 0 { "user" } else { "assistant" },
                   "content": format!("{i}:{}", "x".repeat(*n))})
        })
        .collect();
    let r = s.post(&path, k, json!({ "messages": msgs })).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);

    // Every message's JSON as a page carries it, by seq.
    let whole = s.get(&format!("{path}?limit=1000"), k).await;
    assert_eq!(whole.status, StatusCode::OK, "{}", whole.text);
    let mut after = 0;
    let mut seen: Vec<i64> = Vec::new();
    let mut pages = 0;
    loop {
        let r = s.get(&format!("{path}?after={after}&limit=1000"), k).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        pages += 1;
        // Exactly the page's JSON: `data` then `next_after`, nothing else.
        assert!(r.text.starts_with("{\"data\":["), "{}", &r.text[..40]);
        assert_eq!(r.json.as_object().map(|o| o.len()), Some(2), "{}", r.text);
        let data = r.json["data"].as_array().expect("data").clone();
        assert!(!data.is_empty(), "a page holds at least one message");
        let sizes: Vec<usize> = data.iter().map(|m| m.to_string().len()).collect();
        let total: usize = sizes.iter().sum();
        assert!(
            total <= PAGE_BYTES || data.len() == 1,
            "page of {total} bytes over the cap: {sizes:?}"
        );
        seen.extend(data.iter().map(|m| m["seq"].as_i64().expect("seq")));
        match r.json["next_after"].as_i64() {
            Some(n) => {
                assert_eq!(Some(n), seen.last().copied(), "next_after is the last seq");
                // The page stopped because the next message did not fit.
                let next = s.get(&format!("{path}?after={n}&limit=1"), k).await;
                let next_len = next.json["data"][0].to_string().len();
                assert!(
                    total + next_len > PAGE_BYTES,
                    "page of {total} bytes stopped before a message of {next_len}"
                );
                after = n;
            }
            None => break,
        }
    }
    assert_eq!(seen, (1..=SIZES.len() as i64).collect::<Vec<_>>());
    assert!(pages >= 5, "{pages} pages");
    // The message over the cap comes alone.
    let r = s.get(&format!("{path}?after=4&limit=1000"), k).await;
    assert_eq!(
        r.json["data"].as_array().map(Vec::len),
        Some(1),
        "{}",
        r.text
    );
    assert_eq!(r.json["next_after"], 5);
    // The count still caps small messages.
    let r = s.get(&format!("{path}?after=5&limit=1"), k).await;
    assert_eq!(r.json["data"].as_array().map(Vec::len), Some(1));
    assert_eq!(r.json["next_after"], 6);
    // Past the end: an empty page, no cursor.
    let r = s.get(&format!("{path}?after=12"), k).await;
    assert_eq!(r.text, "{\"data\":[],\"next_after\":null}");
    // An unknown conversation is still a 404 with the error shape.
    let r = s.get("/v1/conversations/nope/messages", k).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.text);
    assert_eq!(r.error_type(), "not_found");
}

/// A page larger than one piece is written as it is read: no length known up front.
async fn a_large_page_is_streamed(b: Backend) {
    let Some(s) = server_with(b, |_| {}).await else {
        return;
    };
    let k = &s.key_a;
    let id = s.new_conversation(k, json!({})).await;
    let path = format!("/v1/conversations/{id}/messages");
    let msgs: Vec<Value> = (0..40)
        .map(|i| {
            json!({"role": if i % 2 == 0 { "user" } else { "assistant" },
                   "content": format!("{i} {}", "y".repeat(20_000))})
        })
        .collect();
    let r = s.post(&path, k, json!({ "messages": msgs })).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let r = s.get(&format!("{path}?limit=1000"), k).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert!(
        r.headers.get("content-length").is_none(),
        "a page of {} bytes was built before it was sent",
        r.text.len()
    );
    assert_eq!(r.headers["content-type"], "application/json");
    assert_eq!(r.json["data"].as_array().map(Vec::len), Some(40));
    assert_eq!(r.json["next_after"], Value::Null);
    // Byte for byte what the stored messages give as a `MessagePage`.
    let stored = s
        .engine
        .store()
        .messages(common::TENANT_A, &id, 0, 1000)
        .await
        .expect("messages");
    let expected = recall_server::views::MessagePage {
        data: stored
            .iter()
            .map(recall_server::views::MessageView::from)
            .collect(),
        next_after: None,
    };
    assert_eq!(r.text, serde_json::to_string(&expected).expect("json"));
}

async fn context_over_the_limit_is_413(b: Backend) {
    const LIMIT: usize = 20_000;
    let Some(s) = server_with(b, |c| c.limits.max_context_bytes = LIMIT).await else {
        return;
    };
    let k = &s.key_a;
    let id = s.new_conversation(k, json!({})).await;
    let msgs: Vec<Value> = (0..10)
        .map(|i| {
            json!({"role": if i % 2 == 0 { "user" } else { "assistant" },
                   "content": format!("{i} {}", "z".repeat(5000))})
        })
        .collect();
    let r = s
        .post(
            &format!("/v1/conversations/{id}/messages"),
            k,
            json!({ "messages": msgs }),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let path = format!("/v1/conversations/{id}/context");
    for body in [
        json!({"max_tokens": 1e8}),
        json!({}),
        json!({"format": "anthropic"}),
        json!({"format": "bracket", "trim": "stable", "max_tokens": 1e8}),
        json!({"format": "task", "assistant_max_chars": 100000}),
    ] {
        let r = s.post(&path, k, body.clone()).await;
        assert_eq!(
            r.status,
            StatusCode::PAYLOAD_TOO_LARGE,
            "{body}: {}",
            r.text
        );
        assert_eq!(r.error_type(), "too_large");
        assert!(
            r.message().contains(&format!("limit of {LIMIT} bytes"))
                && r.message().contains("max_context_bytes"),
            "{}",
            r.message()
        );
    }
    // The limit counts what the answer carries: a control character is six bytes of JSON
    // (4 × 3,000 of them: 12 kB of UTF-8, 72 kB in the answer).
    let id2 = s.new_conversation(k, json!({})).await;
    let ctl: Vec<Value> = (0..4)
        .map(|i| {
            json!({"role": if i % 2 == 0 { "user" } else { "assistant" },
            "content": format!("{i} {}", "\u{1}".repeat(3000))})
        })
        .collect();
    let r = s
        .post(
            &format!("/v1/conversations/{id2}/messages"),
            k,
            json!({ "messages": ctl }),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let r = s
        .post(&format!("/v1/conversations/{id2}/context"), k, json!({}))
        .await;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", r.text);
    assert!(r.message().contains("max_context_bytes"), "{}", r.message());
    // Under the limit: the context as before.
    let r = s.post(&path, k, json!({"max_turns": 1})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert!(r.json["prompt"].as_str().expect("prompt").len() < LIMIT);
    // Other routes are not limited by it.
    let r = s
        .get(&format!("/v1/conversations/{id}/messages?limit=1000"), k)
        .await;
    assert_eq!(r.json["data"].as_array().map(Vec::len), Some(10));
}
