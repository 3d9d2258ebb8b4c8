//! Memory on by default, every stored message embedded (issue 52), as a user runs it: real
//! processes, the real all-MiniLM-L6-v2 that `scripts/models.sh fetch` installs, a real SQLite
//! file or a fresh PostgreSQL database, real HTTP on 127.0.0.1.
//! - `recall context` with nothing set but `--max-tokens` recalls once the conversation
//!   outgrows the budget; `--recall-tokens 0` turns it off; a conversation that fits does no
//!   recall work and loads no model (it succeeds with a broken one).
//! - `recall import`, then `recall serve`: with no append, the server embeds the history in
//!   the background and its contexts say `complete: true` within a minute; `/metrics` shows
//!   nothing left behind.
//! - `recall import`, then `recall mcp`: the same, through `get_context` over stdio.
//! - `recall index` embeds a conversation to completion; `conversations show` says how far.
//!
//! Outside CI a missing model skips these tests with a note; in CI (`CI=true`) they fail.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use recall_testkit::process::Served;
use serde_json::{json, Value};

// The server tests' helpers, for their temporary PostgreSQL databases (not duplicated here).
#[path = "../../recall-server/tests/common/mod.rs"]
mod common;

/// A cache folder whose `recall/minilm` links to the installed model; `None` (skipped) when
/// it is not installed outside CI.
fn cache_with_model(root: &Path) -> Option<PathBuf> {
    let installed = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?
        .join("recall/minilm");
    if !installed.join("model.safetensors").is_file() {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(!ci, "all-MiniLM-L6-v2 is not installed and CI needs it");
        recall_testkit::skipped("all-MiniLM-L6-v2 is not installed (bash scripts/models.sh fetch)");
        return None;
    }
    let cache = root.join("cache");
    std::fs::create_dir_all(cache.join("recall")).unwrap();
    std::os::unix::fs::symlink(installed, cache.join("recall/minilm")).unwrap();
    Some(cache)
}

fn recall(db: &str, cache: &Path) -> Command {
    let mut c = Command::cargo_bin("recall").unwrap();
    c.env("RECALL_DB", db)
        .env("XDG_CACHE_HOME", cache)
        .env_remove("RECALL_TENANT")
        .env_remove("RECALL_EMBED")
        .env_remove("RECALL_EMBED_MODEL")
        .env_remove("RECALL_EMBED_URL")
        .env_remove("RECALL_EMBED_MODEL_NAME");
    c
}

