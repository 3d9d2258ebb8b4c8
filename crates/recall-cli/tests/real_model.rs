//! The fact-recall acceptance test with a real model: `recall chat --backend openai` against
//! Qwen2.5-Coder-1.5B-Instruct served by llama-server (installed by `scripts/models.sh fetch`,
//! started here with `scripts/models.sh start`: one thread, temperature 0).
//!
//! Turn 1 mentions a fact in passing, turn 2 is about something else, turn 3 asks for the fact:
//! the reply names it. The same stored history with the window cut to the newest turn
//! (`--max-turns 1`) does not, which shows the answer came from the history recall sent.
//! Outside CI a missing model skips the test with a note; in CI (`CI=true`) it fails.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command as StdCommand;
use std::time::{Duration, Instant};

use assert_cmd::Command;

const TURN_1: &str = "Long day. My sister Ingrid adopted a retired greyhound called Biscuit, \
                      so I spent the evening helping her set up a dog bed.";
const TURN_2: &str = "Unrelated: what's a good way to keep basil alive on a windowsill?";
const TURN_3: &str = "What is my sister's dog called?";
const FACT: &str = "biscuit";
const MAX_OUTPUT_TOKENS: &str = "64";

/// One test at a time uses the model: they start and stop the same server.
static MODEL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn models_sh() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/models.sh")
}

fn models(cmd: &str) -> std::process::Output {
    models_with(cmd, &[])
}

fn models_with(cmd: &str, env: &[(&str, &str)]) -> std::process::Output {
    StdCommand::new("bash")
        .arg(models_sh())
        .arg(cmd)
        .envs(env.iter().copied())
        .output()
        .expect("run scripts/models.sh")
}

/// The running local model, with a lease for this test process (`scripts/models.sh start`);
/// the lease is given back on drop, which stops the server unless another process (a demo,
/// another test run) still uses it.
struct LocalModel {
    base_url: String,
}

impl Drop for LocalModel {
    fn drop(&mut self) {
        let _ = models("stop");
    }
}

fn local_model() -> Option<LocalModel> {
    local_model_with(&[])
}

