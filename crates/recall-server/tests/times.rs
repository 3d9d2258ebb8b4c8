//! Message times over HTTP (issue 37, real times), on both databases: `created_at` in single
//! and batch appends is kept and shown in the message views; a time earlier than the message
//! before it, one too far in the future or a malformed one is a 422 naming the message, and
//! nothing of the request is stored; the OpenAPI document describes the field.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use common::{server, Backend, TENANT_A};
use reqwest::{Method, StatusCode};
use serde_json::json;

on_both!(times_over_http);

async fn times_over_http(b: Backend) {
    let Some(s) = server(b).await else { return };
    let key = s.key_a.clone();
    let id = s.new_conversation(&key, json!({})).await;
    let path = format!("/v1/conversations/{id}/messages");

    // Single and batch appends keep the given times.
    let r = s
        .post(
            &path,
            &key,
            json!({"role": "user", "content": "Hi.", "created_at": "2023-05-08T15:56:00+02:00"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let r = s
        .post(
            &path,
            &key,
            json!({"messages": [
                {"role": "assistant", "content": "Hello.", "created_at": "2023-05-08T13:56:00Z"},
                {"role": "user", "content": "Later.", "created_at": "2023-05-09T08:00:00.250Z"},
            ]}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let page = s.get(&path, &key).await;
    let shown: Vec<&str> = page.json["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["created_at"].as_str().unwrap())
        .collect();
    assert_eq!(
        shown,
        [
            "2023-05-08T13:56:00Z",
            "2023-05-08T13:56:00Z",
            // As given: the views show milliseconds when a time has them (as export does).
            "2023-05-09T08:00:00.250Z"
        ]
    );

    // Refusals: 422 naming the message; nothing of the request stored.
    for (body, says) in [
        (
            json!({"messages": [
                {"role": "assistant", "content": "ok", "created_at": "2023-05-09T09:00:00Z"},
                {"role": "user", "content": "no", "created_at": "2023-05-09T08:59:59Z"},
            ]}),
            "messages[1]: created_at 2023-05-09T08:59:59Z is earlier than the message before \
             it (2023-05-09T09:00:00Z)",
        ),
        (
            json!({"role": "user", "content": "no", "created_at": "2023-05-09T07:00:00Z"}),
            "messages[0]: created_at 2023-05-09T07:00:00Z is earlier than the message before \
             it (2023-05-09T08:00:00.250Z)",
        ),
        (
            json!({"messages": [
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": "no", "created_at": "2999-01-01T00:00:00Z"},
            ]}),
            "messages[1]: created_at 2999-01-01T00:00:00Z is in the future",
        ),
        (
            json!({"role": "user", "content": "no", "created_at": "2023-05-09"}),
            "messages[0] has an invalid 'created_at' (expected 'T' between the date",
        ),
        (
            json!({"messages": [
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": "no", "created_at": 1683554160},
            ]}),
            "messages[1] has an invalid 'created_at'",
        ),
    ] {
        let r = s.post(&path, &key, body.clone()).await;
        assert_eq!(
            r.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{body}: {}",
            r.text
        );
        assert_eq!(r.error_type(), "invalid_request");
        assert!(r.message().contains(says), "{body}: {}", r.message());
        assert_eq!(s.stored(TENANT_A, &id).await.len(), 3, "{body}");
    }

    // The OpenAPI document describes the field of the append body.
    let r = s.raw(Method::GET, "/openapi.json", None, None).await;
    let doc = r.json.to_string();
    let body = &r.json["components"]["schemas"]["AppendBody"];
    let described = |m: &serde_json::Value| {
        let p = &m["properties"]["created_at"];
        p["format"] == "date-time"
            && p["description"]
                .as_str()
                .is_some_and(|d| d.starts_with("When the message was written, RFC 3339"))
    };
    assert!(
        body["oneOf"]
            .as_array()
            .is_some_and(|shapes| shapes.iter().any(described)),
        "{doc}"
    );
}
