//! The store commands as a user runs them: real processes on a real SQLite file.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::{json, Value};

struct Db {
    _dir: tempfile::TempDir,
    path: String,
}

fn db() -> Db {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("recall.db").display().to_string();
    Db { _dir: dir, path }
}

fn recall(db: &Db) -> Command {
    let mut c = Command::cargo_bin("recall").expect("binary built");
    // Recall here is the lexical ranking's (what these tests hold it to); the default
    // embedder is tested in embed_default.rs.
    c.env("RECALL_DB", &db.path)
        .env_remove("RECALL_TENANT")
        .env("RECALL_EMBED", "off");
    c
}

fn stdout_of(c: &mut Command) -> String {
    let out = c.assert().success().get_output().clone();
    String::from_utf8(out.stdout).expect("utf-8")
}

/// A conversation like the benchmark workload: user and assistant turns, every 10th
/// assistant turn a tool call with its result.
fn workload(n: usize) -> Vec<Value> {
    let mut v = Vec::with_capacity(n);
    let mut i = 0;
    while v.len() < n {
        v.push(
            json!({"role": "user", "content": format!("question {i}: {}", "why ".repeat(i % 50))}),
        );
        if i % 10 == 9 {
            v.push(json!({"role": "assistant", "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": format!("t{i}"), "name": "search_documents", "input": {"q": i}}
            ]}));
            v.push(json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": format!("t{i}"), "content": "result ".repeat(300)}
            ]}));
        }
        v.push(json!({"role": "assistant", "content": format!("answer {i}: {}", "because ".repeat(i % 200)), "id": format!("a{i}"), "metadata": {"n": i}}));
        i += 1;
    }
    v.truncate(n);
    v
}

#[test]
fn export_then_import_of_10000_messages_round_trips() {
    let db = db();
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("in.jsonl");
    let lines: Vec<String> = workload(10_000).iter().map(Value::to_string).collect();
    std::fs::write(&input, lines.join("\n")).expect("write");

    let a = stdout_of(recall(&db).arg("import").arg(&input));
    let a = a.trim();
    let exported = stdout_of(recall(&db).args(["export", a]));
    assert_eq!(exported.lines().count(), 10_000);
    let exported_path = dir.path().join("out.jsonl");
    std::fs::write(&exported_path, &exported).expect("write");
    let b = stdout_of(recall(&db).arg("import").arg(&exported_path));
    let b = b.trim();
    assert_ne!(a, b);
    // Identical messages: the second export equals the first, line for line.
    assert_eq!(stdout_of(recall(&db).args(["export", b])), exported);
    // Identical rendered context, in every format.
    for f in [
        "transcript",
        "bracket",
        "xml",
        "task",
        "anthropic",
        "openai",
    ] {
        let args = [
            "--format",
            f,
            "--max-tokens",
            "8000",
            "--current",
            "And next?",
        ];
        let ca = stdout_of(recall(&db).args(["context", a]).args(args));
        let cb = stdout_of(recall(&db).args(["context", b]).args(args));
        assert_eq!(ca, cb, "format {f}");
        assert!(!ca.is_empty());
    }
}