/// [`local_model`], started (when it is not running) with `env` for `scripts/models.sh start`.
fn local_model_with(env: &[(&str, &str)]) -> Option<LocalModel> {
    let status = models("status");
    let text = String::from_utf8_lossy(&status.stdout).to_string();
    if !text.contains("installed: yes") {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(
            !ci,
            "the local model is not installed and CI runs this test with it \
             (bash scripts/models.sh fetch): {text}"
        );
        recall_testkit::skipped("the local model is not installed (bash scripts/models.sh fetch)");
        return None;
    }
    let already_running = status.status.success();
    let t = Instant::now();
    let out = models_with("start", env);
    assert!(
        out.status.success(),
        "scripts/models.sh start failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let base_url = stdout
        .lines()
        .find_map(|l| l.strip_prefix("OPENAI_BASE_URL="))
        .unwrap_or_else(|| panic!("no OPENAI_BASE_URL in: {stdout}"))
        .to_string();
    eprintln!(
        "model: {} after {:.1} s ({base_url})",
        if already_running {
            "already running"
        } else {
            "started"
        },
        t.elapsed().as_secs_f64()
    );
    Some(LocalModel { base_url })
}

struct Env {
    _dir: tempfile::TempDir,
    db: String,
    home: PathBuf,
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
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        // No local model found by discovery unless a test points at the real cache.
        .env_remove("XDG_CACHE_HOME")
        .timeout(Duration::from_secs(300));
    c
}

fn new_conversation(env: &Env) -> String {
    let out = recall(env)
        .args(["conversations", "new", "--title", "real model"])
        .output()
        .expect("run");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// One turn through `recall chat --backend openai`; the reply and how long it took.
fn chat(env: &Env, model: &LocalModel, id: &str, msg: &str, extra: &[&str]) -> (String, f64) {
    let t = Instant::now();
    let out = recall(env)
        .env("OPENAI_BASE_URL", &model.base_url)
        .args(["chat", "--backend", "openai", "--conversation", id])
        .args(["--max-output-tokens", MAX_OUTPUT_TOKENS])
        .args(extra)
        .write_stdin(msg)
        .output()
        .expect("run recall chat");
    let secs = t.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "recall chat failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reply = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(!reply.is_empty(), "empty reply to {msg:?}");
    (reply, secs)
}

fn append(env: &Env, id: &str, role: &str, content: &str) {
    let out = recall(env)
        .args(["append", id, "--role", role, "--content", content])
        .output()
        .expect("run recall append");
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn the_real_model_recalls_a_fact_from_the_stored_history() {
    let _one = MODEL.blocking_lock();
    let Some(model) = local_model() else {
        return;
    };
    let env = env();
    let id = new_conversation(&env);
    let (r1, s1) = chat(&env, &model, &id, TURN_1, &[]);
    let (r2, s2) = chat(&env, &model, &id, TURN_2, &[]);
    let (r3, s3) = chat(&env, &model, &id, TURN_3, &[]);
    eprintln!("turn latencies: {s1:.1} s, {s2:.1} s, {s3:.1} s");
    eprintln!("replies:\n1: {r1}\n2: {r2}\n3: {r3}");
    assert!(
        r3.to_lowercase().contains(FACT),
        "with the history the model should name the dog: {r3:?}"
    );

    // The same two stored turns in a second conversation, then the question with the window
    // cut to the newest turn: the fact is stored but not sent, and the model cannot know it.
    let cut = new_conversation(&env);
    append(&env, &cut, "user", TURN_1);
    append(&env, &cut, "assistant", &r1);
    append(&env, &cut, "user", TURN_2);
    append(&env, &cut, "assistant", &r2);
    let (r3_cut, s3_cut) = chat(&env, &model, &cut, TURN_3, &["--max-turns", "1"]);
    eprintln!("without the fact in the window ({s3_cut:.1} s): {r3_cut}");
    assert!(
        !r3_cut.to_lowercase().contains(FACT),
        "with --max-turns 1 the fact is not sent, yet the reply names it: {r3_cut:?}"
    );
}

/// The cache `scripts/models.sh` fills and writes its state file to (its own rule).
fn models_cache_root() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .expect("HOME or XDG_CACHE_HOME")
}

/// With no backend configured, `recall chat` finds the server `scripts/models.sh start` runs
/// (through the state file it wrote), names it on stderr and gets a reply from the real model;
/// `--backend local` does the same.
#[test]
fn recall_chat_finds_the_running_local_model_by_itself() {
    let _one = MODEL.blocking_lock();
    let Some(model) = local_model() else {
        return;
    };
    let env = env();
    let empty_path = tempfile::tempdir().expect("dir");
    for backend in [&[][..], &["--backend", "local"][..]] {
        let out = recall(&env)
            .env("XDG_CACHE_HOME", models_cache_root())
            .env("PATH", empty_path.path())
            .env_remove("RECALL_CLAUDE_PATH")
            .arg("chat")
            .args(backend)
            .args(["--max-output-tokens", "16"])
            .write_stdin("Say hello.")
            .output()
            .expect("run recall chat");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{backend:?}: {stderr}");
        assert!(
            stderr.contains("recall chat: backend local (") && stderr.contains(&model.base_url),
            "{backend:?}: {stderr}"
        );
        assert!(!String::from_utf8_lossy(&out.stdout).trim().is_empty());
    }
}

/// Issue 36 item 1: the model server is shared by leases. A user's `stop` gives back its own
/// lease and leaves the server to the others; a holder that ended counts for nothing; the
/// last `stop` stops it.
#[test]
fn a_lease_keeps_the_server_for_its_other_users() {
    let _one = MODEL.blocking_lock();
    let Some(model) = local_model() else {
        return;
    };
    // Another user of the server: a child process with a lease of its own.
    let mut other = StdCommand::new("sleep")
        .arg("600")
        .spawn()
        .expect("spawn sleep");
    let holder = other.id().to_string();
    let out = models_with("start", &[("RECALL_MODELS_HOLDER", holder.as_str())]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&model.base_url),
        "a second start joins the running server: {out:?}"
    );

    // This process stops: the server keeps running for the other, and still answers. (Other
    // users may hold leases too, such as a demo run beside the tests: the other is among them.)
    let out = models("stop");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        pids_after(&stderr, "keeps running: still used by pid(s) ").contains(&holder),
        "{stderr}"
    );
    let status = models("status");
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(status.status.success(), "{text}");
    assert!(pids_after(&text, "used by: ").contains(&holder), "{text}");
    let reply = post_json(
        &model.base_url,
        "/v1/chat/completions",
        &serde_json::json!({
            "messages": [{"role": "user", "content": "Say hello."}],
            "max_tokens": 8,
        }),
    );
    assert!(
        reply["choices"][0]["message"]["content"].is_string(),
        "{reply}"
    );

    // The other user ends without a word: its lease counts for nothing, and the next stop
    // stops the server.
    other.kill().expect("kill");
    other.wait().expect("wait");
    let out = models("stop");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let still = pids_after(&stderr, "keeps running: still used by pid(s) ");
    if still.is_empty() {
        assert!(stderr.contains("stopped llama-server"), "{stderr}");
        assert_eq!(models("status").status.code(), Some(3), "not running");
    } else {
        // Someone else's lease (a demo beside the tests) keeps it: never the ended holder's.
        assert!(!still.contains(&holder), "{stderr}");
    }
}

