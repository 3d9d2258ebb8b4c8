//! `recall serve` and `recall keys` as a user runs them: real processes, a real SQLite file,
//! real HTTP on 127.0.0.1.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::{json, Value};

fn recall(db: &str) -> Command {
    let mut c = Command::cargo_bin("recall").expect("binary built");
    c.env("RECALL_DB", db).env_remove("RECALL_TENANT");
    c
}

fn stdout_of(c: &mut Command) -> String {
    let out = c.assert().success().get_output().clone();
    String::from_utf8(out.stdout).expect("utf-8")
}

/// A `recall serve` process and the address it announced.
struct Serve {
    child: Child,
    base: String,
    stderr: std::sync::mpsc::Receiver<String>,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(db: &str, extra: &[&str]) -> Serve {
    let mut child = StdCommand::new(env!("CARGO_BIN_EXE_recall"))
        .args(["serve", "--addr", "127.0.0.1:0", "--db", db])
        .args(extra)
        .env_remove("RECALL_DB")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn recall serve");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // Owned by `Serve` from here on, so a failure below still kills and reaps the child.
    let mut server = Serve {
        child,
        base: String::new(),
        stderr: rx,
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = server
            .stderr
            .recv_timeout(left)
            .expect("recall serve announced no address");
        if let Some(rest) = line.strip_prefix("recall listening on ") {
            server.base = rest.split_whitespace().next().expect("url").to_string();
            return server;
        }
    }
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
