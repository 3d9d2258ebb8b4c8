//! `recall chat` as a user runs it: one turn per piped message against the REAL `claude`
//! binary and a fake Anthropic server (memory across turns, and a negative control without
//! history), piped turns against the Anthropic backend, and the errors a user meets first.
//! The interactive REPL is tested in `chat_repl.rs`.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Output;
use std::sync::Arc;

use assert_cmd::Command;
use recall_testkit::{anthropic, claude_offline_env, require_claude, FakeServer, Recorded, Reply};
use serde_json::{json, Value};

/// The fake model's answer, derived from what the request carries so the reply proves what
/// the CLI sent: it knows the dog's name only if turn 1 reached it.
fn fake_answer(body: &Value) -> String {
    let all = body.to_string();
    let last_user = body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Array(b) => b
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        })
        .unwrap_or_default();
    // With the xml format the current message follows the history block.
    let current = last_user
        .rsplit("</conversation_history>")
        .next()
        .unwrap_or(&last_user)
        .trim()
        .to_string();
    if current.contains("dog") {
        if all.contains("Biscuit") {
            "Your sister's greyhound is called Biscuit.".into()
        } else {
            "I don't know what your sister's dog is called.".into()
        }
    } else {
        format!("Noted ({} chars).", current.chars().count())
    }
}

fn fake_anthropic() -> recall_testkit::Handler {
    Arc::new(|req: &Recorded, _| {
        if req.method == "HEAD" {
            return Reply::empty(200);
        }
        let path = req.path.split('?').next().unwrap_or("");
        match path {
            "/v1/messages" => {
                let body = req.json();
                let text = fake_answer(&body);
                if body["stream"] == json!(true) {
                    let (a, b) = text.split_at(text.len() / 2);
                    Reply::sse(anthropic::text_reply(&[a, b]))
                } else {
                    Reply::json(200, anthropic::message_json(&text))
                }
            }
            "/v1/messages/count_tokens" => Reply::json(200, json!({"input_tokens": 42})),
            _ => Reply::json(200, json!({})),
        }
    })
}

const TURN_1: &str = "Long day. My sister Ingrid adopted a retired greyhound called Biscuit, \
                      so I spent the evening helping her set up a dog bed.";
const TURN_2: &str = "Unrelated: what's a good way to keep basil alive on a windowsill?";
const TURN_3: &str = "What is my sister's dog called?";

struct Env {
    _dir: tempfile::TempDir,
    db: String,
    home: std::path::PathBuf,
}

fn env() -> Env {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    Env {
        db: dir.path().join("chat.db").display().to_string(),
        home,
        _dir: dir,
    }
}

fn recall(env: &Env) -> Command {
    let mut c = Command::cargo_bin("recall").expect("recall binary");
    c.env("RECALL_DB", &env.db)
        .env("HOME", &env.home)
        .env_remove("RECALL_TENANT")
        .env_remove("RECALL_BACKEND")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        // The local model's state file is looked up under XDG_CACHE_HOME, else HOME (a
        // temporary one here): no local model unless a test writes one.
        .env_remove("XDG_CACHE_HOME");
    c
}