/// The pids listed after `marker` on its line of `text` (none when no line has it).
fn pids_after(text: &str, marker: &str) -> Vec<String> {
    text.lines()
        .find_map(|l| l.split_once(marker).map(|(_, rest)| rest))
        .map(|rest| {
            rest.split_whitespace()
                .take_while(|w| w.chars().all(|c| c.is_ascii_digit()))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_second_fetch_downloads_and_builds_nothing() {
    let _one = MODEL.blocking_lock();
    let status = models("status");
    if !String::from_utf8_lossy(&status.stdout).contains("installed: yes") {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(!ci, "the local model is not installed and CI needs it");
        recall_testkit::skipped("the local model is not installed (bash scripts/models.sh fetch)");
        return;
    }
    let t = Instant::now();
    let out = models("fetch");
    let secs = t.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("nothing to download or build"), "{stderr}");
    assert!(
        secs < 5.0,
        "a fetch with everything installed took {secs:.1} s"
    );
}

/// The Anthropic Messages request the `claude` CLI sends, as an OpenAI chat request for
/// llama-server: the system prompt and the text blocks of each message, without the CLI's
/// `<system-reminder>` blocks (which are about Claude Code, not the conversation); at most
/// `MAX_OUTPUT_TOKENS` tokens, temperature 0, not streamed.
fn anthropic_to_openai(body: &serde_json::Value) -> serde_json::Value {
    use serde_json::{json, Value};
    fn text_of(content: &Value) -> String {
        match content {
            Value::String(s) => s.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str())
                .filter(|t| !t.trim_start().starts_with("<system-reminder>"))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        }
    }
    let mut messages = Vec::new();
    let system = text_of(&body["system"]);
    if !system.trim().is_empty() {
        messages.push(json!({"role": "system", "content": system}));
    }
    for m in body["messages"].as_array().into_iter().flatten() {
        messages.push(json!({"role": m["role"], "content": text_of(&m["content"])}));
    }
    json!({
        "model": "local",
        "messages": messages,
        "max_tokens": MAX_OUTPUT_TOKENS.parse::<u32>().unwrap(),
        "temperature": 0,
        "stream": false,
    })
}

/// A blocking JSON POST over plain HTTP/1.1 (the test's own loopback server only).
fn post_json(base_url: &str, path: &str, body: &serde_json::Value) -> serde_json::Value {
    use std::io::{Read, Write};
    let host = base_url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let mut s = std::net::TcpStream::connect(&host).expect("connect to llama-server");
    let b = body.to_string();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{b}",
        b.len()
    )
    .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    let (_, body) = resp.split_once("\r\n\r\n").expect("an HTTP response");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {resp}"))
}

