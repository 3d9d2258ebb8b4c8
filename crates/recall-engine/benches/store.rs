//! The durable store's acceptance figures (issue 3), through the engine, on the conversations
//! of `recall-core/benches/select_render.rs` (the same generator, included from
//! `recall-core/benches/common/workload.rs`):
//!
//! - `context_sqlite/<n>`: `Engine::context` (what `recall context` runs: the conversation, the
//!   window from the store, selection and `transcript` rendering) with the transcript defaults,
//!   `max_tokens = 8000` and recall off (`recall_tokens = 0`), over a SQLite file holding a
//!   conversation of n messages.
//! - `append_sqlite/single`: `Engine::append_message`, one message and one commit per call
//!   (WAL, `synchronous = NORMAL`: durability `normal`), validation and token counting
//!   included; `append_sqlite/single_full` the same under durability `full`
//!   (`synchronous = FULL`, the WAL synced at every commit), on a file under the target dir;
//!   `append_sqlite/single_embedder` the `single` figure with an embedder configured
//!   (all-MiniLM-L6-v2 from `RECALL_EMBED_MODEL` or the models cache; skipped with a notice
//!   without one): the vectors are computed behind the appends (issue 21: within 10%). The
//!   three measure for 20 s, so that the catch-up's steady state is what is measured.
//! - `import_sqlite/10000`: `Engine::import` of the 10,000-message conversation as JSON Lines
//!   into a new conversation (parsing, measuring on every core, one transaction).
//! - `context_sqlite/statement`, `context_pg/statement`: one `SELECT 1` through the store's
//!   pool, the cost of a round trip that every statement above pays.
//! - `context_recall_sqlite/<n>` (n = 10,000 and 100,000): the `context_sqlite` build with
//!   `recall_tokens = 1000` (issue 21; lexical: the recall index's ranking over the messages
//!   older than the window, OR over the newest user message's content words, then the choice
//!   within the budget). The workload's vocabulary is small, so nearly every older message
//!   holds a query word, and its messages are large: the worst case for ranking and
//!   choosing. The first build catches the recall index up (outside the timed loop).
//! - `context_recall_sqlite/10000_embedder`: the 10,000 build with recall by meaning too
//!   (all-MiniLM-L6-v2 from the environment or the models cache; every message embedded
//!   first), with the p50 and p95 of 200 builds printed; `10000_embedder_default` the same
//!   with nothing set but `max_tokens` (the default share: half of the 8,000 tokens, at most
//!   3,000); then a `stages:` line, the query's embedding and the store's cosine scan over the
//!   conversation's vectors timed alone (p50 and p95 of 200 each).
//! - `context_pg/10000`: the same context build from PostgreSQL (`RECALL_TEST_PG_URL`, default
//!   `postgres://postgres@127.0.0.1:5432/postgres`; a database of its own is created and
//!   dropped). Skipped with a notice when the server cannot be reached.
//!
//! The SQLite files are populated with batched appends outside the timed loop and kept in
//! `<target>/recall-bench/` for the next run.
//!
//! Run: `cargo bench -p recall-engine --bench store` (`RECALL_BENCH_MAX_MESSAGES=10000` leaves
//! out the 100,000-message conversation, whose file takes long to build the first time).
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use recall_engine::ConversationRef;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{
    criterion_group, criterion_main, BatchSize, BenchmarkGroup, BenchmarkId, Criterion,
    SamplingMode, Throughput,
};
use recall_core::context::{ContextOutput, ContextRequest};
use recall_core::message::Message;
use recall_core::policy::{Format, PolicyOverrides};
use recall_core::render::{render, Prompt, RenderInput};
use recall_core::select::{select, HistoryMessage};
use recall_core::tokens::Tokenizer;
use recall_engine::store::{
    Durability, NewConversation, NewMessage, PgStore, SqliteOptions, SqliteStore, Store,
};
use recall_engine::{Engine, ImportTarget, Limits, DEFAULT_TENANT as T};

