//! Long-conversation memory (issue 21): how often the context of the next request holds the
//! evidence for a question about the conversation.
//!
//! The conversations come from `common/` (8 of them, seeds fixed; docs/BENCHMARKS.md,
//! "Long-conversation memory", says how they are built). Each is imported through
//! `Engine::import` (what `recall import` runs) into a SQLite file in a temporary directory;
//! the client id of every message maps its turn to its `seq`. Then, for every question and
//! every budget (2,000 / 4,000 / 8,000 tokens, o200k, `transcript`), the context is built as
//! the next request would build it: `Engine::context` with the question as the current user
//! message. A question counts when every one of its evidence seqs is in the context: in the
//! window (the kept messages) or recalled (`stats.recalled`). Methods:
//! - sliding window: `max_tokens` = the budget;
//! - lexical recall: the same budget with `recall_tokens` = a quarter of it (500 / 1,000 /
//!   2,000), the engine without an embedder;
//! - lexical + semantic recall: the same, the engine with the embedder of the environment
//!   (`recall_embed::from_env`: all-MiniLM-L6-v2 from `RECALL_EMBED_MODEL` or the cache that
//!   `scripts/models.sh fetch` fills), every message embedded before the questions are asked.
//!   Skipped with a notice when no model can be loaded.
//!
//! Output: the share of questions per method and budget, the same per category, and the
//! questions that failed with why (where the evidence sits relative to the window start),
//! also written to `<target>/recall-bench/memory-report.txt`.
//!
//! This is a quality figure, not a timing: it may be run on a busy machine.
//!
//! Run: `cargo bench -p recall-engine --bench memory` (`-- --quick`: two conversations).
//! With `RECALL_LOCOMO=DIR`, the conversations are LoCoMo's real ones read from `DIR`
//! (`common/locomo.rs`; docs/BENCHMARKS.md, "Recall on LoCoMo", says where to get them),
//! measured with cl100k as that section's figures are.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use recall_engine::ConversationRef;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use common::convo::{self, Conversation, Question};
use common::plan::Category;
use recall_core::context::ContextRequest;
use recall_core::policy::{Count, Format, PolicyOverrides};
use recall_core::recall::LexicalIndex;
use recall_core::tokens::{TokenCounter, Tokenizer};
use recall_engine::{Engine, ImportTarget, Limits, DEFAULT_TENANT as T};

const CONVERSATIONS: usize = 8;
const BUDGETS: [u64; 3] = [2_000, 4_000, 8_000];

/// How a context is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Method {
    /// The newest messages that fit the budget (`recall_tokens` 0).
    Window,
    /// The window of the budget less the recall share, plus BM25 recall (no embedder).
    Lexical(Share),
    /// The same with BM25 and MiniLM similarity fused.
    Hybrid(Share),
}

/// The share of the budget reserved for recalled messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Share {
    /// Nothing set but `max_tokens`: the policy's default (`Policy::default_recall_tokens`).
    Default,
    /// `recall_tokens` = this many thousandths of the budget (250: 1,000 of 4,000).
    Permille(u64),
}

impl Share {
    fn name(self) -> String {
        match self {
            Share::Default => "the default share".into(),
            Share::Permille(p) => format!("{p}/1000 of the budget"),
        }
    }
}

impl Method {
    fn name(self) -> String {
        match self {
            Method::Window => "sliding window".into(),
            Method::Lexical(s) => format!("lexical recall, {}", s.name()),
            Method::Hybrid(s) => format!("lexical + semantic recall, {}", s.name()),
        }
    }

    fn request(self, question: &Question, budget: u64, tokenizer: Tokenizer) -> ContextRequest {
        let recall_tokens = match self {
            Method::Window => Some(count(0)),
            Method::Lexical(Share::Default) | Method::Hybrid(Share::Default) => None,
            Method::Lexical(Share::Permille(p)) | Method::Hybrid(Share::Permille(p)) => {
                Some(count(budget * p / 1_000))
            }
        };
        ContextRequest {
            overrides: PolicyOverrides {
                max_tokens: Some(count(budget)),
                recall_tokens,
                tokenizer: Some(tokenizer),
                ..PolicyOverrides::default()
            },
            current: Some(question.text.clone()),
            ..ContextRequest::new(Format::Transcript)
        }
    }
}

