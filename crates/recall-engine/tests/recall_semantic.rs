//! Recall's semantic half with the real local embedding model (all-MiniLM-L6-v2, installed by
//! `scripts/models.sh fetch`), in-process and through an OpenAI-compatible embeddings
//! endpoint: a fact that shares no word with the question is found by similarity and not by
//! BM25; a context built before the vectors caught up says so; appends start the catch-up in
//! the background. The endpoint is a loopback HTTP server speaking the `POST /v1/embeddings`
//! wire format whose vectors come from the same real model, so the client path
//! (`OpenAiEmbedder`: batching, the dimension probe, vectors recorded under the served model's
//! name) is what differs. Outside CI a missing model skips the tests with a note; in CI
//! (`CI=true`) they fail.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use recall_engine::ConversationRef;
use std::sync::Arc;
use std::time::{Duration, Instant};

use recall_core::policy::Count;
use recall_core::{ContextRequest, Format, PolicyOverrides};
use recall_engine::embed::{EmbedSettings, Embedder, OpenAiEmbedderConfig};
use recall_engine::store::NewConversation;
use recall_engine::{Engine, Limits};
use serde_json::{json, Value};

mod common;

use common::{minilm, minilm_model};

const T: &str = "default";

/// A fact early, then turns that share none of the question's words.
fn conversation() -> Vec<Value> {
    let mut v = vec![
        json!({"role": "user", "content": "I adopted a puppy last spring and named him Biscuit."}),
        json!({"role": "assistant", "content": "What a lovely name for a young dog!"}),
    ];
    let topics = [
        "the history of the Roman aqueducts",
        "how sourdough bread rises",
        "choosing a road bike frame",
        "the rings of Saturn",
        "opening moves in chess",
        "glazing stoneware pottery",
    ];
    for i in 0..30 {
        let t = topics[i % topics.len()];
        v.push(json!({"role": "user", "content": format!("Tell me more about {t}.")}));
        v.push(json!({"role": "assistant", "content": format!("Here is one more point about {t}, number {i}.")}));
    }
    v.push(json!({"role": "user", "content": "What is my pet called?"}));
    v
}

fn request() -> ContextRequest {
    let mut req = ContextRequest::new(Format::Transcript);
    req.overrides = PolicyOverrides {
        max_tokens: Some(Count::from(300)),
        recall_tokens: Some(Count::from(120)),
        ..PolicyOverrides::default()
    };
    req
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn similarity_finds_what_words_cannot() {
    let Some(embedder) = minilm() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("semantic.db");
    let plain = Engine::open(path.to_str().unwrap(), Limits::default())
        .await
        .unwrap();
    let id = plain
        .create_conversation(T, NewConversation::default())
        .await
        .unwrap()
        .id;
    plain
        .append_messages(ConversationRef::new(T, &id), conversation())
        .await
        .unwrap();

    // Lexical alone: "pet" and "called" are nowhere in the older messages.
    let out = plain
        .context(ConversationRef::new(T, &id), &request())
        .await
        .unwrap();
    let r = out.stats.recalled.expect("stats");
    assert_eq!(r.terms, ["pet", "called"]);
    assert!(r.messages.is_empty(), "{r:?}");

    // With the embedder, before any vector exists: what is embedded (nothing) is used, and
    // the stats say the index is behind.
    let semantic = Engine::new(plain.store().clone(), Limits::default()).with_embedder(embedder);
    let out = semantic
        .context(ConversationRef::new(T, &id), &request())
        .await
        .unwrap();
    let r = out.stats.recalled.expect("stats");
    assert!(!r.complete);
    assert!(r.messages.is_empty(), "{r:?}");

    // Caught up: the exchange that names the puppy is found (the fact, or the reply about
    // the dog's name with the fact as its neighbour).
    let done = semantic
        .catch_up_vectors(T, Some(&id), usize::MAX)
        .await
        .unwrap();
    assert_eq!(done, 63);
    let out = semantic
        .context(ConversationRef::new(T, &id), &request())
        .await
        .unwrap();
    let r = out.stats.recalled.expect("stats");
    assert!(r.complete);
    assert!(r.messages.iter().any(|m| m.seq <= 2 && m.hit), "{r:?}");
    assert!(r.messages.iter().any(|m| m.seq == 1), "{r:?}");
    assert!(out.prompt.to_text().contains("named him Biscuit"));

    // An append starts the catch-up in the background; the append does not wait for it.
    semantic
        .append_messages(
            ConversationRef::new(T, &id),
            vec![json!({"role": "assistant", "content": "Biscuit it is."})],
        )
        .await
        .unwrap();
    let started = Instant::now();
    loop {
        let left = semantic
            .store()
            .vector_backlog(T, Some(&id), "all-MiniLM-L6-v2", 10)
            .await
            .unwrap();
        if left.is_empty() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the catch-up did not run"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The same model behind `POST /v1/embeddings` on 127.0.0.1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn similarity_through_an_embeddings_endpoint() {
    let Some(model) = minilm_model() else { return };
    let served = model.clone();
    let server = recall_testkit::FakeServer::start(Arc::new(move |req, _| {
        if req.method != "POST" || req.path != "/v1/embeddings" {
            return recall_testkit::Reply::json(404, json!({"error": {"message": "no route"}}));
        }
        let body = req.json();
        let inputs: Vec<String> = match &body["input"] {
            Value::String(s) => vec![s.clone()],
            Value::Array(a) => a
                .iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect(),
            _ => return recall_testkit::Reply::json(400, json!({"error": {"message": "input"}})),
        };
        let refs: Vec<&str> = inputs.iter().map(String::as_str).collect();
        let vectors = served.embed_blocking(&refs).expect("embed");
        let data: Vec<Value> = vectors
            .iter()
            .enumerate()
            .map(|(i, e)| json!({"object": "embedding", "index": i, "embedding": e.vector()}))
            .collect();
        recall_testkit::Reply::json(
            200,
            json!({"object": "list", "data": data, "model": body["model"],
                   "usage": {"prompt_tokens": 0, "total_tokens": 0}}),
        )
    }))
    .await;
    let settings = EmbedSettings::OpenAi(OpenAiEmbedderConfig::new(
        format!("{}/v1", server.base_url()),
        "minilm-over-http",
    ));
    let embedder: Arc<dyn Embedder> = Arc::from(settings.connect().await.expect("connect"));
    assert_eq!(embedder.dimension(), 384);

    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("endpoint.db");
    let e = Engine::open(path.to_str().unwrap(), Limits::default())
        .await
        .unwrap()
        .with_embedder(embedder);
    let id = e
        .create_conversation(T, NewConversation::default())
        .await
        .unwrap()
        .id;
    e.append_messages(ConversationRef::new(T, &id), conversation())
        .await
        .unwrap();
    e.catch_up_vectors(T, Some(&id), usize::MAX).await.unwrap();
    let out = e
        .context(ConversationRef::new(T, &id), &request())
        .await
        .unwrap();
    let r = out.stats.recalled.expect("stats");
    assert!(r.complete, "{r:?}");
    assert!(r.messages.iter().any(|m| m.seq == 1), "{r:?}");
    assert!(out.prompt.to_text().contains("named him Biscuit"));
    // Every vector went through the endpoint, under the served model's name.
    assert!(server
        .requests()
        .iter()
        .all(|r| r.path == "/v1/embeddings" && r.json()["model"] == "minilm-over-http"));
    let left = e
        .store()
        .vector_backlog(T, Some(&id), "minilm-over-http", 10)
        .await
        .unwrap();
    assert!(left.is_empty());
}
