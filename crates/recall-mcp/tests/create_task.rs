//! `create_task` and `get_task` through the MCP handler on a real SQLite file: the cases of
//! seed 003 (valid history, truncation at 150 and 8192 characters, invalid structures with
//! the exact warnings, empty list, non-list, None entries, unicode) and the brief's history
//! section exactly as docs/FORMATS.md §5.4.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::call;
use recall_core::context::{build_context, ContextRequest};
use recall_core::parse::{parse_conversation, ParseOptions};
use recall_core::policy::Format;
use recall_engine::{Engine, Limits};
use recall_mcp::RecallMcp;
use serde_json::{json, Value};

const HEADER: &str = "💬 CONVERSATION HISTORY (Context leading to this task):\n";

struct Fixture {
    mcp: RecallMcp,
    _dir: tempfile::TempDir,
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = dir.path().join("tasks.db").display().to_string();
    let engine = Engine::open(&url, Limits::default())
        .await
        .expect("open engine");
    Fixture {
        mcp: RecallMcp::new(engine, "default").expect("server"),
        _dir: dir,
    }
}

async fn create(mcp: &RecallMcp, history: Value) -> Value {
    call(
        mcp,
        "create_task",
        json!({"description": "Test task", "conversation_history": history}),
    )
    .await
    .expect("create_task")
}

async fn stored(mcp: &RecallMcp, created: &Value) -> Value {
    let got = call(mcp, "get_task", json!({"task_id": created["task_id"]}))
        .await
        .expect("get_task");
    assert_eq!(
        got["prompt"], created["prompt"],
        "get_task renders the same brief"
    );
    got
}

fn warnings(v: &Value) -> Vec<String> {
    serde_json::from_value(v["validation_warnings"].clone()).expect("warnings")
}

#[tokio::test]
async fn valid_history_is_stored_and_counted() {
    let f = fixture().await;
    let r = create(
        &f.mcp,
        json!([
            {"role": "user", "content": "Help me"},
            {"role": "assistant", "content": "Sure, I'll help"}
        ]),
    )
    .await;
    assert_eq!(r["has_enhanced_context"], true);
    assert_eq!(r["conversation_messages_count"], 2);
    assert_eq!(r["priority"], "P2");
    assert!(warnings(&r).is_empty());
    let s = stored(&f.mcp, &r).await;
    assert_eq!(
        s["conversation_history"],
        json!([
            {"role": "user", "content": "Help me", "truncated": false},
            {"role": "assistant", "content": "Sure, I'll help", "truncated": false}
        ])
    );
}

#[tokio::test]
async fn user_message_is_truncated_at_150_chars() {
    let f = fixture().await;
    let r = create(
        &f.mcp,
        json!([{"role": "user", "content": "x".repeat(200)}]),
    )
    .await;
    let s = stored(&f.mcp, &r).await;
    let msg = &s["conversation_history"][0];
    let content = msg["content"].as_str().expect("content");
    assert_eq!(content, format!("{}... [truncated]", "x".repeat(150)));
    // 150 + len("... [truncated]"): the seed's `<= 154` was an arithmetic slip.
    assert_eq!(content.chars().count(), 165);
    assert_eq!(msg["truncated"], true);
    assert!(r["prompt"].as_str().expect("prompt").contains(&format!(
        "{HEADER}1. 👤 USER [TRUNCATED]:\n   {content}\n\n"
    )));
}

#[tokio::test]
async fn assistant_message_is_truncated_at_8192_chars() {
    let f = fixture().await;
    // The seed's fixture: one assistant message on its own. It is stored (a brief need not
    // start on a user turn).
    let r = create(
        &f.mcp,
        json!([{"role": "assistant", "content": "x".repeat(10_000)}]),
    )
    .await;
    assert_eq!(r["conversation_messages_count"], 1);
    let s = stored(&f.mcp, &r).await;
    let msg = &s["conversation_history"][0];
    let content = msg["content"].as_str().expect("content");
    assert_eq!(
        content,
        format!("{}... [truncated at 8192 chars]", "x".repeat(8192))
    );
    assert_eq!(content.chars().count(), 8221);
    assert_eq!(msg["truncated"], true);
    assert!(r["prompt"].as_str().expect("prompt").contains(&format!(
        "{HEADER}1. 🤖 ASSISTANT [TRUNCATED]:\n   {content}\n\n"
    )));
}