fn new_conversation(env: &Env) -> String {
    let out = recall(env)
        .args(["conversations", "new", "--title", "chat test"])
        .output()
        .expect("run");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn chat_turn(
    env: &Env,
    claude: &Path,
    base_url: &str,
    id: &str,
    msg: &str,
    extra: &[&str],
) -> Output {
    let mut c = recall(env);
    for (k, v) in claude_offline_env(base_url, &env.home) {
        c.env(k, v);
    }
    c.env("ANTHROPIC_API_KEY", "test-key-not-secret")
        .args(["chat", "--backend", "claude-cli", "--conversation", id])
        .arg("--claude-path")
        .arg(claude)
        .args(extra)
        .write_stdin(msg)
        .timeout(std::time::Duration::from_secs(180))
        .output()
        .expect("run recall chat")
}

/// The streaming `/v1/messages` request bodies the CLI sent, in order.
fn turn_bodies(server: &FakeServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path.starts_with("/v1/messages"))
        .map(|r| r.json())
        .filter(|b| b["stream"] == json!(true))
        .map(|b| b.to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_remembers_earlier_turns_only_with_history() {
    let Some(claude) = require_claude() else {
        return;
    };
    let server = FakeServer::start(fake_anthropic()).await;
    let base = server.base_url();
    let env = env();

    // With memory: three turns, each a separate `recall chat` process.
    let id = new_conversation(&env);
    let mut replies = Vec::new();
    for msg in [TURN_1, TURN_2, TURN_3] {
        let (claude, base, id, env_ref) = (claude.clone(), base.clone(), id.clone(), &env);
        let out = tokio::task::block_in_place(|| chat_turn(env_ref, &claude, &base, &id, msg, &[]));
        assert!(
            out.status.success(),
            "recall chat failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        replies.push(String::from_utf8_lossy(&out.stdout).trim().to_string());
    }
    let bodies = turn_bodies(&server);
    assert_eq!(bodies.len(), 3, "one streaming request per turn");
    let third = &bodies[2];
    assert!(
        third.contains("Biscuit"),
        "turn 1 reached the CLI's request: {third}"
    );
    assert!(
        third.contains("basil alive on a windowsill"),
        "turn 2 too: {third}"
    );
    assert!(third.contains(TURN_3), "{third}");
    assert_eq!(replies[2], "Your sister's greyhound is called Biscuit.");

    // Stored: six messages, all complete, in order.
    let out = recall(&env).args(["export", &id]).output().expect("export");
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("jsonl"))
        .collect();
    let roles: Vec<&str> = lines.iter().filter_map(|l| l["role"].as_str()).collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant"
        ]
    );

    // Negative control: the same turns with history disabled.
    let server2 = FakeServer::start(fake_anthropic()).await;
    let base2 = server2.base_url();
    let id2 = new_conversation(&env);
    let mut last = String::new();
    for msg in [TURN_1, TURN_2, TURN_3] {
        let out = tokio::task::block_in_place(|| {
            chat_turn(&env, &claude, &base2, &id2, msg, &["--no-history"])
        });
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        last = String::from_utf8_lossy(&out.stdout).trim().to_string();
    }
    let bodies = turn_bodies(&server2);
    assert_eq!(bodies.len(), 3);
    assert!(
        !bodies[2].contains("Biscuit"),
        "no history was sent: {}",
        bodies[2]
    );
    assert!(!bodies[2].contains("basil"), "{}", bodies[2]);
    assert!(bodies[2].contains(TURN_3));
    assert_eq!(last, "I don't know what your sister's dog is called.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn piped_turns_with_the_anthropic_backend() {
    let server = FakeServer::start(fake_anthropic()).await;
    let env = env();
    let id = new_conversation(&env);
    let run = |msg: &str| {
        recall(&env)
            .env("ANTHROPIC_API_KEY", "sk-ant-secret-value-123")
            .env("ANTHROPIC_BASE_URL", server.base_url())
            .args(["chat", "--conversation", &id])
            .write_stdin(msg)
            .output()
            .expect("run")
    };
    let out = tokio::task::block_in_place(|| run(TURN_1));
    assert!(out.status.success(), "{out:?}");
    let out = tokio::task::block_in_place(|| run(TURN_3));
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "Your sister's greyhound is called Biscuit."
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("sk-ant-secret-value-123"), "{stderr}");
    // The key went in a header, never into what was logged or echoed.
    let reqs = server.requests();
    assert_eq!(reqs[0].header("x-api-key"), Some("sk-ant-secret-value-123"));
    let body = reqs[1].json();
    assert_eq!(body["messages"].as_array().map(Vec::len), Some(3));
}

