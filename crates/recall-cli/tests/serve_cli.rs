//! `recall serve` and `recall keys` as a user runs them: real processes, a real SQLite file,
//! real HTTP on 127.0.0.1.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command as StdCommand;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use recall_testkit::process::Served;
use serde_json::{json, Value};

// The server tests' helpers, for their temporary PostgreSQL databases (not duplicated here).
#[path = "../../recall-server/tests/common/mod.rs"]
mod common;

fn recall(db: &str) -> Command {
    let mut c = Command::cargo_bin("recall").expect("binary built");
    c.env("RECALL_DB", db).env_remove("RECALL_TENANT");
    c
}

fn stdout_of(c: &mut Command) -> String {
    let out = c.assert().success().get_output().clone();
    String::from_utf8(out.stdout).expect("utf-8")
}

fn serve(db: &str, extra: &[&str]) -> Served {
    serve_env(db, extra, &[])
}

/// `recall serve` with extra environment variables (chat backends are configured there).
fn serve_env(db: &str, extra: &[&str], env: &[(&str, &str)]) -> Served {
    let mut cmd = StdCommand::new(env!("CARGO_BIN_EXE_recall"));
    cmd.args(["serve", "--addr", "127.0.0.1:0", "--db", db])
        .args(extra)
        .env_remove("RECALL_DB")
        .envs(env.iter().copied());
    Served::start(cmd)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

async fn post(client: &reqwest::Client, url: &str, key: &str, body: Value) -> (u16, Value) {
    let res = client
        .post(url)
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .expect("request");
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

/// The HTTP context endpoint answers exactly what `recall context` prints: the same prompt
/// bytes (native formats: the JSON that is printed indented) and the same stats.
#[test]
fn http_context_equals_recall_context() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("recall.db").display().to_string();
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/conversation.json"
    );
    let id = stdout_of(recall(&db).args(["import", example]))
        .trim()
        .to_string();
    let key = stdout_of(recall(&db).args(["keys", "create", "--tenant", "default"]))
        .trim()
        .to_string();
    assert!(key.starts_with("rk_"), "{key}");
    let listed = stdout_of(recall(&db).args(["keys", "list", "--json"]));
    assert!(!listed.contains(&key), "keys list never shows a key");
    assert!(listed.contains("\"tenant\":\"default\""), "{listed}");

    let server = serve(&db, &[]);
    let rt = runtime();
    let client = reqwest::Client::new();
    let url = format!("{}/v1/conversations/{id}/context", server.base);
    for args in [
        vec!["--format", "transcript"],
        vec!["--format", "xml", "--current", "And in Python?"],
        vec!["--format", "bracket", "--max-turns", "2"],
        vec!["--format", "task"],
        vec!["--format", "anthropic", "--max-tokens", "120"],
        vec!["--format", "openai"],
        vec![
            "--format",
            "transcript",
            "--max-chars",
            "300",
            "--no-escape",
        ],
    ] {
        let out = recall(&db)
            .args(["context", &id, "--stats"])
            .args(&args)
            .assert()
            .success()
            .get_output()
            .clone();
        let stdout = String::from_utf8(out.stdout).unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        let stats_line = stderr
            .lines()
            .last()
            .and_then(|l| l.strip_prefix("stats: "))
            .expect("stats line");
        let stats: Value = serde_json::from_str(stats_line).unwrap();

        let mut body = serde_json::Map::new();
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            match *flag {
                "--no-escape" => {
                    body.insert("escape".into(), json!(false));
                }
                f => {
                    let v = it.next().unwrap();
                    let name = f.trim_start_matches("--").replace('-', "_");
                    let value = v.parse::<u64>().map_or_else(|_| json!(v), |n| json!(n));
                    body.insert(name, value);
                }
            }
        }
        let (status, res) = rt.block_on(post(&client, &url, &key, Value::Object(body)));
        assert_eq!(status, 200, "{args:?}: {res}");
        let printed = match &res["prompt"] {
            Value::String(s) => s.clone(),
            v => format!("{}\n", serde_json::to_string_pretty(v).unwrap()),
        };
        assert_eq!(printed, stdout, "{args:?}");
        assert_eq!(res["stats"], stats, "{args:?}");
    }
    drop(server);

    // Revoking the key locks it out of a fresh server.
    let keys: Value = serde_json::from_str(listed.lines().next().unwrap()).expect("key list line");
    recall(&db)
        .args(["keys", "revoke", keys["id"].as_str().unwrap()])
        .assert()
        .success();
    let server = serve(&db, &[]);
    // A new client: the old one may hold a pooled connection to the stopped server's port.
    let client = reqwest::Client::new();
    let url = format!("{}/v1/conversations/{id}/context", server.base);
    let (status, res) = rt.block_on(post(&client, &url, &key, json!({})));
    assert_eq!(status, 401, "{res}");
    drop(server);
}

