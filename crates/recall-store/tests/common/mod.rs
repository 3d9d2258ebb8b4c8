//! Shared test support: real databases (a temporary SQLite file, a fresh PostgreSQL database per
//! test from `recall_testkit::pg`), a small seeded PRNG, random conversations and policies, and the in-memory reference
//! the store's context windows are compared against.

#![allow(dead_code)]

/// Runs each named suite function (`async fn name(s: &dyn Store)`) on a temporary SQLite
/// file and on a fresh PostgreSQL database, as `sqlite::name` and `postgres::name` (the test
/// files say `#[macro_use] mod common;`).
#[allow(unused_macros)]
macro_rules! suite {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = crate::common::sqlite().await;
                    super::$name(&db.store).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let Some(db) = crate::common::pg().await else { return };
                    super::$name(&db.store).await;
                }
            )*
        }
    };
}

use std::path::PathBuf;

use recall_core::message::{Block, DocumentKind, Message, Role, ToolResultContent};
use recall_core::policy::{Policy, TrimMode};
use recall_core::select::{select, HistoryMessage, Selection, Stats, TRIM_NOTICE};
use recall_core::tokens::Tokenizer;
use recall_store::{MessageStatus, NewMessage, PgStore, SqliteStore, Store, StoredMessage, Window};
use serde_json::{json, Map, Value};

// ---------------------------------------------------------------------------------------------
// Databases
// ---------------------------------------------------------------------------------------------

/// A store on a fresh SQLite file in a temporary directory (removed on drop).
pub struct SqliteDb {
    pub store: SqliteStore,
    pub path: PathBuf,
    _dir: tempfile::TempDir,
}

pub async fn sqlite() -> SqliteDb {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("recall.db");
    let store = SqliteStore::open(&path).await.expect("open sqlite store");
    SqliteDb {
        store,
        path,
        _dir: dir,
    }
}

pub use recall_testkit::pg::{pg_database, PgDatabase};

/// A store on a fresh PostgreSQL database.
pub struct PgDb {
    pub store: PgStore,
    pub db: PgDatabase,
}

pub async fn pg() -> Option<PgDb> {
    let db = pg_database().await?;
    let store = PgStore::connect(&db.url).await.expect("connect pg store");
    Some(PgDb { store, db })
}

// ---------------------------------------------------------------------------------------------
// A seeded PRNG (splitmix64): reproducible failures, no dependency.
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

// ---------------------------------------------------------------------------------------------
// Random conversations
// ---------------------------------------------------------------------------------------------

const WORDS: &[&str] = &[
    "the",
    "memory",
    "of",
    "a",
    "conversation",
    "is",
    "kept",
    "héllo",
    "naïve",
    "日本語",
    "テキスト",
    "🙂",
    "👩‍💻",
    "fn",
    "main()",
    "{",
    "}",
    "=>",
    "\n",
    "  ",
    "Human:",
    "Assistant:",
    "tokens",
    "window",
    "stable",
    "cache",
    "0.5",
    "1234567",
    "ünïcödé",
    "Ωμέγα",
    "\t",
    "---",
    "<tag>",
    "&amp;",
    "\"quoted\"",
    "back\\slash",
];

/// Random text of about `words` words.
pub fn text(rng: &mut Rng, words: u64) -> String {
    let mut s = String::new();
    for i in 0..words.max(1) {
        if i > 0 && rng.chance(0.8) {
            s.push(' ');
        }
        s.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
    }
    if s.trim().is_empty() {
        s.push_str("blank");
    }
    s
}

/// Random text of `lo..=hi` words.
pub fn text_in(rng: &mut Rng, lo: u64, hi: u64) -> String {
    let n = rng.range(lo, hi);
    text(rng, n)
}

/// Random text of a random length: mostly short, sometimes long.
pub fn long_text(rng: &mut Rng) -> String {
    let n = words(rng);
    text(rng, n)
}

/// A text length: mostly short, sometimes long.
fn words(rng: &mut Rng) -> u64 {
    match rng.below(10) {
        0..=5 => rng.range(1, 25),
        6..=8 => rng.range(25, 120),
        _ => rng.range(300, 900),
    }
}