/// `export` then `import` gives back the same conversation: the system prompt comes back as
/// the system prompt (not as a fourth, stored system message), and a system message that was
/// stored stays a stored message.
#[test]
fn export_then_import_keeps_the_system_prompt_as_the_system_prompt() {
    let db = db();
    let dir = tempfile::tempdir().expect("tempdir");
    let show = |id: &str| -> Value {
        serde_json::from_str(&stdout_of(recall(&db).args([
            "conversations",
            "show",
            id,
            "--json",
        ])))
        .expect("json")
    };
    // Same messages at the same seqs, with the same times.
    let kept = |v: &Value| -> Vec<Value> {
        v["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| json!([m["seq"], m["status"], m["message"], m["created_at"]]))
            .collect()
    };
    let a = stdout_of(recall(&db).args([
        "conversations",
        "new",
        "--title",
        "Support",
        "--system",
        "Be brief.",
    ]));
    let a = a.trim();
    for (role, content) in [
        ("user", "We're building a FastAPI app."),
        ("assistant", "Great, FastAPI it is."),
        ("user", "What framework?"),
    ] {
        stdout_of(recall(&db).args(["append", a, "--role", role, "--content", content]));
    }
    let exported = stdout_of(recall(&db).args(["export", a]));
    let first: Value = serde_json::from_str(exported.lines().next().unwrap()).unwrap();
    assert_eq!(
        first,
        json!({"role": "system", "content": "Be brief.", "metadata": {"system_prompt": true}}),
        "the system prompt is an ordinary system message to other readers, marked for import"
    );
    let file = dir.path().join("chat.jsonl");
    std::fs::write(&file, &exported).expect("write");
    let b = stdout_of(recall(&db).arg("import").arg(&file));
    let b = b.trim();
    let (va, vb) = (show(a), show(b));
    assert_eq!(vb["message_count"], 3, "{vb}");
    assert_eq!(vb["system_prompt"], "Be brief.");
    assert_eq!(kept(&va), kept(&vb));
    assert_eq!(stdout_of(recall(&db).args(["export", b])), exported);
    // `recall render` reads the export with the system prompt as the system prompt too.
    let rendered = stdout_of(
        recall(&db)
            .args(["render", "--format", "bracket", "--input"])
            .arg(&file),
    );
    assert!(rendered.starts_with("[SYSTEM]: Be brief."), "{rendered}");

    // A conversation without a system prompt whose first message is a stored system message:
    // that message is a message, and comes back as one.
    let c = stdout_of(recall(&db).args(["conversations", "new"]));
    let c = c.trim();
    stdout_of(recall(&db).args([
        "append",
        c,
        "--role",
        "system",
        "--content",
        "Use metric units.",
    ]));
    stdout_of(recall(&db).args(["append", c, "--role", "user", "--content", "How far is it?"]));
    let exported = stdout_of(recall(&db).args(["export", c]));
    std::fs::write(&file, &exported).expect("write");
    let d = stdout_of(recall(&db).arg("import").arg(&file));
    let vd = show(d.trim());
    assert_eq!(vd["message_count"], 2, "{vd}");
    assert_eq!(vd["system_prompt"], Value::Null, "{vd}");
    assert_eq!(stdout_of(recall(&db).args(["export", d.trim()])), exported);

    // A system prompt and no messages yet is a conversation too.
    let e = stdout_of(recall(&db).args(["conversations", "new", "--system", "Be kind."]));
    let exported = stdout_of(recall(&db).args(["export", e.trim()]));
    std::fs::write(&file, &exported).expect("write");
    let f = stdout_of(recall(&db).arg("import").arg(&file));
    let vf = show(f.trim());
    assert_eq!(vf["message_count"], 0, "{vf}");
    assert_eq!(vf["system_prompt"], "Be kind.", "{vf}");
}

#[test]
fn malformed_import_line_is_named_and_nothing_is_stored() {
    let db = db();
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("bad.jsonl");
    std::fs::write(
        &input,
        "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"assistant\",\"content\":\"b\"}\n{oops\n",
    )
    .expect("write");
    recall(&db)
        .arg("import")
        .arg(&input)
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::contains("line 3"));
    let list = stdout_of(recall(&db).args(["conversations", "list", "--json"]));
    assert_eq!(list, "", "nothing stored");
}

#[test]
fn strict_import_rejects_the_whole_file() {
    let db = db();
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("in.json");
    std::fs::write(
        &input,
        r#"[{"role":"user","content":"ok"},{"role":"user","content":" "}]"#,
    )
    .expect("write");
    recall(&db)
        .args(["import", "--strict"])
        .arg(&input)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "messages[1] has empty/invalid content",
        ));
    assert_eq!(
        stdout_of(recall(&db).args(["conversations", "list", "--json"])),
        ""
    );
    // Lenient: the valid message is kept, with a warning.
    recall(&db)
        .arg("import")
        .arg(&input)
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "warning: messages[1] has empty/invalid content, skipping",
        ));
}