/// The shares measured besides the default: 1,000 and 2,000 of 4,000, and any more that
/// `RECALL_BENCH_SHARES` lists (thousandths, comma-separated: a sweep).
fn shares() -> Vec<Share> {
    let mut out = vec![Share::Default, Share::Permille(250), Share::Permille(500)];
    if let Ok(list) = std::env::var("RECALL_BENCH_SHARES") {
        for p in list.split(',').filter(|p| !p.trim().is_empty()) {
            let p: u64 = p
                .trim()
                .parse()
                .unwrap_or_else(|_| panic!("RECALL_BENCH_SHARES: {p:?} is no count"));
            assert!(
                p < 1_000,
                "RECALL_BENCH_SHARES: {p} leaves the window nothing"
            );
            if !out.contains(&Share::Permille(p)) {
                out.push(Share::Permille(p));
            }
        }
    }
    out
}

fn count(n: u64) -> Count {
    Count::new(n).unwrap()
}

/// One question under one method and budget.
struct Outcome {
    conv: usize,
    question: usize,
    method: Method,
    budget: u64,
    /// Evidence seqs that were not in the context.
    missing: Vec<i64>,
    /// The oldest seq of the window.
    window_start: Option<i64>,
    /// The query terms recall used (empty without recall).
    terms: Vec<String>,
    /// Seqs recalled as hits (not as neighbours).
    hits: Vec<i64>,
    /// Tokens of the recalled section.
    section: u64,
}

/// A conversation once imported.
struct Loaded {
    conv: Conversation,
    id: String,
    /// `seq` of each turn.
    seqs: Vec<i64>,
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick" || a == "--test");
    let n = if quick { 2 } else { CONVERSATIONS };
    // LoCoMo from a folder, measured as docs/BENCHMARKS.md says (cl100k, as the issue that
    // set the bar measured it); else the generated set (o200k).
    let locomo = std::env::var_os("RECALL_LOCOMO").filter(|v| !v.is_empty());
    let (set, tokenizer): (Vec<Conversation>, Tokenizer) = match &locomo {
        Some(dir) => {
            let mut convs = common::locomo::load_dir(std::path::Path::new(dir))
                .unwrap_or_else(|e| panic!("RECALL_LOCOMO: {e}"));
            if quick {
                convs.truncate(2);
            }
            (convs, Tokenizer::Cl100k)
        }
        None => ((0..n).map(convo::conversation).collect(), Tokenizer::O200k),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("memory.db").display());
    // Every question's recall ranks the whole index (no background catch-up in a bench).
    let engine = rt
        .block_on(Engine::open(&url, Limits::default()))
        .unwrap()
        .with_index_budget(None);

    let loaded: Vec<Loaded> = set
        .into_iter()
        .map(|c| rt.block_on(load(&engine, c)))
        .collect();

    // The same store with an embedder, every message embedded before any question.
    let hybrid = match rt.block_on(recall_engine::embed::from_env()) {
        Ok(embedder) => {
            let embedder = QueryCache {
                inner: Arc::from(embedder),
                seen: std::sync::Mutex::default(),
            };
            let hybrid = Engine::new(engine.store().clone(), Limits::default())
                .with_index_budget(None)
                .with_embedder(Arc::new(embedder));
            let started = Instant::now();
            for l in &loaded {
                let done = rt
                    .block_on(hybrid.catch_up_vectors(T, Some(&l.id), usize::MAX))
                    .unwrap();
                assert_eq!(
                    done,
                    l.conv.turns.len(),
                    "{}: not every message embedded",
                    l.conv.name
                );
            }
            eprintln!(
                "memory: embedded {} messages with {} in {:.0?}",
                loaded.iter().map(|l| l.conv.turns.len()).sum::<usize>(),
                hybrid.embedder().unwrap().model(),
                started.elapsed()
            );
            Some(hybrid)
        }
        Err(e) => {
            eprintln!("memory: lexical + semantic recall skipped: no embedder ({e})");
            None
        }
    };
    let mut methods = vec![Method::Window, Method::Lexical(Share::Permille(250))];
    if hybrid.is_some() {
        methods.extend(shares().into_iter().map(Method::Hybrid));
    } else {
        methods.push(Method::Lexical(Share::Default));
    }