#[path = "../../recall-core/benches/common/workload.rs"]
mod workload;

const SIZES: [usize; 3] = [1_000, 10_000, 100_000];

/// The conversation sizes to run out of `sizes`: all, or those up to `RECALL_BENCH_MAX_MESSAGES`
/// (the 100,000-message file takes long to build the first time on a small machine).
fn up_to_max(sizes: &[usize]) -> Vec<usize> {
    let max = std::env::var("RECALL_BENCH_MAX_MESSAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::MAX);
    let (run, skipped): (Vec<usize>, Vec<usize>) = sizes.iter().partition(|&&n| n <= max);
    if !skipped.is_empty() {
        eprintln!("skipped (RECALL_BENCH_MAX_MESSAGES={max}): {skipped:?} messages");
    }
    run
}
const MAX_TOKENS: u64 = 8_000;
/// Messages per append while populating a database.
const BATCH: usize = 1_000;
/// Changes when the cached files must be rebuilt (the workload or the schema changed).
const CACHE_VERSION: &str = "v1";

fn runtime() -> tokio::runtime::Runtime {
    // As the CLI runs its commands: a multi-threaded runtime.
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// The window alone: `max_tokens` 8,000 and recall off (`recall_tokens` 0; the default would
/// recall, see [`default_request`]).
fn request() -> ContextRequest {
    let mut req = default_request();
    req.overrides.recall_tokens = Some(recall_core::policy::Count::from(0));
    req
}

/// Nothing set but `max_tokens` 8,000: recall with the default share (issue 52).
fn default_request() -> ContextRequest {
    ContextRequest {
        overrides: PolicyOverrides {
            max_tokens: Some(recall_core::policy::Count::from(MAX_TOKENS as u32)),
            ..PolicyOverrides::default()
        },
        ..ContextRequest::new(Format::Transcript)
    }
}

/// Where the populated databases are kept: `<target>/recall-bench` (the bench runs as
/// `<target>/release/deps/store-…`).
fn cache_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("bench executable path");
    let target = exe
        .ancestors()
        .nth(3)
        .map_or_else(std::env::temp_dir, Path::to_path_buf);
    target.join("recall-bench")
}

/// Appends `messages` in batches of `BATCH`, as an import of a long conversation would.
async fn populate(store: &dyn Store, id: &str, messages: &[Message]) {
    for chunk in messages.chunks(BATCH) {
        let batch = chunk.iter().cloned().map(NewMessage::complete).collect();
        store.append(T, id, batch).await.expect("populate");
    }
}

/// An engine on a SQLite file holding one conversation of `n` messages, and its id. The file
/// is built once (into a temporary name, renamed when complete) and reused while it holds the
/// expected conversation.
/// An engine over `store` whose first context with recall indexes the whole backlog (the
/// build measured is the steady one, the index caught up).
fn bench_engine(store: SqliteStore) -> Engine {
    Engine::new(Arc::new(store), Limits::default()).with_index_budget(None)
}

async fn sqlite_with(n: usize) -> (Engine, String) {
    let dir = cache_dir();
    std::fs::create_dir_all(&dir).expect("cache dir");
    let path = dir.join(format!("sqlite-{n}-{CACHE_VERSION}.db"));
    let title = format!("bench {n} {CACHE_VERSION}");
    if path.exists() {
        let store = SqliteStore::open(&path).await.expect("open cached db");
        let convs = store.list_conversations(T, None, 2).await.expect("list");
        if let [c] = convs.as_slice() {
            if c.title.as_deref() == Some(&title) && c.message_count == n as i64 {
                let id = c.id.clone();
                return (bench_engine(store), id);
            }
        }
        drop(store);
        remove_db(&path);
    }
    let tmp = dir.join(format!("sqlite-{n}-{CACHE_VERSION}.tmp.db"));
    remove_db(&tmp);
    let started = Instant::now();
    let store = SqliteStore::open(&tmp).await.expect("create db");
    let conv = store
        .create_conversation(
            T,
            NewConversation {
                title: Some(title),
                ..NewConversation::default()
            },
        )
        .await
        .expect("create conversation");
    populate(&store, &conv.id, &workload::conversation(n)).await;
    // Checkpoint the WAL into the file so that the renamed file is complete on its own.
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(store.pool())
        .await
        .expect("checkpoint");
    store.pool().close().await;
    std::fs::rename(&tmp, &path).expect("rename populated db");
    // The checkpoint emptied the temporary name's WAL: nothing of it is needed any more.
    remove_db(&tmp);
    eprintln!(
        "populated {} ({n} messages) in {:.1} s",
        path.display(),
        started.elapsed().as_secs_f64()
    );
    let store = SqliteStore::open(&path).await.expect("open db");
    (bench_engine(store), conv.id)
}

/// Removes a database file with its WAL and shared-memory files.
fn remove_db(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
}

/// What the in-memory pipeline (select + render, as `select_render` measures it) gives for the
/// conversation of `n` messages: the store must produce the same prompt.
fn expected_prompt(n: usize) -> String {
    let history: Vec<HistoryMessage> = workload::conversation(n)
        .into_iter()
        .enumerate()
        .map(|(i, m)| HistoryMessage::new(i + 1, m, &Tokenizer::O200k))
        .collect();
    let policy = recall_core::policy::PolicyOverrides {
        max_tokens: Some(recall_core::policy::Count::from(MAX_TOKENS as u32)),
        ..PolicyOverrides::default()
    }
    .apply(Format::Transcript.default_policy())
    .expect("policy");
    let sel = select(&history, &policy, &Tokenizer::O200k, 0);
    match render(
        Format::Transcript,
        &RenderInput {
            system_parts: &[],
            kept: &sel.kept,
            current: None,
            escape: true,
            recalled: None,
            summary: None,
        },
    ) {
        Prompt::Text(t) => t,
        other => panic!("transcript rendered {other:?}"),
    }
}

/// Checks a context against the in-memory pipeline and describes it.
fn check_context(label: &str, out: &ContextOutput, expected: &str) {
    let Prompt::Text(text) = &out.prompt else {
        panic!("{label}: transcript is a text format");
    };
    assert_eq!(
        text, expected,
        "{label}: the store's prompt differs from memory"
    );
    eprintln!(
        "{label}: kept {} messages ({} tokens), dropped {}, prompt {} bytes",
        out.stats.included,
        out.stats.tokens,
        out.stats.dropped,
        text.len()
    );
}

/// Many short samples: on a shared machine most run unpreempted, so the median reflects the
/// code rather than the neighbours (as in `select_render`).
fn flat_group<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(name);
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(1_000)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    g
}