#[tokio::test]
async fn invalid_structures_are_skipped_with_the_seed_warnings() {
    let f = fixture().await;
    let r = create(
        &f.mcp,
        json!([
            {"role": "user", "content": "Valid message"},
            {"invalid": "structure"},
            {"role": "user", "content": ""},
            {"role": "invalid_role", "content": "test"},
            "a string",
            {"role": "assistant", "content": 42},
            {"role": "user"}
        ]),
    )
    .await;
    assert_eq!(
        warnings(&r),
        vec![
            "conversation_history[1] missing 'role' or 'content', skipping",
            "conversation_history[2] has empty/invalid content, skipping",
            "conversation_history[3] has invalid role 'invalid_role', skipping",
            "conversation_history[4] is not a dict, skipping",
            "conversation_history[5] has empty/invalid content, skipping",
            "conversation_history[6] missing 'role' or 'content', skipping",
        ]
    );
    assert_eq!(r["conversation_messages_count"], 1);
    let s = stored(&f.mcp, &r).await;
    assert_eq!(s["validation_warnings"], r["validation_warnings"]);
    assert_eq!(s["conversation_history"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn empty_list_is_ignored_with_a_warning() {
    let f = fixture().await;
    let r = create(&f.mcp, json!([])).await;
    assert_eq!(
        warnings(&r),
        vec!["conversation_history is empty, ignoring"]
    );
    assert_eq!(r["has_enhanced_context"], false);
    assert_eq!(r["conversation_messages_count"], 0);
    assert!(!r["prompt"].as_str().expect("prompt").contains(HEADER));
}

#[tokio::test]
async fn non_list_is_ignored_with_a_warning() {
    let f = fixture().await;
    for bad in [
        json!("a string"),
        json!({"role": "user", "content": "hi"}),
        json!(7),
    ] {
        let r = create(&f.mcp, bad.clone()).await;
        assert_eq!(
            warnings(&r),
            vec!["conversation_history must be a list, ignoring invalid value"],
            "{bad}"
        );
        assert_eq!(r["has_enhanced_context"], false);
    }
    // null is "not given": no warning (the seed checks `is not None` first).
    let r = create(&f.mcp, Value::Null).await;
    assert!(warnings(&r).is_empty());
}

#[tokio::test]
async fn none_entries_are_skipped() {
    let f = fixture().await;
    let r = create(
        &f.mcp,
        json!([null, {"role": "user", "content": "Between nulls"}, null]),
    )
    .await;
    assert_eq!(
        warnings(&r),
        vec![
            "conversation_history[0] is not a dict, skipping",
            "conversation_history[2] is not a dict, skipping",
        ]
    );
    assert_eq!(r["conversation_messages_count"], 1);
    assert!(r["prompt"]
        .as_str()
        .expect("prompt")
        .contains(&format!("{HEADER}1. 👤 USER:\n   Between nulls\n\n")));
}

#[tokio::test]
async fn all_invalid_entries_store_no_history() {
    let f = fixture().await;
    let r = create(&f.mcp, json!([null, {"role": "user", "content": "  "}])).await;
    assert_eq!(r["has_enhanced_context"], false);
    assert_eq!(r["conversation_messages_count"], 0);
    assert_eq!(warnings(&r).len(), 2);
}

#[tokio::test]
async fn unicode_is_preserved_and_capped_by_characters() {
    let f = fixture().await;
    let cjk = "修".repeat(151);
    let r = create(
        &f.mcp,
        json!([
            {"role": "user", "content": "修复认证错误 🐛🔐 — naïve café"},
            {"role": "assistant", "content": "好的 ✅"},
            {"role": "user", "content": cjk}
        ]),
    )
    .await;
    let s = stored(&f.mcp, &r).await;
    assert_eq!(
        s["conversation_history"][0]["content"],
        "修复认证错误 🐛🔐 — naïve café"
    );
    assert_eq!(
        s["conversation_history"][2]["content"],
        format!("{}... [truncated]", "修".repeat(150))
    );
    assert!(r["prompt"].as_str().expect("prompt").contains(&format!(
        "{HEADER}1. 👤 USER:\n   修复认证错误 🐛🔐 — naïve café\n\n\
         2. 🤖 ASSISTANT:\n   好的 ✅\n\n\
         3. 👤 USER [TRUNCATED]:\n   {}... [truncated]\n\n",
        "修".repeat(150)
    )));
}

#[tokio::test]
async fn brief_history_section_is_the_task_format() {
    let f = fixture().await;
    let history = json!([
        {"role": "user", "content": "Can you help me fix the authentication bug?"},
        {"role": "assistant", "content": format!("I'll investigate the auth system...{}", "y".repeat(9000))},
        {"role": "user", "content": "It's specifically in the JWT validation\nof refresh tokens."},
        {"role": "system", "content": "Be careful with secrets."}
    ]);
    let r = call(
        &f.mcp,
        "create_task",
        json!({
            "description": "Investigate JWT refresh",
            "priority": "P0",
            "background_context": "Users report 401 errors during token refresh.",
            "expected_deliverables": ["Root cause analysis"],
            "success_criteria": ["Refresh works"],
            "constraints": ["No schema change"],
            "relevant_files": ["src/auth/jwt.rs"],
            "conversation_history": history
        }),
    )
    .await
    .expect("create_task");
    let long = format!("I'll investigate the auth system...{}", "y".repeat(9000));
    let capped: String = long.chars().take(8192).collect();
    // docs/FORMATS.md §5.4, byte for byte: system first (never capped), numbered items, every line
    // indented by three spaces, an empty line after each.
    let section = format!(
        "{HEADER}1. ⚙️ SYSTEM:\n   Be careful with secrets.\n\n\
         2. 👤 USER:\n   Can you help me fix the authentication bug?\n\n\
         3. 🤖 ASSISTANT [TRUNCATED]:\n   {capped}... [truncated at 8192 chars]\n\n\
         4. 👤 USER:\n   It's specifically in the JWT validation\n   of refresh tokens.\n\n"
    );
    let rule = "=".repeat(80);
    assert_eq!(
        r["prompt"],
        format!(
            "📝 YOUR MISSION:\nInvestigate JWT refresh\n\n⚡ PRIORITY: P0\n\n\
             {rule}\n🎯 TASK CONTEXT (Provided by task creator)\n{rule}\n\n\
             📋 BACKGROUND CONTEXT:\nUsers report 401 errors during token refresh.\n\n\
             📦 EXPECTED DELIVERABLES:\n- Root cause analysis\n\n\
             ✅ SUCCESS CRITERIA:\n- Refresh works\n\n\
             🚧 CONSTRAINTS:\n- No schema change\n\n\
             📁 RELEVANT FILES:\n- src/auth/jwt.rs\n\n\
             {section}{rule}\n"
        )
    );
    // The same section `recall render --format task` gives for this history.
    let conv = parse_conversation(&history.to_string(), &ParseOptions::default()).expect("parse");
    let rendered = build_context(&conv, &ContextRequest::new(Format::Task)).expect("render");
    assert_eq!(rendered.prompt.to_text(), section);
}

#[tokio::test]
async fn bad_arguments_are_tool_errors() {
    let f = fixture().await;
    let e = call(&f.mcp, "create_task", json!({"priority": "P1"}))
        .await
        .unwrap_err();
    assert!(e.contains("missing field `description`"), "{e}");
    let e = call(
        &f.mcp,
        "create_task",
        json!({"description": "d", "priority": "P7"}),
    )
    .await
    .unwrap_err();
    assert!(e.starts_with("invalid arguments for create_task"), "{e}");
    assert!(e.contains("P7"), "{e}");
    let e = call(&f.mcp, "create_task", json!({"description": " \t"}))
        .await
        .unwrap_err();
    assert_eq!(e, "description is empty: say what the sub-agent must do");
    let e = call(
        &f.mcp,
        "create_task",
        json!({"description": "d", "expected_deliverables": "not a list"}),
    )
    .await
    .unwrap_err();
    assert!(
        e.contains("expected_deliverables") || e.contains("sequence"),
        "{e}"
    );
    let e = call(&f.mcp, "get_task", json!({"task_id": "0000"}))
        .await
        .unwrap_err();
    assert_eq!(e, "task '0000' not found");
}

#[tokio::test]
async fn oversized_history_is_rejected_and_nothing_stored() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = dir.path().join("t.db").display().to_string();
    let engine = Engine::open(
        &url,
        Limits {
            max_message_bytes: 1000,
            max_messages_per_append: 3,
            ..Limits::default()
        },
    )
    .await
    .expect("open");
    let mcp = RecallMcp::new(engine, "default").expect("server");
    let e = call(
        &mcp,
        "create_task",
        json!({"description": "d", "conversation_history": [
            {"role": "user", "content": "a"}, {"role": "user", "content": "b"},
            {"role": "user", "content": "c"}, {"role": "user", "content": "d"}]}),
    )
    .await
    .unwrap_err();
    assert_eq!(e, "conversation_history has 4 entries, over the limit of 3");
    let e = call(
        &mcp,
        "create_task",
        json!({"description": "d", "conversation_history": [
            {"role": "system", "content": "s".repeat(2000)}]}),
    )
    .await
    .unwrap_err();
    assert!(
        e.starts_with("conversation_history[0] is 2000 bytes"),
        "{e}"
    );
}

#[tokio::test]
async fn unknown_tool_is_a_protocol_error() {
    let f = fixture().await;
    let e = f
        .mcp
        .call("drop_tables", None)
        .await
        .expect_err("protocol error");
    assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS);
    assert!(e.message.contains("drop_tables"));
}