/// The same three turns through the real `claude` CLI (recall's claude-cli backend), with a
/// translating server in front of llama-server: Anthropic Messages in, OpenAI chat out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_claude_cli_through_a_translating_server_recalls_the_fact() {
    use recall_testkit::{
        anthropic, claude_offline_env, require_claude, FakeServer, Recorded, Reply,
    };
    use serde_json::json;
    use std::sync::Arc;

    let _one = MODEL.lock().await;
    let Some(claude) = require_claude() else {
        return;
    };
    let Some(model) = local_model() else {
        return;
    };
    let upstream = model.base_url.clone();
    let translator = FakeServer::start(Arc::new(move |req: &Recorded, _| {
        if req.method == "HEAD" {
            return Reply::empty(200);
        }
        match req.path.split('?').next().unwrap_or("") {
            "/v1/messages" => {
                let body = req.json();
                let answer = tokio::task::block_in_place(|| {
                    post_json(
                        &upstream,
                        "/v1/chat/completions",
                        &anthropic_to_openai(&body),
                    )
                });
                let text = answer["choices"][0]["message"]["content"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                if body["stream"] == json!(true) {
                    Reply::sse(anthropic::text_reply(&[&text]))
                } else {
                    Reply::json(200, anthropic::message_json(&text))
                }
            }
            "/v1/messages/count_tokens" => Reply::json(200, json!({"input_tokens": 42})),
            _ => Reply::json(200, json!({})),
        }
    }))
    .await;

    let env = env();
    let turn = |id: &str, msg: &str, extra: &[&str]| -> (String, f64) {
        let t = Instant::now();
        let mut c = recall(&env);
        for (k, v) in claude_offline_env(&translator.base_url(), &env.home) {
            c.env(k, v);
        }
        let out = c
            .env("ANTHROPIC_API_KEY", "test-key-not-secret")
            .args(["chat", "--backend", "claude-cli", "--conversation", id])
            .arg("--claude-path")
            .arg(&claude)
            .args(extra)
            .write_stdin(msg)
            .output()
            .expect("run recall chat");
        assert!(
            out.status.success(),
            "recall chat (claude-cli) failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let reply = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (reply, t.elapsed().as_secs_f64())
    };
    let id = new_conversation(&env);
    let results: Vec<(String, f64)> = tokio::task::block_in_place(|| {
        [TURN_1, TURN_2, TURN_3]
            .iter()
            .map(|m| turn(&id, m, &[]))
            .collect()
    });
    eprintln!("claude-cli turns: {results:?}");
    assert!(
        results[2].0.to_lowercase().contains(FACT),
        "through claude the model should name the dog: {:?}",
        results[2].0
    );
    let cut = new_conversation(&env);
    append(&env, &cut, "user", TURN_1);
    append(&env, &cut, "assistant", &results[0].0);
    append(&env, &cut, "user", TURN_2);
    append(&env, &cut, "assistant", &results[1].0);
    let (r, _) = tokio::task::block_in_place(|| turn(&cut, TURN_3, &["--max-turns", "1"]));
    assert!(
        !r.to_lowercase().contains(FACT),
        "with --max-turns 1 the fact is not sent, yet the reply names it: {r:?}"
    );
}

#[test]
fn recall_embed_prints_model_dimension_and_a_unit_vector() {
    let env = env();
    // A directory without the model: exit status 2 and the missing file named.
    let empty = env.home.join("no-model");
    std::fs::create_dir_all(&empty).unwrap();
    let out = recall(&env)
        .env("RECALL_EMBED_MODEL", &empty)
        .env_remove("RECALL_EMBED_URL")
        .args(["embed", "hello"])
        .output()
        .expect("run recall embed");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("model.safetensors") && stderr.contains("models.sh fetch"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());

    let Some(dir) = std::env::var_os("RECALL_EMBED_MODEL")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
                .map(|c| c.join("recall/minilm"))
        })
        .filter(|d| d.join("model.safetensors").is_file())
    else {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(!ci, "all-MiniLM-L6-v2 is not installed and CI needs it");
        recall_testkit::skipped("all-MiniLM-L6-v2 is not installed (bash scripts/models.sh fetch)");
        return;
    };
    let out = recall(&env)
        .env("RECALL_EMBED_MODEL", &dir)
        .env_remove("RECALL_EMBED_URL")
        .args(["embed", "My dog is called Rex", "What is my dog's name?"])
        .output()
        .expect("run recall embed");
    assert!(out.status.success(), "{out:?}");
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    assert_eq!(lines.len(), 2);
    for v in &lines {
        assert_eq!(v["model"], "all-MiniLM-L6-v2");
        assert_eq!(v["dimension"], 384);
        let vector = v["vector"].as_array().unwrap();
        assert_eq!(vector.len(), 384);
        let norm: f64 = vector
            .iter()
            .map(|x| x.as_f64().unwrap().powi(2))
            .sum::<f64>()
            .sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "{norm}");
    }
}