/// Issue 53: a reply that stopped at its output limit says so on stderr (the reply itself
/// stays on stdout as it came), and a reply that ended on its own says nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_cut_at_its_output_limit_says_so() {
    let fake = recall_testkit::provider::FakeProvider::start().await;
    let env = env();
    let id = new_conversation(&env);
    let run = |msg: &str| {
        recall(&env)
            .env("ANTHROPIC_API_KEY", "test-key-not-secret")
            .env("ANTHROPIC_BASE_URL", fake.server.base_url())
            .args(["chat", "--conversation", &id, "--max-output-tokens", "64"])
            .write_stdin(msg)
            .output()
            .expect("run")
    };
    let out = tokio::task::block_in_place(|| run("please write a lot, it will be cut off"));
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the reply stopped at its limit of 64 output tokens"),
        "{stderr}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("limit"));
    let out = tokio::task::block_in_place(|| run("a short one"));
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("stopped at its limit"), "{stderr}");
}

#[test]
fn empty_piped_input_is_rejected_and_nothing_is_stored() {
    let env = env();
    let id = new_conversation(&env);
    let out = recall(&env)
        .env("ANTHROPIC_API_KEY", "k")
        .env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
        .args(["chat", "--conversation", &id])
        .write_stdin("  \n\n")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("nothing to send"), "{stderr}");
    let show = recall(&env)
        .args(["conversations", "show", &id, "--json"])
        .output()
        .expect("show");
    let v: Value = serde_json::from_slice(&show.stdout).expect("json");
    assert_eq!(v["message_count"], 0, "{v}");
}

#[test]
fn without_any_backend_one_line_says_how_to_configure_one() {
    let env = env();
    let empty_path = tempfile::tempdir().expect("dir");
    let out = recall(&env)
        .env("PATH", empty_path.path())
        .env_remove("RECALL_CLAUDE_PATH")
        .args(["chat"])
        .write_stdin("hello")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("ANTHROPIC_API_KEY"), "{stderr}");
    assert!(stderr.contains("OPENAI_BASE_URL"), "{stderr}");
    assert!(stderr.contains("claude-code"), "{stderr}");
}

#[test]
fn an_unknown_conversation_is_exit_2() {
    let env = env();
    let out = recall(&env)
        .env("ANTHROPIC_API_KEY", "k")
        .args(["chat", "--conversation", "nope"])
        .write_stdin("hello")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backend_failure_exits_1_and_keeps_the_user_turn() {
    let server = FakeServer::scripted(vec![Reply::json(
        401,
        json!({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}),
    )])
    .await;
    let env = env();
    let id = new_conversation(&env);
    let out = tokio::task::block_in_place(|| {
        recall(&env)
            .env("ANTHROPIC_API_KEY", "sk-ant-wrong")
            .env("ANTHROPIC_BASE_URL", server.base_url())
            .args(["chat", "--conversation", &id])
            .write_stdin("hello there")
            .output()
            .expect("run")
    });
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("authentication failed"), "{stderr}");
    assert!(stderr.contains("your message is saved"), "{stderr}");
    let show = recall(&env)
        .args(["conversations", "show", &id, "--json"])
        .output()
        .expect("show");
    let v: Value = serde_json::from_slice(&show.stdout).expect("json");
    assert_eq!(v["message_count"], 1, "{v}");
}

/// An API backend chosen with `--backend` but not configured (no key, no base URL) is refused
/// before anything is stored: no conversation is created, and the error says what to set.
#[test]
fn an_unconfigured_api_backend_stores_nothing() {
    let env = env();
    for (backend, names) in [
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("openai", "OPENAI_BASE_URL"),
        (
            "local",
            "not running: start it with `bash scripts/models.sh start`",
        ),
    ] {
        let out = recall(&env)
            .env_remove("ANTHROPIC_BASE_URL")
            .env_remove("OPENAI_API_KEY")
            .args(["chat", "--backend", backend])
            .write_stdin("hello")
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(names), "{backend}: {stderr}");
        let list = recall(&env)
            .args(["conversations", "list", "--json"])
            .output()
            .expect("run");
        assert_eq!(
            String::from_utf8_lossy(&list.stdout),
            "",
            "{backend}: a conversation was created"
        );
    }
}

