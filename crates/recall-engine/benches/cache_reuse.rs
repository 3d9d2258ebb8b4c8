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
//! windows with `recall_tokens` 1,000 of 4,000, sliding windows with recall (for contrast:
//! a sliding window moves every turn), and stable windows with summaries (`summary_tokens`
//! 1,000 of 4,000). Acceptance: stable windows with recall (issue 21) and with summaries
//! (issue 22) reuse at least 0.8 on the stable-window workload. With an embedding model in
//! the environment (`RECALL_EMBED_MODEL` or `RECALL_EMBED_URL`), one more figure: the chat
//! workload's recall row as `recall chat` runs it, through the engine on SQLite with lexical
//! and semantic recall fused.
//!
//! Summaries are compacted as `recall chat`/`recall serve` do: after a turn whose window
//! starts past the summary in force, the next request carries the new one. The summariser is
//! simulated (its text: the newest 2,000 characters of what it summarised, about 450 tokens,
//! so the bytes change when, and only when, a new version is committed); its calls and tokens
//! per 1,000 appended messages are counted as the engine would make them (calls of at most
//! 6,000 tokens of messages, `compaction_chunks`), and printed as the cost table.
//!
//! Per turn (issue 37), on the chat workload: the tokens a provider cache can serve (the prefix
//! shared with the previous request) and those it cannot, with the turns whose uncached part
//! exceeds the recall budget plus the messages from the previous question on; such a turn is
//! allowed only where the stable window's start moved or a new summary was committed (the
//! bench fails on any other).
//!
//! Run: `cargo bench -p recall-engine --bench cache_reuse`
// Bench code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use recall_core::context::{build_context, ContextRequest};
use recall_core::message::{Message, Role};
use recall_core::parse::{Conversation, InputMessage};
use recall_core::policy::{Count, Format, PolicyOverrides, TrimMode};
use recall_core::render::Prompt;
use recall_engine::ConversationRef;

#[path = "../../recall-core/benches/common/workload.rs"]
mod workload;

#[allow(dead_code)]
mod common;

const FIRST_TURN: usize = 100;

struct Row {
    name: &'static str,
    max_tokens: u32,
    recall_tokens: Option<u32>,
    summary_tokens: Option<u32>,
    trim: TrimMode,
}

const ROWS: [Row; 4] = [
    Row {
        name: "stable, no recall (max_tokens 3000)",
        max_tokens: 3_000,
        recall_tokens: None,
        summary_tokens: None,
        trim: TrimMode::Stable,
    },
    Row {
        name: "stable, recall_tokens 1000 of 4000",
        max_tokens: 4_000,
        recall_tokens: Some(1_000),
        summary_tokens: None,
        trim: TrimMode::Stable,
    },
    Row {
        name: "sliding, recall_tokens 1000 of 4000",
        max_tokens: 4_000,
        recall_tokens: Some(1_000),
        summary_tokens: None,
        trim: TrimMode::Sliding,
    },
    Row {
        name: "stable, summary_tokens 1000 of 4000",
        max_tokens: 4_000,
        recall_tokens: None,
        summary_tokens: Some(1_000),
        trim: TrimMode::Stable,
    },
];

/// Summariser calls' input allowance per call (the engine's `max_input_tokens` for a hosted
/// backend, which names no context size).
const MAX_INPUT_TOKENS: u64 = 6_000;
/// What the summariser's prompt adds to the messages: its system prompt and instructions.
const PROMPT_OVERHEAD_TOKENS: u64 = 200;

