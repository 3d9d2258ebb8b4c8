//! Token counting throughput: `Tokenizer::{O200k, Cl100k}.count` against the reference
//! `bpe_openai::Tokenizer::count` it must equal, on ~1.5 KB messages.
//!
//! Workload (deterministic, seeded; each corpus is ~1 MiB cut into 1,536-byte messages at
//! char boundaries, counted one message per call, in order):
//! - `prose`: English-like text, words drawn Zipf-style from a 40,000-word vocabulary (the 148
//!   commonest English words, then synthetic syllable words), sentences, commas, numbers,
//!   paragraphs and markdown list items.
//! - `code`: indented Rust/Python-like lines: snake_case and CamelCase identifiers from the
//!   same vocabulary, operators, brackets, string literals, numbers, comments.
//! - `json`: pretty-printed tool-result JSON (keys, strings, numbers, nesting).
//! - `unicode`: the prose with curly quotes, em dashes, accented words, emoji and a CJK phrase
//!   now and then (about 1 in 40 words) — the path that hands non-ASCII pieces to the regex.
//! - `random`: words of random lowercase letters, so nearly every piece misses the piece
//!   cache (the worst case for recall's counter).
//!
//! `tokens/<corpus>/{recall,bpe_openai}/<vocabulary>` time one message per iteration, the next
//! message of the corpus each time, on one thread: recall's per-thread piece table is warm
//! (the steady state of a store counting message after message; a corpus holds 17,000–134,000
//! distinct pieces, against 65,536 table entries for pieces of up to 14 bytes).
//! `tokens_cold/<corpus>/recall/<vocabulary>` counts the whole corpus on a fresh thread, so
//! the table starts empty. `bpe_openai` is also what recall ran before (it called
//! `Tokenizer::count` for texts of up to 2 KiB).
//!
//! Run: `cargo bench -p recall-core --bench tokens`
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use recall_core::tokens::{TokenCounter, Tokenizer};

const SEED: u64 = 0x70c3_4e55_1e55_0001;
const CORPUS_BYTES: usize = 1 << 20;
const MESSAGE_BYTES: usize = 1536;
const VOCAB: usize = 40_000;

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

    /// Uniform in `0..n`.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

const COMMON: [&str; 148] = [
    "the",
    "of",
    "and",
    "to",
    "a",
    "in",
    "is",
    "it",
    "you",
    "that",
    "he",
    "was",
    "for",
    "on",
    "are",
    "with",
    "as",
    "I",
    "his",
    "they",
    "be",
    "at",
    "one",
    "have",
    "this",
    "from",
    "or",
    "had",
    "by",
    "not",
    "word",
    "but",
    "what",
    "some",
    "we",
    "can",
    "out",
    "other",
    "were",
    "all",
    "there",
    "when",
    "up",
    "use",
    "your",
    "how",
    "said",
    "an",
    "each",
    "she",
    "which",
    "do",
    "their",
    "time",
    "if",
    "will",
    "way",
    "about",
    "many",
    "then",
    "them",
    "write",
    "would",
    "like",
    "so",
    "these",
    "her",
    "long",
    "make",
    "thing",
    "see",
    "him",
    "two",
    "has",
    "look",
    "more",
    "day",
    "could",
    "go",
    "come",
    "did",
    "number",
    "sound",
    "no",
    "most",
    "people",
    "my",
    "over",
    "know",
    "water",
    "than",
    "call",
    "first",
    "who",
    "may",
    "down",
    "side",
    "been",
    "now",
    "find",
    "function",
    "value",
    "error",
    "request",
    "context",
    "message",
    "token",
    "window",
    "budget",
    "history",
    "render",
    "select",
    "user",
    "assistant",
    "memory",
    "store",
    "query",
    "result",
    "config",
    "server",
    "client",
    "latency",
    "cache",
    "prompt",
    "model",
    "returns",
    "should",
    "because",
    "however",
    "example",
    "file",
    "test",
    "data",
    "string",
    "type",
    "list",
    "case",
    "code",
    "line",
    "change",
    "build",
    "run",
    "output",
    "input",
    "state",
    "update",
    "version",
    "issue",
];

const SYLLABLES: [&str; 48] = [
    "ba", "con", "tri", "ment", "ly", "er", "ing", "pro", "sta", "ver", "lo", "qui", "dis", "ex",
    "tion", "al", "ra", "mo", "pen", "ter", "u", "ca", "ble", "ous", "ize", "an", "re", "de", "in",
    "com", "est", "ness", "ful", "po", "si", "gra", "ph", "ic", "ate", "ur", "ol", "ent", "ish",
    "or", "ti", "na", "ven", "sh",
];

struct Vocabulary {
    words: Vec<String>,
    /// Cumulative Zipf weights (1/rank).
    cumulative: Vec<f64>,
}

