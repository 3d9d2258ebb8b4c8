//! The `recall chat` REPL driven as a person would drive it: in a real terminal (tmux), keys
//! sent with `send-keys`, the screen read with `capture-pane`. The model is a fake Anthropic
//! server that streams its reply in two parts with a pause between them.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command as Std;
use std::sync::Arc;
use std::time::{Duration, Instant};

use assert_cmd::cargo::cargo_bin;
use recall_testkit::{anthropic, FakeServer, Part, Reply};
use serde_json::{json, Value};

/// A private tmux server (its own socket), killed on drop.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(script: &Path) -> Tmux {
        // One tmux server per test: the tests of this file run at once.
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let socket = format!("recall-test-{}-{n}", std::process::id());
        let t = Tmux { socket };
        let ok = t
            .cmd(&["new-session", "-d", "-s", "chat", "-x", "160", "-y", "60"])
            .arg(script)
            .status()
            .expect("tmux (install it: apt-get install tmux; scripts/setup.sh does)");
        assert!(ok.success(), "tmux new-session failed");
        t
    }

    fn cmd(&self, args: &[&str]) -> Std {
        let mut c = Std::new("tmux");
        c.args(["-L", &self.socket]).args(args);
        c
    }

    fn send(&self, keys: &str) {
        let ok = self
            .cmd(&["send-keys", "-t", "chat", "-l", keys])
            .status()
            .expect("send-keys");
        assert!(ok.success());
        let ok = self
            .cmd(&["send-keys", "-t", "chat", "Enter"])
            .status()
            .expect("send-keys Enter");
        assert!(ok.success());
    }

    fn screen(&self) -> String {
        let out = self
            .cmd(&["capture-pane", "-p", "-t", "chat", "-S", "-200"])
            .output()
            .expect("capture-pane");
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    /// Waits until the screen satisfies `cond`; panics with the screen after `limit`.
    fn wait(&self, what: &str, limit: Duration, cond: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if cond(&s) {
                return s;
            }
            if start.elapsed() > limit {
                panic!("timed out waiting for {what}; screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn alive(&self) -> bool {
        self.cmd(&["has-session", "-t", "chat"])
            .output()
            .is_ok_and(|o| o.status.success())
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]).output();
    }
}

