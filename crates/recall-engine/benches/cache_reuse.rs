//! Prompt-cache reuse (issues 21 and 22): how much of each request a provider's prefix cache
//! can serve, turn after turn, with stable windows, recall and summaries.
//!
//! A client replays a conversation turn by turn: before each user message is answered, it
//! builds the context that ends with that message (`build_context`, what `recall render`
//! runs, byte for byte what a stored conversation gives; o200k) and sends it. A provider
//! caches the request's prefix, so the next request reuses the bytes it shares with this one
//! from the start. Reuse of a turn is `common prefix(previous request, this request) / this
//! request`, in bytes of the rendered request (the JSON body's messages for
//! `anthropic`/`openai`, the text for `transcript`); a figure is the sum over turns of the
//! shared bytes over the sum of the request bytes.
//!
//! Two workloads:
//! - **chat** (the stable-window workload): the eight long conversations of the memory
//!   benchmark (`common/convo.rs`: 24–30 sessions, 696–876 short messages each, about 30
//!   tokens a message), every turn after the 100th; a 3,000-token window holds about a
//!   hundred messages, as a chat's window does;
//! - **large** (a worst case): `recall-core/benches/common/workload.rs`, 1,000 messages of
//!   200–4,000 characters with a 2,000–20,000-character tool result every tenth reply, turns
//!   after message 100; a 3,000-token window holds 4 to 12 of them, so a stable window's start
//!   jumps every few turns, and a jump shares nothing.
//!
//! Rows: stable windows without recall (`max_tokens` 3,000, the window recall leaves), stable
//! windows with `recall_tokens` 1,000 of 4,000, and sliding windows with recall (for contrast:
//! a sliding window moves every turn). Acceptance (issue 21): stable windows with recall
//! reuse at least 0.8 on the stable-window workload.
//!
//! Run: `cargo bench -p recall-engine --bench cache_reuse`
// Bench code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use recall_core::context::{build_context, ContextRequest};
use recall_core::message::{Message, Role};
use recall_core::parse::{Conversation, InputMessage};
use recall_core::policy::{Count, Format, PolicyOverrides, TrimMode};
use recall_core::render::Prompt;

#[path = "../../recall-core/benches/common/workload.rs"]
mod workload;

#[allow(dead_code)]
mod common;

const FIRST_TURN: usize = 100;

struct Row {
    name: &'static str,
    max_tokens: u32,
    recall_tokens: Option<u32>,
    trim: TrimMode,
}

const ROWS: [Row; 3] = [
    Row {
        name: "stable, no recall (max_tokens 3000)",
        max_tokens: 3_000,
        recall_tokens: None,
        trim: TrimMode::Stable,
    },
    Row {
        name: "stable, recall_tokens 1000 of 4000",
        max_tokens: 4_000,
        recall_tokens: Some(1_000),
        trim: TrimMode::Stable,
    },
    Row {
        name: "sliding, recall_tokens 1000 of 4000",
        max_tokens: 4_000,
        recall_tokens: Some(1_000),
        trim: TrimMode::Sliding,
    },
];

fn text_of(p: &Prompt) -> String {
    match p {
        Prompt::Text(t) => t.clone(),
        Prompt::Json(v) => serde_json::to_string(v).unwrap(),
    }
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

/// Sums over one conversation: shared bytes, request bytes, turns, turns that recalled.
#[derive(Default, Clone, Copy)]
struct Sums {
    shared: usize,
    total: usize,
    turns: usize,
    recalled: usize,
}

impl Sums {
    fn add(&mut self, o: Sums) {
        self.shared += o.shared;
        self.total += o.total;
        self.turns += o.turns;
        self.recalled += o.recalled;
    }
}

fn reuse(messages: &[InputMessage], row: &Row, format: Format) -> Sums {
    let mut sums = Sums::default();
    let mut previous: Option<String> = None;
    for end in 1..=messages.len() {
        let last = &messages[end - 1].message;
        // A request is sent when the history ends with a user message that has text (not a
        // tool result).
        if last.role != Role::User || !last.has_text() {
            continue;
        }
        let conv = Conversation {
            system: Some("You are a helpful assistant.".into()),
            messages: messages[..end].to_vec(),
            skipped: 0,
            warnings: Vec::new(),
        };
        let req = ContextRequest {
            overrides: PolicyOverrides {
                max_tokens: Some(Count::from(row.max_tokens)),
                recall_tokens: row.recall_tokens.map(Count::from),
                trim: Some(row.trim),
                ..PolicyOverrides::default()
            },
            ..ContextRequest::new(format)
        };
        let out = build_context(&conv, &req).expect("context");
        let text = text_of(&out.prompt);
        if end > FIRST_TURN {
            if let Some(prev) = &previous {
                let r = out.stats.recalled.as_ref();
                sums.recalled += usize::from(r.is_some_and(|r| !r.messages.is_empty()));
                sums.shared += common_prefix(prev, &text);
                sums.total += text.len();
                sums.turns += 1;
            }
        }
        previous = Some(text);
    }
    sums
}

fn input(messages: Vec<Message>) -> Vec<InputMessage> {
    messages
        .into_iter()
        .enumerate()
        .map(|(index, message)| InputMessage { index, message })
        .collect()
}

fn table(name: &str, conversations: &[Vec<InputMessage>]) {
    let formats = [Format::Anthropic, Format::Openai, Format::Transcript];
    println!("{name}:\n");
    println!(
        "| window | {} | turns recalling |",
        formats.map(|f| f.to_string()).join(" | ")
    );
    println!("|---|{}---:|", "---:|".repeat(formats.len()));
    for row in &ROWS {
        let mut cells = Vec::new();
        let mut recalling = String::new();
        for &f in &formats {
            let mut all = Sums::default();
            for c in conversations {
                all.add(reuse(c, row, f));
            }
            cells.push(format!(
                "{:.3}",
                all.shared as f64 / all.total.max(1) as f64
            ));
            recalling = format!("{} of {}", all.recalled, all.turns);
        }
        println!("| {} | {} | {recalling} |", row.name, cells.join(" | "));
    }
    println!();
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let chats: Vec<Vec<InputMessage>> = (0..if quick { 2 } else { 8 })
        .map(|k| {
            let c = common::convo::conversation(k);
            input(
                c.turns
                    .iter()
                    .map(|t| {
                        Message::text(if t.user { Role::User } else { Role::Assistant }, &t.text)
                    })
                    .collect(),
            )
        })
        .collect();
    table(
        &format!(
            "Prompt-cache reuse, chat workload ({} conversations, turns after message {FIRST_TURN})",
            chats.len()
        ),
        &chats,
    );
    let large = input(workload::conversation(1_000));
    table(
        &format!("Prompt-cache reuse, large-message workload (1,000 messages, turns after message {FIRST_TURN})"),
        &[large],
    );
}
