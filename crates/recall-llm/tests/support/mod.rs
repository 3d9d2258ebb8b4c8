//! Test support: the fake Anthropic and OpenAI servers of recall-testkit, plus helpers shared
//! by the adapter tests.

#![allow(dead_code, unused_imports)]

use std::time::Duration;

use futures::StreamExt;
use recall_llm::{BackendEvent, EventStream};
use serde_json::{json, Value};

pub use recall_testkit::{anthropic, openai, FakeServer, Handler, Part, Recorded, Reply};

/// Reads a stream to its end, with a limit so a hung stream fails the test.
pub async fn drain(mut s: EventStream) -> Vec<BackendEvent> {
    let mut out = Vec::new();
    let read = async {
        while let Some(ev) = s.next().await {
            out.push(ev);
        }
    };
    tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .expect("the stream did not end within 60 s");
    out
}

/// The text deltas of `events`, concatenated.
pub fn text_of(events: &[BackendEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            BackendEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// Folds events with the public assembler.
pub fn assemble(events: &[BackendEvent]) -> recall_llm::AssembledReply {
    let mut a = recall_llm::Assembler::new();
    for e in events {
        a.push(e);
    }
    a.finish()
}

/// True when process `pid` no longer exists (killed and reaped).
pub fn pid_gone(pid: u32) -> bool {
    !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// True when `pid` is gone or a zombie (dead but not yet reaped by its new parent: a
/// grandchild reparented to init is reaped by init, not by us).
pub fn pid_dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| {
                rest.trim_start().starts_with('Z') || rest.trim_start().starts_with('X')
            })
            .unwrap_or(false),
    }
}

/// Polls `cond` for up to `limit`.
pub async fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cond()
}

/// The error of a call that must fail before streaming.
pub fn expect_err(r: Result<EventStream, recall_llm::BackendError>) -> recall_llm::BackendError {
    match r {
        Ok(_) => panic!("expected the call to fail before streaming"),
        Err(e) => e,
    }
}

/// Stdout of the real CLI (version 2.1.197), recorded once and kept in `tests/data/`.
pub fn recording_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/claude-cli-2.1.197-stream-json-partial.jsonl")
}

const FAKE_CLAUDE: &str = r#"#!/bin/sh
# Fake `claude` for recall-llm tests. FAKE_CLAUDE_DIR receives what it was given;
# FAKE_CLAUDE_MODE picks the behaviour.
out="${FAKE_CLAUDE_DIR:?FAKE_CLAUDE_DIR is not set}"
printf '%s\n' "$$" > "$out/pid"
for a in "$@"; do printf '[%s]\n' "$a"; done > "$out/argv"
env > "$out/env"
case "${FAKE_CLAUDE_MODE:-replay}" in
  replay)
    cat > "$out/stdin"
    cat "$FAKE_CLAUDE_RECORDING"
    ;;
  hang)
    cat > "$out/stdin"
    sleep 1000 &
    printf '%s\n' "$!" > "$out/grandchild"
    echo '{"type":"system","subtype":"init"}'
    wait
    ;;
  auth)
    cat > /dev/null
    echo '{"type":"result","subtype":"success","is_error":true,"result":"Not logged in · Please run /login"}'
    ;;
  error)
    cat > /dev/null
    echo '{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["No conversation found with session ID: 42"]}'
    ;;
  crash)
    cat > /dev/null
    echo 'fatal: something went wrong' >&2
    exit 3
    ;;
  partial)
    cat > /dev/null
    head -n 5 "$FAKE_CLAUDE_RECORDING"
    exit 1
    ;;
esac
"#;

/// The fake `claude` script, written once per test process before any test spawns a child
/// (writing an executable while another thread forks can make its exec fail with ETXTBSY, so
/// every CLI test calls this first).
pub fn fake_claude() -> std::path::PathBuf {
    static PATH: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("fake-claude-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("claude");
        std::fs::write(&path, FAKE_CLAUDE).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    })
    .clone()
}

/// A CLI backend config running the fake script in `mode`, writing into `dir`.
pub fn fake_cli_config(mode: &str, dir: &std::path::Path) -> recall_llm::ClaudeCliConfig {
    recall_llm::ClaudeCliConfig {
        claude_path: fake_claude(),
        env: vec![
            ("FAKE_CLAUDE_MODE".into(), mode.into()),
            ("FAKE_CLAUDE_DIR".into(), dir.display().to_string()),
            (
                "FAKE_CLAUDE_RECORDING".into(),
                recording_path().display().to_string(),
            ),
        ],
        ..recall_llm::ClaudeCliConfig::default()
    }
}

/// A three-message history ending with the new user message.
pub fn three_turns() -> recall_llm::ChatRequest {
    use recall_core::{Message, Role};
    recall_llm::ChatRequest::new(vec![
        Message::text(Role::User, "My name is Zorblax and I collect teapots."),
        Message::text(
            Role::Assistant,
            "Nice to meet you, Zorblax! Teapots are lovely.",
        ),
        Message::text(Role::User, "What do I collect?"),
    ])
}

/// Reads a pid the fake script wrote.
pub fn read_pid(path: &std::path::Path) -> u32 {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .trim()
        .parse()
        .unwrap()
}