/// Issue 36 item 9: `RECALL_BACKEND` wins over the discovery order (an Anthropic key would
/// come first): the local backend is the one used, here refused because it does not run.
#[test]
fn recall_backend_wins_over_the_discovery_order() {
    let env = env();
    let out = recall(&env)
        .env("ANTHROPIC_API_KEY", "sk-ant-not-used")
        .env("RECALL_BACKEND", "local")
        .args(["chat"])
        .write_stdin("hello")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not running: start it with `bash scripts/models.sh start`"),
        "{stderr}"
    );
    assert!(!stderr.contains("anthropic"), "{stderr}");
}

/// Writes the state file `scripts/models.sh start` leaves for a server at `base_url` into a
/// cache directory under `env`'s temporary directory; returns that cache directory (for
/// XDG_CACHE_HOME).
fn local_state(env: &Env, base_url: &str) -> std::path::PathBuf {
    let cache = env.home.join("cache");
    let run = cache.join("recall").join("run");
    std::fs::create_dir_all(&run).expect("run dir");
    std::fs::write(
        run.join("llama-server.env"),
        format!("OPENAI_BASE_URL={base_url}\nPORT=0\nPID=0\nMODEL=qwen2.5-coder-1.5b-instruct\n"),
    )
    .expect("state file");
    cache
}

/// A local model server that `scripts/models.sh` started and that has gone away since: the
/// error names its address and the command that starts it again, and nothing is stored.
#[test]
fn a_local_server_that_is_down_names_the_command_that_starts_it() {
    let env = env();
    let gone = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", gone.local_addr().expect("addr"));
    drop(gone);
    let cache = local_state(&env, &url);
    let out = recall(&env)
        .env("XDG_CACHE_HOME", &cache)
        .args(["chat", "--backend", "local"])
        .write_stdin("hello")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&url) && stderr.contains("does not answer"),
        "{stderr}"
    );
    assert!(
        stderr.contains("`bash scripts/models.sh start`"),
        "{stderr}"
    );
    let list = recall(&env)
        .args(["conversations", "list", "--json"])
        .output()
        .expect("run");
    assert_eq!(
        String::from_utf8_lossy(&list.stdout),
        "",
        "a conversation was created"
    );
}

/// With nothing else configured, `recall chat` finds the server `scripts/models.sh start`
/// runs through the state file it wrote, says so on stderr, and talks to it. (The real model
/// does the same in `real_model.rs`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recall_chat_finds_the_local_model_server_and_names_it() {
    use recall_testkit::openai;
    let server = FakeServer::start(Arc::new(|req: &Recorded, _| {
        match (req.method.as_str(), req.path.as_str()) {
            ("GET", "/health") => Reply::json(200, json!({"status": "ok"})),
            ("POST", "/v1/chat/completions") => Reply::sse(vec![
                openai::chunk(json!({"role": "assistant", "content": null}), Value::Null),
                openai::chunk(json!({"content": "Hello from "}), Value::Null),
                openai::chunk(json!({"content": "the local model."}), json!("stop")),
                openai::done(),
            ]),
            _ => Reply::json(404, json!({"error": {"message": "not found"}})),
        }
    }))
    .await;
    let env = env();
    let url = format!("{}/v1", server.base_url());
    let cache = local_state(&env, &url);
    let empty_path = tempfile::tempdir().expect("dir");
    let out = tokio::task::block_in_place(|| {
        recall(&env)
            .env("XDG_CACHE_HOME", &cache)
            .env("PATH", empty_path.path())
            .env_remove("RECALL_CLAUDE_PATH")
            .env_remove("OPENAI_API_KEY")
            .args(["chat"])
            .write_stdin("Hi")
            .output()
            .expect("run")
    });
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "Hello from the local model."
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "recall chat: backend local (started by scripts/models.sh, {url})"
        )),
        "{stderr}"
    );
    let chat: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/v1/chat/completions")
        .collect();
    assert_eq!(chat.len(), 1);
    assert_eq!(chat[0].json()["model"], "qwen2.5-coder-1.5b-instruct");
}