/// No key, valid, revoked or unknown, reaches the server's log, even at `RUST_LOG=trace`
/// and whatever shape the `Authorization` header has.
#[cfg(unix)]
#[test]
fn keys_never_reach_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("recall.db").display().to_string();
    let key = stdout_of(recall(&db).args(["keys", "create", "--tenant", "a"]))
        .trim()
        .to_string();
    let revoked = stdout_of(recall(&db).args(["keys", "create", "--tenant", "b"]))
        .trim()
        .to_string();
    let listed = stdout_of(recall(&db).args(["keys", "list", "--tenant", "b", "--json"]));
    let listed: Value = serde_json::from_str(listed.trim()).unwrap();
    recall(&db)
        .args(["keys", "revoke", listed["id"].as_str().unwrap()])
        .assert()
        .success();
    let unknown = format!("rk_{}", "7".repeat(64));

    let mut server = serve_env(&db, &[], &[("RUST_LOG", "trace")]);
    let rt = runtime();
    let client = reqwest::Client::new();
    let base = server.base.clone();
    let (status, created) = rt.block_on(post(
        &client,
        &format!("{base}/v1/conversations"),
        &key,
        json!({}),
    ));
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_string();
    let messages = format!("{base}/v1/conversations/{id}/messages");
    let hello = json!({"role": "user", "content": "hello"});
    let (status, res) = rt.block_on(post(&client, &messages, &key, hello.clone()));
    assert_eq!(status, 201, "{res}");
    let (status, res) = rt.block_on(post(
        &client,
        &format!("{base}/v1/conversations/nope/messages"),
        &key,
        hello.clone(),
    ));
    assert_eq!(status, 404, "{res}");
    let (status, res) = rt.block_on(post(&client, &messages, &key, json!({"role": "nobody"})));
    assert_eq!(status, 422, "{res}");
    for k in [&revoked, &unknown] {
        let (status, res) = rt.block_on(post(&client, &messages, k, hello.clone()));
        assert_eq!(status, 401, "{res}");
    }
    for header in [
        format!("Basic {key}"),
        format!("Bearer  {key} x"),
        key.clone(),
    ] {
        let res = rt
            .block_on(
                client
                    .post(&messages)
                    .header("authorization", header.as_str())
                    .json(&hello)
                    .send(),
            )
            .unwrap();
        assert_eq!(res.status().as_u16(), 401, "{header}");
    }

    let pid = nix::unistd::Pid::from_raw(server.child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    assert!(server.child.wait().unwrap().success());
    let mut log = Vec::new();
    while let Ok(l) = server.stderr.recv_timeout(Duration::from_secs(5)) {
        log.push(l);
    }
    // The log did record the requests (so the check below looked at something).
    let about_requests = log
        .iter()
        .filter(|l| l.contains("/v1/conversations"))
        .count();
    assert!(about_requests >= 8, "{about_requests} lines: {log:#?}");
    for secret in [&key, &revoked, &unknown] {
        // A prefix of the secret part is a leak too (a truncated or masked key would still
        // show it), so look for its first 16 characters, not only the whole key.
        let part = &secret[3..19];
        let leaked: Vec<_> = log.iter().filter(|l| l.contains(part)).collect();
        assert!(leaked.is_empty(), "key material in the log: {leaked:#?}");
    }
}

