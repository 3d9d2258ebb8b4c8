//! all-MiniLM-L6-v2 in-process: single-text latency (on the global pool, and as a query, on
//! the one-thread pool) and texts per second in batches.
//! Needs the model (`bash scripts/models.sh fetch`, or RECALL_EMBED_MODEL=DIR).
//!
//! cargo bench -p recall-embed --bench embed
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use recall_embed::{MiniLm, MiniLmConfig};

/// Chat-message-like texts of 5 to 40 words.
fn texts(n: usize) -> Vec<String> {
    const WORDS: [&str; 16] = [
        "the", "deploy", "database", "meeting", "dog", "Lisbon", "report", "ramen", "cello",
        "train", "API", "Friday", "schema", "budget", "because", "tomorrow",
    ];
    (0..n)
        .map(|i| {
            let len = 5 + (i * 7) % 36;
            (0..len)
                .map(|j| WORDS[(i * 31 + j * 17) % WORDS.len()])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let Some(dir) = std::env::var_os("RECALL_EMBED_MODEL")
        .map(Into::into)
        .or_else(recall_embed::default_model_dir)
        .filter(|d: &std::path::PathBuf| d.join("model.safetensors").is_file())
    else {
        eprintln!("skipped: all-MiniLM-L6-v2 is not installed (bash scripts/models.sh fetch)");
        return;
    };
    let model = MiniLm::load(MiniLmConfig::new(dir)).expect("model loads");
    let mut g = c.benchmark_group("minilm");
    g.sample_size(20);
    let one = "What did we decide about the database schema on Friday?";
    g.throughput(Throughput::Elements(1));
    g.bench_function("single_text", |b| {
        b.iter(|| model.embed_blocking(&[one]).unwrap())
    });
    // The same text as recall embeds a question: `Embedder::embed` on a runtime, which runs
    // it on its one-thread pool.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    g.bench_function("query", |b| {
        b.iter(|| {
            rt.block_on(recall_embed::Embedder::embed(&model, &[one]))
                .unwrap()
        })
    });
    let all = texts(64);
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    g.throughput(Throughput::Elements(refs.len() as u64));
    g.bench_with_input(
        BenchmarkId::new("batch_of", refs.len()),
        &refs,
        |b, refs| b.iter(|| model.embed_blocking(refs).unwrap()),
    );
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