    // With RECALL_BENCH_DUMP=FILE, the raw material of a method study: per conversation its
    // messages (seq, time, excerpt tokens), per question and budget under the default policy
    // the window's start, the recall budget, what was chosen, and the lexical and semantic
    // rankings well past what one context uses (JSON lines).
    let mut dump = std::env::var_os("RECALL_BENCH_DUMP")
        .filter(|_| hybrid.is_some())
        .map(|p| std::io::BufWriter::new(std::fs::File::create(p).unwrap()));
    if let Some(d) = &mut dump {
        for l in &loaded {
            let line = rt.block_on(study_messages(&engine, l, tokenizer));
            writeln!(d, "{line}").unwrap();
        }
    }
    let mut outcomes = Vec::new();
    for (c, l) in loaded.iter().enumerate() {
        let last_seq = *l.seqs.last().unwrap();
        for (q, question) in l.conv.questions.iter().enumerate() {
            for &method in &methods {
                let engine = match method {
                    Method::Hybrid(_) => hybrid.as_ref().unwrap(),
                    Method::Window | Method::Lexical(_) => &engine,
                };
                for &budget in &BUDGETS {
                    let req = method.request(question, budget, tokenizer);
                    let out = rt
                        .block_on(engine.context(ConversationRef::new(T, &l.id), &req))
                        .unwrap();
                    let mut window: BTreeSet<i64> =
                        out.kept.iter().map(|k| k.index as i64).collect();
                    // The current message is no stored message: it has no seq of its own.
                    window.retain(|&s| s <= last_seq);
                    let window_start = window.first().copied();
                    let mut seen = window;
                    let (mut terms, mut hits, mut section) = (Vec::new(), Vec::new(), 0);
                    if let Some(r) = &out.stats.recalled {
                        assert!(
                            r.complete,
                            "{}: recall used an incomplete index",
                            question.id
                        );
                        assert!(
                            r.tokens <= r.budget,
                            "{}: recall over its budget",
                            question.id
                        );
                        seen.extend(r.messages.iter().map(|m| m.seq));
                        section = r.tokens;
                        hits = r.messages.iter().filter(|m| m.hit).map(|m| m.seq).collect();
                        terms.clone_from(&r.terms);
                    }
                    if let (Some(dump), Method::Hybrid(Share::Default), Some(start)) =
                        (&mut dump, method, window_start)
                    {
                        let r = out.stats.recalled.as_ref().map_or(0, |r| r.budget);
                        let chosen: Vec<i64> = out
                            .stats
                            .recalled
                            .iter()
                            .flat_map(|r| r.messages.iter().map(|m| m.seq))
                            .collect();
                        let line =
                            rt.block_on(study_line(engine, l, question, budget, start, r, &chosen));
                        writeln!(dump, "{line}").unwrap();
                    }
                    let missing = question
                        .evidence
                        .iter()
                        .map(|&t| l.seqs[t])
                        .filter(|s| !seen.contains(s))
                        .collect();
                    outcomes.push(Outcome {
                        conv: c,
                        question: q,
                        method,
                        budget,
                        missing,
                        window_start,
                        terms,
                        hits,
                        section,
                    });
                }
            }
        }
    }

    let report = report(&loaded, &methods, &outcomes, tokenizer);
    print!("{report}");
    let path = report_path();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, &report).unwrap();
    eprintln!("memory: report written to {}", path.display());
}

/// The environment's embedder with each query's embedding kept: every question is asked under
/// several methods and budgets, and an embeddings server takes 100 ms or more a query.
struct QueryCache {
    inner: Arc<dyn recall_engine::embed::Embedder>,
    seen: std::sync::Mutex<std::collections::HashMap<String, recall_engine::embed::Embedding>>,
}

#[async_trait::async_trait]
impl recall_engine::embed::Embedder for QueryCache {
    fn model(&self) -> &str {
        self.inner.model()
    }

    fn dimension(&self) -> usize {
        self.inner.dimension()
    }