/// SIGTERM stops the server cleanly; `--no-auth` is refused off loopback and announced on it.
#[cfg(unix)]
#[test]
fn sigterm_and_no_auth() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("recall.db").display().to_string();
    let mut server = serve(&db, &["--no-auth"]);
    let rt = runtime();
    let res = rt
        .block_on(
            reqwest::Client::new()
                .post(format!("{}/v1/conversations", server.base))
                .header("content-type", "application/json")
                .body("{}")
                .send(),
        )
        .unwrap();
    assert_eq!(res.status().as_u16(), 201);
    let pid = nix::unistd::Pid::from_raw(server.child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = server.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let mut said = Vec::new();
    while let Ok(l) = server.stderr.recv_timeout(Duration::from_secs(5)) {
        said.push(l);
    }
    assert!(
        said.iter().any(|l| l.contains("recall stopped")),
        "{said:?}"
    );

    recall(&db)
        .args(["serve", "--no-auth", "--addr", "0.0.0.0:0"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("loopback"));
}

/// The limits flags reach the server: `--idle-timeout` closes a connection that sends
/// nothing, `--max-connections` refuses one connection too many, and values the server
/// cannot run with are refused (exit 2) naming the flag.
#[test]
fn serve_flags_set_timeouts_and_the_connection_cap() {
    use std::io::{Read, Write};
    use std::net::TcpStream;

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("recall.db").display().to_string();
    for (flag, value) in [
        ("--idle-timeout", "0"),
        ("--header-timeout", "0"),
        ("--body-timeout", "100000"),
        ("--max-connections", "0"),
        ("--summary-backend", "nope"),
    ] {
        recall(&db)
            .args(["serve", "--no-auth", "--addr", "127.0.0.1:0", flag, value])
            .assert()
            .code(2)
            .stderr(predicates::str::contains(flag));
    }

    let server = serve(
        &db,
        &["--no-auth", "--idle-timeout", "3", "--max-connections", "2"],
    );
    let addr = server.base.trim_start_matches("http://").to_string();
    let opened = Instant::now();
    let mut idle = TcpStream::connect(&addr).unwrap();
    let mut served = TcpStream::connect(&addr).unwrap();
    served
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n")
        .unwrap();
    let mut buf = [0u8; 1024];
    let n = served.read(&mut buf).unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    // Both places are taken: a third connection is not served.
    let mut third = TcpStream::connect(&addr).unwrap();
    third
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let _ = third.write_all(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n");
    let mut answer = Vec::new();
    let _ = third.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 503"),
        "{answer}"
    );
    // The idle one is closed after about 3 s.
    idle.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    match idle.read(&mut buf) {
        Ok(0) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        other => panic!("the idle connection was not closed: {other:?}"),
    }
    let took = opened.elapsed();
    assert!(
        (Duration::from_millis(2500)..Duration::from_secs(15)).contains(&took),
        "an idle connection closed after {took:?} with --idle-timeout 3"
    );
}

/// `kill -9` during appends: after a restart every acknowledged message is there exactly
/// once, in order, with gapless seqs; the request in flight at the kill is retried with its
/// client id and is stored once whether or not it had been committed.
#[cfg(unix)]
#[test]
fn sigkill_during_appends_loses_nothing_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("recall.db").display().to_string();
    let id = stdout_of(recall(&db).args(["conversations", "new"]))
        .trim()
        .to_string();
    let rt = runtime();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let mut acked: Vec<(String, i64)> = Vec::new();
    let mut next = 0u64;
    for round in 0..3u64 {
        let server = serve(&db, &["--no-auth"]);
        let url = format!("{}/v1/conversations/{id}/messages", server.base);
        let killer = {
            let pid = server.child.id();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(400 + 250 * round));
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
            })
        };
        rt.block_on(async {
            loop {
                let cid = format!("m{next:06}");
                let body = json!({"role": if next.is_multiple_of(2) {"user"} else {"assistant"},
                                  "content": format!("message {next}"), "id": cid});
                match client.post(&url).json(&body).send().await {
                    Ok(res) if res.status().as_u16() == 201 => {
                        let v: Value = match res.json().await {
                            Ok(v) => v,
                            Err(_) => break, // killed while answering: retried next round
                        };
                        acked.push((cid, v["messages"][0]["seq"].as_i64().unwrap()));
                        next += 1;
                    }
                    Ok(res) => panic!("unexpected status {}", res.status()),
                    Err(_) => break,
                }
            }
        });
        killer.join().unwrap();
        drop(server);
    }
    // Final check on a fresh server, after retrying the message that was in flight.
    let server = serve(&db, &["--no-auth"]);
    let url = format!("{}/v1/conversations/{id}/messages", server.base);
    let cid = format!("m{next:06}");
    let (status, _) = rt.block_on(async {
        let res = client
            .post(&url)
            .json(
                &json!({"role": if next.is_multiple_of(2) {"user"} else {"assistant"},
                          "content": format!("message {next}"), "id": cid}),
            )
            .send()
            .await
            .unwrap();
        (res.status().as_u16(), ())
    });
    assert_eq!(status, 201);
    let mut stored: Vec<(String, i64)> = Vec::new();
    let mut after = 0;
    loop {
        let page: Value = rt.block_on(async {
            client
                .get(format!("{url}?limit=1000&after={after}"))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap()
        });
        for m in page["data"].as_array().unwrap() {
            stored.push((
                m["message"]["id"].as_str().unwrap().to_string(),
                m["seq"].as_i64().unwrap(),
            ));
        }
        match page["next_after"].as_i64() {
            Some(n) => after = n,
            None => break,
        }
    }
    assert!(
        acked.len() > 3,
        "the server acknowledged too little: {}",
        acked.len()
    );
    // Every message sent is stored once, in order, with seq = position (gapless).
    assert_eq!(stored.len() as u64, next + 1, "stored vs sent");
    for (i, (cid, seq)) in stored.iter().enumerate() {
        assert_eq!(cid, &format!("m{i:06}"));
        assert_eq!(*seq, i as i64 + 1);
    }
    for (cid, seq) in &acked {
        assert!(
            stored.contains(&(cid.clone(), *seq)),
            "acknowledged {cid} at {seq} missing"
        );
    }
    drop(server);
}

