//! `recall compact` as separate processes on one SQLite file, against a fake Anthropic server
//! that answers summariser calls slowly: two processes compacting one conversation at once
//! commit one summary (the other exits 2, naming the other summariser), and a process killed
//! with SIGKILL mid-call leaves the previous summary in force until its lease expires, after
//! which the next compaction rolls on from that summary. Also `recall render --summary`.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use recall_testkit::{anthropic, FakeServer, Part, Recorded, Reply};
use serde_json::{json, Value};

struct Env {
    dir: tempfile::TempDir,
    db: String,
}

fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("home")).unwrap();
    let db = dir.path().join("compact.db").display().to_string();
    Env { dir, db }
}

fn recall(env: &Env, base_url: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_recall"));
    c.env("RECALL_DB", &env.db)
        .env("HOME", env.dir.path().join("home"))
        .env_remove("RECALL_TENANT")
        .env_remove("RECALL_BACKEND")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("XDG_CACHE_HOME")
        .env("ANTHROPIC_API_KEY", "sk-ant-test-not-secret")
        .env("ANTHROPIC_BASE_URL", base_url)
        .stdin(Stdio::null());
    c
}

fn run(c: &mut Command) -> Output {
    c.output().unwrap()
}

fn ok_stdout(out: Output) -> String {
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// A conversation of `n` messages (every tenth states a fact), imported from a file.
fn import(env: &Env, base: &str, from: usize, n: usize, into: Option<&str>) -> String {
    let lines: Vec<String> = (from..from + n)
        .map(|i| {
            let role = if i % 2 == 1 { "user" } else { "assistant" };
            let text = if i % 10 == 1 {
                format!("FACT {i}: the code word is w{i}.")
            } else {
                format!("message {i}: {}", "some filler words here ".repeat(4))
            };
            json!({"role": role, "content": text}).to_string()
        })
        .collect();
    let file = env.dir.path().join(format!("in-{from}.jsonl"));
    std::fs::write(&file, lines.join("\n")).unwrap();
    let mut c = recall(env, base);
    c.arg("import").arg(&file);
    if let Some(id) = into {
        c.args(["--conversation", id]);
    }
    ok_stdout(run(&mut c)).trim().to_string()
}

/// Summariser calls answer after `pause`, with the facts of the new messages.
fn slow_summariser(pause: Duration) -> recall_testkit::Handler {
    Arc::new(move |r: &Recorded, _| {
        let body = r.json();
        let prompt = body["messages"][0]["content"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let facts: Vec<&str> = prompt
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("FACT"))
            .collect();
        let text = format!("Summary: {}", facts.join(" "));
        let mut parts = vec![Part::Pause(pause)];
        parts.extend(anthropic::text_reply(&[&text]));
        Reply::sse(parts)
    })
}

const POLICY: [&str; 6] = [
    "--max-tokens",
    "900",
    "--trim",
    "stable",
    "--summary-tokens",
    "300",
];

fn compact(env: &Env, base: &str, extra: &[&str]) -> Command {
    let mut c = recall(env, base);
    c.args(["compact", "--backend", "anthropic", "--json"])
        .args(POLICY)
        .args(extra);
    c
}

fn wait(child: Child) -> Output {
    child.wait_with_output().unwrap()
}

fn summariser_calls(server: &FakeServer) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.path.starts_with("/v1/messages"))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_commit_one_summary() {
    let server = FakeServer::start(slow_summariser(Duration::from_millis(1500))).await;
    let base = server.base_url();
    let env = env();
    let id = import(&env, &base, 1, 80, None);

    let spawn = || {
        compact(&env, &base, &[&id])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let (a, b) = tokio::task::spawn_blocking(move || (wait(a), wait(b)))
        .await
        .unwrap();
    let (won, lost) = if a.status.success() { (a, b) } else { (b, a) };
    assert!(won.status.success(), "{won:?}");
    assert_eq!(lost.status.code(), Some(2), "{lost:?}");
    let err = String::from_utf8_lossy(&lost.stderr);
    assert!(
        err.contains("is being compacted by another summariser"),
        "{err}"
    );
    assert_eq!(
        summariser_calls(&server),
        1,
        "only the winner called the summariser"
    );

    let report: Value = serde_json::from_slice(&won.stdout).unwrap();
    assert_eq!(report["status"], "compacted");
    assert_eq!(report["summary"]["version"], 1);
    // Nothing else was committed: the next run finds it up to date.
    let again: Value =
        serde_json::from_str(&ok_stdout(run(&mut compact(&env, &base, &[&id])))).unwrap();
    assert_eq!(again["status"], "up_to_date");
    assert_eq!(again["summary"]["version"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_call_keeps_the_previous_summary() {
    let server = FakeServer::start(slow_summariser(Duration::from_millis(100))).await;
    let base = server.base_url();
    let env = env();
    let id = import(&env, &base, 1, 60, None);
    let v1: Value =
        serde_json::from_str(&ok_stdout(run(&mut compact(&env, &base, &[&id])))).unwrap();
    let v1_end = v1["summary"]["to_seq"].as_i64().unwrap();
    import(&env, &base, 61, 80, Some(&id));

    // A second server that never answers in time: the process is killed while it waits.
    let stuck = FakeServer::start(slow_summariser(Duration::from_secs(60))).await;
    let mut child = compact(&env, &stuck.base_url(), &[&id, "--lease-secs", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while summariser_calls(&stuck) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no summariser call"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    child.wait().unwrap();

    // The previous summary is in force: the context carries it.
    let stats = |env: &Env| -> Value {
        let out = run(recall(env, &base)
            .args(["context", &id, "--summarize", "--stats"])
            .args(POLICY));
        assert!(out.status.success(), "{out:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        let line = err.lines().rfind(|l| l.starts_with("stats: ")).unwrap();
        serde_json::from_str(&line["stats: ".len()..]).unwrap()
    };
    assert_eq!(stats(&env)["summary"]["to_seq"], v1_end);
    // Its lease keeps others out until it expires; then the next compaction rolls on from
    // the summary in force.
    let busy = run(&mut compact(&env, &base, &[&id]));
    assert_eq!(busy.status.code(), Some(2), "{busy:?}");
    tokio::time::sleep(Duration::from_millis(2200)).await;
    let v2: Value =
        serde_json::from_str(&ok_stdout(run(&mut compact(&env, &base, &[&id])))).unwrap();
    assert_eq!(v2["status"], "compacted");
    assert_eq!(v2["summary"]["version"], 2);
    assert!(v2["summary"]["to_seq"].as_i64().unwrap() > v1_end);
    let last = server.requests().last().unwrap().json();
    let prompt = last["messages"][0]["content"].as_str().unwrap();
    assert!(prompt.starts_with("The summary so far:\n\n<conversation_summary>\n"));
    assert!(
        prompt.contains(&format!("[seq {}, ", v1_end + 1)),
        "rolls on from v1"
    );
    assert!(
        !prompt.contains(&format!("[seq {v1_end}, ")),
        "never summarises twice"
    );
    assert_eq!(stats(&env)["summary"]["to_seq"], v2["summary"]["to_seq"]);
}

#[test]
fn render_takes_a_summary() {
    let env = env();
    let input = r#"[{"role":"user","content":"one two three four five six"},
        {"role":"assistant","content":"seven eight nine ten"},
        {"role":"user","content":"What now?"}]"#;
    let file = env.dir.path().join("c.json");
    std::fs::write(&file, input).unwrap();
    let out = run(recall(&env, "http://127.0.0.1:9")
        .args(["render", "--input"])
        .arg(&file)
        .args(["--summary", "The user counts.", "--max-tokens", "140"])
        .args(["--summary-tokens", "130", "--stats"]));
    let text = ok_stdout(out);
    assert!(
        text.starts_with(
            "<conversation_summary>\nA summary of messages 1 to 2 of this conversation, older \
             than the recent history:\n  The user counts.\n</conversation_summary>\n\n---\n\n\
             Human: What now?"
        ),
        "{text}"
    );
}
