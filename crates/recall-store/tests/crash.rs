//! Crash safety: a child process appends in a loop and reports every append the store
//! acknowledged ("committed <seq> <client id>"); the parent kills it with SIGKILL at a random
//! moment, reopens the database and checks that every acknowledged message is there exactly
//! once, in order, with gapless seqs. The next child resumes after the last reported message,
//! so whatever was committed but not reported is sent again and must be recognised as a retry.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{all_messages, check_window, with_id, Rng};
use recall_core::message::{Message, Role};
use recall_core::policy::Policy;
use recall_core::tokens::Tokenizer;
use recall_store::{NewConversation, SqliteStore, Store, DEFAULT_TENANT};

const T: &str = DEFAULT_TENANT;
const URL: &str = "RECALL_STORE_CRASH_URL";
const CONV: &str = "RECALL_STORE_CRASH_CONV";
const FROM: &str = "RECALL_STORE_CRASH_FROM";

fn client_id(i: u64) -> String {
    format!("m{i:07}")
}

/// Message `i` of the stream: alternating roles, every seventh one long (a longer write).
fn message(i: u64) -> Message {
    let role = if i.is_multiple_of(2) {
        Role::User
    } else {
        Role::Assistant
    };
    let body = if i % 7 == 3 {
        format!("message {i} ").repeat(300)
    } else {
        format!("message {i}: the quick brown fox")
    };
    Message::text(role, body)
}

/// Not a test of its own: the body of the child process, run only when the parent sets
/// `RECALL_STORE_CRASH_URL`. Appends messages `FROM..` in batches of one to three, forever,
/// printing one line per acknowledged message.
#[test]
fn crash_worker() {
    let Ok(url) = std::env::var(URL) else {
        return;
    };
    let id = std::env::var(CONV).expect("conversation id");
    let mut next: u64 = std::env::var(FROM).expect("from").parse().expect("number");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let store = recall_store::open(&url).await.expect("open");
        // Load the tokenizers now, so that kills land among appends rather than before them.
        recall_store::Figures::of(&message(3));
        println!("\nready");
        loop {
            let k = 1 + next % 3;
            let batch = (next..next + k)
                .map(|i| with_id(message(i), &client_id(i)))
                .collect();
            let out = store.append(T, &id, batch).await.expect("append");
            for (i, a) in (next..).zip(&out) {
                println!("committed {} {}", a.seq, client_id(i));
            }
            next += k;
        }
    });
}

/// A child's report: (seq, client id) of every acknowledged message, in order.
type Report = Vec<(i64, String)>;

/// Runs one child from message `from` and kills it `delay` after it is ready, or, with
/// `after_first_commit`, `delay` after it acknowledged its first append (so that, however
/// slow the machine, those rounds kill a child that has appends in flight after acknowledged
/// ones).
fn run_and_kill(
    url: &str,
    conv: &str,
    from: u64,
    delay: Duration,
    after_first_commit: bool,
) -> Report {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["crash_worker", "--exact", "--nocapture", "--test-threads=1"])
        .env(URL, url)
        .env(CONV, conv)
        .env(FROM, from.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn crash worker");
    let stdout = child.stdout.take().unwrap();
    let (ready_tx, ready_rx) = mpsc::channel();
    let (commit_tx, commit_rx) = mpsc::channel();
    // Read continuously (a full pipe would stall the child) and keep whole lines only: a line
    // cut by the kill is not a report.
    let reader = std::thread::spawn(move || {
        let mut r = BufReader::new(stdout);
        let mut report = Report::new();
        let mut line = String::new();
        loop {
            line.clear();
            if r.read_line(&mut line).unwrap_or(0) == 0 || !line.ends_with('\n') {
                break;
            }
            let l = line.trim_end();
            if l == "ready" {
                let _ = ready_tx.send(());
            } else if let Some(rest) = l.strip_prefix("committed ") {
                let (seq, cid) = rest.split_once(' ').expect("committed line");
                report.push((seq.parse().expect("seq"), cid.to_string()));
                let _ = commit_tx.send(());
            }
        }
        report
    });
    if ready_rx.recv_timeout(Duration::from_secs(60)).is_err() {
        let _ = child.kill();
        let status = child.wait().unwrap();
        panic!("crash worker never became ready ({status})");
    }
    if after_first_commit && commit_rx.recv_timeout(Duration::from_secs(60)).is_err() {
        let _ = child.kill();
        let status = child.wait().unwrap();
        panic!("crash worker never acknowledged an append ({status})");
    }
    // The random kill point (not a synchronisation: any moment is a valid one).
    std::thread::sleep(delay);
    child.kill().expect("SIGKILL");
    let status = child.wait().unwrap();
    assert!(
        !status.success(),
        "the worker was killed, not finished: {status}"
    );
    reader.join().expect("reader")
}