/// A random JSON value for tool inputs: nested objects, arrays, floats, unicode.
pub fn json_value(rng: &mut Rng, depth: u32) -> Value {
    match rng.below(if depth > 2 { 5 } else { 7 }) {
        0 => Value::Null,
        1 => Value::Bool(rng.chance(0.5)),
        2 => json!(rng.next_u64() >> rng.below(64)),
        3 => {
            // Floats that need every digit to survive a round trip.
            let f = (rng.f64() - 0.5) * 10f64.powi(rng.range(0, 30) as i32 - 15);
            json!(f)
        }
        4 => Value::String(text_in(rng, 1, 8)),
        5 => Value::Array(
            (0..rng.below(4))
                .map(|_| json_value(rng, depth + 1))
                .collect(),
        ),
        _ => {
            let mut m = Map::new();
            for i in 0..rng.range(1, 4) {
                m.insert(
                    format!("k{i}_{}", rng.below(100)),
                    json_value(rng, depth + 1),
                );
            }
            Value::Object(m)
        }
    }
}

fn tool_input(rng: &mut Rng) -> Value {
    let mut m = Map::new();
    m.insert("query".into(), Value::String(text_in(rng, 1, 10)));
    m.insert("x".into(), json_value(rng, 0));
    Value::Object(m)
}

/// A random conversation shaped like real traffic: turns, assistant replies (some with
/// thinking), tool exchanges (several tool uses, results split over messages, long results,
/// results with text), orphan tool uses and results, documents, images, unknown blocks and
/// system messages anywhere. At least `n` messages.
pub fn conversation(rng: &mut Rng, n: usize) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::new();
    let mut tool_id = 0u64;
    while out.len() < n {
        match rng.below(20) {
            0..=6 => out.push(user_message(rng)),
            7..=10 => out.push(assistant_message(rng)),
            11..=14 => {
                // A tool exchange: one assistant message with k tool uses, results in 1..=k
                // user messages; sometimes a result is missing (interrupted).
                let k = rng.range(1, 3);
                let ids: Vec<String> = (0..k)
                    .map(|_| {
                        tool_id += 1;
                        format!("toolu_{tool_id:04}")
                    })
                    .collect();
                let mut blocks = Vec::new();
                if rng.chance(0.3) {
                    blocks.push(thinking(rng));
                }
                if rng.chance(0.5) {
                    blocks.push(Block::Text {
                        text: text_in(rng, 1, 20),
                    });
                }
                for id in &ids {
                    blocks.push(Block::ToolUse {
                        id: id.clone(),
                        name: rng
                            .pick(&["search_documents", "run_code", "mcp__fs__read"])
                            .to_string(),
                        input: tool_input(rng),
                    });
                }
                out.push(Message::blocks(Role::Assistant, blocks));
                let mut results: Vec<Block> = Vec::new();
                for id in &ids {
                    if rng.chance(0.9) {
                        results.push(tool_result(rng, id));
                    }
                }
                while !results.is_empty() {
                    let take = rng.range(1, results.len() as u64) as usize;
                    let mut part: Vec<Block> = results.drain(..take).collect();
                    if rng.chance(0.15) {
                        part.push(Block::Text {
                            text: text_in(rng, 1, 10),
                        });
                    }
                    out.push(Message::blocks(Role::User, part));
                }
            }
            15 => {
                // A tool result nobody asked for.
                let mut blocks = vec![tool_result(rng, "toolu_orphan")];
                if rng.chance(0.5) {
                    blocks.push(Block::Text {
                        text: text(rng, 3),
                    });
                }
                out.push(Message::blocks(Role::User, blocks));
            }
            16 => out.push(Message::text(Role::System, long_text(rng))),
            17 => out.push(Message::blocks(
                Role::User,
                vec![
                    Block::Document {
                        kind: DocumentKind::Document,
                        label: "report.pdf".into(),
                        raw: json!({"type": "document", "title": "report.pdf",
                            "source": {"type": "text", "media_type": "text/plain", "data": text(rng, 30)}}),
                    },
                    Block::Text {
                        text: text_in(rng, 1, 10),
                    },
                ],
            )),
            18 => out.push(Message::blocks(
                Role::User,
                vec![Block::Image {
                    raw: json!({"type": "image", "source": {"type": "base64",
                        "media_type": "image/png", "data": "iVBORw0KGgo="}}),
                }],
            )),
            _ => out.push(Message::blocks(
                Role::Assistant,
                vec![
                    Block::Other {
                        raw: json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
                            "input": {"query": "x"}}),
                    },
                    Block::Text {
                        text: long_text(rng),
                    },
                ],
            )),
        }
    }
    out
}