fn text_of(p: &Prompt) -> String {
    match p {
        Prompt::Text(t) => t.clone(),
        Prompt::Json(v) => serde_json::to_string(v).unwrap(),
    }
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

/// Sums over one conversation: shared bytes, request bytes, turns, turns that recalled; and
/// for summaries, the summariser's calls, input and output tokens, and the messages appended.
#[derive(Default, Clone, Copy)]
struct Sums {
    shared: usize,
    total: usize,
    turns: usize,
    recalled: usize,
    calls: u64,
    input_tokens: u64,
    output_tokens: u64,
    appended: u64,
    section_tokens: u64,
}

impl Sums {
    /// One turn: its request `text`, the previous request `prev`, its context `out`.
    fn count(&mut self, out: &recall_core::ContextOutput, prev: &str, text: &str) {
        let r = out.stats.recalled.as_ref();
        self.recalled += usize::from(r.is_some_and(|r| !r.messages.is_empty()));
        self.section_tokens += r.map_or(0, |r| r.tokens);
        self.shared += common_prefix(prev, text);
        self.total += text.len();
        self.turns += 1;
    }

    fn add(&mut self, o: Sums) {
        self.shared += o.shared;
        self.total += o.total;
        self.turns += o.turns;
        self.recalled += o.recalled;
        self.calls += o.calls;
        self.input_tokens += o.input_tokens;
        self.output_tokens += o.output_tokens;
        self.appended += o.appended;
        self.section_tokens += o.section_tokens;
    }
}

/// The request of one turn under `row`'s policy, with the committed `summary` if any.
fn request(
    row: &Row,
    format: Format,
    tokenizer: Option<recall_core::tokens::Tokenizer>,
    summary: &Option<(usize, String)>,
) -> ContextRequest {
    ContextRequest {
        overrides: PolicyOverrides {
            max_tokens: Some(Count::from(row.max_tokens)),
            // A row without a share is the window alone (the default would recall).
            recall_tokens: Some(Count::from(row.recall_tokens.unwrap_or(0))),
            summarize: row.summary_tokens.map(|_| true),
            summary_tokens: row.summary_tokens.map(Count::from),
            trim: Some(row.trim),
            tokenizer,
            ..PolicyOverrides::default()
        },
        summary: summary.as_ref().map(|(_, t)| t.clone()),
        ..ContextRequest::new(format)
    }
}

fn reuse(messages: &[InputMessage], row: &Row, format: Format) -> Sums {
    let mut sums = Sums {
        appended: messages.len() as u64,
        ..Sums::default()
    };
    let mut previous: Option<String> = None;
    // The committed summary: the index it ends at and its text.
    let mut summary: Option<(usize, String)> = None;
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
        let req = request(row, format, None, &summary);
        let out = build_context(&conv, &req).expect("context");
        if let Some(budget) = row.summary_tokens {
            compact_after(&mut summary, &mut sums, messages, &out, u64::from(budget));
        }
        let text = text_of(&out.prompt);
        if end > FIRST_TURN {
            if let Some(prev) = &previous {
                sums.count(&out, prev, &text);
            }
        }
        previous = Some(text);
    }
    sums
}

/// Tokens of every turn of one row, for the per-turn table: what a provider cache can serve
/// (the request's prefix shared with the previous request) and what it cannot (the rest),
/// and the turns whose uncached part exceeds the recall budget plus the messages from the
/// previous question on, by cause.
#[derive(Default)]
struct TurnCosts {
    cached: Vec<u64>,
    uncached: Vec<u64>,
    /// Over the bound because the stable window's start moved (a jump shares nothing).
    over_window_moved: usize,
    /// Over the bound because a new summary was committed.
    over_summary: usize,
    /// Over the bound for any other reason: a defect (the bench fails).
    over_other: Vec<String>,
}

/// Per-message framing a rendered prompt adds around a message's text, in tokens (its turn
/// label and the separator before it; generous).
const FRAMING_TOKENS: u64 = 16;