/// The summary run of issue 22: a 160-message conversation whose third message states a fact
/// is compacted by the local model (in calls its 4,096-token context holds: the command is in
/// docs/BENCHMARKS.md with the figures of a run), and a question
/// about that fact, far older than the window, is answered from the summary; the same
/// conversation without a summary cannot answer it.
#[test]
fn the_real_model_compacts_and_answers_from_the_summary() {
    let _one = MODEL.blocking_lock();
    // Two threads: the summariser reads about 8,000 tokens of prompt, and nothing else runs
    // while this test binary does (cargo runs test binaries one at a time; MODEL serialises
    // this binary's tests).
    let Some(model) = local_model_with(&[("RECALL_MODELS_THREADS", "2")]) else {
        return;
    };
    let env = env();
    let activities = [
        "went for a run by the river",
        "cooked lentil soup",
        "fixed the bathroom tap",
        "read a chapter of a novel",
        "watered the tomatoes",
        "cleaned the kitchen",
        "called my old school friend",
        "worked late on a report",
        "walked to the market",
        "painted the fence",
    ];
    let mut lines = Vec::new();
    // 160 messages: under this policy two summariser calls (the second rolls the first's
    // summary on), some 4 minutes with the 1.5B model on 2 cores.
    for i in 1..=160usize {
        let (role, text) = match i {
            1 => ("user", "Hi! I want to keep a diary with you.".to_string()),
            2 => (
                "assistant",
                "Happy to. Tell me about your days.".to_string(),
            ),
            3 => ("user", TURN_1.to_string()),
            4 => (
                "assistant",
                "How kind of you to help her settle in.".to_string(),
            ),
            _ if i % 2 == 1 => (
                "user",
                format!(
                    "Day {}: I {}.",
                    i / 2,
                    activities[(i / 2) % activities.len()]
                ),
            ),
            _ => ("assistant", "Noted.".to_string()),
        };
        lines.push(serde_json::json!({"role": role, "content": text}).to_string());
    }
    let file = env.home.join("diary.jsonl");
    std::fs::write(&file, lines.join("\n")).expect("write");
    let import = |env: &Env| -> String {
        let out = recall(env)
            .arg("import")
            .arg(&file)
            .output()
            .expect("import");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let id = import(&env);
    // Recall off (it is on by default): what the summary carries is what this measures, and
    // recall would bring the fact back without one.
    let policy = [
        "--max-tokens",
        "1000",
        "--trim",
        "stable",
        "--summary-tokens",
        "400",
        "--recall-tokens",
        "0",
    ];

    let t = Instant::now();
    let out = recall(&env)
        .env("OPENAI_BASE_URL", &model.base_url)
        .args(["compact", &id, "--backend", "openai", "--json"])
        .args(["--max-input-tokens", "2000"])
        .args(policy)
        .timeout(Duration::from_secs(900))
        .output()
        .expect("run recall compact");
    let secs = t.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "recall compact failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let summary = &report["summary"];
    eprintln!(
        "compacted messages {} to {} in {} calls, {secs:.1} s; {} tokens:\n{}",
        summary["from_seq"],
        summary["to_seq"],
        report["calls"],
        summary["tokens"],
        summary["text"].as_str().unwrap_or("")
    );
    assert_eq!(report["status"], "compacted");
    assert!(
        summary["to_seq"].as_i64().expect("to_seq") > 100,
        "{report}"
    );
    assert!(
        report["calls"].as_u64().expect("calls") >= 2,
        "the summary should roll over more than one call: {report}"
    );

    let question = "What is the name of my sister's dog?";
    let mut with = policy.to_vec();
    with.push("--summarize");
    let (r, s) = chat(&env, &model, &id, question, &with);
    eprintln!("with the summary ({s:.1} s): {r}");
    assert!(
        r.to_lowercase().contains(FACT),
        "the summary should carry the dog's name: {r:?}"
    );
    // The same conversation, never compacted: the window alone cannot answer.
    let bare = import(&env);
    let (r_bare, s_bare) = chat(&env, &model, &bare, question, &policy);
    eprintln!("without a summary ({s_bare:.1} s): {r_bare}");
    assert!(
        !r_bare.to_lowercase().contains(FACT),
        "without a summary the fact is not sent, yet the reply names it: {r_bare:?}"
    );
}
