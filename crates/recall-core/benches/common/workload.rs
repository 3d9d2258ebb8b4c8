//! The conversation workload of the context benchmarks, shared by
//! `recall-core/benches/select_render.rs` (selection + rendering in memory) and
//! `recall-engine/benches/store.rs` (the same context from a database), which include this file
//! with `#[path]`. One copy, so both benchmarks measure the same conversations: the same
//! generator, the same seed, the same messages at every size.
//!
//! Deterministic (seeded SplitMix64, no `rand`): alternating user (20–400 chars) and assistant
//! (200–4,000 chars) text messages; every 10th assistant turn is a tool call (an assistant
//! message with a short text and a `tool_use` block, a user message holding the `tool_result`
//! with 2,000–20,000 chars, then an assistant text reply). The newest `TAIL` messages are the
//! same at every size, so every size keeps the same window and only the length of the older
//! history changes.

use recall_core::message::{Block, Message, Role, ToolResultContent};

const SEED: u64 = 0x5eed_0f7e_c411;

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
pub const TAIL: usize = 500;

/// The conversation: exactly `n` messages (`n` even, at least `TAIL`).
pub fn conversation(n: usize) -> Vec<Message> {
    let mut out = turns(&mut Rng(SEED), n - TAIL, "old");
    out.extend(turns(&mut Rng(SEED ^ 0x7a11), TAIL, "tail"));
    out
}

/// Exactly `n` messages (`n` even) of whole turns: a user message, then an assistant reply;
/// every 10th reply is a tool call (assistant `tool_use`, user `tool_result`, assistant text).
fn turns(rng: &mut Rng, n: usize, tag: &str) -> Vec<Message> {
    assert!(n.is_multiple_of(2), "turns are 2 or 4 messages long");
    let mut out = Vec::with_capacity(n);
    let mut assistant_turns = 0usize;
    while out.len() < n {
        let len = rng.range(20, 400);
        out.push(Message::text(Role::User, text(rng, len)));
        assistant_turns += 1;
        if assistant_turns.is_multiple_of(10) && n - out.len() >= 3 {
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
