//! Peak memory of a real `recall serve` process under large reads: 201 messages of about 1 MB,
//! four clients reading pages of `limit=1000` at once (one of them following `next_after`
//! to the end) while a fifth asks for a context with `max_tokens: 1e8`. The server's peak
//! resident set (`VmHWM` in `/proc/PID/status`) must stay under 300 MB.
//!
//! It writes and reads a few hundred MB, so it is ignored by default; docs/BENCHMARKS.md
//! ("Large reads") records its figures and the command:
//!
//! ```text
//! cargo test -p recall-cli --release --test large_reads -- --ignored --nocapture
//! ```
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::process::Command;
use std::time::{Duration, Instant};

use recall_testkit::process::Served;
use serde_json::{json, Value};

const MESSAGES: usize = 201;
const MESSAGE_BYTES: usize = 1_000_000;
const PEAK_LIMIT_KB: u64 = 300 * 1024;
/// The server's default `max_page_bytes` and `max_context_bytes`.
const PAGE_BYTES: usize = 8 << 20;
const CONTEXT_BYTES: usize = 32 << 20;

/// A field of `/proc/PID/status`, in kB.
fn status_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

/// About `MESSAGE_BYTES` of ordinary text, different for every message.
fn text(i: usize) -> String {
    let mut s = format!("message {i}:");
    let mut j = 0;
    while s.len() < MESSAGE_BYTES {
        s.push_str(&format!(
            " the quick brown fox {j} jumps over the lazy dog {i}."
        ));
        j += 1;
    }
    s.truncate(MESSAGE_BYTES);
    s
}

#[test]
#[ignore = "writes and reads about 200 MB; run explicitly (docs/BENCHMARKS.md, Large reads)"]
fn four_large_pages_and_a_huge_context_stay_under_300_mb() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("recall.db").display().to_string();
    let input = dir.path().join("big.jsonl");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&input).expect("create"));
        for i in 0..MESSAGES {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            writeln!(f, "{}", json!({"role": role, "content": text(i)})).expect("write");
        }
    }
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_recall"))
        .args(["import", "--db", &db])
        .arg(&input)
        .output()
        .expect("run import");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_string();
    eprintln!(
        "imported {MESSAGES} messages of {MESSAGE_BYTES} bytes in {:?}",
        started.elapsed()
    );
    std::fs::remove_file(&input).expect("remove input");

    let mut cmd = Command::new(env!("CARGO_BIN_EXE_recall"));
    cmd.args(["serve", "--addr", "127.0.0.1:0", "--no-auth", "--db", &db])
        .env_remove("RECALL_DB");
    let server = Served::start(cmd);
    let pid = server.pid();
    let idle_kb = status_kb(pid, "VmRSS");

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let base = server.base.clone();
    let started = Instant::now();
    let (pages, contexts) = rt.block_on(async move {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(300))
            .build()
            .expect("client");
        let messages = format!("{base}/v1/conversations/{id}/messages");
        let context = format!("{base}/v1/conversations/{id}/context");
        // Client 0 follows the cursor to the end; 1–3 read the first page three times.
        let readers = (0..4).map(|c| {
            let client = client.clone();
            let messages = messages.clone();
            async move {
                let mut seen = 0;
                let mut after = 0;
                let mut pages = 0;
                loop {
                    let res = client
                        .get(format!("{messages}?after={after}&limit=1000"))
                        .send()
                        .await
                        .expect("page");
                    assert_eq!(res.status().as_u16(), 200);
                    let body = res.bytes().await.expect("page body");
                    assert!(
                        body.len() <= PAGE_BYTES + 4096,
                        "page of {} bytes",
                        body.len()
                    );
                    let page: Value = serde_json::from_slice(&body).expect("page json");
                    let n = page["data"].as_array().expect("data").len();
                    assert!(n >= 1);
                    seen += n;
                    pages += 1;
                    match page["next_after"].as_i64() {
                        Some(next) if c == 0 => after = next,
                        Some(_) if pages < 3 => {}
                        Some(_) => return (pages, seen),
                        None => {
                            assert_eq!(c, 0);
                            assert_eq!(seen, MESSAGES, "every message once");
                            return (pages, seen);
                        }
                    }
                }
            }
        });
        let asker = {
            let client = client.clone();
            async move {
                let mut answers = Vec::new();
                for _ in 0..3 {
                    let res = client
                        .post(&context)
                        .json(&json!({"max_tokens": 1e8}))
                        .send()
                        .await
                        .expect("context");
                    let status = res.status().as_u16();
                    let body: Value = res.json().await.expect("context json");
                    assert_eq!(status, 413, "{body}");
                    let message = body["error"]["message"].as_str().unwrap_or("").to_string();
                    assert!(
                        message.contains(&format!("limit of {CONTEXT_BYTES} bytes")),
                        "{message}"
                    );
                    answers.push(message);
                }
                answers
            }
        };
        futures::join!(futures::future::join_all(readers), asker)
    });
    let elapsed = started.elapsed();
    let hwm_kb = status_kb(pid, "VmHWM");
    let after_kb = status_kb(pid, "VmRSS");
    eprintln!(
        "pages (pages, messages) per client: {pages:?}; contexts: {}",
        contexts[0]
    );
    eprintln!(
        "recall serve: idle RSS {} MB, peak (VmHWM) {} MB, RSS after {} MB; reads took {elapsed:?}",
        idle_kb / 1024,
        hwm_kb / 1024,
        after_kb / 1024
    );
    assert!(
        hwm_kb < PEAK_LIMIT_KB,
        "peak RSS {} MB, over {} MB",
        hwm_kb / 1024,
        PEAK_LIMIT_KB / 1024
    );
}
