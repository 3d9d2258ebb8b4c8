//! Message times through the CLI (issue 37, real times), on a SQLite file and on a fresh
//! PostgreSQL database: `recall append --created-at` and `--json` with `created_at`, `recall
//! import` of a dated history, `recall export` giving the times back (export → import →
//! export is byte for byte the same), the refusals (backwards, future, malformed: exit 2,
//! nothing stored), and a recalled excerpt showing the given date.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;
use serde_json::{json, Value};

fn recall(db: &str) -> Command {
    let mut c = Command::cargo_bin("recall").expect("binary built");
    // Lexical recall, as the excerpt test expects (embed_default.rs tests the embedder).
    c.env("RECALL_DB", db)
        .env_remove("RECALL_TENANT")
        .env("RECALL_EMBED", "off");
    c
}

fn stdout_of(c: &mut Command) -> String {
    let out = c.assert().success().get_output().clone();
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Runs `c`, expects exit status 2 and returns its stderr.
fn refused(c: &mut Command) -> String {
    let out = c.assert().code(2).get_output().clone();
    String::from_utf8(out.stderr).expect("utf-8")
}

fn id_in(out: &str) -> String {
    out.split_whitespace()
        .find(|w| w.len() == 36)
        .expect("an id")
        .to_string()
}

fn export(db: &str, id: &str) -> String {
    stdout_of(recall(db).args(["export", id]))
}

fn conversation_count(db: &str) -> usize {
    stdout_of(recall(db).args(["conversations", "list"]))
        .lines()
        .filter(|l| l.split_whitespace().any(|w| w.len() == 36))
        .count()
}

fn appends_and_refusals(db: &str) {
    let id = stdout_of(recall(db).args(["conversations", "new", "--system", "Be brief."]));
    let id = id.trim();
    stdout_of(recall(db).args([
        "append",
        id,
        "--role",
        "user",
        "--content",
        "Hi from 2023.",
        "--created-at",
        "2023-05-08T15:56:00+02:00",
    ]));
    stdout_of(recall(db).args([
        "append",
        id,
        "--json",
        r#"{"role":"assistant","content":"Hello.","created_at":"2023-05-08T13:57:00.5Z"}"#,
    ]));
    // Earlier than the message before it: exit 2, naming both times; nothing stored.
    let e = refused(recall(db).args([
        "append",
        id,
        "--role",
        "user",
        "--content",
        "late",
        "--created-at",
        "2023-05-08T13:00:00Z",
    ]));
    assert!(
        e.contains(
            "messages[0]: created_at 2023-05-08T13:00:00Z is earlier than the message before \
             it (2023-05-08T13:57:00.500Z)"
        ),
        "{e}"
    );
    // In the future beyond the skew.
    let e = refused(recall(db).args([
        "append",
        id,
        "--role",
        "user",
        "--content",
        "x",
        "--created-at",
        "2999-01-01T00:00:00Z",
    ]));
    assert!(
        e.contains("created_at 2999-01-01T00:00:00Z is in the future"),
        "{e}"
    );
    // Malformed.
    let e = refused(recall(db).args([
        "append",
        id,
        "--role",
        "user",
        "--content",
        "x",
        "--created-at",
        "2023-05-08 13:00",
    ]));
    assert!(
        e.contains("the message has an invalid 'created_at' (expected 'T' between the date"),
        "{e}"
    );
    // Without a time: the clock's, after the others.
    stdout_of(recall(db).args(["append", id, "--role", "user", "--content", "Now."]));
    let lines: Vec<Value> = export(db, id)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "{lines:?}");
    // The system prompt line has no time; the messages have theirs.
    assert_eq!(lines[0].get("created_at"), None);
    assert_eq!(lines[1]["created_at"], "2023-05-08T13:56:00Z");
    assert_eq!(lines[2]["created_at"], "2023-05-08T13:57:00.500Z");
    assert!(
        lines[3]["created_at"].as_str().unwrap() > "2024",
        "{}",
        lines[3]
    );

    // Export → import → export: the same bytes.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out.jsonl");
    let first = export(db, id);
    std::fs::write(&file, &first).unwrap();
    let copy = id_in(&stdout_of(
        recall(db).args(["import", file.to_str().unwrap()]),
    ));
    assert_ne!(copy, id);
    assert_eq!(export(db, &copy), first);
}

fn import_refusals(db: &str) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.jsonl");
    let before = conversation_count(db);
    let backwards = [
        json!({"role": "user", "content": "a", "created_at": "2024-01-02T00:00:00Z"}),
        json!({"role": "assistant", "content": "b", "created_at": "2024-01-01T23:59:59.999Z"}),
    ];
    let text: Vec<String> = backwards.iter().map(Value::to_string).collect();
    std::fs::write(&file, text.join("\n")).unwrap();
    let e = refused(recall(db).args(["import", file.to_str().unwrap()]));
    assert!(
        e.contains(
            "messages[1]: created_at 2024-01-01T23:59:59.999Z is earlier than the message \
             before it (2024-01-02T00:00:00Z)"
        ),
        "{e}"
    );
    // Nothing stored: not even the conversation the import made.
    assert_eq!(conversation_count(db), before);
    // A malformed time: skipped with a warning by default, refused with --strict.
    let bad = [
        json!({"role": "user", "content": "a", "created_at": "May 8th"}),
        json!({"role": "user", "content": "b"}),
    ];
    let text: Vec<String> = bad.iter().map(Value::to_string).collect();
    std::fs::write(&file, text.join("\n")).unwrap();
    let e = refused(recall(db).args(["import", "--strict", file.to_str().unwrap()]));
    assert!(e.contains("messages[0] has an invalid 'created_at'"), "{e}");
    let out = recall(db)
        .args(["import", file.to_str().unwrap()])
        .assert()
        .success()
        .get_output()
        .clone();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("messages[0] has an invalid 'created_at'"),
        "{stderr}"
    );
}

/// A dated message recalled into a context shows its given date in the excerpt header.
fn recalled_excerpt_shows_the_date(db: &str) {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("chat.json");
    let mut msgs = vec![
        json!({"role": "user", "content": "The wifi password is tangerine-42.",
               "created_at": "2021-03-04T05:06:07Z"}),
        json!({"role": "assistant", "content": "Saved: tangerine-42.",
               "created_at": "2021-03-04T05:06:09Z"}),
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
    std::fs::write(&input, Value::Array(msgs).to_string()).unwrap();
    let id = id_in(&stdout_of(
        recall(db).args(["import", input.to_str().unwrap()]),
    ));
    let prompt = stdout_of(recall(db).args([
        "context",
        &id,
        "--max-tokens",
        "300",
        "--recall-tokens",
        "100",
    ]));
    assert!(prompt.contains("<recalled_messages>"), "{prompt}");
    assert!(prompt.contains("[seq 1, 2021-03-04, user]"), "{prompt}");
}

fn all(db: &str) {
    appends_and_refusals(db);
    import_refusals(db);
    recalled_excerpt_shows_the_date(db);
}

#[test]
fn times_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    all(&dir.path().join("recall.db").display().to_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn times_on_postgres() {
    let Some(pg) = recall_testkit::pg::pg_database().await else {
        return;
    };
    let url = pg.url.clone();
    tokio::task::spawn_blocking(move || all(&url))
        .await
        .unwrap();
}