fn context_sqlite(c: &mut Criterion) {
    let rt = runtime();
    let req = request();
    let expected = expected_prompt(10_000);
    let mut g = flat_group(c, "context_sqlite");
    for n in up_to_max(&SIZES) {
        let (engine, id) = rt.block_on(sqlite_with(n));
        let out = rt
            .block_on(engine.context(ConversationRef::new(T, &id), &req))
            .expect("context");
        check_context(&format!("sqlite {n}"), &out, &expected);
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                rt.block_on(
                    engine.context(ConversationRef::new(T, black_box(&id)), black_box(&req)),
                )
                .expect("context")
            })
        });
        if n == 10_000 {
            // The floor under every figure here: one statement (`SELECT 1`) through the pool.
            g.bench_function("statement", |b| {
                b.iter(|| rt.block_on(engine.store().ping()).expect("ping"))
            });
        }
    }
    g.finish();
}

/// `request()` with 1,000 of the 8,000 tokens reserved for recall.
fn recall_request() -> ContextRequest {
    let mut req = request();
    req.overrides.recall_tokens = Some(recall_core::policy::Count::from(1_000));
    req
}

fn context_recall_sqlite(c: &mut Criterion) {
    let rt = runtime();
    let req = recall_request();
    let mut g = flat_group(c, "context_recall_sqlite");
    for n in up_to_max(&[10_000, 100_000]) {
        let (engine, id) = rt.block_on(sqlite_with(n));
        let started = Instant::now();
        let out = rt
            .block_on(engine.context(ConversationRef::new(T, &id), &req))
            .expect("context");
        let r = out.stats.recalled.clone().expect("recall stats");
        assert!(r.complete && !r.messages.is_empty(), "sqlite {n}: {r:?}");
        assert!(r.tokens <= 1_000);
        eprintln!(
            "sqlite {n} with recall: kept {} messages ({} tokens), recalled {} ({} tokens), \
             first build (index catch-up) {:.1} s",
            out.stats.included,
            out.stats.tokens,
            r.messages.len(),
            r.tokens,
            started.elapsed().as_secs_f64()
        );
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                rt.block_on(
                    engine.context(ConversationRef::new(T, black_box(&id)), black_box(&req)),
                )
                .expect("context")
            })
        });
    }
    g.finish();
}