impl Vocabulary {
    fn new() -> Self {
        let mut words: Vec<String> = COMMON.iter().map(|w| w.to_string()).collect();
        let mut rng = Rng(SEED ^ 0x5151);
        while words.len() < VOCAB {
            let n = 1 + rng.below(4);
            let w: String = (0..n)
                .map(|_| SYLLABLES[rng.below(SYLLABLES.len())])
                .collect();
            words.push(w);
        }
        let mut total = 0.0;
        let cumulative = (1..=words.len())
            .map(|r| {
                total += 1.0 / r as f64;
                total
            })
            .collect();
        Vocabulary { words, cumulative }
    }

    fn word(&self, rng: &mut Rng) -> &str {
        let total = *self.cumulative.last().expect("words");
        let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64 * total;
        let i = self.cumulative.partition_point(|&c| c < u);
        &self.words[i.min(self.words.len() - 1)]
    }
}

fn capitalized(w: &str) -> String {
    let mut c = w.chars();
    match c.next() {
        Some(f) => f.to_ascii_uppercase().to_string() + c.as_str(),
        None => String::new(),
    }
}

const UNICODE_BITS: [&str; 14] = [
    "\u{201c}quoted\u{201d}",
    "don\u{2019}t",
    "\u{2014}",
    "caf\u{e9}",
    "na\u{ef}ve",
    "r\u{e9}sum\u{e9}",
    "\u{1f600}",
    "\u{2705}",
    "\u{2192}",
    "M\u{fc}ller",
    "\u{65e5}\u{672c}\u{8a9e}\u{306e}\u{30c6}\u{30ad}\u{30b9}\u{30c8}",
    "\u{a0}",
    "\u{2026}",
    "\u{3b1}\u{3b2}\u{3b3}",
];

fn prose(v: &Vocabulary, rng: &mut Rng, unicode: bool) -> String {
    let mut s = String::with_capacity(CORPUS_BYTES + 64);
    let mut sentence_start = true;
    while s.len() < CORPUS_BYTES {
        if unicode && rng.chance(3) {
            s.push_str(UNICODE_BITS[rng.below(UNICODE_BITS.len())]);
        } else if rng.chance(3) {
            s.push_str(&(rng.next() % 10_000).to_string());
        } else if sentence_start {
            s.push_str(&capitalized(v.word(rng)));
        } else {
            s.push_str(v.word(rng));
        }
        sentence_start = false;
        let r = rng.below(100);
        s.push_str(match r {
            0..=1 => {
                sentence_start = true;
                ".\n\n"
            }
            2..=3 => {
                sentence_start = true;
                ".\n- "
            }
            4..=10 => {
                sentence_start = true;
                ". "
            }
            11..=16 => ", ",
            17 => ": ",
            18 => "? ",
            _ => " ",
        });
    }
    s
}

fn identifier(v: &Vocabulary, rng: &mut Rng) -> String {
    let n = 1 + rng.below(3);
    let parts: Vec<&str> = (0..n).map(|_| v.word(rng)).collect();
    if rng.chance(30) {
        parts.iter().map(|p| capitalized(p)).collect()
    } else {
        parts.join("_")
    }
}

fn code(v: &Vocabulary, rng: &mut Rng) -> String {
    let mut s = String::with_capacity(CORPUS_BYTES + 256);
    let mut depth = 0usize;
    while s.len() < CORPUS_BYTES {
        s.push_str(&"    ".repeat(depth));
        match rng.below(10) {
            0 => {
                s.push_str(&format!(
                    "fn {}(&self, {}: &str) -> Result<{}, Error> {{\n",
                    identifier(v, rng),
                    identifier(v, rng),
                    capitalized(v.word(rng))
                ));
                depth = (depth + 1).min(4);
            }
            1 if depth > 0 => {
                s.push_str("}\n");
                depth -= 1;
            }
            2 => s.push_str(&format!(
                "// {} {} {} {}.\n",
                capitalized(v.word(rng)),
                v.word(rng),
                v.word(rng),
                v.word(rng)
            )),
            3 => s.push_str(&format!(
                "if {}.len() > {} && !{}.is_empty() {{\n",
                identifier(v, rng),
                rng.below(4096),
                identifier(v, rng)
            )),
            4 => s.push_str(&format!(
                "return Err(Error::new(\"{} {} {}\"));\n",
                v.word(rng),
                v.word(rng),
                v.word(rng)
            )),
            _ => s.push_str(&format!(
                "let {} = self.{}({}, {}).{}()?;\n",
                identifier(v, rng),
                identifier(v, rng),
                identifier(v, rng),
                rng.below(1000),
                identifier(v, rng)
            )),
        }
    }
    s
}

