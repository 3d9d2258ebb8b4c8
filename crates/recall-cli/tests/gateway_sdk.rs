//! The gateway driven by clients no one here wrote: the official `anthropic` and `openai`
//! Python SDKs (pinned by scripts/setup.sh in `.tools/venv`) run
//! `tests/client/gateway_sdk.py` against a real `recall serve` process on a SQLite file,
//! whose upstreams (`ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL` in its environment) are
//! recall-testkit's fake provider on loopback.
//!
//! Without the SDKs the test is skipped with a notice, except when `CI=true`, where it fails.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use recall_testkit::process::{python_with, workspace_root, Served};
use recall_testkit::provider::FakeProvider;

/// The Python that has both SDKs, or `None` outside CI when there is none.
fn python() -> Option<PathBuf> {
    python_with(
        "anthropic, openai",
        "RECALL_SDK_PYTHON",
        "the gateway SDK test",
    )
}

/// A `recall serve` process whose upstreams are `fake`, on a fresh SQLite file, and a key of
/// tenant `sdk`.
struct Gateway {
    base: String,
    key: String,
    db: String,
    _server: Served,
    _dir: tempfile::TempDir,
}

fn recall_cmd(db: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_recall"));
    c.env("RECALL_DB", db).stdin(Stdio::null());
    c
}

fn start_gateway(fake: &FakeProvider) -> Gateway {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("gateway.db").display().to_string();
    let out = recall_cmd(&db)
        .args(["keys", "create", "--tenant", "sdk"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let key = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_recall"));
    cmd.args(["serve", "--addr", "127.0.0.1:0", "--db", &db])
        .env("ANTHROPIC_API_KEY", "sk-ant-upstream")
        .env("ANTHROPIC_BASE_URL", fake.base_url())
        .env("OPENAI_BASE_URL", format!("{}/v1", fake.base_url()))
        .env_remove("OPENAI_API_KEY")
        .env_remove("RECALL_DB");
    let server = Served::start(cmd);
    Gateway {
        base: server.base.clone(),
        key,
        db,
        _server: server,
        _dir: dir,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn official_python_sdks_drive_the_gateway() {
    let Some(python) = python() else {
        return;
    };
    let rt = runtime();
    let fake = rt.block_on(FakeProvider::start());
    let gw = start_gateway(&fake);
    let (base, key) = (gw.base.clone(), gw.key.clone());
    let script = workspace_root().join("crates/recall-cli/tests/client/gateway_sdk.py");
    let mut client = Command::new(&python)
        .arg(&script)
        .arg(&base)
        .arg(&key)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(180);
    let status = loop {
        if let Some(s) = client.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = client.kill();
            panic!("the SDK client did not finish within 180 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = client.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(
        status.success(),
        "SDK checks failed:\n{stdout}\nstderr:\n{stderr}"
    );
    let last = stdout.lines().last().unwrap_or_default();
    assert!(
        last.ends_with(" passed, 0 failed") && !last.starts_with("0 passed"),
        "unexpected summary: {last}"
    );
    // The upstream saw recall's key for the provider, never the client's recall key.
    let reqs = fake.requests();
    assert!(!reqs.is_empty());
    for r in &reqs {
        assert!(!String::from_utf8_lossy(&r.body).contains(&key));
        assert!(r.headers.values().all(|v| !v.contains(&key)));
    }
    drop(gw);
}

/// The stored messages of a conversation, as `recall export` writes them (one JSON line
/// each).
fn exported(db: &str, id: &str) -> Vec<serde_json::Value> {
    let out = recall_cmd(db)
        .args(["export", id])
        .env("RECALL_TENANT", "sdk")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The real Claude Code CLI pointed at the gateway (`ANTHROPIC_BASE_URL`) holds a three-turn
/// session (`claude -p`, then `--continue`): it sends its whole history each time (mirror
/// mode), every turn is stored in the conversation its `x-recall-conversation` header names
/// (`ANTHROPIC_CUSTOM_HEADERS`), and the requests reach the provider trimmed to the
/// conversation's policy (a window of two turns, with recall bringing back turn one).
#[test]
fn claude_code_holds_a_session_through_the_gateway() {
    let Some(claude) = recall_testkit::require_claude() else {
        return;
    };
    let rt = runtime();
    let fake = rt.block_on(FakeProvider::start());
    let gw = start_gateway(&fake);
    let out = recall_cmd(&gw.db)
        .args(["conversations", "new", "--title", "claude session"])
        .args([
            "--policy",
            r#"{"format":"anthropic","max_turns":2,"max_tokens":4000,"recall_tokens":1000}"#,
        ])
        .env("RECALL_TENANT", "sdk")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let id = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let turns = [
        "My dog is called Biscuit.",
        "I like green tea.",
        "What is my dog called?",
    ];
    let mut last = String::new();
    for (i, text) in turns.iter().enumerate() {
        let mut cmd = Command::new(&claude);
        cmd.arg("-p");
        if i > 0 {
            cmd.arg("--continue");
        }
        let out = cmd
            .arg(text)
            .current_dir(work.path())
            .envs(recall_testkit::claude_offline_env(
                &format!("{}/anthropic", gw.base),
                home.path(),
            ))
            .env("ANTHROPIC_API_KEY", &gw.key)
            .env(
                "ANTHROPIC_CUSTOM_HEADERS",
                format!("x-recall-conversation: {id}"),
            )
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "claude turn {i}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        last = String::from_utf8_lossy(&out.stdout).to_string();
    }
    assert!(
        last.contains("Biscuit"),
        "the third answer saw turn one: {last}"
    );
    let stored = exported(&gw.db, &id);
    let user_texts: Vec<String> = stored
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .collect();
    for t in turns {
        assert!(
            user_texts.iter().any(|u| u.contains(t)),
            "'{t}' is stored: {user_texts:?}"
        );
    }
    // What the provider got for the last turn: the window of two turns, not the whole session.
    let main: Vec<serde_json::Value> = fake
        .requests()
        .iter()
        .map(|r| r.json())
        .filter(|b| b["messages"].to_string().contains("What is my dog called?"))
        .collect();
    let sent = main.last().expect("the last turn reached the provider");
    let n = sent["messages"].as_array().unwrap().len();
    assert!(
        n < stored.len(),
        "trimmed: {n} messages sent of {} stored",
        stored.len()
    );
    drop(gw);
}