/// `context_recall_sqlite/10000_embedder`: the same build ranking by meaning too (the
/// default when the model is installed): the question embedded by all-MiniLM-L6-v2
/// in-process, the cosine over every stored vector older than the window, fused with the
/// lexical ranking. Every message is embedded first (outside the timed loop). Besides
/// criterion's figures it prints the p50 and p95 of 200 builds (the bar of issue 37: 20 ms
/// and 50 ms on two cores). Skipped with a notice without the model.
fn context_recall_sqlite_embedder(c: &mut Criterion) {
    let rt = runtime();
    let embedder = match rt.block_on(recall_engine::embed::from_env()) {
        Ok(e) => Arc::<dyn recall_engine::embed::Embedder>::from(e),
        Err(e) => {
            eprintln!("context_recall_sqlite/10000_embedder skipped: no embedder ({e})");
            return;
        }
    };
    let n = 10_000;
    let (engine, id) = rt.block_on(sqlite_with(n));
    let engine = engine.with_embedder(embedder);
    let started = Instant::now();
    let done = rt
        .block_on(engine.catch_up_vectors(T, Some(&id), usize::MAX))
        .expect("catch up");
    eprintln!(
        "sqlite {n}: embedded {done} messages in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    let mut g = flat_group(c, "context_recall_sqlite");
    // 1,000 of the 8,000 tokens recalled, and the default share (nothing set but the budget).
    for (name, req) in [
        ("10000_embedder", recall_request()),
        ("10000_embedder_default", default_request()),
    ] {
        let out = rt
            .block_on(engine.context(ConversationRef::new(T, &id), &req))
            .expect("context");
        let r = out.stats.recalled.clone().expect("recall stats");
        assert!(r.complete && !r.messages.is_empty(), "sqlite {n}: {r:?}");
        assert_eq!(r.ranking, recall_core::recall::Ranking::Hybrid);
        let mut times: Vec<Duration> = (0..200)
            .map(|_| {
                let t = Instant::now();
                rt.block_on(engine.context(ConversationRef::new(T, &id), &req))
                    .expect("context");
                t.elapsed()
            })
            .collect();
        times.sort();
        eprintln!(
            "{name}: recall by meaning, {} of {} tokens: p50 {:.1} ms, p95 {:.1} ms (200 builds)",
            r.budget,
            MAX_TOKENS,
            times[100].as_secs_f64() * 1e3,
            times[190].as_secs_f64() * 1e3
        );
        g.bench_with_input(BenchmarkId::from_parameter(name), &n, |b, _| {
            b.iter(|| {
                rt.block_on(
                    engine.context(ConversationRef::new(T, black_box(&id)), black_box(&req)),
                )
                .expect("context")
            })
        });
    }
    g.finish();
    stages(&rt, &engine, &id);
}

/// Where a context with recall by meaning spends its time: the query's embedding, and the
/// store's cosine scan over every older vector, each timed alone (p50 and p95 of 200).
fn stages(rt: &tokio::runtime::Runtime, engine: &Engine, id: &str) {
    let embedder = engine.embedder().expect("embedder");
    let text = "what did we decide about the deployment schedule";
    let q = rt.block_on(embedder.embed(&[text])).expect("embed")[0].clone();
    let query = recall_core::recall::RecallQuery::new(
        text,
        i64::MAX,
        1_000,
        recall_core::policy::RecallScope::Conversation,
    );
    let time = |f: &dyn Fn()| -> (f64, f64) {
        let mut t: Vec<Duration> = (0..200)
            .map(|_| {
                let s = Instant::now();
                f();
                s.elapsed()
            })
            .collect();
        t.sort();
        (t[100].as_secs_f64() * 1e3, t[190].as_secs_f64() * 1e3)
    };
    let (e50, e95) = time(&|| {
        rt.block_on(embedder.embed(&[black_box(text)]))
            .expect("embed");
    });
    let (s50, s95) = time(&|| {
        rt.block_on(engine.store().recall_semantic(
            T,
            id,
            &query,
            embedder.model(),
            black_box(q.vector()),
        ))
        .expect("semantic");
    });
    eprintln!(
        "stages: the query's embedding p50 {e50:.1} ms, p95 {e95:.1} ms; the semantic scan \
         (every vector of the conversation) p50 {s50:.1} ms, p95 {s95:.1} ms (200 each)"
    );
}

fn append_sqlite(c: &mut Criterion) {
    append_sqlite_with(c, Durability::Normal, "single", None);
    append_sqlite_with(c, Durability::Full, "single_full", None);
    // With an embedder (all-MiniLM-L6-v2 in-process from the environment): every append
    // wakes the vector catch-up, which embeds behind the appends on the same cores.
    match runtime().block_on(recall_engine::embed::from_env()) {
        Ok(e) => append_sqlite_with(c, Durability::Normal, "single_embedder", Some(Arc::from(e))),
        Err(e) => eprintln!("append_sqlite/single_embedder skipped: no embedder ({e})"),
    }
}

fn append_sqlite_with(
    c: &mut Criterion,
    durability: Durability,
    name: &str,
    embedder: Option<Arc<dyn recall_engine::embed::Embedder>>,
) {
    let rt = runtime();
    // A file on the disk the target dir is on (a temporary directory may be in memory, where
    // a sync costs nothing).
    let root = cache_dir();
    std::fs::create_dir_all(&root).expect("bench dir");
    let dir = tempfile::tempdir_in(&root).expect("temp dir");
    let store = rt
        .block_on(SqliteStore::open_with(
            &dir.path().join("append.db"),
            SqliteOptions { durability },
        ))
        .expect("open");
    let engine = Engine::new(Arc::new(store), Limits::default());
    let engine = match embedder.clone() {
        Some(e) => engine.with_embedder(e),
        None => engine,
    };
    let id = rt
        .block_on(engine.create_conversation(T, NewConversation::default()))
        .expect("create")
        .id;
    // The messages as a client sends them (JSON); appended in order, round and round.
    let values: Vec<serde_json::Value> = workload::conversation(10_000)
        .iter()
        .map(Message::to_json)
        .collect();
    let mut next = 0usize;
    let mut g = flat_group(c, "append_sqlite");
    // Long enough for the steady state of the vector catch-up beside the appends (it yields
    // to them, then embeds a batch, then yields nine times as long), the same for all three.
    g.measurement_time(Duration::from_secs(20));
    g.throughput(Throughput::Elements(1));
    g.bench_function(name, |b| {
        b.iter_batched(
            || {
                next = (next + 1) % values.len();
                values[next].clone()
            },
            |v| {
                rt.block_on(engine.append_message(ConversationRef::new(T, &id), v))
                    .expect("append")
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
    let conv = rt
        .block_on(engine.get_conversation(ConversationRef::new(T, &id)))
        .expect("conversation");
    eprintln!(
        "append_sqlite/{name}: {} messages appended (durability {durability})",
        conv.message_count
    );
    if let Some(e) = &embedder {
        let behind = rt
            .block_on(
                engine
                    .store()
                    .vector_backlog(T, Some(&id), e.model(), 100_000),
            )
            .expect("backlog")
            .len();
        eprintln!("append_sqlite/{name}: {behind} messages not embedded yet when the timing ended");
    }
}

fn import_sqlite(c: &mut Criterion) {
    const N: usize = 10_000;
    let rt = runtime();
    let dir = tempfile::tempdir().expect("temp dir");
    let store = rt
        .block_on(SqliteStore::open(&dir.path().join("import.db")))
        .expect("open");
    let engine = Engine::new(Arc::new(store), Limits::default());
    let mut jsonl = String::new();
    for m in workload::conversation(N) {
        jsonl.push_str(&m.to_json().to_string());
        jsonl.push('\n');
    }
    eprintln!("import: {N} messages, {} bytes of JSON Lines", jsonl.len());
    let import = |title: &str| {
        rt.block_on(engine.import(
            T,
            ImportTarget::New {
                title: Some(title.to_string()),
            },
            &jsonl,
            false,
            &|_, _| {},
        ))
        .expect("import")
    };
    let report = import("check");
    assert_eq!(report.imported, N, "every message imported");
    rt.block_on(
        engine.delete_conversation(ConversationRef::new(T, &report.conversation_id), false),
    )
    .expect("delete");

    let mut g = c.benchmark_group("import_sqlite");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(10))
        .throughput(Throughput::Elements(N as u64));
    g.bench_function(BenchmarkId::from_parameter(N), |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                let started = Instant::now();
                let report = import("bench");
                timed += started.elapsed();
                // The database stays the same size from one import to the next.
                rt.block_on(
                    engine.delete_conversation(
                        ConversationRef::new(T, &report.conversation_id),
                        false,
                    ),
                )
                .expect("delete");
            }
            timed
        })
    });
    g.finish();
}

