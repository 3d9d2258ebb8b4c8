//! The gateway driven by clients no one here wrote: the official `anthropic` and `openai`
//! Python SDKs (pinned by scripts/setup.sh in `.tools/venv`) run
//! `tests/client/gateway_sdk.py` against a real `recall serve` process on a SQLite file,
//! whose upstreams (`ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL` in its environment) are
//! recall-testkit's fake provider on loopback.
//!
//! Without the SDKs the test is skipped with a notice, except when `CI=true`, where it fails.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use recall_testkit::provider::FakeProvider;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The Python that has both SDKs, or `None` outside CI when there is none.
fn python() -> Option<PathBuf> {
    let candidate = std::env::var_os("RECALL_SDK_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".tools/venv/bin/python"));
    let usable = Command::new(&candidate)
        .args(["-c", "import anthropic, openai"])
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success());
    if usable {
        return Some(candidate);
    }
    let why = format!(
        "{} cannot import anthropic and openai (run scripts/setup.sh, or set RECALL_SDK_PYTHON)",
        candidate.display()
    );
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{why}; CI=true, so the gateway SDK test must run");
    }
    eprintln!("notice: {why}; skipping the gateway SDK test");
    None
}

/// Kills the server when the test ends, however it ends.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn official_python_sdks_drive_the_gateway() {
    let Some(python) = python() else {
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let fake = rt.block_on(FakeProvider::start());
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("gateway.db").display().to_string();
    let recall = env!("CARGO_BIN_EXE_recall");
    let out = Command::new(recall)
        .args(["keys", "create", "--tenant", "sdk"])
        .env("RECALL_DB", &db)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let key = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let mut child = Command::new(recall)
        .args(["serve", "--addr", "127.0.0.1:0", "--db", &db])
        .env("ANTHROPIC_API_KEY", "sk-ant-upstream")
        .env("ANTHROPIC_BASE_URL", fake.base_url())
        .env("OPENAI_BASE_URL", format!("{}/v1", fake.base_url()))
        .env_remove("OPENAI_API_KEY")
        .env_remove("RECALL_DB")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let server = Killed(child);
    let mut lines = BufReader::new(stderr).lines();
    let base = loop {
        let line = lines
            .next()
            .expect("recall serve announced no address")
            .unwrap();
        if let Some(rest) = line.strip_prefix("recall listening on ") {
            break rest.split_whitespace().next().unwrap().to_string();
        }
    };
    std::thread::spawn(move || lines.for_each(drop));

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
    drop(server);
}
