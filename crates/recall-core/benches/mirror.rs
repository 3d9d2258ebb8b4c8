//! The gateway's mirror check on the request side (`recall_core::gateway::mirror::sum_of`):
//! the sum of a mirrored history of 1,000 and 10,000 messages (the context benchmarks'
//! workload, about 2.4 KB a message on average), which a gateway turn computes once over
//! what the client sends, beside parsing it (`serde_json` into messages, timed too for scale).
//!
//! Run: `cargo bench -p recall-core --bench mirror`
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use recall_core::gateway::mirror::sum_of;
use recall_core::message::Message;
use recall_core::parse::{conversation_from_value, ParseOptions};

#[path = "common/workload.rs"]
mod workload;

fn mirror(c: &mut Criterion) {
    let mut g = c.benchmark_group("mirror");
    for n in [1_000usize, 10_000] {
        let messages = workload::conversation(n);
        let json = serde_json::Value::Array(messages.iter().map(Message::to_json).collect());
        let bytes = serde_json::to_vec(&json).unwrap().len() as u64;
        g.throughput(Throughput::Bytes(bytes));
        g.bench_function(BenchmarkId::new("sum_of", n), |b| {
            b.iter(|| sum_of(1, black_box(&messages), &[]))
        });
        g.bench_function(BenchmarkId::new("parse", n), |b| {
            b.iter(|| conversation_from_value(black_box(json.clone()), &ParseOptions::strict()))
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = mirror
}
criterion_main!(benches);