fn context_pg(c: &mut Criterion) {
    const N: usize = 10_000;
    let rt = runtime();
    // The tests' helper: a fresh database on RECALL_TEST_PG_URL's server, dropped at the end
    // (None, after a notice, when the server is unreachable).
    let Some(db) = rt.block_on(recall_testkit::pg::pg_database()) else {
        return;
    };
    let store = rt
        .block_on(PgStore::connect(&db.url))
        .expect("connect bench database");
    let id = rt
        .block_on(store.create_conversation(T, NewConversation::default()))
        .expect("create")
        .id;
    let started = Instant::now();
    rt.block_on(populate(&store, &id, &workload::conversation(N)));
    eprintln!(
        "populated PostgreSQL ({N} messages) in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    rt.block_on(async {
        sqlx::query("VACUUM ANALYZE")
            .execute(store.pool())
            .await
            .expect("analyze")
    });
    let engine = Engine::new(Arc::new(store), Limits::default());
    let req = request();
    let out = rt
        .block_on(engine.context(ConversationRef::new(T, &id), &req))
        .expect("context");
    check_context(&format!("postgres {N}"), &out, &expected_prompt(N));
    let mut g = flat_group(c, "context_pg");
    g.bench_function(BenchmarkId::from_parameter(N), |b| {
        b.iter(|| {
            rt.block_on(engine.context(ConversationRef::new(T, black_box(&id)), black_box(&req)))
                .expect("context")
        })
    });
    g.bench_function("statement", |b| {
        b.iter(|| rt.block_on(engine.store().ping()).expect("ping"))
    });
    g.finish();
    // Close the pool before the database is dropped.
    drop(engine);
    drop(db);
}

criterion_group! {
    name = store_benches;
    config = Criterion::default().nresamples(20_000);
    targets = context_sqlite, context_recall_sqlite, context_recall_sqlite_embedder, append_sqlite, import_sqlite, context_pg
}
criterion_main!(store_benches);