fn stdout_of(c: &mut Command) -> String {
    let out = c.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// Imports a conversation of `pairs` exchanges whose first states a fact in words the
/// question does not use; its id.
fn imported(db: &str, cache: &Path, dir: &Path, pairs: usize) -> String {
    let mut lines = vec![
        json!({"role": "user", "content": "We finally named the puppy Biscuit."}).to_string(),
        json!({"role": "assistant", "content": "Lovely name for a puppy!"}).to_string(),
    ];
    for i in 0..pairs {
        lines.push(
            json!({"role": "user", "content": format!("Step {i} of the deployment checklist is done.")})
                .to_string(),
        );
        lines.push(
            json!({"role": "assistant", "content": format!("Good, step {i} is ticked off.")})
                .to_string(),
        );
    }
    let file = dir.join(format!("chat-{pairs}.jsonl"));
    std::fs::write(&file, lines.join("\n")).unwrap();
    let out = recall(db, cache)
        .args(["import", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // "imported N messages into ID ..." on stderr.
    let stderr = String::from_utf8(out.stderr).unwrap();
    stderr
        .split_whitespace()
        .skip_while(|w| *w != "into")
        .nth(1)
        .unwrap_or_else(|| panic!("no id in {stderr:?}"))
        .trim_end_matches([',', '.', ';'])
        .to_string()
}

/// `recall context ID ARGS --stats`: its stats.
fn context_stats(db: &str, cache: &Path, id: &str, args: &[&str]) -> Value {
    let out = recall(db, cache)
        .args(["context", id])
        .args(args)
        .args(["--query", "What is my pet called?", "--stats"])
        .output()
        .unwrap();
    stats_of(&out)
}

/// The `stats: {...}` line a successful `--stats` command printed on stderr.
fn stats_of(out: &std::process::Output) -> Value {
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .find_map(|l| l.strip_prefix("stats: "))
        .unwrap_or_else(|| panic!("no stats line: {stderr}"));
    serde_json::from_str(line).unwrap()
}

#[test]
fn recall_is_on_by_default_once_a_conversation_outgrows_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    let Some(cache) = cache_with_model(dir.path()) else {
        return;
    };
    let db = dir.path().join("r.db").display().to_string();
    // About 2,300 tokens: more than the budget below.
    let id = imported(&db, &cache, dir.path(), 80);

    // Nothing set but the budget: half of it recalls, by meaning, and finds the fact.
    let s = context_stats(&db, &cache, &id, &["--max-tokens", "1200"]);
    let r = &s["recalled"];
    assert_eq!(r["budget"], 600, "{s}");
    assert_eq!(r["ranking"], "hybrid", "{s}");
    assert!(
        r["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["seq"] == 1),
        "the fact is recalled: {s}"
    );
    // Off when asked.
    let s = context_stats(
        &db,
        &cache,
        &id,
        &["--max-tokens", "1200", "--recall-tokens", "0"],
    );
    assert!(s.get("recalled").is_none(), "{s}");
    assert!(s["dropped"].as_u64().unwrap() > 0, "{s}");

    // A conversation that fits its budget: the whole history, no recall work, and no model
    // loaded (a broken model would fail the command if it were).
    let short = imported(&db, &cache, dir.path(), 2);
    let broken = dir.path().join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    // Its config reads (the model's own), its weights do not: loading it fails.
    let model_dir = cache.join("recall/minilm");
    std::fs::copy(model_dir.join("config.json"), broken.join("config.json")).unwrap();
    std::fs::write(broken.join("tokenizer.json"), b"{}").unwrap();
    std::fs::write(broken.join("model.safetensors"), b"not weights").unwrap();
    let out = recall(&db, &cache)
        .env("RECALL_EMBED_MODEL", &broken)
        .args(["context", &short, "--max-tokens", "4000", "--stats"])
        .output()
        .unwrap();
    let s = stats_of(&out);
    assert_eq!(s["dropped"], 0, "{s}");
    assert!(s.get("recalled").is_none(), "{s}");
    // The outgrown one with the broken model does fail: the check above can tell.
    let out = recall(&db, &cache)
        .env("RECALL_EMBED_MODEL", &broken)
        .args(["context", &id, "--max-tokens", "1200"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "{out:?}");
}

#[test]
fn recall_index_embeds_a_conversation_and_show_says_how_far() {
    let dir = tempfile::tempdir().unwrap();
    let Some(cache) = cache_with_model(dir.path()) else {
        return;
    };
    let db = dir.path().join("r.db").display().to_string();
    let id = imported(&db, &cache, dir.path(), 20);
    let shown = stdout_of(recall(&db, &cache).args(["conversations", "show", &id]));
    assert!(
        shown.contains("vectors:   42 message(s) not embedded yet (all-MiniLM-L6-v2"),
        "{shown}"
    );
    let out = stdout_of(recall(&db, &cache).args(["index", &id, "--json"]));
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["messages"], 42, "{report}");
    assert_eq!(report["conversations"], 1, "{report}");
    assert_eq!(report["messages_behind"], 0, "{report}");
    let shown = stdout_of(recall(&db, &cache).args(["conversations", "show", &id]));
    assert!(
        shown.contains("vectors:   every message embedded (all-MiniLM-L6-v2)"),
        "{shown}"
    );
    // Done is done: again, nothing to do; the whole tenant likewise.
    let out = stdout_of(recall(&db, &cache).args(["index"]));
    assert!(
        out.starts_with("embedded 0 messages of 0 conversation(s)"),
        "{out}"
    );
    // Bad input names the problem and exits 2: an unknown conversation, an id with
    // --all-tenants, no embedder.
    let out = recall(&db, &cache)
        .args(["index", "no-such-id"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no-such-id"),
        "{out:?}"
    );
    let out = recall(&db, &cache)
        .args(["index", &id, "--all-tenants"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let out = recall(&db, &cache)
        .env("RECALL_EMBED", "off")
        .args(["index"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no embedder"),
        "{out:?}"
    );
}

/// Imports with the CLI, then serves: contexts say `complete: true` within a minute with no
/// append, and `/metrics` shows nothing behind.
async fn import_then_serve(db: &str, root: &Path) {
    let Some(cache) = cache_with_model(root) else {
        return;
    };
    let id = imported(db, &cache, root, 80);
    let mut cmd = StdCommand::new(env!("CARGO_BIN_EXE_recall"));
    cmd.args(["serve", "--addr", "127.0.0.1:0", "--no-auth", "--db", db])
        .env_remove("RECALL_DB")
        .env("XDG_CACHE_HOME", &cache)
        .env_remove("RECALL_EMBED")
        .env_remove("RECALL_EMBED_MODEL")
        .env_remove("RECALL_EMBED_URL");
    let server = Served::start(cmd);
    let client = reqwest::Client::new();
    let started = Instant::now();
    let stats = loop {
        let res = client
            .post(format!("{}/v1/conversations/{id}/context", server.base))
            .json(&json!({"max_tokens": 1200, "query": "What is my pet called?"}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        let v: Value = res.json().await.unwrap();
        let stats = v["stats"].clone();
        assert!(
            stats["recalled"].is_object(),
            "recall is on by default: {stats}"
        );
        if stats["recalled"]["complete"] == true {
            break stats;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "still incomplete after a minute: {stats}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert_eq!(stats["recalled"]["ranking"], "hybrid", "{stats}");
    // The window's own messages need no vectors for this context, but they get theirs too:
    // the metric goes to 0 within the minute.
    loop {
        let metrics = client
            .get(format!("{}/metrics", server.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if metrics.contains("recall_vectors_behind_messages{model=\"all-MiniLM-L6-v2\"} 0") {
            break;
        }
        assert!(
            metrics.contains("recall_vectors_behind_messages{model=\"all-MiniLM-L6-v2\"}"),
            "{metrics}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "vectors still behind after a minute: {metrics}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    drop(server);
    // The CLI agrees.
    let shown = stdout_of(recall(db, &cache).args(["conversations", "show", &id]));
    assert!(
        shown.contains("vectors:   every message embedded"),
        "{shown}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_then_serve_embeds_the_history_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db").display().to_string();
    import_then_serve(&db, dir.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_then_serve_embeds_the_history_on_postgres() {
    let Some(pg) = common::pg_database().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    import_then_serve(&pg.url, dir.path()).await;
}

/// Imports with the CLI, then serves MCP on stdio: the history is embedded within a minute
/// with no append and no call (the MCP server catches up at start as `recall serve` does),
/// and `get_context` says `complete: true`.
#[test]
fn import_then_mcp_embeds_the_history() {
    use std::io::{BufRead, BufReader, Write};
    let dir = tempfile::tempdir().unwrap();
    let Some(cache) = cache_with_model(dir.path()) else {
        return;
    };
    let db = dir.path().join("r.db").display().to_string();
    let id = imported(&db, &cache, dir.path(), 80);
    let mut child = StdCommand::new(env!("CARGO_BIN_EXE_recall"))
        .args(["mcp", "--db", &db])
        .env_remove("RECALL_DB")
        .env("XDG_CACHE_HOME", &cache)
        .env_remove("RECALL_EMBED")
        .env_remove("RECALL_EMBED_MODEL")
        .env_remove("RECALL_EMBED_URL")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |v: Value| writeln!(stdin, "{v}").unwrap();
    let mut answer = |want: u64| -> Value {
        let mut line = String::new();
        loop {
            line.clear();
            assert!(stdout.read_line(&mut line).unwrap() > 0, "recall mcp ended");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == want {
                return v;
            }
        }
    };
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "memory_default", "version": "0"}}}),
    );
    answer(0);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    // Embedded with no call at all (a context would mark its conversation behind itself):
    // another process reading the same file sees it done within a minute.
    let started = Instant::now();
    loop {
        let shown = stdout_of(recall(&db, &cache).args(["conversations", "show", &id]));
        if shown.contains("vectors:   every message embedded") {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "not embedded after a minute with no call: {shown}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let mut n = 1;
    let stats = loop {
        send(
            json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {
            "name": "get_context", "arguments": {"conversation_id": id, "max_tokens": 1200,
            "query": "What is my pet called?"}}}),
        );
        let res = answer(n);
        n += 1;
        let text = res["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        let ctx: Value = serde_json::from_str(text).unwrap_or_else(|_| panic!("{res}"));
        let stats = ctx["stats"].clone();
        assert!(
            stats["recalled"].is_object(),
            "recall is on by default: {stats}"
        );
        if stats["recalled"]["complete"] == true {
            break stats;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "still incomplete after a minute: {stats}"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(stats["recalled"]["ranking"], "hybrid", "{stats}");
    drop(stdin);
    let _ = child.wait();
}