#[test]
fn unknown_conversation_is_exit_2_everywhere() {
    let db = db();
    for args in [
        vec!["context", "no-such-id"],
        vec!["export", "no-such-id"],
        vec!["conversations", "show", "no-such-id"],
        vec!["conversations", "clear", "no-such-id"],
        vec!["conversations", "delete", "no-such-id"],
        vec!["append", "no-such-id", "--role", "user", "--content", "hi"],
    ] {
        recall(&db)
            .args(&args)
            .assert()
            .code(2)
            .stdout("")
            .stderr(predicate::str::contains(
                "error: conversation 'no-such-id' not found",
            ));
    }
}

#[test]
fn oversized_message_is_rejected_with_the_limit() {
    let db = db();
    let id = stdout_of(recall(&db).args(["conversations", "new"]));
    let id = id.trim();
    // Too big for argv: sent on stdin.
    let big = json!({"role": "user", "content": "x".repeat((1 << 20) + 1)}).to_string();
    recall(&db)
        .args(["append", id, "--json", "-"])
        .write_stdin(big)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("over the limit of 1048576 bytes"));
    recall(&db)
        .args([
            "append",
            id,
            "--max-message-bytes",
            "10",
            "--role",
            "user",
            "--content",
            "eleven char",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("over the limit of 10 bytes"));
    let shown = stdout_of(recall(&db).args(["conversations", "show", id, "--json"]));
    let v: Value = serde_json::from_str(&shown).expect("json");
    assert_eq!(v["message_count"], 0);
}

#[test]
fn append_context_clear_delete_flow() {
    let db = db();
    let id = stdout_of(recall(&db).args([
        "conversations",
        "new",
        "--title",
        "t",
        "--system",
        "Be brief.",
    ]));
    let id = id.trim();
    assert_eq!(
        stdout_of(recall(&db).args([
            "append",
            id,
            "--role",
            "user",
            "--content",
            "We use FastAPI."
        ])),
        "1\n"
    );
    assert_eq!(
        stdout_of(recall(&db).args([
            "append",
            id,
            "--json",
            r#"{"role":"assistant","content":"Noted."}"#
        ])),
        "2\n"
    );
    // The same client id twice stores once.
    assert_eq!(
        stdout_of(recall(&db).args([
            "append",
            id,
            "--role",
            "user",
            "--content",
            "q",
            "--id",
            "c1"
        ])),
        "3\n"
    );
    assert!(stdout_of(recall(&db).args([
        "append",
        id,
        "--role",
        "user",
        "--content",
        "q",
        "--id",
        "c1"
    ]))
    .starts_with("3 (duplicate"));
    assert_eq!(
        stdout_of(recall(&db).args(["context", id, "--format", "bracket"])),
        "[SYSTEM]: Be brief.\n\n[USER]: We use FastAPI.\n\n[ASSISTANT]: Noted.\n\n[USER]: q"
    );
    recall(&db)
        .args(["append", id, "--role", "user", "--content", "   "])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("empty/invalid content"));
    assert_eq!(
        stdout_of(recall(&db).args(["conversations", "clear", id])),
        "Conversation cleared (3 messages removed)\n"
    );
    assert_eq!(stdout_of(recall(&db).args(["context", id])), "");
    // seq keeps counting after a clear.
    assert_eq!(
        stdout_of(recall(&db).args(["append", id, "--role", "user", "--content", "again"])),
        "4\n"
    );
    recall(&db)
        .args(["conversations", "delete", id])
        .assert()
        .success();
    recall(&db).args(["context", id]).assert().code(2);
}