fn recall_json(db: &str, args: &[&str]) -> Value {
    let out = Std::new(cargo_bin("recall"))
        .env("RECALL_DB", db)
        .args(args)
        .output()
        .expect("run recall");
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).expect("json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_repl_streams_clears_previews_trims_and_rejects_empty_input() {
    if Std::new("tmux").arg("-V").output().is_err() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "tmux is required in CI (scripts/setup.sh installs it)"
        );
        recall_testkit::skipped("no tmux to run the REPL in");
        return;
    }
    let server = FakeServer::start(Arc::new(|req, _| {
        if req.json()["stream"] != json!(true) {
            return Reply::json(404, json!({}));
        }
        Reply::sse(vec![
            anthropic::message_start("msg_1", 10),
            anthropic::block_start(0, json!({"type":"text","text":""})),
            anthropic::text_delta(0, "Streaming first half"),
            Part::Pause(Duration::from_millis(1500)),
            anthropic::text_delta(0, " and the second half."),
            anthropic::block_stop(0),
            anthropic::message_delta("end_turn", 7),
            anthropic::message_stop(),
        ])
    }))
    .await;

    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("repl.db").display().to_string();
    let created = {
        let out = Std::new(cargo_bin("recall"))
            .env("RECALL_DB", &db)
            .args(["conversations", "new", "--system", "Be brief."])
            .output()
            .expect("new");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let script = dir.path().join("run.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nexport RECALL_DB='{db}' HOME='{home}' ANTHROPIC_API_KEY=k \
             ANTHROPIC_BASE_URL='{url}'\nexec '{bin}' chat --conversation {id} --max-turns 1 \
             --history-file '{home}/hist'\n",
            home = dir.path().display(),
            url = server.base_url(),
            bin = cargo_bin("recall").display(),
            id = created,
        ),
    )
    .expect("script");
    Std::new("chmod")
        .arg("+x")
        .arg(&script)
        .status()
        .expect("chmod");

    let tmux = tokio::task::block_in_place(|| Tmux::start(&script));
    let t = &tmux;
    let long = Duration::from_secs(30);
    tokio::task::block_in_place(|| {
        t.wait("the banner", long, |s| s.contains("backend anthropic"));

        // Empty input: a message, nothing sent.
        t.send("   ");
        t.wait("the empty-input message", long, |s| {
            s.contains("Empty message not sent")
        });
        assert!(server.requests().is_empty());

        // Streaming: the first half is on screen while the server pauses.
        t.send("Hello there");
        let mid = t.wait("the first half", long, |s| {
            s.contains("Streaming first half")
        });
        assert!(
            !mid.contains("second half."),
            "the reply was printed at once, not streamed:\n{mid}"
        );
        t.wait("the whole reply", long, |s| {
            s.contains("Streaming first half and the second half.")
        });

        // A second turn with --max-turns 1 drops the first exchange: the notice shows.
        t.send("Another question");
        t.wait("the trimming notice", long, |s| {
            s.contains("Trimmed old messages to fit context window")
        });
        t.wait("the second reply", long, |s| {
            s.matches("Streaming first half and the second half.")
                .count()
                == 2
        });

        // /context prints the request body the API would get next.
        t.send("/context");
        let s = t.wait("the context", long, |s| s.contains("<your next message>"));
        assert!(s.contains("\"system\": \"Be brief.\""), "{s}");
        assert!(s.contains("\"max_tokens\""), "{s}");

        // /stats
        t.send("/stats");
        t.wait("the stats", long, |s| s.contains("4 messages"));

        // /compact summarises what the window (the newest turn) left behind, with the
        // chat's backend.
        t.send("/compact");
        t.wait("the compaction", long, |s| {
            s.contains("Summarised messages 1 to 2 in 1 call(s): version 1")
        });

        // clear asks first: anything but "yes" keeps the messages.
        t.send("clear");
        t.wait("the clear question", long, |s| {
            s.contains("Type yes to confirm")
        });
        t.send("no");
        t.wait("the refusal", long, |s| s.contains("Not cleared."));
        let v = recall_json(&db, &["conversations", "show", &created, "--json"]);
        assert_eq!(v["message_count"], 4, "{v}");

        // "yes" empties the conversation.
        t.send("/clear");
        t.wait("the clear question again", long, |s| {
            s.matches("Type yes to confirm").count() == 2
        });
        t.send("yes");
        t.wait("the clear confirmation", long, |s| {
            s.contains("Conversation cleared")
        });
        let v = recall_json(&db, &["conversations", "show", &created, "--json"]);
        assert_eq!(v["message_count"], 0, "{v}");

        // An unknown command is not sent to the model.
        let before = server.requests().len();
        t.send("/frobnicate");
        t.wait("the unknown-command message", long, |s| {
            s.contains("Unknown command /frobnicate")
        });
        assert_eq!(server.requests().len(), before);

        t.send("/exit");
        let start = Instant::now();
        while t.alive() && start.elapsed() < long {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(!t.alive(), "/exit ends the REPL");
    });
    // The two turns reached the server with the system prompt and, for the second, only the
    // newest turn (max-turns 1); then /compact's summariser call.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(
        reqs[2].json()["system"],
        recall_core::summary::SUMMARIZER_SYSTEM,
        "the third request is /compact's"
    );
    let body = reqs[1].json();
    assert_eq!(body["messages"].as_array().map(Vec::len), Some(1), "{body}");
    assert_eq!(body["messages"][0]["content"], "Another question");
    // The input history was saved.
    let hist = std::fs::read_to_string(dir.path().join("hist")).expect("history file");
    assert!(hist.contains("Hello there"), "{hist}");
}

