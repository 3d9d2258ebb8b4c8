//! Context selection + transcript rendering over long conversations.
//!
//! Workload (deterministic, seeded): alternating user (20–400 chars) and assistant
//! (200–4,000 chars) text messages; every 10th assistant turn is a tool call (an assistant
//! message with a short text and a `tool_use` block, a user message holding the `tool_result`
//! with 2,000–20,000 chars, then an assistant text reply). The newest 500 messages are the
//! same at every size, so every size selects and renders the same window and only the length
//! of the older history varies. Tokens are counted once with o200k outside the timed loop;
//! the timed part is `select` with the transcript policy at `max_tokens = 8000`, then
//! `render(Format::Transcript, …)` with escaping on.
//!
//! Run: `cargo bench -p recall-core --bench select_render`
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{
    criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion, SamplingMode,
};
use recall_core::policy::{Format, Policy, TrimMode};
use recall_core::render::{render, Prompt, RenderInput};
use recall_core::select::{select, HistoryMessage, Kept};
use recall_core::stable::{stable_window_start, WindowItem};
use recall_core::tokens::Tokenizer;

const SIZES: [usize; 3] = [1_000, 10_000, 100_000];
const MAX_TOKENS: u64 = 8_000;

#[path = "common/workload.rs"]
mod workload;
use workload::conversation;

fn history(n: usize) -> Vec<HistoryMessage> {
    conversation(n)
        .into_iter()
        .enumerate()
        .map(|(i, m)| HistoryMessage::new(i, m, &Tokenizer::O200k))
        .collect()
}

fn policy() -> Policy {
    let mut p = Format::Transcript.default_policy();
    p.max_tokens = Some(MAX_TOKENS);
    p
}

fn render_kept(kept: &[Kept]) -> Prompt {
    render(
        Format::Transcript,
        &RenderInput {
            system_parts: &[],
            kept,
            current: None,
            escape: true,
            recalled: None,
            summary: None,
        },
    )
}

fn select_render(history: &[HistoryMessage], policy: &Policy, window_start: usize) -> Prompt {
    let sel = select(history, policy, &Tokenizer::O200k, window_start);
    render_kept(&sel.kept)
}

/// The stable window start: each message costs its stored token measure (the transcript
/// policy has no per-message caps), cut points are user turns outside tool pairs.
fn stable_start(history: &[HistoryMessage], policy: &Policy) -> usize {
    let budget = policy.max_tokens.expect("a token budget is set");
    let items: Vec<WindowItem> = history
        .iter()
        .map(|h| WindowItem {
            cost: h.measure.tokens,
            cut_point: h.message.is_cut_point(),
        })
        .collect();
    stable_window_start(&items, budget, policy.low_water)
}

fn describe(label: &str, history: &[HistoryMessage], policy: &Policy, start: usize) {
    let sel = select(history, policy, &Tokenizer::O200k, start);
    let Prompt::Text(text) = render_kept(&sel.kept) else {
        unreachable!("transcript is a text format")
    };
    eprintln!(
        "{label}: {} messages, window start {start}, kept {} ({} tokens, {} chars), prompt {} bytes",
        history.len(),
        sel.kept.len(),
        sel.stats.tokens,
        sel.stats.chars,
        text.len()
    );
}

/// Many short samples of equal size: each lasts a fraction of a millisecond, so on a shared
/// machine most samples run without being preempted and the median reflects the code, not
/// the neighbours.
fn group<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(name);
    g.sampling_mode(SamplingMode::Flat);
    g
}

fn benches(c: &mut Criterion) {
    let policy = policy();
    let histories: Vec<(usize, Vec<HistoryMessage>)> =
        SIZES.iter().map(|&n| (n, history(n))).collect();
    for (n, h) in &histories {
        describe(&format!("sliding {n}"), h, &policy, 0);
    }

    let mut g = group(c, "select_render");
    for (n, h) in &histories {
        g.bench_with_input(BenchmarkId::from_parameter(n), h, |b, h| {
            b.iter(|| select_render(black_box(h), black_box(&policy), 0))
        });
    }
    g.finish();

    let (_, h10k) = histories
        .iter()
        .find(|(n, _)| *n == 10_000)
        .expect("10k history");

    let mut g = group(c, "parts_10k");
    g.bench_function("select_sliding", |b| {
        b.iter(|| select(black_box(h10k), black_box(&policy), &Tokenizer::O200k, 0))
    });
    let kept = select(h10k, &policy, &Tokenizer::O200k, 0).kept;
    g.bench_function("render_transcript", |b| {
        b.iter(|| render_kept(black_box(&kept)))
    });
    g.finish();

    let mut stable = policy.clone();
    stable.trim = TrimMode::Stable;
    let start = stable_start(h10k, &stable);
    describe("stable 10000", h10k, &stable, start);
    let mut g = group(c, "stable_10k");
    g.bench_function("select", |b| {
        b.iter(|| {
            select(
                black_box(h10k),
                black_box(&stable),
                &Tokenizer::O200k,
                start,
            )
        })
    });
    g.bench_function("select_render", |b| {
        b.iter(|| select_render(black_box(h10k), black_box(&stable), start))
    });
    g.finish();
}

criterion_group! {
    name = select_render_benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
        .sample_size(1_000)
        .nresamples(20_000);
    targets = benches
}
criterion_main!(select_render_benches);
