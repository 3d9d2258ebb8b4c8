//! Recall through the engine (issue 21): a context from a stored conversation brings back the
//! earlier messages that answer the newest question, agrees with `recall render` over the
//! same messages, keeps the bytes before the newest user message, and a conversation whose
//! stored policy recalls does so on every chat turn (fake Anthropic server on loopback).
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use recall_core::context::build_context;
use recall_core::parse::{parse_conversation, ParseOptions};
use recall_core::policy::{Count, RecallScope};
use recall_core::recall::RECALL_OPEN;
use recall_core::{ContextRequest, Format, PolicyOverrides};
use recall_engine::llm::{AnthropicBackend, HttpConfig, RetryPolicy};
use recall_engine::store::NewConversation;
use recall_engine::{ChatTurn, ConversationRef, Engine, Limits};
use recall_testkit::{anthropic, FakeServer, Reply};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

const T: &str = "default";

async fn engine(dir: &tempfile::TempDir) -> Engine {
    let path = dir.path().join("recall.db");
    Engine::open(path.to_str().expect("utf-8 path"), Limits::default())
        .await
        .expect("open sqlite")
}

/// A long conversation: a fact early, then many turns about other things.
fn long_conversation() -> Vec<Value> {
    let mut v = vec![
        json!({"role": "user", "content": "For the record: the vault code is 4417, keep it safe."}),
        json!({"role": "assistant", "content": "Noted, the vault code is 4417."}),
    ];
    let topics = [
        "gardening",
        "cooking",
        "cycling",
        "astronomy",
        "chess",
        "pottery",
    ];
    for i in 0..60 {
        let t = topics[i % topics.len()];
        v.push(
            json!({"role": "user", "content": format!("Tell me something about {t}, part {i}.")}),
        );
        v.push(json!({"role": "assistant", "content": format!("Here is a fact about {t} number {i}: it takes practice and patience.")}));
    }
    v.push(json!({"role": "user", "content": "What was the vault code again?"}));
    v
}

fn overrides(max: u32, recall: u32) -> PolicyOverrides {
    PolicyOverrides {
        max_tokens: Some(Count::from(max)),
        recall_tokens: Some(Count::from(recall)),
        ..PolicyOverrides::default()
    }
}

#[tokio::test]
async fn context_recalls_the_fact_and_agrees_with_render() {
    let dir = tempfile::tempdir().expect("tempdir");
    let e = engine(&dir).await;
    let id = e
        .create_conversation(T, NewConversation::default())
        .await
        .expect("create")
        .id;
    let msgs = long_conversation();
    e.append_messages(ConversationRef::new(T, &id), msgs.clone())
        .await
        .expect("append");
    let conv = parse_conversation(&Value::Array(msgs).to_string(), &ParseOptions::strict())
        .expect("parse");

    for format in Format::ALL {
        let mut req = ContextRequest::new(format);
        req.overrides = overrides(400, 150);
        let out = e
            .context(ConversationRef::new(T, &id), &req)
            .await
            .expect("context");
        let r = out.stats.recalled.clone().expect("recalled stats");
        assert!(r.complete);
        // Seq 1 is the fact, seq 2 its answer: both hold the query's words, so one is a hit
        // and the other comes as a hit or a neighbour.
        assert!(
            r.messages.iter().any(|m| m.seq <= 2 && m.hit),
            "{format}: {r:?}"
        );
        assert!(r.messages.iter().any(|m| m.seq == 1), "{format}: {r:?}");
        assert!(r.messages.iter().any(|m| m.seq == 2), "{format}: {r:?}");
        assert!(r.tokens <= 150 && r.budget == 150);
        let first_kept = out.kept.first().map_or(i64::MAX, |k| k.index as i64);
        assert!(r.messages.iter().all(|m| m.seq < first_kept));
        assert!(out.prompt.to_text().contains("the vault code is 4417"));
        assert!(out.prompt.to_text().contains(RECALL_OPEN));

        // Without recall, the same window: no byte before the section differs.
        let mut plain = ContextRequest::new(format);
        plain.overrides = PolicyOverrides {
            max_tokens: Some(Count::from(250)),
            ..PolicyOverrides::default()
        };
        let without = e
            .context(ConversationRef::new(T, &id), &plain)
            .await
            .expect("context");
        assert_eq!(out.kept, without.kept, "{format}");
        if format.is_text() {
            let (a, b) = (out.prompt.to_text(), without.prompt.to_text());
            let i = a.find(RECALL_OPEN).expect("placed");
            assert_eq!(a[..i], b[..i], "{format}");
        }

        // `recall render` over the same messages recalls the same seqs (in memory a
        // message's seq is its position counted from 1, as stored seqs are).
        let mem = build_context(&conv, &req).expect("render");
        let mem_seqs: Vec<i64> = mem
            .stats
            .recalled
            .expect("stats")
            .messages
            .iter()
            .map(|m| m.seq)
            .collect();
        let store_seqs: Vec<i64> = r.messages.iter().map(|m| m.seq).collect();
        assert!(
            mem_seqs.contains(&1) && store_seqs.contains(&1),
            "{mem_seqs:?} {store_seqs:?}"
        );
    }
}

