//! Conversations a client names over HTTP (issue 53), on both databases: `POST
//! /v1/conversations` with a `key` creates the conversation the first time (201) and answers
//! the same one after (200); keys are per tenant; eight clients racing on one new key get one
//! conversation; a bad key is a 422 that creates nothing.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use common::{server, Backend};
use reqwest::StatusCode;
use serde_json::json;

on_both!(
    a_key_names_one_conversation_per_tenant,
    racing_clients_get_one_conversation,
    bad_keys_are_422
);

async fn a_key_names_one_conversation_per_tenant(b: Backend) {
    let Some(s) = server(b).await else { return };
    let first = s
        .post(
            "/v1/conversations",
            &s.key_a,
            json!({"key": "user_123", "title": "first"}),
        )
        .await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.text);
    let id = first.json["id"].as_str().unwrap().to_string();
    let path = format!("/v1/conversations/{id}/messages");
    let r = s
        .post(&path, &s.key_a, json!({"role": "user", "content": "hello"}))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);

    let again = s
        .post(
            "/v1/conversations",
            &s.key_a,
            json!({"key": "user_123", "title": "second"}),
        )
        .await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.text);
    assert_eq!(again.json["id"], id.as_str());
    assert_eq!(again.json["title"], "first", "a later open changes nothing");
    assert_eq!(again.json["message_count"], 1);

    // An id of the tenant's names itself.
    let by_id = s
        .post("/v1/conversations", &s.key_a, json!({"key": id}))
        .await;
    assert_eq!(by_id.status, StatusCode::OK, "{}", by_id.text);
    assert_eq!(by_id.json["id"], id.as_str());

    // Tenant B's user_123 is its own, and B cannot open A's conversation by A's id either.
    let theirs = s
        .post("/v1/conversations", &s.key_b, json!({"key": "user_123"}))
        .await;
    assert_eq!(theirs.status, StatusCode::CREATED, "{}", theirs.text);
    assert_ne!(theirs.json["id"], id.as_str());
    let by_a_id = s
        .post("/v1/conversations", &s.key_b, json!({"key": id}))
        .await;
    assert_eq!(by_a_id.status, StatusCode::CREATED, "{}", by_a_id.text);
    assert_ne!(by_a_id.json["id"], id.as_str());
    let r = s.get(&path, &s.key_b).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);

    // Without a key, every POST is a new conversation, as before.
    let a = s.new_conversation(&s.key_a, json!({})).await;
    let b2 = s.new_conversation(&s.key_a, json!({})).await;
    assert_ne!(a, b2);
}

async fn racing_clients_get_one_conversation(b: Backend) {
    let Some(s) = server(b).await else { return };
    let posts = (0..8).map(|i| {
        s.post(
            "/v1/conversations",
            &s.key_a,
            json!({"key": "brand-new", "title": format!("racer {i}")}),
        )
    });
    let answers = futures::future::join_all(posts).await;
    let created = answers
        .iter()
        .filter(|r| r.status == StatusCode::CREATED)
        .count();
    assert_eq!(created, 1, "{answers:?}");
    assert!(answers
        .iter()
        .all(|r| r.status == StatusCode::CREATED || r.status == StatusCode::OK));
    let id = &answers[0].json["id"];
    assert!(answers.iter().all(|r| &r.json["id"] == id), "{answers:?}");
    let list = s.get("/v1/conversations", &s.key_a).await;
    assert_eq!(
        list.json["data"].as_array().unwrap().len(),
        1,
        "{}",
        list.text
    );
}

async fn bad_keys_are_422(b: Backend) {
    let Some(s) = server(b).await else { return };
    for (key, why) in [
        (json!(""), "is empty"),
        (json!("a\nb"), "control character"),
        (json!("k".repeat(257)), "256 bytes"),
    ] {
        let r = s
            .post("/v1/conversations", &s.key_a, json!({"key": key}))
            .await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
        assert!(r.message().contains(why), "{}", r.text);
    }
    let r = s
        .post("/v1/conversations", &s.key_a, json!({"key": 5}))
        .await;
    assert!(r.status.is_client_error(), "{}", r.text);
    let list = s.get("/v1/conversations", &s.key_a).await;
    assert_eq!(
        list.json["data"].as_array().unwrap().len(),
        0,
        "{}",
        list.text
    );
}
