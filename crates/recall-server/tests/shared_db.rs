//! Two server instances on one database, clients appending to one conversation through both
//! at once: seqs stay gapless and every message is stored exactly once.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use common::{server, Backend, TENANT_A};
use reqwest::StatusCode;
use serde_json::json;

on_both!(two_servers_append_to_one_conversation);

async fn two_servers_append_to_one_conversation(b: Backend) {
    let Some(s) = server(b).await else { return };
    // A second server process-alike: its own engine and pool on the same database.
    let engine2 = recall_engine::Engine::open(&s.url, Default::default())
        .await
        .expect("second engine");
    let config = recall_server::ServerConfig {
        keys: vec![recall_server::ConfigKey {
            tenant: TENANT_A.into(),
            key: Some(s.key_a.clone()),
            sha256: None,
        }],
        ..Default::default()
    };
    let second = recall_server::start(
        engine2,
        config,
        Default::default(),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .expect("second server");
    let bases = [s.base.clone(), format!("http://{}", second.addr)];
    let id = s.new_conversation(&s.key_a, json!({})).await;

    const WRITERS: usize = 6;
    const EACH: usize = 15;
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let client = s.client.clone();
        let key = s.key_a.clone();
        let bases = bases.clone();
        let id = id.clone();
        tasks.push(tokio::spawn(async move {
            let mut acked = Vec::new();
            for i in 0..EACH {
                let cid = format!("w{w}-{i}");
                // Alternate servers; every third message is sent twice (a retry), once to each.
                let sends = if i % 3 == 0 { 2 } else { 1 };
                for k in 0..sends {
                    let base = &bases[(w + i + k) % 2];
                    let res = client
                        .post(format!("{base}/v1/conversations/{id}/messages"))
                        .bearer_auth(&key)
                        .json(&json!({"role": "user", "content": format!("writer {w} message {i}"), "id": cid}))
                        .send()
                        .await
                        .expect("append");
                    assert_eq!(res.status(), StatusCode::CREATED);
                    let v: serde_json::Value = res.json().await.expect("json");
                    acked.push((cid.clone(), v["messages"][0]["seq"].as_i64().expect("seq")));
                }
            }
            acked
        }));
    }
    let mut acked = Vec::new();
    for t in tasks {
        acked.extend(t.await.expect("writer"));
    }
    let stored = s.stored(TENANT_A, &id).await;
    assert_eq!(stored.len(), WRITERS * EACH, "each message once");
    for (i, m) in stored.iter().enumerate() {
        assert_eq!(m["seq"], i as i64 + 1, "gapless seqs");
    }
    // Both answers of a retried message carry the seq it is stored at.
    for (cid, seq) in &acked {
        let m = &stored[(*seq - 1) as usize];
        assert_eq!(m["message"]["id"], cid.as_str());
    }
    // Each writer's messages are in the order it sent them.
    for w in 0..WRITERS {
        let seqs: Vec<i64> = stored
            .iter()
            .filter(|m| {
                m["message"]["id"]
                    .as_str()
                    .is_some_and(|c| c.starts_with(&format!("w{w}-")))
            })
            .map(|m| m["seq"].as_i64().unwrap_or(0))
            .collect();
        assert!(seqs.windows(2).all(|p| p[0] < p[1]));
        assert_eq!(seqs.len(), EACH);
    }
    second.shutdown().await.expect("shutdown");
}