/// Deleting a conversation with forks names the flag that deletes them too, and deletes
/// nothing until it is given.
#[test]
fn delete_with_forks_names_cascade() {
    let db = db();
    let id = stdout_of(recall(&db).args(["conversations", "new"]));
    let id = id.trim();
    stdout_of(recall(&db).args(["append", id, "--role", "user", "--content", "hi"]));
    let fork = stdout_of(recall(&db).args(["fork", id, "--at", "1"]));
    let fork = fork
        .split_whitespace()
        .last()
        .unwrap_or_default()
        .to_string();
    recall(&db)
        .args(["conversations", "delete", id])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "cannot delete conversation '{id}': 1 fork(s) read its history; delete them first, \
             or add --cascade to delete them too"
        )));
    recall(&db).args(["context", id]).assert().success();
    recall(&db)
        .args(["conversations", "delete", id, "--cascade"])
        .assert()
        .success()
        .stdout(format!("Conversation {id} and 1 fork(s) deleted\n"));
    recall(&db).args(["context", &fork]).assert().code(2);
}

/// Issue 36 item 5: a conversation another tenant holds is "not found" for this tenant, and
/// the CLI (which opens the whole database) says which tenant holds it and names `--tenant`.
#[test]
fn a_conversation_of_another_tenant_names_that_tenant() {
    let db = db();
    let id = stdout_of(recall(&db).args(["conversations", "new", "--tenant", "acme"]));
    let id = id.trim();
    recall(&db)
        .args(["context", id])
        .assert()
        .code(2)
        .stderr(format!(
            "error: conversation '{id}' not found in tenant 'default', but tenant 'acme' holds \
             one with this id: add --tenant acme (or set RECALL_TENANT=acme)\n"
        ));
    recall(&db)
        .args(["append", id, "--role", "user", "--content", "hi"])
        .env("RECALL_TENANT", "globex")
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "not found in tenant 'globex', but tenant 'acme' holds",
        ));
    recall(&db)
        .args(["context", id, "--tenant", "acme"])
        .assert()
        .success();
    // Nowhere at all: the plain answer.
    recall(&db)
        .args(["context", "no-such-conversation"])
        .assert()
        .code(2)
        .stderr("error: conversation 'no-such-conversation' not found\n");
}

/// Issue 16, defect 2: a client id already stored for a different message is a conflict on
/// `recall append --id` (exit 2 naming the id and its seq), and nothing is stored.
#[test]
fn append_with_a_reused_id_for_a_different_message_is_exit_2() {
    let db = db();
    let id = stdout_of(recall(&db).args(["conversations", "new"]));
    let id = id.trim();
    let append = |content: &str| {
        let mut c = recall(&db);
        c.args([
            "append",
            id,
            "--role",
            "user",
            "--content",
            content,
            "--id",
            "d1",
        ]);
        c
    };
    assert_eq!(stdout_of(&mut append("a")), "1\n");
    append("zzz")
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::contains(
            "client id 'd1' was already used for a different message (seq 1)",
        ));
    // The same message again is a duplicate, as before.
    assert!(stdout_of(&mut append("a")).starts_with("1 (duplicate"));
    assert_eq!(
        stdout_of(recall(&db).args(["context", id, "--format", "bracket"])),
        "[USER]: a"
    );
}

