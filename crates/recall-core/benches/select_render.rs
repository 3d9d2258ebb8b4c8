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

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{
    criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion, SamplingMode,
};
use recall_core::message::{Block, Message, Role, ToolResultContent};
use recall_core::policy::{Format, Policy, TrimMode};
use recall_core::render::{render, Prompt, RenderInput};
use recall_core::select::{select, HistoryMessage, Kept};
use recall_core::stable::{stable_window_start, WindowItem};
use recall_core::tokens::Tokenizer;

const SIZES: [usize; 3] = [1_000, 10_000, 100_000];
const SEED: u64 = 0x5eed_0f7e_c411;
const MAX_TOKENS: u64 = 8_000;

/// SplitMix64: small, fast, good enough for generating text.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }
}

#[rustfmt::skip]
const WORDS: [&str; 48] = [
    "the", "a", "of", "to", "and", "in", "is", "that", "for", "it", "with", "as", "on", "this",
    "be", "are", "function", "value", "error", "request", "context", "message", "token",
    "window", "budget", "history", "render", "select", "user", "assistant", "memory", "store",
    "query", "result", "config", "server", "client", "latency", "cache", "prompt", "model",
    "returns", "should", "because", "however", "example", "2024", "v0.3.1",
];

/// ASCII prose of exactly `len` chars: words, sentences, some line breaks and list items.
fn text(rng: &mut Rng, len: usize) -> String {
    let mut s = String::with_capacity(len + 16);
    while s.len() < len {
        let r = rng.next() % 100;
        if !s.is_empty() {
            s.push_str(match r {
                0..=2 => ".\n\n",
                3..=5 => "\n- ",
                6..=13 => ". ",
                14..=17 => ", ",
                _ => " ",
            });
        }
        s.push_str(WORDS[rng.range(0, WORDS.len() - 1)]);
    }
    s.truncate(len);
    s
}

/// Messages in the newest part of every conversation, generated from their own seed, so that
/// all sizes end with the same messages and select and render the same window: only the
/// length of the older history differs.
const TAIL: usize = 500;

/// The conversation: exactly `n` messages (`n` even, at least `TAIL`).
fn conversation(n: usize) -> Vec<Message> {
    let mut out = turns(&mut Rng(SEED), n - TAIL, "old");
    out.extend(turns(&mut Rng(SEED ^ 0x7a11), TAIL, "tail"));
    out
}

/// Exactly `n` messages (`n` even) of whole turns: a user message, then an assistant reply;
/// every 10th reply is a tool call (assistant `tool_use`, user `tool_result`, assistant text).
fn turns(rng: &mut Rng, n: usize, tag: &str) -> Vec<Message> {
    assert!(n % 2 == 0, "turns are 2 or 4 messages long");
    let mut out = Vec::with_capacity(n);
    let mut assistant_turns = 0usize;
    while out.len() < n {
        let len = rng.range(20, 400);
        out.push(Message::text(Role::User, text(rng, len)));
        assistant_turns += 1;
        if assistant_turns % 10 == 0 && n - out.len() >= 3 {
            let id = format!("toolu_{tag}_{assistant_turns:08}");
            let query = text(rng, 40);
            out.push(Message::blocks(
                Role::Assistant,
                vec![
                    Block::Text {
                        text: "Let me look that up.".into(),
                    },
                    Block::ToolUse {
                        id: id.clone(),
                        name: "search_documents".into(),
                        input: serde_json::json!({ "query": query, "limit": 10 }),
                    },
                ],
            ));
            let len = rng.range(2_000, 20_000);
            out.push(Message::blocks(
                Role::User,
                vec![Block::ToolResult {
                    tool_use_id: id,
                    content: ToolResultContent::Text(text(rng, len)),
                    is_error: None,
                }],
            ));
        }
        let len = rng.range(200, 4_000);
        out.push(Message::text(Role::Assistant, text(rng, len)));
    }
    out
}

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