/// `/retry` and `/edit` in the REPL: each reply lands on a new fork the session continues on,
/// and the earlier reply is still listed as an alternative of the same point.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_repl_retries_and_edits_on_forks() {
    if Std::new("tmux").arg("-V").output().is_err() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "tmux is required in CI (scripts/setup.sh installs it)"
        );
        recall_testkit::skipped("no tmux to run the REPL in");
        return;
    }
    let n = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let server = FakeServer::start(Arc::new({
        let n = n.clone();
        move |req, _| {
            if req.json()["stream"] != json!(true) {
                return Reply::json(404, json!({}));
            }
            let k = n.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            Reply::sse(vec![
                anthropic::message_start("msg_1", 10),
                anthropic::block_start(0, json!({"type":"text","text":""})),
                anthropic::text_delta(0, &format!("Reply number {k}.")),
                anthropic::block_stop(0),
                anthropic::message_delta("end_turn", 4),
                anthropic::message_stop(),
            ])
        }
    }))
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("repl.db").display().to_string();
    let first = {
        let out = Std::new(cargo_bin("recall"))
            .env("RECALL_DB", &db)
            .args(["conversations", "new"])
            .output()
            .expect("new");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let script = dir.path().join("run.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nexport RECALL_DB='{db}' HOME='{home}' ANTHROPIC_API_KEY=k \
             ANTHROPIC_BASE_URL='{url}'\nexec '{bin}' chat --conversation {first} \
             --history-file '{home}/hist'\n",
            home = dir.path().display(),
            url = server.base_url(),
            bin = cargo_bin("recall").display(),
        ),
    )
    .expect("script");
    Std::new("chmod")
        .arg("+x")
        .arg(&script)
        .status()
        .expect("chmod");

    let tmux = tokio::task::block_in_place(|| Tmux::start(&script));
    let t = &tmux;
    let long = Duration::from_secs(30);
    let fork_line = |s: &str, k: usize| -> String {
        let line = s
            .lines()
            .filter(|l| l.contains("(now on fork "))
            .nth(k)
            .unwrap_or_else(|| panic!("no fork line {k}:\n{s}"));
        line.split("(now on fork ")
            .nth(1)
            .and_then(|r| r.split(';').next())
            .expect("fork id")
            .to_string()
    };
    let (retried, edited) = tokio::task::block_in_place(|| {
        t.wait("the banner", long, |s| s.contains("backend anthropic"));
        t.send("What is two plus two?");
        t.wait("the first reply", long, |s| s.contains("Reply number 1."));
        t.send("/retry");
        let s = t.wait("the retried reply", long, |s| {
            s.contains("Reply number 2.") && s.contains("(now on fork ")
        });
        let retried = fork_line(&s, 0);
        t.send("/edit What is three plus three?");
        let s = t.wait("the edited reply", long, |s| {
            s.contains("Reply number 3.") && s.matches("(now on fork ").count() == 2
        });
        let edited = fork_line(&s, 1);
        t.send("/exit");
        (retried, edited)
    });
    // The original keeps its reply; the retry's fork holds the new one after the same question.
    let msgs = |id: &str| -> Vec<(String, String)> {
        let out = Std::new(cargo_bin("recall"))
            .env("RECALL_DB", &db)
            .args(["export", id])
            .output()
            .expect("export");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                let m: Value = serde_json::from_str(l).expect("json line");
                (
                    m["role"].as_str().unwrap_or("").to_string(),
                    m["content"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    };
    let pair = |u: &str, a: &str| {
        vec![
            ("user".to_string(), u.to_string()),
            ("assistant".to_string(), a.to_string()),
        ]
    };
    assert_eq!(
        msgs(&first),
        pair("What is two plus two?", "Reply number 1.")
    );
    assert_eq!(
        msgs(&retried),
        pair("What is two plus two?", "Reply number 2.")
    );
    assert_eq!(
        msgs(&edited),
        pair("What is three plus three?", "Reply number 3.")
    );
    // The reply at seq 2 of the retry's fork has the original's reply as its alternative.
    let out = Std::new(cargo_bin("recall"))
        .env("RECALL_DB", &db)
        .args(["alternatives", &retried, "2", "--json"])
        .output()
        .expect("alternatives");
    assert!(out.status.success(), "{out:?}");
    let alts: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    let ids: Vec<&str> = alts
        .iter()
        .filter_map(|a| a["conversation_id"].as_str())
        .collect();
    assert!(
        ids.contains(&first.as_str()) && ids.contains(&retried.as_str()),
        "{alts:?}"
    );
    assert_eq!(server.requests().len(), 3);
}