#[tokio::test]
async fn tenant_scope_recalls_from_the_tenants_other_conversations_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let e = engine(&dir).await;
    let mine = e
        .create_conversation("acme", NewConversation::default())
        .await
        .unwrap()
        .id;
    let other = e
        .create_conversation("acme", NewConversation::default())
        .await
        .unwrap()
        .id;
    let foreign = e
        .create_conversation("globex", NewConversation::default())
        .await
        .unwrap()
        .id;
    e.append_messages(
        ConversationRef::new("acme", &other),
        vec![json!({"role": "user", "content": "The launch date is March 3."})],
    )
    .await
    .unwrap();
    e.append_messages(
        ConversationRef::new("globex", &foreign),
        vec![json!({"role": "user", "content": "Globex launch date is secret: June 9."})],
    )
    .await
    .unwrap();
    e.append_messages(
        ConversationRef::new("acme", &mine),
        vec![json!({"role": "user", "content": "When is the launch date?"})],
    )
    .await
    .unwrap();
    let mut req = ContextRequest::new(Format::Transcript);
    req.overrides = overrides(2000, 500);
    req.overrides.recall_scope = Some(RecallScope::Tenant);
    let out = e
        .context(ConversationRef::new("acme", &mine), &req)
        .await
        .expect("context");
    let text = out.prompt.to_text();
    assert!(text.contains("March 3"), "{text}");
    assert!(!text.contains("June 9"), "{text}");
    let r = out.stats.recalled.expect("stats");
    assert_eq!(r.messages.len(), 1);
    assert_eq!(
        r.messages[0].conversation_id.as_deref(),
        Some(other.as_str())
    );
    assert!(
        text.contains(&format!("[conversation {other}, seq 1, ")),
        "{text}"
    );
}

#[tokio::test]
async fn a_conversation_whose_policy_recalls_does_so_on_every_chat_turn() {
    let dir = tempfile::tempdir().expect("tempdir");
    let e = engine(&dir).await;
    let id = e
        .create_conversation(
            T,
            NewConversation {
                policy: Some(
                    serde_json::from_value(json!({"max_tokens": 400, "recall_tokens": 150}))
                        .expect("policy"),
                ),
                ..NewConversation::default()
            },
        )
        .await
        .expect("create")
        .id;
    let mut msgs = long_conversation();
    msgs.pop();
    e.append_messages(ConversationRef::new(T, &id), msgs)
        .await
        .expect("append");
    let server =
        FakeServer::scripted(vec![Reply::sse(anthropic::text_reply(&["It is 4417."]))]).await;
    let mut c = HttpConfig::anthropic().with_key("sk-ant-test-key");
    c.base_url = server.base_url();
    c.retry = RetryPolicy::none();
    let backend = AnthropicBackend::new(c).expect("backend");
    let out = e
        .chat_turn(
            ConversationRef::new(T, &id),
            &backend,
            ChatTurn::text("What was the vault code again?"),
            CancellationToken::new(),
            |_| {},
        )
        .await
        .expect("turn");
    let r = out.stats.recalled.expect("the turn recalled");
    assert!(r.messages.iter().any(|m| m.seq == 1));
    let body = server.requests()[0].json();
    let last = body["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "user");
    let blocks = last["content"].as_array().expect("blocks");
    assert!(blocks[0]["text"].as_str().unwrap().starts_with(RECALL_OPEN));
    assert!(blocks[0]["text"].as_str().unwrap().contains("4417"));
    assert_eq!(blocks[1]["text"], "What was the vault code again?");
}

/// No context waits on a whole backlog (issue 33): one that recalls over 3,000 messages never
/// indexed indexes for its budget (here none: one batch), ranks what is indexed and says so
/// (`complete: false`); the rest is indexed in the background, and so, from then on, is what
/// is appended to the conversation, with no context asking.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_recall_index_catches_up_in_the_background() {
    use recall_core::recall::RecallQuery;
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    let e = engine(&dir).await.with_index_budget(Some(Duration::ZERO));
    let id = e
        .create_conversation(T, NewConversation::default())
        .await
        .unwrap()
        .id;
    for batch in 0..3 {
        let msgs: Vec<Value> = (0..1000)
            .map(|i| {
                let n = batch * 1000 + i;
                json!({"role": if n % 2 == 0 { "user" } else { "assistant" },
                    "content": format!("message {n} about the weather and the garden")})
            })
            .collect();
        e.append_messages(ConversationRef::new(T, &id), msgs)
            .await
            .unwrap();
    }
    e.append_message(
        ConversationRef::new(T, &id),
        json!({"role": "user", "content": "Any news of the xylophonist?"}),
    )
    .await
    .unwrap();
    let mut req = ContextRequest::new(Format::Transcript);
    req.overrides = overrides(400, 150);
    req.query = Some("garden weather".into());
    let out = e.context(ConversationRef::new(T, &id), &req).await.unwrap();
    let r = out.stats.recalled.expect("recall stats");
    assert!(!r.complete, "one batch of three was indexed");

    let complete = |e: Engine, id: String, upto: i64| async move {
        let q = RecallQuery::new("garden", upto, 100, RecallScope::Conversation);
        let started = Instant::now();
        loop {
            if e.store().recall_lexical(T, &id, &q).await.unwrap().complete {
                return started.elapsed();
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the background catch-up did not finish"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    complete(e.clone(), id.clone(), 3_002).await;
    let out = e.context(ConversationRef::new(T, &id), &req).await.unwrap();
    assert!(out.stats.recalled.expect("recall stats").complete);

    // Appended after: indexed in the background, no context asking.
    let msgs: Vec<Value> = (0..1500)
        .map(|n| {
            json!({"role": if n % 2 == 0 { "user" } else { "assistant" },
            "content": format!("later message {n} about the garden")})
        })
        .collect();
    e.append_messages(ConversationRef::new(T, &id), msgs[..1000].to_vec())
        .await
        .unwrap();
    e.append_messages(ConversationRef::new(T, &id), msgs[1000..].to_vec())
        .await
        .unwrap();
    complete(e.clone(), id.clone(), 4_502).await;
}