fn per_turn(messages: &[InputMessage], row: &Row, costs: &mut TurnCosts) {
    use recall_core::tokens::TokenCounter;
    let counter = recall_core::tokens::Tokenizer::O200k;
    let mut previous: Option<(String, usize, Option<usize>, Option<String>)> = None;
    let mut summary: Option<(usize, String)> = None;
    let mut scratch = Sums::default();
    for end in 1..=messages.len() {
        let last = &messages[end - 1].message;
        if last.role != Role::User || !last.has_text() {
            continue;
        }
        let conv = Conversation {
            system: Some("You are a helpful assistant.".into()),
            messages: messages[..end].to_vec(),
            skipped: 0,
            warnings: Vec::new(),
        };
        let req = request(row, Format::Transcript, Some(counter), &summary);
        let out = build_context(&conv, &req).expect("context");
        let text = text_of(&out.prompt);
        let first = out.kept.first().map(|k| k.index);
        let summary_text = summary.as_ref().map(|(_, t)| t.clone());
        if let Some(budget) = row.summary_tokens {
            compact_after(
                &mut summary,
                &mut scratch,
                messages,
                &out,
                u64::from(budget),
            );
        }
        if end > FIRST_TURN {
            if let Some((prev, prev_end, prev_first, prev_summary)) = &previous {
                let mut shared = common_prefix(prev, &text);
                while !text.is_char_boundary(shared) {
                    shared -= 1;
                }
                let cached = counter.count(&text[..shared]) as u64;
                let uncached = counter.count(&text[shared..]) as u64;
                // The previous question and everything after it are new to this request's
                // tail (the previous recalled section sat just before that question).
                let new: u64 = messages[prev_end - 1..end]
                    .iter()
                    .map(|m| {
                        counter.count(&recall_core::extract::measured_text(&m.message)) as u64
                            + FRAMING_TOKENS
                    })
                    .sum();
                let bound = u64::from(row.recall_tokens.unwrap_or(0)) + new;
                if uncached > bound {
                    if first != *prev_first {
                        costs.over_window_moved += 1;
                    } else if summary_text != *prev_summary {
                        costs.over_summary += 1;
                    } else {
                        costs.over_other.push(format!(
                            "{}: turn ending at message {end}: {uncached} uncached tokens > {bound}",
                            row.name
                        ));
                    }
                }
                costs.cached.push(cached);
                costs.uncached.push(uncached);
            }
        }
        previous = Some((text, end, first, summary_text));
    }
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// The per-turn table (issue 37): for each row, on the chat workload in the `transcript`
/// format (a text prompt: its tokens are the model's, with no JSON escaping to count), the
/// tokens a provider cache can serve and those it cannot, per turn.
fn per_turn_table(conversations: &[Vec<InputMessage>]) {
    println!(
        "Per turn, chat workload, transcript (o200k tokens; bound: the recall budget plus the \
         messages from the previous question on, {FRAMING_TOKENS} tokens of framing each):\n"
    );
    println!(
        "| window | turns | mean cached | mean uncached | uncached p50 / p95 / max | over the bound: window moved / summary committed / other |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    let mut defects = Vec::new();
    for row in &ROWS {
        let mut c = TurnCosts::default();
        for m in conversations {
            per_turn(m, row, &mut c);
        }
        let n = c.uncached.len().max(1) as f64;
        let mean = |v: &[u64]| v.iter().sum::<u64>() as f64 / n;
        let mut sorted = c.uncached.clone();
        sorted.sort_unstable();
        println!(
            "| {} | {} | {:.0} | {:.0} | {} / {} / {} | {} / {} / {} |",
            row.name,
            c.uncached.len(),
            mean(&c.cached),
            mean(&c.uncached),
            percentile(&sorted, 0.5),
            percentile(&sorted, 0.95),
            sorted.last().copied().unwrap_or(0),
            c.over_window_moved,
            c.over_summary,
            c.over_other.len()
        );
        defects.extend(c.over_other);
    }
    println!();
    assert!(
        defects.is_empty(),
        "turns whose uncached tokens exceed the recall budget plus the new messages with \
         neither a window move nor a new summary:\n{}",
        defects.join("\n")
    );
}

/// After a turn: when its window starts past the summary in force, the summariser writes the
/// next one (from that summary and the messages in between, in calls of at most
/// [`MAX_INPUT_TOKENS`]), as `Engine::compact_conversation` does.
fn compact_after(
    summary: &mut Option<(usize, String)>,
    sums: &mut Sums,
    messages: &[InputMessage],
    out: &recall_core::ContextOutput,
    budget: u64,
) {
    use recall_core::tokens::TokenCounter;
    let Some(first) = out.kept.first().map(|k| k.index) else {
        return;
    };
    let from = summary.as_ref().map_or(0, |(to, _)| to + 1);
    if out.stats.dropped == 0 || first <= from {
        return;
    }
    let counter = recall_core::tokens::Tokenizer::O200k;
    let costs: Vec<(i64, u64)> = (from..first)
        .map(|i| {
            let t = recall_core::extract::measured_text(&messages[i].message);
            (
                i as i64,
                counter.count(&t) as u64 + recall_core::summary::EXCERPT_OVERHEAD_TOKENS,
            )
        })
        .collect();
    let mut previous_tokens = summary.as_ref().map_or(0, |(_, t)| counter.count(t) as u64);
    let mut start = 0;
    for end in recall_core::summary::compaction_chunks(&costs, MAX_INPUT_TOKENS) {
        let chunk: u64 = costs
            .iter()
            .filter(|(i, _)| *i as usize >= from + start && *i <= end)
            .map(|(_, t)| t)
            .sum();
        let all: String = messages[..=end as usize]
            .iter()
            .map(|m| recall_core::extract::measured_text(&m.message))
            .collect::<Vec<_>>()
            .join(" ");
        let cut = all.len().saturating_sub(2_000);
        let cut = (cut..all.len())
            .find(|&i| all.is_char_boundary(i))
            .unwrap_or(0);
        let text = all[cut..].to_string();
        let out_tokens = counter.count(&text) as u64;
        assert!(out_tokens < budget, "the simulated summary fits");
        sums.calls += 1;
        sums.input_tokens += previous_tokens + chunk + PROMPT_OVERHEAD_TOKENS;
        sums.output_tokens += out_tokens;
        previous_tokens = out_tokens;
        start = end as usize + 1 - from;
        *summary = Some((end as usize, text));
    }
}

/// Reuse of a chat as `recall chat` runs it on a stored conversation with an embedder: each
/// message appended to a SQLite store and embedded before the next (the background catch-up,
/// done in step so the index is always complete), and before each user message is answered,
/// `Engine::context` of the conversation that ends with it (its text the query), with
/// `row`'s policy.
fn reuse_stored(
    rt: &tokio::runtime::Runtime,
    engine: &recall_engine::Engine,
    turns: &[common::convo::Turn],
    row: &Row,
    format: Format,
) -> Sums {
    use recall_engine::DEFAULT_TENANT as T;
    let conv = rt
        .block_on(engine.create_conversation(
            T,
            recall_engine::store::NewConversation {
                system_prompt: Some("You are a helpful assistant.".into()),
                ..Default::default()
            },
        ))
        .unwrap();
    let mut sums = Sums {
        appended: turns.len() as u64,
        ..Sums::default()
    };
    let mut previous: Option<String> = None;
    for (i, t) in turns.iter().enumerate() {
        let role = if t.user { "user" } else { "assistant" };
        let value = serde_json::json!({ "role": role, "content": t.text });
        rt.block_on(engine.append_message(ConversationRef::new(T, &conv.id), value))
            .unwrap();
        rt.block_on(engine.catch_up_vectors(T, Some(&conv.id), usize::MAX))
            .unwrap();
        if !t.user {
            continue;
        }
        let req = ContextRequest {
            overrides: PolicyOverrides {
                max_tokens: Some(Count::from(row.max_tokens)),
                // A row without a share is the window alone (the default would recall).
                recall_tokens: Some(Count::from(row.recall_tokens.unwrap_or(0))),
                trim: Some(row.trim),
                ..PolicyOverrides::default()
            },
            ..ContextRequest::new(format)
        };
        let out = rt
            .block_on(engine.context(ConversationRef::new(T, &conv.id), &req))
            .unwrap();
        let text = text_of(&out.prompt);
        if i + 1 > FIRST_TURN {
            if let Some(prev) = &previous {
                sums.count(&out, prev, &text);
            }
        }
        previous = Some(text);
    }
    sums
}

/// The row of the chat workload with an embedder (`RECALL_EMBED_MODEL` or
/// `RECALL_EMBED_URL`, as `recall` reads them): `None` without one.
fn embedder_row(quick: bool) -> Option<(String, Sums)> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let embedder = match rt.block_on(recall_engine::embed::from_env()) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("cache_reuse: the row with an embedder skipped: no embedder ({e})");
            return None;
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("reuse.db").display());
    let engine = rt
        .block_on(recall_engine::Engine::open(
            &url,
            recall_engine::Limits::default(),
        ))
        .unwrap()
        .with_index_budget(None)
        .with_embedder(std::sync::Arc::from(embedder));
    let model = engine.embedder().unwrap().model().to_string();
    let mut all = Sums::default();
    for k in 0..if quick { 2 } else { 8 } {
        let c = common::convo::conversation(k);
        all.add(reuse_stored(
            &rt,
            &engine,
            &c.turns,
            &ROWS[1],
            Format::Anthropic,
        ));
    }
    Some((model, all))
}