fn thinking(rng: &mut Rng) -> Block {
    Block::Thinking {
        thinking: text_in(rng, 1, 40),
        signature: rng.chance(0.7).then(|| format!("sig{}", rng.next_u64())),
    }
}

fn user_message(rng: &mut Rng) -> Message {
    let w = words(rng);
    Message::text(Role::User, text(rng, w))
}

fn assistant_message(rng: &mut Rng) -> Message {
    let w = words(rng);
    if rng.chance(0.25) {
        Message::blocks(
            Role::Assistant,
            vec![thinking(rng), Block::Text { text: text(rng, w) }],
        )
    } else {
        Message::text(Role::Assistant, text(rng, w))
    }
}

fn tool_result(rng: &mut Rng, id: &str) -> Block {
    let long = rng.chance(0.2);
    let body = if long {
        "result line with numbers 12345\n".repeat(rng.range(80, 200) as usize)
    } else {
        text_in(rng, 1, 40)
    };
    let content = if rng.chance(0.25) {
        ToolResultContent::Blocks(vec![
            Block::Text { text: body },
            Block::Image {
                raw: json!({"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}),
            },
        ])
    } else {
        ToolResultContent::Text(body)
    };
    Block::ToolResult {
        tool_use_id: id.to_string(),
        content,
        is_error: rng.chance(0.1).then_some(true),
    }
}

/// A random context policy: limits under every tokenizer, turn limits, per-message caps and
/// stable trimming, alone and together.
pub fn policy(rng: &mut Rng) -> Policy {
    let mut p = Policy {
        tokenizer: *rng.pick(&Tokenizer::ALL),
        ..Policy::default()
    };
    match rng.below(6) {
        0 => p.max_tokens = Some(rng.range(10, 6000)),
        1 => p.max_chars = Some(rng.range(10, 20_000)),
        2 => p.max_turns = Some(rng.range(0, 12) as usize),
        3 => {
            p.max_tokens = Some(rng.range(10, 6000));
            p.max_chars = Some(rng.range(10, 20_000));
        }
        4 => {
            p.max_tokens = Some(rng.range(10, 6000));
            p.max_turns = Some(rng.range(1, 12) as usize);
        }
        _ => {
            if rng.chance(0.5) {
                p.max_chars = Some(rng.range(10, 20_000));
            }
            if rng.chance(0.5) {
                p.max_turns = Some(rng.range(0, 12) as usize);
            }
        }
    }
    if rng.chance(0.15) {
        p.user_max_chars = Some(rng.range(0, 300) as usize);
    }
    if rng.chance(0.15) {
        p.assistant_max_chars = Some(rng.range(0, 500) as usize);
    }
    if rng.chance(0.2) {
        p.tool_result_max_chars = Some(rng.range(0, 500) as usize);
    }
    p.strip_before_cap = p.has_caps() && rng.chance(0.3);
    if rng.chance(0.4) {
        p.trim = TrimMode::Stable;
        p.low_water = [0.3, 0.5, 0.6, 0.8, 1.0][rng.below(5) as usize];
    }
    p
}

// ---------------------------------------------------------------------------------------------
// The reference: selection over the whole conversation in memory
// ---------------------------------------------------------------------------------------------

/// What a selection kept, comparable across the store and memory: (seq, message JSON,
/// truncated).
pub type KeptView = Vec<(usize, String, bool)>;

pub fn kept_view(s: &Selection) -> KeptView {
    s.kept
        .iter()
        .map(|k| (k.index, k.message.to_json().to_string(), k.truncated))
        .collect()
}

/// The in-memory reference: every non-system message of `all` (indexed by seq), measured with
/// the policy's tokenizer, selected from the stable start `recall_core` computes.
pub fn select_in_memory(all: &[StoredMessage], policy: &Policy) -> Selection {
    let history: Vec<HistoryMessage> = all
        .iter()
        .filter(|m| m.message.role != Role::System)
        .map(|m| HistoryMessage::new(m.seq as usize, m.message.clone(), &policy.tokenizer))
        .collect();
    let start = recall_core::context::stable_start_of(&history, policy);
    select(&history, policy, &policy.tokenizer, start)
}

/// The selection over a store window, with the window's older messages counted as dropped
/// (what `recall_core::context::assemble` reports).
pub fn select_window(w: &Window, policy: &Policy) -> Selection {
    let mut s = select(&w.messages, policy, &policy.tokenizer, 0);
    s.stats.dropped += w.older;
    s.stats.trimmed = s.stats.dropped > 0;
    s.stats.notice = s.stats.trimmed.then(|| TRIM_NOTICE.to_string());
    s
}

/// Every message of a conversation, oldest first.
pub async fn all_messages(s: &dyn Store, tenant: &str, id: &str) -> Vec<StoredMessage> {
    s.messages(tenant, id, 0, u32::MAX).await.expect("messages")
}

/// Checks a store window against the in-memory reference under `policy`.
pub async fn check_window(s: &dyn Store, tenant: &str, id: &str, policy: &Policy, what: &str) {
    let all = all_messages(s, tenant, id).await;
    let w = s
        .context_window(tenant, id, policy)
        .await
        .expect("context_window");
    let non_system: Vec<&StoredMessage> = all
        .iter()
        .filter(|m| m.message.role != Role::System)
        .collect();
    assert_eq!(
        w.older + w.messages.len(),
        non_system.len(),
        "{what}: older + window != non-system messages\npolicy: {policy:?}"
    );
    // The window is the newest non-system messages, as stored, measured as recall-core does.
    let tail = &non_system[non_system.len() - w.messages.len()..];
    for (h, m) in w.messages.iter().zip(tail) {
        assert_eq!(h.index, m.seq as usize, "{what}: window seq");
        assert_eq!(h.message, m.message, "{what}: window message {}", m.seq);
        assert_eq!(
            h.measure,
            recall_core::extract::measure(&m.message, &policy.tokenizer),
            "{what}: measure of {} under {}",
            m.seq,
            policy.tokenizer
        );
    }
    let expected_system: Vec<String> = all
        .iter()
        .filter(|m| m.message.role == Role::System)
        .map(|m| recall_core::context::system_text(&m.message))
        .filter(|t| !t.trim().is_empty())
        .collect();
    assert_eq!(w.system_parts, expected_system, "{what}: system parts");

    let mem = select_in_memory(&all, policy);
    let store = select_window(&w, policy);
    assert_eq!(
        kept_view(&store),
        kept_view(&mem),
        "{what}: kept messages differ\npolicy: {policy:?}\nwindow: {} of {} (older {})",
        w.messages.len(),
        non_system.len(),
        w.older
    );
    // recall-core reports unmatched tool_use warnings of one message in HashSet order, which
    // varies between runs: compare warnings as a multiset.
    let (mut a, mut b) = (store.stats.clone(), mem.stats.clone());
    a.warnings.sort();
    b.warnings.sort();
    assert_eq!(a, b, "{what}: stats differ\npolicy: {policy:?}");
    if policy.trim != TrimMode::Stable {
        assert_eq!(
            w.stable_start, None,
            "{what}: stable start of a sliding window"
        );
    }
    if policy.trim == TrimMode::Stable && recall_core::context::stable_budget(policy).is_some() {
        let history: Vec<HistoryMessage> = non_system
            .iter()
            .map(|m| HistoryMessage::new(m.seq as usize, m.message.clone(), &policy.tokenizer))
            .collect();
        let start = recall_core::context::stable_start_of(&history, policy);
        let expected = history.get(start).map(|h| h.index as i64);
        if let (Some(e), Some(got)) = (expected, w.stable_start) {
            assert_eq!(got, e, "{what}: stable start\npolicy: {policy:?}");
        } else {
            assert!(
                history.is_empty(),
                "{what}: stable start missing: {:?}",
                w.stable_start
            );
        }
    }
}

/// Stats of a selection for messages.
pub fn stats_of(s: &Selection) -> &Stats {
    &s.stats
}

/// A complete message with a client id.
pub fn with_id(mut m: Message, id: &str) -> NewMessage {
    m.id = Some(id.to_string());
    NewMessage::complete(m)
}

pub fn partial(m: Message) -> NewMessage {
    NewMessage {
        message: m,
        status: MessageStatus::Partial,
        figures: None,
    }
}

// ---------------------------------------------------------------------------------------------
// Direct reads of state the `Store` trait does not expose
// ---------------------------------------------------------------------------------------------

/// A `stable_windows` row: (policy_key, start_seq, cost, last_seq).
pub type StableRow = (String, i64, i64, i64);

/// A store's pool, for tests that check persisted state directly.
#[derive(Clone, Copy)]
pub enum Raw<'a> {
    Sqlite(&'a sqlx::SqlitePool),
    Pg(&'a sqlx::PgPool),
}

const STABLE_ROWS: &str = "SELECT policy_key, start_seq, cost, last_seq FROM stable_windows \
     WHERE conversation_id = $1 ORDER BY policy_key";

const SET_STABLE_ROW: &str = "UPDATE stable_windows SET start_seq = $3, cost = $4, last_seq = $5 \
     WHERE conversation_id = $1 AND policy_key = $2";

impl Raw<'_> {
    /// The stable window rows of a conversation, by key.
    pub async fn stable_rows(&self, id: &str) -> Vec<StableRow> {
        match self {
            Raw::Sqlite(p) => sqlx::query_as(STABLE_ROWS).bind(id).fetch_all(*p).await,
            Raw::Pg(p) => sqlx::query_as(STABLE_ROWS).bind(id).fetch_all(*p).await,
        }
        .expect("read stable_windows")
    }

    /// Overwrites a stable window row (to leave one behind, as an older recall that only
    /// advanced windows at context builds would have).
    pub async fn set_stable_row(&self, id: &str, row: &StableRow) {
        let done = match self {
            Raw::Sqlite(p) => sqlx::query(SET_STABLE_ROW)
                .bind(id)
                .bind(&row.0)
                .bind(row.1)
                .bind(row.2)
                .bind(row.3)
                .execute(*p)
                .await
                .map(|r| r.rows_affected()),
            Raw::Pg(p) => sqlx::query(SET_STABLE_ROW)
                .bind(id)
                .bind(&row.0)
                .bind(row.1)
                .bind(row.2)
                .bind(row.3)
                .execute(*p)
                .await
                .map(|r| r.rows_affected()),
        };
        assert_eq!(done.expect("update stable_windows"), 1, "row {row:?}");
    }
}

/// The stable window of the whole conversation under `policy` by the pure fold
/// (`recall_core::stable::stable_window_start` over the stored messages, measured by
/// recall-core): its first seq and its cost. `None` without history.
pub fn stable_by_fold(all: &[StoredMessage], policy: &Policy) -> Option<(i64, i64)> {
    let (budget, tokens) = recall_core::context::stable_budget(policy)?;
    let history: Vec<HistoryMessage> = all
        .iter()
        .filter(|m| m.message.role != Role::System)
        .map(|m| HistoryMessage::new(m.seq as usize, m.message.clone(), &policy.tokenizer))
        .collect();
    let items: Vec<recall_core::stable::WindowItem> = history
        .iter()
        .map(|h| recall_core::context::window_item(h, tokens))
        .collect();
    let start = recall_core::stable::stable_window_start(&items, budget, policy.low_water);
    let first = history.get(start)?;
    let cost: u64 = items[start..].iter().map(|i| i.cost).sum();
    Some((first.index as i64, cost as i64))
}
