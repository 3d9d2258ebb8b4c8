//! What the gateway adds to a request (issue 17), measured as a program (not criterion: it
//! reports percentiles of single requests). A real server on a SQLite file holds a
//! 10,000-message conversation (a stable window of 8,000 tokens) of one of two workloads:
//! `chat`, the conversations of the context benchmarks (`recall-core/benches/common/
//! workload.rs`: user messages of 20–400 characters, replies of 200–4,000, a tool result of
//! 2,000–20,000 every tenth reply), and `short`, one-line messages of about 25 tokens, so the
//! window holds some 450 of them (the worst case: the cost grows with the messages in the
//! window); recall-testkit's fake provider on loopback is the upstream. Each round sends one streamed Anthropic request
//! through the gateway (append mode: one new user message), then the body the gateway
//! forwarded straight to the fake provider, and records (each round adds a user message of
//! about 300 characters and a reply of 1,500, as a chat would):
//!
//! - recall's own time before forwarding (the `Server-Timing: recall;dur=` header: reading,
//!   storing the message, building the context);
//! - time to the first body byte through the gateway and directly.
//!
//! `cargo bench -p recall-server --bench gateway` (`GATEWAY_ROUNDS`, default 1000).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use recall_core::gateway::Provider;
use recall_core::policy::ConversationPolicy;
use recall_engine::llm::proxy::Upstream;
use recall_engine::llm::HttpConfig;
use recall_engine::store::{NewConversation, NewMessage};
use recall_engine::Engine;
use recall_server::{start, ConfigKey, ServerConfig};
use recall_testkit::provider::FakeProvider;
use serde_json::{json, Value};

#[path = "../../recall-core/benches/common/workload.rs"]
mod workload;

const MESSAGES: usize = 10_000;
const KEY: &str = "rk_bench_key_0123456789abcdef";

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i]
}

async fn first_byte(req: reqwest::RequestBuilder) -> (Duration, reqwest::Response) {
    let t = Instant::now();
    let mut res = req.send().await.unwrap();
    assert_eq!(res.status(), 200);
    let chunk = res.chunk().await.unwrap();
    let took = t.elapsed();
    assert!(chunk.is_some_and(|c| !c.is_empty()));
    (took, res)
}

async fn drain(mut res: reqwest::Response) {
    while res.chunk().await.unwrap().is_some() {}
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let rounds: usize = std::env::var("GATEWAY_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let short: Vec<recall_core::Message> = (0..MESSAGES)
        .map(|i| {
            let role = if i % 2 == 0 { recall_core::Role::User } else { recall_core::Role::Assistant };
            recall_core::Message::text(role, format!(
                "Message {i}: we talked about the deployment plan, the staging database and who reviews the migration on Thursday."
            ))
        })
        .collect();
    run("chat", workload::conversation(MESSAGES), rounds).await;
    run("short", short, rounds).await;
}

async fn run(name: &str, messages: Vec<recall_core::Message>, rounds: usize) {
    let fake = FakeProvider::start().await;
    let dir = tempfile::tempdir().unwrap();
    let url = dir.path().join("gateway.db").display().to_string();
    let mut config = ServerConfig {
        keys: vec![ConfigKey {
            tenant: "bench".into(),
            key: Some(KEY.into()),
            sha256: None,
        }],
        ..ServerConfig::default()
    };
    let anthropic = HttpConfig {
        base_url: fake.base_url(),
        ..HttpConfig::anthropic()
    }
    .with_key("sk-upstream");
    let mut upstreams = recall_server::Upstreams::default();
    upstreams.gateway.anthropic = Some(Arc::new(
        Upstream::new(Provider::Anthropic, &anthropic).unwrap(),
    ));
    config.limits.max_body_bytes = 64 << 20;
    let engine = Engine::open(&url, config.limits.engine_limits())
        .await
        .unwrap();
    let policy: ConversationPolicy = serde_json::from_value(
        json!({"format": "anthropic", "max_tokens": 8000, "trim": "stable"}),
    )
    .unwrap();
    let conv = engine
        .create_conversation(
            "bench",
            NewConversation {
                title: Some("gateway bench".into()),
                system_prompt: None,
                metadata: Default::default(),
                policy: Some(policy),
            },
        )
        .await
        .unwrap();
    for chunk in messages.chunks(1000) {
        let batch = chunk.iter().cloned().map(NewMessage::complete).collect();
        engine
            .store()
            .append("bench", &conv.id, batch)
            .await
            .unwrap();
    }
    let running = start(
        engine.clone(),
        config,
        upstreams,
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap();
    let base = format!("http://{}", running.addr);
    let client = reqwest::Client::new();
    let (mut added, mut via, mut direct, mut diff) = (vec![], vec![], vec![], vec![]);
    let warmup = rounds / 10;
    // A user message of ~300 characters; the fake answers `[long]` with 1,500.
    let pad = "The staging database moves on Thursday and the review needs two people. ".repeat(3);
    for i in 0..warmup + rounds {
        let body = json!({"model": "claude-bench", "max_tokens": 64, "stream": true,
            "system": "You are a patient assistant.",
            "messages": [{"role": "user", "content": format!("Round {i}: remind me what we decided about the migration review. {pad} [long]")}]});
        let (t_via, res) = first_byte(
            client
                .post(format!("{base}/anthropic/v1/messages"))
                .header("x-api-key", KEY)
                .header("x-recall-conversation", &conv.id)
                .json(&body),
        )
        .await;
        let timing: f64 = res.headers()["server-timing"]
            .to_str()
            .unwrap()
            .trim_start_matches("recall;dur=")
            .parse()
            .unwrap();
        drain(res).await;
        let forwarded = fake.last_request().unwrap().body;
        let (t_direct, res) = first_byte(
            client
                .post(format!("{}/v1/messages", fake.base_url()))
                .header("content-type", "application/json")
                .body(forwarded),
        )
        .await;
        drain(res).await;
        if i >= warmup {
            added.push(timing);
            via.push(t_via.as_secs_f64() * 1000.0);
            direct.push(t_direct.as_secs_f64() * 1000.0);
            diff.push((t_via.as_secs_f64() - t_direct.as_secs_f64()) * 1000.0);
        }
    }
    let window: Value = fake.last_request().unwrap().json();
    println!(
        "{name}: {MESSAGES}-message conversation (+2 per round), {rounds} rounds after {warmup} warm-up; the window sent: {} messages",
        window["messages"].as_array().map_or(0, Vec::len)
    );
    for (name, v) in [
        ("recall's added time (Server-Timing)", &mut added),
        ("first byte through the gateway", &mut via),
        ("first byte, provider directly", &mut direct),
        ("first byte, gateway minus direct (paired)", &mut diff),
    ] {
        println!(
            "{name:45} p50 {:7.3} ms   p99 {:7.3} ms",
            pct(v, 0.5),
            pct(v, 0.99)
        );
    }
    running.shutdown().await.unwrap();
}
