//! Concurrent writers on one conversation: 32 tokio tasks in one process, and two OS processes
//! sharing one database (the same SQLite file, the same PostgreSQL database). Afterwards every
//! message is there exactly once, `seq` runs 1..=N without gaps, retries never duplicate.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};

use common::{all_messages, check_window, with_id};
use recall_core::extract::measure;
use recall_core::message::{Content, Message, Role};
use recall_core::policy::Policy;
use recall_core::tokens::Tokenizer;
use recall_store::{Appended, NewConversation, NewMessage, Store, DEFAULT_TENANT};

const T: &str = DEFAULT_TENANT;
const TASKS: usize = 32;
const PER_TASK: usize = 20;

fn text_of(m: &Message) -> String {
    match &m.content {
        Content::Text(s) => s.clone(),
        other => panic!("unexpected content {other:?}"),
    }
}

/// One task's appends: (text, returned seq, written by this append) in the order they were
/// made.
type Log = Vec<(String, i64, bool)>;

/// Task `t` appends 20 messages, one or two per call: some without a client id, some with one
/// (each retried at once: the retry must be a duplicate with the same seq), and some with an id
/// shared with its partner task `t ^ 1`, which appends the same message at about the same
/// time: exactly one of the two writes it.
async fn task(s: &dyn Store, id: &str, t: usize) -> (Log, Vec<bool>) {
    let mut log = Vec::new();
    let mut shared_firsts = Vec::new();
    let mut j = 0;
    while j < PER_TASK {
        match j % 4 {
            0 => {
                let text = format!("task {t} message {j} (retried)");
                let key = format!("t{t}-m{j}");
                let m = Message::text(Role::User, text.clone());
                let first = s
                    .append(T, id, vec![with_id(m.clone(), &key)])
                    .await
                    .unwrap();
                assert!(!first[0].duplicate, "a new client id is not a duplicate");
                let retry = s.append(T, id, vec![with_id(m, &key)]).await.unwrap();
                assert_eq!(
                    retry,
                    vec![Appended {
                        seq: first[0].seq,
                        duplicate: true
                    }],
                    "a retry returns the first seq"
                );
                log.push((text, first[0].seq, true));
                j += 1;
            }
            1 => {
                let pair = t / 2;
                let text = format!("pair {pair} message {j}");
                let m = Message::text(Role::Assistant, text.clone());
                let r = s
                    .append(T, id, vec![with_id(m, &format!("pair{pair}-m{j}"))])
                    .await
                    .unwrap();
                shared_firsts.push(!r[0].duplicate);
                log.push((text, r[0].seq, !r[0].duplicate));
                j += 1;
            }
            2 => {
                let text = format!("task {t} message {j}");
                let r = s
                    .append(
                        T,
                        id,
                        vec![NewMessage::complete(Message::text(
                            Role::User,
                            text.clone(),
                        ))],
                    )
                    .await
                    .unwrap();
                assert!(!r[0].duplicate);
                log.push((text, r[0].seq, true));
                j += 1;
            }
            _ => {
                // Two messages in one transaction.
                let texts = [
                    format!("task {t} message {j}"),
                    format!("task {t} message {}", j + 1),
                ];
                let batch = texts
                    .iter()
                    .map(|x| NewMessage::complete(Message::text(Role::Assistant, x.clone())))
                    .collect();
                let r = s.append(T, id, batch).await.unwrap();
                assert_eq!(r[1].seq, r[0].seq + 1, "a batch is stored contiguously");
                for (x, a) in texts.into_iter().zip(r) {
                    log.push((x, a.seq, true));
                }
                j += 2;
            }
        }
    }
    (log, shared_firsts)
}