/// Issue 16, defect 2: an import (strict or not) whose lines reuse a client id for a different
/// message exits 2 naming the id and its seq, and stores nothing: no new conversation, and
/// nothing added to an existing one.
#[test]
fn import_with_a_reused_id_for_a_different_message_is_exit_2() {
    let db = db();
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("in.jsonl");
    std::fs::write(
        &input,
        "{\"role\":\"user\",\"content\":\"a\",\"id\":\"d1\"}\n\
         {\"role\":\"assistant\",\"content\":\"b DIFFERENT\",\"id\":\"d1\"}\n",
    )
    .expect("write");
    for strict in [true, false] {
        let mut c = recall(&db);
        c.arg("import");
        if strict {
            c.arg("--strict");
        }
        c.arg(&input)
            .assert()
            .code(2)
            .stdout("")
            .stderr(predicate::str::contains(
                "client id 'd1' was already used for a different message (seq 1)",
            ));
        assert_eq!(
            stdout_of(recall(&db).args(["conversations", "list", "--json"])),
            "",
            "strict {strict}: nothing stored"
        );
    }
    // Into an existing conversation that holds d1 already: nothing of the file is added.
    let id = stdout_of(recall(&db).args(["conversations", "new"]));
    let id = id.trim();
    stdout_of(recall(&db).args([
        "append",
        id,
        "--role",
        "user",
        "--content",
        "a",
        "--id",
        "d1",
    ]));
    let other = dir.path().join("other.jsonl");
    std::fs::write(
        &other,
        "{\"role\":\"user\",\"content\":\"new\"}\n\
         {\"role\":\"user\",\"content\":\"not a\",\"id\":\"d1\"}\n",
    )
    .expect("write");
    recall(&db)
        .args(["import", "--strict", "--conversation", id])
        .arg(&other)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("'d1'").and(predicate::str::contains("seq 1")));
    assert_eq!(
        stdout_of(recall(&db).args(["context", id, "--format", "bracket"])),
        "[USER]: a"
    );
}

#[test]
fn import_of_nothing_valid_stores_nothing_and_is_exit_2() {
    let db = db();
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("invalid.jsonl");
    std::fs::write(
        &input,
        "{\"role\":\"user\",\"content\":\" \"}\n{\"role\":\"wizard\",\"content\":\"x\"}\n",
    )
    .expect("write");
    recall(&db)
        .arg("import")
        .arg(&input)
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::contains(
            "nothing to import: every message is invalid (2 skipped",
        ));
    assert_eq!(
        stdout_of(recall(&db).args(["conversations", "list", "--json"])),
        "",
        "no empty conversation"
    );
    // The same from stdin.
    recall(&db)
        .args(["import", "-"])
        .write_stdin(std::fs::read(&input).expect("read"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("nothing to import"));
    assert_eq!(
        stdout_of(recall(&db).args(["conversations", "list", "--json"])),
        ""
    );
}

/// Too large is one failure, exit 2 naming the limit, whether the input is a file or stdin.
#[test]
fn import_over_the_input_limit_is_exit_2_from_file_and_stdin() {
    let db = db();
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("in.jsonl");
    let text = "{\"role\":\"user\",\"content\":\"a fairly long first message\"}\n".repeat(4);
    std::fs::write(&input, &text).expect("write");
    let limit = (text.len() - 1).to_string();
    for from_stdin in [false, true] {
        let mut c = recall(&db);
        c.args(["import", "--max-input-bytes", &limit]);
        if from_stdin {
            c.arg("-").write_stdin(text.clone());
        } else {
            c.arg(&input);
        }
        c.assert()
            .code(2)
            .stdout("")
            .stderr(predicate::str::contains(format!(
                "over the input limit of {limit} bytes"
            )));
    }
    assert_eq!(
        stdout_of(recall(&db).args(["conversations", "list", "--json"])),
        ""
    );
    // At the limit it is read.
    recall(&db)
        .args(["import", "--max-input-bytes", &text.len().to_string()])
        .arg(&input)
        .assert()
        .success();
}