    async fn embed(
        &self,
        texts: &[&str],
    ) -> Result<Vec<recall_engine::embed::Embedding>, recall_engine::embed::EmbedError> {
        if let [one] = texts {
            if let Some(e) = self.seen.lock().unwrap().get(*one) {
                return Ok(vec![e.clone()]);
            }
            let e = self.inner.embed(texts).await?;
            self.seen
                .lock()
                .unwrap()
                .insert((*one).to_string(), e[0].clone());
            return Ok(e);
        }
        self.inner.embed(texts).await
    }

    async fn embed_background(
        &self,
        texts: &[&str],
    ) -> Result<Vec<recall_engine::embed::Embedding>, recall_engine::embed::EmbedError> {
        self.inner.embed_background(texts).await
    }
}

/// Hits each ranking lists in a study dump.
const STUDY_HITS: usize = 400;

/// A conversation's messages for a study dump: seq, time and excerpt tokens as stored (the
/// store's time is in the excerpt's header), and the session the set gave the turn.
async fn study_messages(engine: &Engine, l: &Loaded, tokenizer: Tokenizer) -> String {
    use recall_core::recall::{RecallKey, RecallQuery};
    let query = RecallQuery::new(
        "",
        i64::MAX,
        0,
        recall_core::policy::RecallScope::Conversation,
    );
    let keys: Vec<RecallKey> = l
        .seqs
        .iter()
        .map(|&seq| RecallKey {
            conversation_id: None,
            seq,
        })
        .collect();
    let stored = engine
        .store()
        .recall_messages(T, &l.id, &query, &keys)
        .await
        .unwrap();
    assert_eq!(
        stored.len(),
        l.seqs.len(),
        "{}: a turn was not read",
        l.conv.name
    );
    let session: BTreeMap<i64, usize> = l
        .seqs
        .iter()
        .zip(&l.conv.turns)
        .map(|(&seq, t)| (seq, t.session))
        .collect();
    let msgs: Vec<serde_json::Value> = stored
        .iter()
        .map(|c| {
            serde_json::json!({
                "seq": c.seq,
                "at": c.at,
                "session": session[&c.seq],
                "tokens": recall_core::recall::excerpt_tokens(c.seq, c.at, &c.message, true, &tokenizer),
            })
        })
        .collect();
    serde_json::json!({"conversation": l.conv.name, "messages": msgs}).to_string()
}

/// One question at one budget for a study dump.
async fn study_line(
    engine: &Engine,
    l: &Loaded,
    question: &Question,
    budget: u64,
    window_start: i64,
    recall_budget: u64,
    chosen: &[i64],
) -> String {
    use recall_core::recall::RecallQuery;
    let mut query = RecallQuery::new(
        &question.text,
        window_start,
        recall_budget,
        recall_core::policy::RecallScope::Conversation,
    );
    query.limit = STUDY_HITS;
    let lexical = engine
        .store()
        .recall_lexical(T, &l.id, &query)
        .await
        .unwrap();
    let embedder = engine.embedder().unwrap();
    let v = embedder.embed(&[question.text.as_str()]).await.unwrap();
    let semantic = engine
        .store()
        .recall_semantic(T, &l.id, &query, embedder.model(), v[0].vector())
        .await
        .unwrap();
    let pairs = |h: &[recall_core::recall::Ranked]| -> Vec<(i64, f64)> {
        h.iter().map(|r| (r.seq, r.score)).collect()
    };
    serde_json::json!({
        "conversation": l.conv.name,
        "question": question.id,
        "category": question.category.name(),
        "evidence": question.evidence.iter().map(|&t| l.seqs[t]).collect::<Vec<_>>(),
        "budget": budget,
        "window_start": window_start,
        "recall_budget": recall_budget,
        "chosen": chosen,
        "terms": query.terms,
        "lexical": pairs(&lexical.hits),
        "semantic": pairs(&semantic.hits),
    })
    .to_string()
}

