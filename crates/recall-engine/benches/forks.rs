//! Fork cost (issue 18): forking is O(1) and a fork's context costs what its parent's does.
//!
//! - `fork_sqlite/100000`, `fork_pg/100000`: `Engine::fork_conversation` of a 100,000-message
//!   conversation at its middle (nothing of the prefix is copied: the figure must not grow
//!   with the conversation; `fork_sqlite/1000` is the same at 1,000 messages to compare).
//! - `context_fork_sqlite/parent`, `…/fork`: `Engine::context` (transcript, `max_tokens =
//!   8000`) on the 100,000-message parent and on a fork of it made at 99,990 with 10 messages of
//!   its own: the fork's read crosses into the parent's rows and must be no slower.
//!   `context_fork_pg/…` the same on PostgreSQL (`RECALL_TEST_PG_URL`; skipped with a notice
//!   when the server cannot be reached).
//!
//! Before timing, the fork's and a copied conversation's prompts are checked equal. The
//! SQLite files are built once under `<target>/recall-bench/`.
//!
//! Run: `cargo bench -p recall-engine --bench forks`
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use recall_engine::ConversationRef;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use recall_core::context::ContextRequest;
use recall_core::message::Message;
use recall_core::policy::{Count, Format, PolicyOverrides};
use recall_engine::store::{NewConversation, NewMessage, PgStore, SqliteStore, Store};
use recall_engine::{Engine, Limits, DEFAULT_TENANT as T};

#[path = "../../recall-core/benches/common/workload.rs"]
mod workload;

const BIG: usize = 100_000;
const CACHE_VERSION: &str = "forks-v1";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn request() -> ContextRequest {
    ContextRequest {
        overrides: PolicyOverrides {
            max_tokens: Some(Count::from(8_000u32)),
            ..PolicyOverrides::default()
        },
        ..ContextRequest::new(Format::Transcript)
    }
}

fn cache_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("bench executable path");
    exe.ancestors()
        .nth(3)
        .map_or_else(std::env::temp_dir, Path::to_path_buf)
        .join("recall-bench")
}

async fn populate(store: &dyn Store, id: &str, messages: &[Message]) {
    for chunk in messages.chunks(1_000) {
        let batch = chunk.iter().cloned().map(NewMessage::complete).collect();
        store.append(T, id, batch).await.expect("populate");
    }
}

/// A conversation of `n` workload messages in `store`, created when missing (found by title).
async fn conversation(store: &dyn Store, n: usize) -> String {
    let title = format!("forks bench {n} {CACHE_VERSION}");
    let list = store.list_conversations(T, None, 1000).await.expect("list");
    if let Some(c) = list
        .iter()
        .find(|c| c.title.as_deref() == Some(&title) && c.message_count == n as i64)
    {
        return c.id.clone();
    }
    let c = store
        .create_conversation(
            T,
            NewConversation {
                title: Some(title),
                ..NewConversation::default()
            },
        )
        .await
        .expect("create");
    populate(store, &c.id, &workload::conversation(n)).await;
    c.id
}

/// The parent (n messages), a fork at `n - 10` with 10 messages of its own, and a copy holding
/// the same messages as the fork: the fork's and the copy's prompts must be equal.
async fn fork_and_check(engine: &Engine, parent: &str, n: usize) -> String {
    let at = n - 10;
    let fork = engine
        .fork_conversation(
            ConversationRef::new(T, parent),
            at as i64,
            Some("bench fork".into()),
        )
        .await
        .expect("fork");
    let own = workload::conversation(n + 10)[n..].to_vec();
    populate(engine.store().as_ref(), &fork.id, &own).await;
    let copy = engine
        .create_conversation(T, NewConversation::default())
        .await
        .expect("copy");
    let mut all = workload::conversation(n);
    all.truncate(at);
    all.extend(own);
    populate(engine.store().as_ref(), &copy.id, &all).await;
    let a = engine
        .context(ConversationRef::new(T, &fork.id), &request())
        .await
        .expect("fork context");
    let b = engine
        .context(ConversationRef::new(T, &copy.id), &request())
        .await
        .expect("copy context");
    assert_eq!(a.prompt, b.prompt, "a fork's context differs from a copy's");
    engine
        .delete_conversation(ConversationRef::new(T, &copy.id), false)
        .await
        .expect("drop copy");
    fork.id
}

fn bench_store(c: &mut Criterion, name: &str, engine: &Engine, rt: &tokio::runtime::Runtime) {
    let store = engine.store().clone();
    let small = rt.block_on(conversation(store.as_ref(), 1_000));
    let big = rt.block_on(conversation(store.as_ref(), BIG));
    let mut g = c.benchmark_group(format!("fork_{name}"));
    g.sample_size(30).measurement_time(Duration::from_secs(5));
    for (n, id) in [(1_000, &small), (BIG, &big)] {
        g.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter(|| {
                let f = rt
                    .block_on(engine.fork_conversation(
                        ConversationRef::new(T, id),
                        (n / 2) as i64,
                        None,
                    ))
                    .expect("fork");
                // Not timed apart: a delete of an empty fork is one small write as well.
                rt.block_on(engine.delete_conversation(ConversationRef::new(T, &f.id), false))
                    .expect("delete fork");
                black_box(f.id)
            })
        });
    }
    g.finish();

    let fork = rt.block_on(fork_and_check(engine, &big, BIG));
    let mut g = c.benchmark_group(format!("context_fork_{name}"));
    g.sample_size(50).measurement_time(Duration::from_secs(5));
    for (label, id) in [("parent", &big), ("fork", &fork)] {
        g.bench_function(label, |b| {
            b.iter(|| {
                black_box(
                    rt.block_on(engine.context(ConversationRef::new(T, id), &request()))
                        .expect("context"),
                )
            })
        });
    }
    g.finish();
    rt.block_on(engine.delete_conversation(ConversationRef::new(T, &fork), false))
        .expect("delete fork");
}

fn forks(c: &mut Criterion) {
    let rt = runtime();
    let dir = cache_dir();
    std::fs::create_dir_all(&dir).expect("cache dir");
    let path = dir.join(format!("sqlite-{CACHE_VERSION}.db"));
    let store = rt.block_on(SqliteStore::open(&path)).expect("open sqlite");
    let engine = Engine::new(Arc::new(store), Limits::default());
    bench_store(c, "sqlite", &engine, &rt);

    let Some(db) = rt.block_on(recall_testkit::pg::pg_database()) else {
        eprintln!("fork_pg: no PostgreSQL reachable; skipped");
        return;
    };
    let store = rt.block_on(PgStore::connect(&db.url)).expect("connect pg");
    let engine = Engine::new(Arc::new(store), Limits::default());
    bench_store(c, "pg", &engine, &rt);
    drop(db);
}

criterion_group!(benches, forks);
criterion_main!(benches);