async fn many_tasks<S: Store + Clone + 'static>(store: S) {
    let id = store
        .create_conversation(T, NewConversation::default())
        .await
        .unwrap()
        .id;
    let handles: Vec<_> = (0..TASKS)
        .map(|t| {
            let s = store.clone();
            let id = id.clone();
            tokio::spawn(async move { task(&s, &id, t).await })
        })
        .collect();
    let mut logs = Vec::new();
    let mut shared: BTreeMap<(usize, usize), u32> = BTreeMap::new();
    for (t, h) in handles.into_iter().enumerate() {
        let (log, firsts) = h.await.expect("task panicked");
        for (k, first) in firsts.into_iter().enumerate() {
            *shared.entry((t / 2, k)).or_default() += first as u32;
        }
        logs.push(log);
    }
    // Exactly one task of each pair wrote each shared message.
    assert!(
        shared.values().all(|&n| n == 1),
        "shared writes: {shared:?}"
    );

    let all = all_messages(&store, T, &id).await;
    let distinct: std::collections::HashSet<&String> =
        logs.iter().flatten().map(|(text, _, _)| text).collect();
    let expected = distinct.len();
    assert!(expected > TASKS * PER_TASK * 3 / 4, "{expected} messages");
    check_exactly_once(&all, expected);
    let by_seq: HashMap<i64, String> = all.iter().map(|m| (m.seq, text_of(&m.message))).collect();
    for log in &logs {
        // What each append returned is what is stored there, and one task's appends are in
        // its order.
        for (text, seq, _) in log {
            assert_eq!(by_seq.get(seq), Some(text), "seq {seq}");
        }
        // (A shared message the partner wrote first has the partner's, older, seq.)
        let written: Vec<i64> = log.iter().filter(|e| e.2).map(|e| e.1).collect();
        assert!(written.windows(2).all(|w| w[0] < w[1]), "{log:?}");
    }
    let c = store.get_conversation(T, &id).await.unwrap();
    assert_eq!(c.message_count, expected as i64);
    assert_eq!(c.last_seq, expected as i64);
    let tokens: u64 = all
        .iter()
        .map(|m| measure(&m.message, &Tokenizer::O200k).tokens)
        .sum();
    assert_eq!(c.total_tokens, tokens as i64);
    // Running totals written by interleaved transactions are consistent.
    for p in [
        Policy {
            max_tokens: Some(300),
            ..Policy::default()
        },
        Policy {
            max_chars: Some(700),
            max_turns: Some(6),
            tokenizer: Tokenizer::Chars4,
            ..Policy::default()
        },
    ] {
        check_window(&store, T, &id, &p, "after concurrent appends").await;
    }
}