/// Imports a conversation and maps its turns to seqs by their client ids.
async fn load(engine: &Engine, conv: Conversation) -> Loaded {
    let report = engine
        .import(
            T,
            ImportTarget::New {
                title: Some(conv.name.clone()),
            },
            &conv.jsonl(),
            true,
            &|_, _| {},
        )
        .await
        .unwrap();
    assert_eq!(report.imported, conv.turns.len());
    let id = report.conversation_id;
    let mut seqs = vec![0i64; conv.turns.len()];
    let mut after = 0;
    loop {
        let page = engine.store().messages(T, &id, after, 500).await.unwrap();
        let Some(last) = page.last() else { break };
        after = last.seq;
        for m in &page {
            let cid = m.message.id.as_deref().unwrap();
            let turn: usize = cid.strip_prefix('t').unwrap().parse().unwrap();
            seqs[turn] = m.seq;
        }
    }
    assert!(
        seqs.iter().all(|&s| s > 0),
        "{}: a turn was not stored",
        conv.name
    );
    Loaded { conv, id, seqs }
}

fn report_path() -> PathBuf {
    // The bench runs as <target>/release/deps/memory-…
    let exe = std::env::current_exe().unwrap();
    let target = exe.ancestors().nth(3).unwrap().to_path_buf();
    target.join("recall-bench").join("memory-report.txt")
}

fn share(hits: usize, total: usize) -> String {
    if total == 0 {
        return "–".into();
    }
    format!("{:.1}%", 100.0 * hits as f64 / total as f64)
}

