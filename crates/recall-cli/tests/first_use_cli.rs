//! What a new user types first, and gets wrong: a mistyped `--db`, `--db` before the command,
//! a fork past the end. Each is a clear error with exit status 2 and nothing created, or it
//! simply works.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;
use predicates::prelude::*;

fn recall() -> Command {
    let mut c = Command::cargo_bin("recall").expect("binary built");
    c.env_remove("RECALL_DB")
        .env_remove("RECALL_TENANT")
        .env("RECALL_EMBED", "off");
    c
}

/// A new conversation in `db` (`--db` before the command); its id.
fn new_conversation(db: &std::path::Path) -> String {
    let out = recall()
        .arg("--db")
        .arg(db)
        .args(["conversations", "new"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).unwrap().trim().to_string()
}

/// A `--db` in a folder that does not exist is refused, and neither the folder nor a database
/// is created; the same file in a folder that exists is created.
#[test]
fn a_db_in_a_missing_folder_is_refused_and_nothing_is_created() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nonexistent-dir");
    let db = missing.join("x.db");
    recall()
        .args(["conversations", "list", "--db"])
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "the folder {} does not exist",
            missing.display()
        )));
    assert!(!missing.exists(), "the folder was created");

    // The same through RECALL_DB, which the MCP example sets.
    recall()
        .env("RECALL_DB", &db)
        .args(["conversations", "new"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("does not exist"));
    assert!(!missing.exists(), "the folder was created");

    // A new file in a folder that exists is a new database.
    let here = dir.path().join("new.db");
    recall()
        .args(["conversations", "new", "--db"])
        .arg(&here)
        .assert()
        .success();
    assert!(here.exists());
}

/// With nothing set, the default database's folder is made on first use (it is the one place
/// recall chose itself).
#[test]
fn the_default_database_creates_its_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    recall()
        .env("HOME", dir.path())
        .env("XDG_DATA_HOME", &data)
        .args(["conversations", "new", "--title", "first"])
        .assert()
        .success();
    assert!(data.join("recall").join("recall.db").exists());
}

/// `--db` is one global option: before the command, after it, or as RECALL_DB, and the usage
/// line does not make `--durability` look required.
#[test]
fn db_goes_before_or_after_the_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("r.db");
    let id = new_conversation(&db);
    recall()
        .args(["conversations", "list", "--db"])
        .arg(&db)
        .assert()
        .success()
        .stdout(predicate::str::contains(&id));
    recall()
        .arg("--durability")
        .arg("full")
        .arg("--db")
        .arg(&db)
        .args(["conversations", "list"])
        .assert()
        .success()
        .stdout(predicate::str::contains(&id));
    // A missing value names --db, not a "similar argument".
    recall()
        .args(["conversations", "list", "--db"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--db").and(predicate::str::contains("similar").not()));
}

/// A fork point past the conversation's end is bad input (exit 2, as the README promises),
/// and no fork is made.
#[test]
fn a_fork_past_the_end_exits_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("f.db");
    let id = new_conversation(&db);
    recall()
        .arg("--db")
        .arg(&db)
        .args(["append", &id, "--role", "user", "--content", "hello"])
        .assert()
        .success();
    recall()
        .arg("--db")
        .arg(&db)
        .args(["fork", &id, "--at", "99"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("99"));
    let list = recall()
        .arg("--db")
        .arg(&db)
        .args(["conversations", "list", "--json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert_eq!(
        String::from_utf8(list).unwrap().lines().count(),
        1,
        "no fork was made"
    );
}