fn input(messages: Vec<Message>) -> Vec<InputMessage> {
    messages
        .into_iter()
        .enumerate()
        .map(|(index, message)| InputMessage { index, message })
        .collect()
}

/// The mean tokens of the recalled section per turn.
fn mean_section(s: &Sums) -> String {
    format!("{:.0}", s.section_tokens as f64 / s.turns.max(1) as f64)
}

fn table(name: &str, conversations: &[Vec<InputMessage>]) {
    let formats = [Format::Anthropic, Format::Openai, Format::Transcript];
    println!("{name}:\n");
    println!(
        "| window | {} | turns recalling | mean section tokens |",
        formats.map(|f| f.to_string()).join(" | ")
    );
    println!("|---|{}---:|---:|", "---:|".repeat(formats.len()));
    let mut costs: Vec<String> = Vec::new();
    for row in &ROWS {
        let mut cells = Vec::new();
        let (mut recalling, mut section) = (String::new(), String::new());
        for &f in &formats {
            let mut all = Sums::default();
            for c in conversations {
                all.add(reuse(c, row, f));
            }
            if row.summary_tokens.is_some() && f == Format::Anthropic {
                let per = |x: u64| x as f64 * 1000.0 / all.appended.max(1) as f64;
                costs.push(format!(
                    "| {} | {:.1} | {:.0} | {:.0} |",
                    row.name,
                    per(all.calls),
                    per(all.input_tokens),
                    per(all.output_tokens)
                ));
            }
            cells.push(format!(
                "{:.3}",
                all.shared as f64 / all.total.max(1) as f64
            ));
            recalling = format!("{} of {}", all.recalled, all.turns);
            section = mean_section(&all);
        }
        println!(
            "| {} | {} | {recalling} | {section} |",
            row.name,
            cells.join(" | ")
        );
    }
    println!();
    println!("Summariser cost per 1,000 appended messages:\n");
    println!("| window | calls | input tokens | output tokens |");
    println!("|---|---:|---:|---:|");
    for c in costs {
        println!("{c}");
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
    per_turn_table(&chats);
    if let Some((model, s)) = embedder_row(quick) {
        println!(
            "With an embedder ({model}; stored conversations on SQLite, `Engine::context`, \
             anthropic): {} with {:.3}, {} of {} turns recalling, mean section {} tokens\n",
            ROWS[1].name,
            s.shared as f64 / s.total.max(1) as f64,
            s.recalled,
            s.turns,
            mean_section(&s)
        );
    }
    let large = input(workload::conversation(1_000));
    table(
        &format!("Prompt-cache reuse, large-message workload (1,000 messages, turns after message {FIRST_TURN})"),
        &[large],
    );
}
