//! The web app in a real browser: Debian's Chromium, driven by playwright-core from
//! `tests/web/e2e.cjs`, against real `recall serve` processes on a SQLite file whose chat
//! backend is the fake Anthropic provider (streamed words, a slow reply to stop, a failure to
//! retry). The script signs in, chats, stops, retries, edits and switches branches, searches,
//! reads the inspector, opens a 100,000-message conversation, tries another tenant's
//! conversation by URL, checks every screen with axe-core and takes the screenshots; this
//! side prepares the data, then holds the inspector to what `recall context --stats` says.
//!
//! `RECALL_UPDATE_SCREENSHOTS=1` writes the screenshots into `docs/screenshots/` (the ones
//! the README shows); otherwise into a temporary folder.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use recall_testkit::process::{browser, run_ok, workspace_root, Served};
use recall_testkit::provider::FakeProvider;
use serde_json::{json, Value};

/// The big conversation's size: the "usable on a conversation of 100,000 messages".
const BIG: usize = 100_000;

fn recall(db: &Path, args: &[&str]) -> String {
    let (stdout, _) = run_ok(
        Command::new(env!("CARGO_BIN_EXE_recall"))
            .args(args)
            .env("RECALL_DB", db)
            .env_remove("RECALL_TENANT"),
    );
    stdout.trim().to_string()
}

/// `recall context ID --stats …` for `tenant`: the stats line it prints on stderr.
fn context_stats(db: &Path, tenant: &str, id: &str, extra: &[&str]) -> Value {
    let (_, stderr) = run_ok(
        Command::new(env!("CARGO_BIN_EXE_recall"))
            .args(["context", id, "--stats", "--tenant", tenant])
            .args(extra)
            .env("RECALL_DB", db),
    );
    let line = stderr
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("stats: "))
        .expect("a stats line");
    serde_json::from_str(line).expect("stats JSON")
}

/// A conversation of `n` short messages for `tenant`, imported in one transaction.
fn import_big(db: &Path, dir: &Path, tenant: &str, n: usize) -> String {
    let file = dir.join("big.jsonl");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&file).expect("create"));
    for i in 1..=n {
        let m = if i % 2 == 1 {
            json!({"role": "user", "content": format!("Message {i}: how is item {i} doing?")})
        } else {
            json!({"role": "assistant", "content": format!("Item {} is **fine**, thanks.", i - 1)})
        };
        writeln!(w, "{m}").expect("write");
    }
    w.flush().expect("flush");
    drop(w);
    recall(
        db,
        &[
            "import",
            file.to_str().expect("path"),
            "--tenant",
            tenant,
            "--title",
            "A very long conversation",
        ],
    )
}

