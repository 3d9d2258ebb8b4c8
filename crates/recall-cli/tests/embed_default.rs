//! Recall ranks by meaning by default (issue 37 item 3): with the model `scripts/models.sh
//! fetch` installs in the cache and nothing set, `recall context` fuses the embedder's ranking
//! (`stats.recalled.ranking: "hybrid"`); `RECALL_EMBED=off` turns it off, and without the
//! model recall is lexical. The model is loaded only when a context recalls: a context
//! without recall succeeds with a broken model. Outside CI a missing model skips the tests
//! that need it; in CI (`CI=true`) they fail.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// The installed all-MiniLM-L6-v2, where `scripts/models.sh fetch` puts it.
fn installed_model() -> Option<PathBuf> {
    let dir = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?
        .join("recall/minilm");
    if dir.join("model.safetensors").is_file() {
        return Some(dir);
    }
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    assert!(!ci, "all-MiniLM-L6-v2 is not installed and CI needs it");
    recall_testkit::skipped("all-MiniLM-L6-v2 is not installed (bash scripts/models.sh fetch)");
    None
}

/// A cache folder whose `recall/minilm` is `model` (a link), or holds nothing.
fn cache_with(root: &Path, model: Option<&Path>) -> PathBuf {
    let cache = root.join(if model.is_some() {
        "cache"
    } else {
        "empty-cache"
    });
    std::fs::create_dir_all(cache.join("recall")).unwrap();
    if let Some(m) = model {
        std::os::unix::fs::symlink(m, cache.join("recall/minilm")).unwrap();
    }
    cache
}

fn recall(db: &Path, cache: &Path) -> Command {
    let mut c = Command::cargo_bin("recall").unwrap();
    c.env("RECALL_DB", db)
        .env("XDG_CACHE_HOME", cache)
        .env_remove("RECALL_EMBED")
        .env_remove("RECALL_EMBED_MODEL")
        .env_remove("RECALL_EMBED_URL")
        .env_remove("RECALL_EMBED_MODEL_NAME");
    c
}

/// A conversation of 40 messages whose first states a fact in words the question does not
/// use.
fn conversation(db: &Path, cache: &Path) -> String {
    let out = recall(db, cache)
        .args(["conversations", "new"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let id = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let mut lines = vec![
        r#"{"role":"user","content":"We finally named the puppy Biscuit."}"#.to_string(),
        r#"{"role":"assistant","content":"Lovely name for a puppy!"}"#.to_string(),
    ];
    for i in 0..19 {
        lines.push(format!(
            r#"{{"role":"user","content":"Step {i} of the deployment checklist is done."}}"#
        ));
        lines.push(format!(
            r#"{{"role":"assistant","content":"Good, step {i} is ticked off."}}"#
        ));
    }
    let file = db.with_extension("jsonl");
    std::fs::write(&file, lines.join("\n")).unwrap();
    let out = recall(db, cache)
        .args(["import", file.to_str().unwrap(), "--conversation", &id])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    id
}

/// `recall context` with recall of `id`; the `stats.recalled` object.
fn recalled(mut cmd: Command, id: &str) -> serde_json::Value {
    let out = cmd
        .args([
            "context",
            id,
            "--max-tokens",
            "300",
            "--recall-tokens",
            "100",
        ])
        .args(["--query", "What is my pet called?", "--stats"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    let line = stderr
        .lines()
        .find_map(|l| l.strip_prefix("stats: "))
        .unwrap_or_else(|| panic!("no stats line: {stderr}"));
    let stats: serde_json::Value = serde_json::from_str(line).unwrap();
    stats["recalled"].clone()
}

#[test]
fn the_installed_model_is_used_with_nothing_set_and_off_turns_it_off() {
    let Some(model) = installed_model() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let cache = cache_with(dir.path(), Some(&model));
    let id = conversation(&db, &cache);

    let r = recalled(recall(&db, &cache), &id);
    assert_eq!(r["ranking"], "hybrid", "{r}");
    assert_eq!(r["complete"], true, "{r}");
    // Meaning finds the puppy: no word of the question is in the message.
    let seqs: Vec<i64> = r["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["seq"].as_i64().unwrap())
        .collect();
    assert!(seqs.contains(&1), "{r}");

    let mut off = recall(&db, &cache);
    off.env("RECALL_EMBED", "off");
    let r = recalled(off, &id);
    assert_eq!(r["ranking"], "lexical", "{r}");

    let mut bad = recall(&db, &cache);
    bad.env("RECALL_EMBED", "sometimes");
    let out = bad.args(["context", &id]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("RECALL_EMBED"));
}

#[test]
fn without_the_model_recall_is_lexical() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let cache = cache_with(dir.path(), None);
    let id = conversation(&db, &cache);
    let r = recalled(recall(&db, &cache), &id);
    assert_eq!(r["ranking"], "lexical", "{r}");
}

#[test]
fn the_model_is_loaded_only_when_a_context_recalls() {
    // A model folder whose weights are not a model: loading it fails.
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("model.safetensors"), b"not weights").unwrap();
    std::fs::write(broken.join("tokenizer.json"), b"{}").unwrap();
    std::fs::write(
        broken.join("config.json"),
        br#"{"vocab_size":30522,"hidden_size":384,"num_hidden_layers":6,"num_attention_heads":12,"intermediate_size":1536,"hidden_act":"gelu","hidden_dropout_prob":0.1,"max_position_embeddings":512,"type_vocab_size":2,"initializer_range":0.02,"layer_norm_eps":1e-12,"pad_token_id":0}"#,
    )
    .unwrap();
    let db = dir.path().join("r.db");
    let cache = cache_with(dir.path(), Some(&broken));
    let id = conversation(&db, &cache);
    // Appends and a context without recall never load it.
    let out = recall(&db, &cache)
        .args(["append", &id, "--role", "user", "--content", "hello"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let out = recall(&db, &cache)
        .args(["context", &id, "--max-tokens", "300"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // A context that recalls loads it, and says what is wrong with it.
    let out = recall(&db, &cache)
        .args([
            "context",
            &id,
            "--max-tokens",
            "300",
            "--recall-tokens",
            "100",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("model.safetensors") || stderr.contains("tokenizer.json"),
        "{stderr}"
    );
}