/// `--durability` (and `RECALL_DURABILITY`) is a global flag every store command takes;
/// anything but normal or full is a usage error.
#[test]
fn durability_flag_and_env_are_taken_and_checked() {
    let db = db();
    let id = stdout_of(recall(&db).args(["--durability", "full", "conversations", "new"]));
    let id = id.trim();
    stdout_of(recall(&db).args([
        "append",
        id,
        "--durability",
        "normal",
        "--role",
        "user",
        "--content",
        "hi",
    ]));
    stdout_of(
        recall(&db)
            .env("RECALL_DURABILITY", "full")
            .args(["context", id]),
    );
    recall(&db)
        .args(["--durability", "fsync", "conversations", "list"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("fsync"));
    recall(&db)
        .env("RECALL_DURABILITY", "sometimes")
        .args(["conversations", "list"])
        .assert()
        .code(2);
}

/// `recall context --recall-tokens N [--query TEXT]` and `recall render` with the same flags
/// recall the same early message; a recall share that leaves the window nothing is exit 2.
#[test]
fn context_and_render_recall_the_same_message() {
    let db = db();
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("chat.json");
    let mut msgs = vec![
        json!({"role": "user", "content": "The wifi password is tangerine-42."}),
        json!({"role": "assistant", "content": "Saved: tangerine-42."}),
    ];
    for i in 0..40 {
        msgs.push(
            json!({"role": "user", "content": format!("Filler question {i} about gardening.")}),
        );
        msgs.push(
            json!({"role": "assistant", "content": format!("Filler answer {i} about soil.")}),
        );
    }
    msgs.push(json!({"role": "user", "content": "Remind me of the wifi password?"}));
    std::fs::write(&input, Value::Array(msgs).to_string()).expect("write");
    let id = stdout_of(recall(&db).args(["import", input.to_str().unwrap()]));
    let id = id
        .split_whitespace()
        .find(|w| w.len() == 36)
        .expect("an id")
        .to_string();
    let flags = ["--max-tokens", "300", "--recall-tokens", "100", "--stats"];
    let out = recall(&db)
        .args(["context", &id])
        .args(flags)
        .assert()
        .success();
    let o = out.get_output();
    let prompt = String::from_utf8(o.stdout.clone()).unwrap();
    let stderr = String::from_utf8(o.stderr.clone()).unwrap();
    assert!(prompt.contains("<recalled_messages>"), "{prompt}");
    assert!(
        prompt.contains("  The wifi password is tangerine-42."),
        "{prompt}"
    );
    assert!(stderr.contains("\"recalled\":{\"budget\":100"), "{stderr}");
    let rendered = stdout_of(
        recall(&db)
            .args(["render", "--input", input.to_str().unwrap()])
            .args(flags),
    );
    assert!(
        rendered.contains("  The wifi password is tangerine-42."),
        "{rendered}"
    );
    // An explicit query that matches nothing recalls nothing.
    let none = stdout_of(
        recall(&db)
            .args(["context", &id])
            .args(flags)
            .args(["--query", "zzz"]),
    );
    assert!(!none.contains("<recalled_messages>"), "{none}");
    recall(&db)
        .args([
            "context",
            &id,
            "--max-tokens",
            "100",
            "--recall-tokens",
            "100",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "recall_tokens (100) must be less than max_tokens (100)",
        ));
}

/// `append` errors say what to do: an unknown role lists the valid ones (clap), a bad role in
/// `--json` speaks of "the message" (no `messages[0]`, no strict mode), and a missing
/// `--role` shows the two ways to call it, not a required `--db` (RECALL_DB is set here).
#[test]
fn append_errors_list_the_roles_and_the_usage() {
    let db = db();
    let id = stdout_of(recall(&db).args(["conversations", "new"]));
    let id = id.trim();
    let out = recall(&db)
        .args(["append", id, "--role", "bot", "--content", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("[possible values: user, assistant, system]"),
        "{stderr}"
    );
    let out = recall(&db)
        .args(["append", id, "--json", r#"{"role":"bot","content":"x"}"#])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the message has invalid role 'bot'"),
        "{stderr}"
    );
    assert!(stderr.contains("user, assistant and system"), "{stderr}");
    assert!(
        !stderr.contains("messages[0]") && !stderr.contains("strict mode"),
        "{stderr}"
    );
    let out = recall(&db)
        .args(["append", id, "--content", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--role <ROLE>"), "{stderr}");
    assert!(!stderr.contains("--db"), "{stderr}");
    assert!(
        stdout_of(recall(&db).args(["conversations", "show", id, "--json"]))
            .contains("\"message_count\": 0")
    );
}
