//! Prompt-cache reuse with recall (issue 21): how much of each request a provider's prefix
//! cache can serve, turn after turn, on the stable-window workload.
//!
//! The workload is `common/workload.rs` (1,000 messages; user text, assistant replies, a tool
//! call every 10th reply). A client replays it turn by turn: before each user message is
//! answered, it builds the context that ends with that message (`build_context`, what `recall
//! render` runs; 4,000 o200k tokens) and sends it. A provider caches the request's prefix, so
//! the next request reuses the bytes it shares with this one from the start. Reuse of a turn
//! is `common prefix(previous request, this request) / this request`, in bytes of the
//! rendered request (the JSON body's messages for `anthropic`/`openai`, the text for
//! `transcript`); the figure is the sum over turns of the shared bytes over the sum of the
//! request bytes (turns 100 to the last).
//!
//! Rows: stable windows without recall (`max_tokens` 3,000, the window recall leaves), stable
//! windows with `recall_tokens` 1,000 of 4,000 (the section goes into the newest user message,
//! after every byte the previous request had), and sliding windows with recall (for contrast:
//! a sliding window moves every turn). Acceptance: stable windows with recall reuse at least
//! 0.8.
//!
//! Run: `cargo bench -p recall-core --bench cache_reuse`
// Bench code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use recall_core::context::{build_context, ContextRequest};
use recall_core::message::Role;
use recall_core::parse::{Conversation, InputMessage};
use recall_core::policy::{Count, Format, PolicyOverrides, TrimMode};
use recall_core::render::Prompt;

#[path = "common/workload.rs"]
mod workload;

const MESSAGES: usize = 1_000;
const FIRST_TURN: usize = 100;

struct Row {
    name: &'static str,
    max_tokens: u32,
    recall_tokens: Option<u32>,
    trim: TrimMode,
}

fn text_of(p: &Prompt) -> String {
    match p {
        Prompt::Text(t) => t.clone(),
        Prompt::Json(v) => serde_json::to_string(v).unwrap(),
    }
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

/// Shared bytes over request bytes, and how many turns recalled something.
fn reuse(messages: &[InputMessage], row: &Row, format: Format) -> (f64, usize, usize) {
    let (mut shared, mut total, mut turns, mut recalled) = (0usize, 0usize, 0usize, 0usize);
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
                recalled += usize::from(r.is_some_and(|r| !r.messages.is_empty()));
                shared += common_prefix(prev, &text);
                total += text.len();
                turns += 1;
            }
        }
        previous = Some(text);
    }
    (shared as f64 / total.max(1) as f64, turns, recalled)
}

fn main() {
    let messages: Vec<InputMessage> = workload::conversation(MESSAGES)
        .into_iter()
        .enumerate()
        .map(|(index, message)| InputMessage { index, message })
        .collect();
    let rows = [
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
    let formats = [Format::Anthropic, Format::Openai, Format::Transcript];
    println!(
        "Prompt-cache reuse, {MESSAGES}-message workload, turns after message {FIRST_TURN}:\n"
    );
    println!(
        "| window | {} | turns recalling |",
        formats.map(|f| f.to_string()).join(" | ")
    );
    println!("|---|{}---:|", "---:|".repeat(formats.len()));
    for row in &rows {
        let mut cells = Vec::new();
        let mut recalling = String::new();
        for &f in &formats {
            let (r, turns, recalled) = reuse(&messages, row, f);
            cells.push(format!("{r:.3}"));
            recalling = format!("{recalled} of {turns}");
        }
        println!("| {} | {} | {recalling} |", row.name, cells.join(" | "));
    }
}