fn serve(db: &Path, extra: &[&str], fake: &str) -> Served {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_recall"));
    cmd.args(["serve", "--addr", "127.0.0.1:0", "--db"])
        .arg(db)
        .args(extra)
        .env_remove("RECALL_DB")
        .env("ANTHROPIC_API_KEY", "sk-ant-web-test")
        .env("ANTHROPIC_BASE_URL", fake)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        // The chat backend is the fake provider only, whatever this machine has installed.
        .env("RECALL_CLAUDE_PATH", "/nonexistent/claude")
        .env("XDG_CACHE_HOME", db.with_extension("cache"));
    Served::start(cmd)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_app_in_a_real_browser() {
    let Some(tools) = browser("the web app's browser test") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("web.db");
    let key_a = recall(
        &db,
        &["keys", "create", "--tenant", "a", "--label", "web test"],
    );
    let key_b = recall(&db, &["keys", "create", "--tenant", "b"]);
    let big = import_big(&db, dir.path(), "a", BIG);
    let other = recall(
        &db,
        &[
            "conversations",
            "new",
            "--tenant",
            "b",
            "--title",
            "Tenant b's private plans",
        ],
    );
    recall(
        &db,
        &[
            "append",
            &other,
            "--tenant",
            "b",
            "--role",
            "user",
            "--content",
            "The launch code of tenant b is 7781.",
        ],
    );

    let fake = FakeProvider::start().await;
    let server = tokio::task::block_in_place(|| serve(&db, &[], &fake.base_url()));
    let open_db = dir.path().join("open.db");
    let open = tokio::task::block_in_place(|| serve(&open_db, &["--no-auth"], &fake.base_url()));

    let shots = match std::env::var_os("RECALL_UPDATE_SCREENSHOTS") {
        Some(_) => workspace_root().join("docs/screenshots"),
        None => dir.path().join("screenshots"),
    };
    std::fs::create_dir_all(&shots).expect("screenshot folder");
    let results = dir.path().join("results.json");
    let script = workspace_root().join("crates/recall-cli/tests/web/e2e.cjs");
    let status = tokio::task::block_in_place(|| {
        Command::new("node")
            .arg(&script)
            .env("NODE_PATH", &tools.node_path)
            .env("RECALL_CHROMIUM", &tools.chromium)
            .env("RECALL_URL", &server.base)
            .env("RECALL_NOAUTH_URL", &open.base)
            .env("RECALL_KEY_A", &key_a)
            .env("RECALL_KEY_B", &key_b)
            .env("RECALL_BIG_ID", &big)
            .env("RECALL_OTHER_ID", &other)
            .env("RECALL_SCREENSHOTS", &shots)
            .env("RECALL_RESULTS", &results)
            .stdin(Stdio::null())
            .status()
            .expect("run node")
    });
    assert!(status.success(), "the browser test failed: {status}");

    let got: Value =
        serde_json::from_slice(&std::fs::read(&results).expect("results")).expect("results JSON");
    eprintln!("browser results: {got:#}");
    // The inspector shows what `recall context --stats` reports for the same conversation.
    let inspect = &got["inspect"];
    let id = inspect["id"].as_str().expect("inspected id");
    let max_tokens = inspect["max_tokens"]
        .as_u64()
        .expect("max_tokens")
        .to_string();
    let stats = context_stats(&db, "a", id, &["--max-tokens", &max_tokens]);
    assert!(
        stats["dropped"].as_u64() > Some(0),
        "the inspected conversation must drop messages at {max_tokens} tokens: {stats}"
    );
    for (shown, reported) in [
        ("included", "included"),
        ("dropped", "dropped"),
        ("total_tokens", "tokens"),
    ] {
        assert_eq!(
            inspect[shown], stats[reported],
            "inspector's {shown} vs recall context --stats's {reported}: {inspect} / {stats}"
        );
    }
    // The window the inspector drew is the newest `included` messages of that conversation
    // (it has no system messages, so nothing of it is skipped).
    let shown = recall(
        &db,
        &["conversations", "show", id, "--tenant", "a", "--json"],
    );
    let last_seq = serde_json::from_str::<Value>(&shown).expect("show JSON")["last_seq"].clone();
    assert_eq!(inspect["window_last"], last_seq, "{inspect}");
    let span = inspect["window_last"]
        .as_u64()
        .zip(inspect["window_first"].as_u64());
    assert_eq!(
        span.map(|(last, first)| last - first + 1),
        stats["included"].as_u64(),
        "{inspect}"
    );
    for screen in got["axe"].as_object().expect("axe results").values() {
        assert_eq!(screen, &json!(0), "axe: {}", got["axe"]);
    }
    let bytes = got["asset_bytes"].as_u64().expect("asset_bytes");
    assert!(bytes < 200 * 1024, "first load {bytes} bytes");
    assert!(got["big_open_ms"].as_f64().is_some(), "{got}");
    // The server's log never holds a key the browser sent.
    let log: Vec<String> = server.stderr.try_iter().collect();
    for key in [&key_a, &key_b] {
        assert!(
            !log.iter().any(|l| l.contains(key.as_str())),
            "a key in the log"
        );
    }
}