fn json(v: &Vocabulary, rng: &mut Rng) -> String {
    let mut s = String::with_capacity(CORPUS_BYTES + 256);
    while s.len() < CORPUS_BYTES {
        s.push_str("{\n  \"results\": [\n");
        let n = 1 + rng.below(6);
        for i in 0..n {
            s.push_str(&format!(
                "    {{\n      \"id\": \"{:016x}\",\n      \"{}\": \"{} {} {}\",\n      \"score\": {}.{},\n      \"path\": \"/src/{}/{}.rs\",\n      \"tags\": [\"{}\", \"{}\"]\n    }}{}\n",
                rng.next(),
                identifier(v, rng),
                capitalized(v.word(rng)),
                v.word(rng),
                v.word(rng),
                rng.below(100),
                rng.below(1000),
                v.word(rng),
                identifier(v, rng),
                v.word(rng),
                v.word(rng),
                if i + 1 < n { "," } else { "" }
            ));
        }
        s.push_str(&format!("  ],\n  \"total\": {}\n}}\n", rng.below(100_000)));
    }
    s
}

fn random_words(rng: &mut Rng) -> String {
    let mut s = String::with_capacity(CORPUS_BYTES + 32);
    while s.len() < CORPUS_BYTES {
        let n = 3 + rng.below(8);
        for _ in 0..n {
            s.push((b'a' + rng.below(26) as u8) as char);
        }
        s.push(if rng.chance(10) { '\n' } else { ' ' });
    }
    s
}

/// Cuts `text` into messages of about `MESSAGE_BYTES` bytes at char boundaries.
fn messages(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = MESSAGE_BYTES.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        out.push(rest[..cut].to_string());
        rest = &rest[cut..];
    }
    out
}

fn corpora() -> Vec<(&'static str, Vec<String>)> {
    let v = Vocabulary::new();
    let mut rng = Rng(SEED);
    vec![
        ("prose", messages(&prose(&v, &mut rng, false))),
        ("code", messages(&code(&v, &mut rng))),
        ("json", messages(&json(&v, &mut rng))),
        ("unicode", messages(&prose(&v, &mut rng, true))),
        ("random", messages(&random_words(&mut rng))),
    ]
}

fn count_all(t: Tokenizer, msgs: &[String]) -> usize {
    msgs.iter().map(|m| t.count(black_box(m))).sum()
}

fn benches(c: &mut Criterion) {
    let corpora = corpora();
    let vocabularies = [
        (Tokenizer::O200k, bpe_openai::o200k_base()),
        (Tokenizer::Cl100k, bpe_openai::cl100k_base()),
    ];
    // Same numbers, or the comparison is meaningless.
    for (name, msgs) in &corpora {
        for (ours, reference) in &vocabularies {
            let a: usize = msgs.iter().map(|m| ours.count(m)).sum();
            let b: usize = msgs.iter().map(|m| reference.count(m.as_str())).sum();
            assert_eq!(a, b, "{name}/{ours}: counts differ");
            eprintln!(
                "{name}/{ours}: {} messages, {} bytes, {a} tokens",
                msgs.len(),
                msgs.iter().map(String::len).sum::<usize>()
            );
        }
    }
    for (name, msgs) in &corpora {
        let bytes: usize = msgs.iter().map(String::len).sum();
        // One message per iteration, the next one each time (round the corpus): many short
        // samples, whose median is robust to a busy machine.
        let mut g = c.benchmark_group(format!("tokens/{name}"));
        g.throughput(Throughput::Bytes((bytes / msgs.len()) as u64));
        g.sampling_mode(SamplingMode::Flat);
        g.sample_size(500);
        g.measurement_time(Duration::from_secs(5));
        for (ours, reference) in &vocabularies {
            let mut i = 0;
            g.bench_function(format!("recall/{ours}"), |b| {
                b.iter(|| {
                    i = (i + 1) % msgs.len();
                    ours.count(black_box(&msgs[i]))
                })
            });
            let mut i = 0;
            g.bench_function(format!("bpe_openai/{ours}"), |b| {
                b.iter(|| {
                    i = (i + 1) % msgs.len();
                    reference.count(black_box(msgs[i].as_str()))
                })
            });
        }
        g.finish();
        // The whole corpus on a fresh thread each time: an empty piece table, as in a new
        // process.
        let mut g = c.benchmark_group(format!("tokens_cold/{name}"));
        g.throughput(Throughput::Bytes(bytes as u64));
        g.sample_size(10);
        for (ours, _) in &vocabularies {
            g.bench_function(format!("recall/{ours}"), |b| {
                b.iter(|| std::thread::scope(|s| s.spawn(|| count_all(*ours, msgs)).join()))
            });
        }
        g.finish();
    }
}

criterion_group!(token_benches, benches);
criterion_main!(token_benches);