/// Checks the stored conversation against everything reported so far; returns how many
/// messages are stored.
async fn check_after_crash(
    store: &dyn Store,
    conv: &str,
    reported: &[(i64, String)],
    what: &str,
) -> u64 {
    let all = all_messages(store, T, conv).await;
    // In order, gapless, each client id once: message i of the stream has seq i + 1.
    for (k, m) in all.iter().enumerate() {
        assert_eq!(m.seq, k as i64 + 1, "{what}: seqs are gapless");
        assert_eq!(
            m.message.id.as_deref(),
            Some(client_id(k as u64).as_str()),
            "{what}: message {} out of order or duplicated",
            m.seq
        );
        assert_eq!(m.message.role, message(k as u64).role);
    }
    // Everything acknowledged is there, at the seq it was acknowledged with.
    for (seq, cid) in reported {
        let stored = all.get((*seq - 1) as usize);
        assert_eq!(
            stored.and_then(|m| m.message.id.as_deref()),
            Some(cid.as_str()),
            "{what}: acknowledged {cid} at seq {seq} is missing"
        );
    }
    let c = store.get_conversation(T, conv).await.unwrap();
    assert_eq!(c.message_count, all.len() as i64, "{what}: message count");
    assert_eq!(c.last_seq, all.len() as i64, "{what}: last seq");
    // The running totals survived too.
    let p = Policy {
        max_tokens: Some(400),
        tokenizer: Tokenizer::Chars4,
        ..Policy::default()
    };
    check_window(store, T, conv, &p, what).await;
    all.len() as u64
}

/// Kills `iterations` children at random points; returns how many messages were reported.
async fn crash_loop<F, Fut>(url: &str, seed: u64, iterations: usize, reopen: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Box<dyn Store>>,
{
    let conv = {
        let store = reopen().await;
        store
            .create_conversation(T, NewConversation::default())
            .await
            .unwrap()
            .id
    };
    let mut rng = Rng::new(seed);
    let mut reported: Vec<(i64, String)> = Vec::new();
    let mut from = 0u64;
    let mut stored = 0u64;
    let mut resumed_with_retries = 0;
    for round in 0..iterations {
        let delay = Duration::from_millis(rng.range(0, 50));
        let url = url.to_string();
        let conv2 = conv.clone();
        // Odd rounds kill only after a first acknowledged append; even rounds at any moment
        // after start-up, including before the first commit.
        let after_first = round % 2 == 1;
        let report = tokio::task::spawn_blocking(move || {
            run_and_kill(&url, &conv2, from, delay, after_first)
        })
        .await
        .unwrap();
        if let Some((_, cid)) = report.last() {
            from = cid[1..].parse::<u64>().unwrap() + 1;
        }
        reported.extend(report);
        let store = reopen().await;
        let what = format!("round {round} (seed {seed}, killed after {delay:?})");
        let now = check_after_crash(store.as_ref(), &conv, &reported, &what).await;
        assert!(now >= stored, "{what}: messages disappeared");
        // Committed but never reported: the next child sends them again.
        if now > from {
            resumed_with_retries += 1;
        }
        stored = now;
    }
    // Guaranteed by the odd rounds; checked so a broken worker cannot pass silently.
    assert!(
        reported.len() >= iterations / 2,
        "too few appends were acknowledged ({}) for the test to mean anything",
        reported.len()
    );
    eprintln!(
        "{iterations} kills: {} acknowledged, {stored} stored, {resumed_with_retries} rounds resumed over unreported commits",
        reported.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_survives_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.db");
    let url = path.to_str().unwrap().to_string();
    let p = path.clone();
    crash_loop(&url, 0x5eed_0001, 20, || {
        let p = p.clone();
        async move {
            let store = SqliteStore::open(&p).await.expect("reopen after SIGKILL");
            let check: Vec<String> = sqlx::query_scalar("PRAGMA integrity_check")
                .fetch_all(store.pool())
                .await
                .unwrap();
            assert_eq!(check, vec!["ok".to_string()], "integrity_check");
            let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
                .fetch_one(store.pool())
                .await
                .unwrap();
            assert_eq!(mode, "wal");
            Box::new(store) as Box<dyn Store>
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_survives_sigkill() {
    let Some(db) = common::pg_database().await else {
        return;
    };
    let url = db.url.clone();
    crash_loop(&url, 0x5eed_0002, 8, || {
        let url = url.clone();
        async move { recall_store::open(&url).await.expect("reconnect") }
    })
    .await;
}