/// Seqs are 1..=expected with no gap and every text is stored once.
fn check_exactly_once(all: &[recall_store::StoredMessage], expected: usize) {
    let seqs: Vec<i64> = all.iter().map(|m| m.seq).collect();
    assert_eq!(
        seqs,
        (1..=expected as i64).collect::<Vec<_>>(),
        "gapless seqs"
    );
    let mut counts: HashMap<String, usize> = HashMap::new();
    for m in all {
        *counts.entry(text_of(&m.message)).or_default() += 1;
    }
    let dups: Vec<_> = counts.iter().filter(|(_, &n)| n > 1).collect();
    assert!(dups.is_empty(), "stored more than once: {dups:?}");
    assert_eq!(counts.len(), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_many_tasks() {
    let db = common::sqlite().await;
    many_tasks(db.store.clone()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_many_tasks() {
    let Some(db) = common::pg().await else { return };
    many_tasks(db.store.clone()).await;
}

fn partial(message: Message) -> NewMessage {
    NewMessage {
        status: recall_store::MessageStatus::Partial,
        ..NewMessage::complete(message)
    }
}

/// SQLite appends run on their own connection (rusqlite) and other writes on sqlx's: on a
/// current-thread runtime, an append that waited for the write lock on the runtime's only
/// thread would stall the sqlx transaction holding it (its task needs that thread) until the
/// 30 s busy timeout. Appends, partial-reply updates and new conversations interleave here on
/// one thread and must all finish promptly and consistently.
#[tokio::test(flavor = "current_thread")]
async fn sqlite_writers_of_both_drivers_share_one_thread() {
    let db = common::sqlite().await;
    let s = &db.store;
    let id = s
        .create_conversation(T, NewConversation::default())
        .await
        .unwrap()
        .id;
    s.append(
        T,
        &id,
        vec![partial(Message::text(Role::Assistant, "draft 0"))],
    )
    .await
    .unwrap();
    let appends = async {
        for i in 0..200 {
            let m = Message::text(Role::User, format!("append {i}"));
            s.append(T, &id, vec![NewMessage::complete(m)])
                .await
                .unwrap();
            tokio::task::yield_now().await;
        }
    };
    let updates = async {
        for i in 1..=200 {
            let m = Message::text(Role::Assistant, format!("draft {i}"));
            s.update_message(T, &id, 1, partial(m)).await.unwrap();
            if i % 10 == 0 {
                s.create_conversation(T, NewConversation::default())
                    .await
                    .unwrap();
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(20), async {
        tokio::join!(appends, updates)
    })
    .await
    .expect("writers of both drivers finish without waiting on each other");
    let stored = all_messages(s, T, &id).await;
    assert_eq!(stored.len(), 201);
    assert_eq!(text_of(&stored[0].message), "draft 200");
    for (i, m) in stored[1..].iter().enumerate() {
        assert_eq!(m.seq, i as i64 + 2);
        assert_eq!(text_of(&m.message), format!("append {i}"));
    }
}

// ---------------------------------------------------------------------------------------------
// Two processes
// ---------------------------------------------------------------------------------------------

const WORKER_URL: &str = "RECALL_STORE_WORKER_URL";
const PER_PROCESS: usize = 150;

/// Not a test of its own: the body of a child process. Runs only when the parent test sets
/// `RECALL_STORE_WORKER_URL`; opens the store (running migrations at the same time as the
/// other child), says `ready`, waits for `go <conversation id>` on stdin, then appends.
#[test]
fn append_worker() {
    let Ok(url) = std::env::var(WORKER_URL) else {
        return;
    };
    let name = std::env::var("RECALL_STORE_WORKER_NAME").expect("worker name");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let store = recall_store::open(&url)
            .await
            .expect("worker opens the store");
        // A line of its own (the harness has written "test append_worker ... " already).
        println!("\nready");
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).unwrap();
        let id = line
            .trim()
            .strip_prefix("go ")
            .expect("go line")
            .to_string();
        let mut last = 0;
        for i in 0..PER_PROCESS {
            let m = Message::text(Role::User, format!("{name} message {i}"));
            let new = if i.is_multiple_of(2) {
                with_id(m, &format!("{name}-{i}"))
            } else {
                NewMessage::complete(m)
            };
            let r = store.append(T, &id, vec![new.clone()]).await.unwrap();
            assert!(!r[0].duplicate && r[0].seq > last, "{r:?} after {last}");
            if i.is_multiple_of(6) {
                let again = store.append(T, &id, vec![new]).await.unwrap();
                assert_eq!(again[0].seq, r[0].seq);
                assert!(again[0].duplicate);
            }
            last = r[0].seq;
            // Meet the other process at its first message and halfway: then the two really
            // append at the same time, however fast one of them is (without this, one could
            // finish before the other's first lock and the interleaving check would flake).
            if i == 0 || i == PER_PROCESS / 2 {
                let other = if name == "alpha" { "beta" } else { "alpha" };
                let start = std::time::Instant::now();
                loop {
                    let all = store.messages(T, &id, 0, 100_000).await.unwrap();
                    let theirs = all
                        .iter()
                        .filter(|m| text_of(&m.message).starts_with(other))
                        .count();
                    if theirs > i {
                        break;
                    }
                    assert!(
                        start.elapsed() < std::time::Duration::from_secs(60),
                        "{other} never reached message {i}"
                    );
                    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                }
            }
        }
        println!("done");
    });
}

struct Worker {
    child: Child,
    stdin: ChildStdin,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

fn spawn_worker(url: &str, name: &str) -> Worker {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "append_worker",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(WORKER_URL, url)
        .env("RECALL_STORE_WORKER_NAME", name)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn worker");
    let stdin = child.stdin.take().unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    Worker {
        child,
        stdin,
        lines,
    }
}

impl Drop for Worker {
    /// A failed test leaves no child behind.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Worker {
    /// Reads the child's stdout up to `want` (skipping the test harness's own lines).
    fn expect_line(&mut self, want: &str) {
        for line in self.lines.by_ref() {
            if line.expect("worker stdout").trim_end() == want {
                return;
            }
        }
        let status = self.child.wait().unwrap();
        panic!("worker exited ({status}) before saying {want:?}");
    }
}

/// Two processes append to one conversation at once, through `url`.
fn two_processes(url: &str) {
    let mut workers: Vec<Worker> = ["alpha", "beta"]
        .iter()
        .map(|n| spawn_worker(url, n))
        .collect();
    for w in &mut workers {
        w.expect_line("ready");
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let store = rt.block_on(recall_store::open(url)).unwrap();
    let id = rt
        .block_on(store.create_conversation(T, NewConversation::default()))
        .unwrap()
        .id;
    for w in &mut workers {
        writeln!(w.stdin, "go {id}").unwrap();
        w.stdin.flush().unwrap();
    }
    for w in &mut workers {
        w.expect_line("done");
        let status = w.child.wait().unwrap();
        assert!(status.success(), "worker failed: {status}");
    }
    let all = rt.block_on(all_messages(store.as_ref(), T, &id));
    check_exactly_once(&all, 2 * PER_PROCESS);
    for name in ["alpha", "beta"] {
        let mine: Vec<usize> = all
            .iter()
            .filter_map(|m| {
                text_of(&m.message)
                    .strip_prefix(&format!("{name} message "))
                    .map(|i| i.parse().unwrap())
            })
            .collect();
        assert_eq!(mine, (0..PER_PROCESS).collect::<Vec<_>>(), "{name}'s order");
    }
    // The two really wrote at the same time (the workers meet twice, so this always holds
    // unless an append lost or reordered something).
    let writers: Vec<bool> = all
        .iter()
        .map(|m| text_of(&m.message).starts_with("alpha"))
        .collect();
    let switches = writers.windows(2).filter(|w| w[0] != w[1]).count();
    assert!(switches >= 2, "the processes did not interleave");
    let p = Policy {
        max_tokens: Some(500),
        ..Policy::default()
    };
    rt.block_on(check_window(store.as_ref(), T, &id, &p, "two processes"));
}

#[test]
fn sqlite_two_processes() {
    let dir = tempfile::tempdir().unwrap();
    // A fresh file: both children create the schema at the same time.
    let path = dir.path().join("shared.db");
    two_processes(path.to_str().unwrap());
}

#[test]
fn postgres_two_processes() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let Some(db) = rt.block_on(common::pg_database()) else {
        return;
    };
    // A fresh database: both children run the migrations at the same time.
    two_processes(&db.url);
    drop(db);
}