fn report(
    loaded: &[Loaded],
    methods: &[Method],
    outcomes: &[Outcome],
    counter: Tokenizer,
) -> String {
    let mut r = String::new();
    // The categories this set asks.
    let cats: Vec<Category> = Category::ALL
        .into_iter()
        .filter(|c| {
            loaded
                .iter()
                .any(|l| l.conv.questions.iter().any(|q| q.category == *c))
        })
        .collect();
    let questions: usize = loaded.iter().map(|l| l.conv.questions.len()).sum();
    let turns: Vec<usize> = loaded.iter().map(|l| l.conv.turns.len()).collect();
    let tokens: Vec<u64> = loaded
        .iter()
        .map(|l| {
            l.conv
                .turns
                .iter()
                .map(|t| counter.count(&t.text) as u64)
                .sum()
        })
        .collect();
    let oracle = loaded
        .iter()
        .flat_map(|l| {
            l.conv.questions.iter().map(|q| {
                q.evidence
                    .iter()
                    .map(|&t| counter.count(&l.conv.turns[t].text) as u64)
                    .sum::<u64>()
            })
        })
        .max()
        .unwrap_or(0);
    writeln!(
        r,
        "Long-conversation memory: {} conversations, {questions} questions; turns {}–{}, \
         text tokens ({}) {}–{}; all the evidence of any question fits in {oracle} tokens.\n",
        loaded.len(),
        turns.iter().min().unwrap(),
        turns.iter().max().unwrap(),
        counter.name(),
        tokens.iter().min().unwrap(),
        tokens.iter().max().unwrap(),
    )
    .unwrap();

    // Share of questions with all their evidence in the context.
    let hits = |m: Method, b: u64, cat: Option<Category>| {
        let sel: Vec<&Outcome> = outcomes
            .iter()
            .filter(|o| o.method == m && o.budget == b)
            .filter(|o| cat.is_none_or(|c| loaded[o.conv].conv.questions[o.question].category == c))
            .collect();
        (
            sel.iter().filter(|o| o.missing.is_empty()).count(),
            sel.len(),
        )
    };
    writeln!(
        r,
        "| method | {} |",
        BUDGETS.map(|b| format!("{b} tokens")).join(" | ")
    )
    .unwrap();
    writeln!(r, "|---|{}", "---:|".repeat(BUDGETS.len())).unwrap();
    for &m in methods {
        let cells: Vec<String> = BUDGETS
            .iter()
            .map(|&b| {
                let (h, t) = hits(m, b, None);
                share(h, t)
            })
            .collect();
        writeln!(r, "| {} | {} |", m.name(), cells.join(" | ")).unwrap();
    }

    // What the recalled sections cost: their mean tokens per context.
    writeln!(r, "\nMean tokens of the recalled section:\n").unwrap();
    writeln!(
        r,
        "| method | {} |",
        BUDGETS.map(|b| format!("{b} tokens")).join(" | ")
    )
    .unwrap();
    writeln!(r, "|---|{}", "---:|".repeat(BUDGETS.len())).unwrap();
    for &m in methods.iter().filter(|&&m| m != Method::Window) {
        let cells: Vec<String> = BUDGETS
            .iter()
            .map(|&b| {
                let sel: Vec<u64> = outcomes
                    .iter()
                    .filter(|o| o.method == m && o.budget == b)
                    .map(|o| o.section)
                    .collect();
                format!("{}", sel.iter().sum::<u64>() / (sel.len().max(1) as u64))
            })
            .collect();
        writeln!(r, "| {} | {} |", m.name(), cells.join(" | ")).unwrap();
    }

    writeln!(r, "\nBy category (questions: {}):\n", {
        let per: Vec<String> = cats
            .iter()
            .map(|&c| {
                let n = loaded
                    .iter()
                    .flat_map(|l| &l.conv.questions)
                    .filter(|q| q.category == c)
                    .count();
                format!("{} {n}", c.name())
            })
            .collect();
        per.join(", ")
    })
    .unwrap();
    writeln!(
        r,
        "| method | budget | {} |",
        cats.iter()
            .map(|c| c.name())
            .collect::<Vec<_>>()
            .join(" | ")
    )
    .unwrap();
    writeln!(r, "|---|---:|{}", "---:|".repeat(cats.len())).unwrap();
    for &m in methods {
        for &b in &BUDGETS {
            let cells: Vec<String> = cats
                .iter()
                .map(|&c| {
                    let (h, t) = hits(m, b, Some(c));
                    share(h, t)
                })
                .collect();
            writeln!(r, "| {} | {b} | {} |", m.name(), cells.join(" | ")).unwrap();
        }
    }

    // The failures at 4,000 tokens with why: every method's count, then each recall method's
    // questions (the window's are every question whose evidence is older than its start).
    for &m in methods {
        let failed: Vec<&Outcome> = outcomes
            .iter()
            .filter(|o| o.method == m && o.budget == 4_000 && !o.missing.is_empty())
            .collect();
        let mut by_cat: BTreeMap<Category, usize> = BTreeMap::new();
        for o in &failed {
            *by_cat
                .entry(loaded[o.conv].conv.questions[o.question].category)
                .or_default() += 1;
        }
        writeln!(
            r,
            "\nFailures of {} at 4000 tokens: {} ({})",
            m.name(),
            failed.len(),
            by_cat
                .iter()
                .map(|(c, n)| format!("{} {n}", c.name()))
                .collect::<Vec<_>>()
                .join(", ")
        )
        .unwrap();
        if m == Method::Window {
            continue;
        }
        writeln!(r).unwrap();
        for o in failed {
            let l = &loaded[o.conv];
            let q = &l.conv.questions[o.question];
            writeln!(
                r,
                "- {} [{}] {:?} (answer: {}): {}",
                q.id,
                q.category.name(),
                q.text,
                q.answer,
                why(l, o)
            )
            .unwrap();
        }
    }
    r
}

/// Why a recall context missed evidence: for each missing seq, its rank under the lexical
/// ranking (recall-core's in-memory index, the same ranking as the store's) over the messages
/// before the window, with the query terms recall used; and how many hits were recalled.
fn why(l: &Loaded, o: &Outcome) -> String {
    let Some(start) = o.window_start else {
        return "empty window".into();
    };
    let older: Vec<(i64, &str, Option<i64>)> = l
        .seqs
        .iter()
        .zip(&l.conv.turns)
        .filter(|(&s, _)| s < start)
        .map(|(&s, t)| (s, t.text.as_str(), t.at))
        .collect();
    let ranked = LexicalIndex::new(older.iter().copied()).rank(&o.terms, usize::MAX);
    let each: Vec<String> = o
        .missing
        .iter()
        .map(|seq| match ranked.iter().position(|r| r.seq == *seq) {
            Some(rank) => format!("seq {seq} lexical rank {} of {}", rank + 1, ranked.len()),
            None => format!("seq {seq} not ranked (no query term among a term's best postings)"),
        })
        .collect();
    format!(
        "{}; {} hits recalled; terms {:?}",
        each.join(", "),
        o.hits.len(),
        o.terms
    )
}