/// `kill -9` while appends and a chat reply stream through `recall serve`, on a SQLite file.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_chat_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("recall.db").display().to_string();
    sigkill_mid_chat(&db).await;
}

/// The same on a fresh PostgreSQL database (skipped with a notice when PostgreSQL is
/// unreachable, except under CI=true).
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_chat_on_postgres() {
    let Some(pg) = common::pg_database().await else {
        return;
    };
    sigkill_mid_chat(&pg.url).await;
}

const COMPLETE_TURNS: usize = 3;

/// Clients append to one conversation and chat (SSE) in another through a real `recall
/// serve` whose Anthropic backend is a fake server. The fake answers `COMPLETE_TURNS` turns,
/// then sends some text and stalls; once the partial reply is visible through the API the
/// server is killed with SIGKILL and restarted on the same database. Then: every
/// acknowledged append is stored exactly once, in order, with gapless seqs (the one in flight
/// is retried with its client id); the finished turns are whole; the interrupted turn has its
/// user message and its reply as `partial` with the text that had arrived.
#[cfg(unix)]
async fn sigkill_mid_chat(db: &str) {
    use futures::StreamExt;
    use recall_testkit::{anthropic, FakeServer, Part, Reply};
    use std::sync::{Arc, Mutex};

    let fake = FakeServer::start(Arc::new(|_, n| {
        if n < COMPLETE_TURNS {
            Reply::sse(anthropic::text_reply(&[&format!("Answer {n}.")]))
        } else {
            Reply::sse(vec![
                anthropic::message_start("msg_stall", 10),
                anthropic::block_start(0, json!({"type": "text", "text": ""})),
                anthropic::text_delta(0, "Partial words"),
                // Far longer than the test: the server dies in this pause.
                Part::Pause(Duration::from_secs(600)),
                anthropic::text_delta(0, " never sent"),
            ])
        }
    }))
    .await;
    let fake_url = fake.base_url();
    let env = [
        ("ANTHROPIC_API_KEY", "sk-ant-fault-test-key"),
        ("ANTHROPIC_BASE_URL", fake_url.as_str()),
    ];
    let server = tokio::task::block_in_place(|| serve_env(db, &["--no-auth"], &env));
    // No whole-request timeout: the interrupted stream is read for as long as it lives.
    let client = reqwest::Client::new();
    let new_conversation = |base: String, client: reqwest::Client| async move {
        let res = client
            .post(format!("{base}/v1/conversations"))
            .header("content-type", "application/json")
            .body("{}")
            .send()
            .await
            .expect("create");
        assert_eq!(res.status().as_u16(), 201);
        let v: Value = res.json().await.unwrap();
        v["id"].as_str().unwrap().to_string()
    };
    let appends = new_conversation(server.base.clone(), client.clone()).await;
    let chat = new_conversation(server.base.clone(), client.clone()).await;

    // The appender: one request at a time, stopping at the first that gets no 201 answer.
    let acked: Arc<Mutex<Vec<(String, i64)>>> = Arc::default();
    let appender = {
        let url = format!("{}/v1/conversations/{appends}/messages", server.base);
        let (client, acked) = (client.clone(), acked.clone());
        tokio::spawn(async move {
            let mut next = 0u64;
            loop {
                let cid = format!("m{next:06}");
                let body = json!({"role": if next.is_multiple_of(2) {"user"} else {"assistant"},
                                  "content": format!("message {next}"), "id": cid});
                let Ok(res) = client.post(&url).json(&body).send().await else {
                    return next;
                };
                assert_eq!(res.status().as_u16(), 201, "append {cid}");
                let Ok(v) = res.json::<Value>().await else {
                    return next; // killed while answering: retried after the restart
                };
                let seq = v["messages"][0]["seq"].as_i64().expect("seq");
                acked.lock().unwrap().push((cid, seq));
                next += 1;
            }
        })
    };

    let chat_url = format!("{}/v1/conversations/{chat}/chat", server.base);
    for n in 0..COMPLETE_TURNS {
        let res = client
            .post(&chat_url)
            .json(&json!({ "content": format!("Question {n}") }))
            .send()
            .await
            .expect("chat");
        assert_eq!(res.status().as_u16(), 200);
        let body = tokio::time::timeout(Duration::from_secs(60), res.text())
            .await
            .expect("turn in time")
            .expect("body");
        assert!(body.contains("event: done"), "{body}");
        assert!(body.contains(&format!("Answer {n}.")), "{body}");
    }
    // The turn that will be interrupted: read until the first text arrives.
    let res = client
        .post(&chat_url)
        .json(&json!({"content": "Question interrupted"}))
        .send()
        .await
        .expect("chat");
    assert_eq!(res.status().as_u16(), 200);
    let mut stream = res.bytes_stream();
    let mut seen = String::new();
    while !seen.contains("Partial words") {
        let chunk = tokio::time::timeout(Duration::from_secs(60), stream.next())
            .await
            .expect("a chunk in time")
            .expect("stream open")
            .expect("chunk");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    // The reply is saved as partial as soon as text arrives (then at most every 500 ms):
    // wait until the API shows it, and until the appender has been acknowledged a while.
    let messages_url = format!("{}/v1/conversations/{chat}/messages", server.base);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let page: Value = client
            .get(&messages_url)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let data = page["data"].as_array().unwrap();
        let last = data.last().unwrap();
        let partial_visible = data.len() == 2 * COMPLETE_TURNS + 2
            && last["status"] == "partial"
            && last["message"]["content"] == json!("Partial words");
        if partial_visible && acked.lock().unwrap().len() >= 20 {
            break;
        }
        assert!(Instant::now() < deadline, "no partial reply: {page}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let pid = nix::unistd::Pid::from_raw(server.child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).unwrap();
    let next = tokio::time::timeout(Duration::from_secs(60), appender)
        .await
        .expect("the appender stops once the server is gone")
        .expect("appender");
    // The open chat stream ends without a `done`.
    let rest = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(Ok(chunk)) = stream.next().await {
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await;
    assert!(rest.is_ok(), "the stream did not end after the kill");
    assert!(!seen.contains("event: done"), "{seen}");
    drop(server);

    let server = tokio::task::block_in_place(|| serve_env(db, &["--no-auth"], &env));
    let client = reqwest::Client::new();
    let url = format!("{}/v1/conversations/{appends}/messages", server.base);
    let cid = format!("m{next:06}");
    let res = client
        .post(&url)
        .json(
            &json!({"role": if next.is_multiple_of(2) {"user"} else {"assistant"},
                       "content": format!("message {next}"), "id": cid}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 201, "retry of the append in flight");
    let all = |url: String, client: reqwest::Client| async move {
        let mut out: Vec<Value> = Vec::new();
        let mut after = 0;
        loop {
            let page: Value = client
                .get(format!("{url}?limit=1000&after={after}"))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            out.extend(page["data"].as_array().unwrap().iter().cloned());
            match page["next_after"].as_i64() {
                Some(n) => after = n,
                None => return out,
            }
        }
    };
    let stored = all(url, client.clone()).await;
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() >= 20, "{}", acked.len());
    assert_eq!(stored.len() as u64, next + 1, "stored vs sent");
    for (i, m) in stored.iter().enumerate() {
        assert_eq!(m["message"]["id"], format!("m{i:06}").as_str(), "{m}");
        assert_eq!(m["seq"], i as i64 + 1, "{m}");
        assert_eq!(m["status"], "complete");
    }
    for (cid, seq) in &acked {
        assert_eq!(
            stored[*seq as usize - 1]["message"]["id"],
            cid.as_str(),
            "acknowledged {cid} at {seq}"
        );
    }

    let turns = all(
        format!("{}/v1/conversations/{chat}/messages", server.base),
        client.clone(),
    )
    .await;
    let shown: Vec<(i64, String, String, Value)> = turns
        .iter()
        .map(|m| {
            (
                m["seq"].as_i64().unwrap(),
                m["message"]["role"].as_str().unwrap().to_string(),
                m["status"].as_str().unwrap().to_string(),
                m["message"]["content"].clone(),
            )
        })
        .collect();
    let mut expected = Vec::new();
    for n in 0..COMPLETE_TURNS {
        expected.push(("user", "complete", json!(format!("Question {n}"))));
        expected.push(("assistant", "complete", json!(format!("Answer {n}."))));
    }
    expected.push(("user", "complete", json!("Question interrupted")));
    expected.push(("assistant", "partial", json!("Partial words")));
    let expected: Vec<(i64, String, String, Value)> = expected
        .into_iter()
        .enumerate()
        .map(|(i, (r, s, c))| (i as i64 + 1, r.to_string(), s.to_string(), c))
        .collect();
    assert_eq!(shown, expected);
    // Four turns reached the backend; none was replayed by the restart.
    assert_eq!(fake.requests().len(), COMPLETE_TURNS + 1);
    drop(server);
}

/// The line `recall serve` announces itself with, under `args` and `env`.
fn listening_line(args: &[&str], env: &[(&str, &str)]) -> String {
    let mut cmd = StdCommand::new(env!("CARGO_BIN_EXE_recall"));
    cmd.args(["serve", "--addr", "127.0.0.1:0", "--no-auth"])
        .args(args)
        .env_remove("RECALL_DB")
        .env_remove("RECALL_DURABILITY")
        .envs(env.iter().copied());
    Served::start(cmd).announced.clone()
}

/// `durability` in the config file, overridden by `--durability` / `RECALL_DURABILITY`;
/// the server says which one it runs.
#[test]
fn serve_takes_durability_from_the_config_and_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("recall.db").display().to_string();
    let config = dir.path().join("recall.toml");
    std::fs::write(&config, "durability = \"full\"\n").unwrap();
    let config = config.display().to_string();
    let default = listening_line(&["--db", &db], &[]);
    assert!(default.ends_with(", durability normal)"), "{default}");
    let from_file = listening_line(&["--db", &db, "--config", &config], &[]);
    assert!(from_file.ends_with(", durability full)"), "{from_file}");
    let flag = listening_line(
        &["--db", &db, "--config", &config, "--durability", "normal"],
        &[],
    );
    assert!(flag.ends_with(", durability normal)"), "{flag}");
    let env = listening_line(&["--db", &db], &[("RECALL_DURABILITY", "full")]);
    assert!(env.ends_with(", durability full)"), "{env}");
    // A value the file cannot mean is refused before serving.
    std::fs::write(dir.path().join("bad.toml"), "durability = \"fsync\"\n").unwrap();
    Command::cargo_bin("recall")
        .unwrap()
        .args(["serve", "--addr", "127.0.0.1:0", "--no-auth", "--db", &db])
        .arg("--config")
        .arg(dir.path().join("bad.toml"))
        .env_remove("RECALL_DURABILITY")
        .assert()
        .code(2)
        .stderr(predicates::str::contains("fsync"));
}
