//! Size limits of the engine's use cases: a context's prompt under `max_context_bytes`
//! (`Engine::context_within`) and imports that hold nothing valid.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use recall_core::context::ContextRequest;
use recall_core::policy::{Format, PolicyOverrides, TrimMode};
use recall_engine::ConversationRef;
use recall_engine::{Engine, EngineError, ImportTarget, Limits};
use serde_json::{json, Value};

const T: &str = "default";

async fn engine(dir: &tempfile::TempDir) -> Engine {
    let path = dir.path().join("limits.db");
    Engine::open(path.to_str().expect("utf-8 path"), Limits::default())
        .await
        .expect("open sqlite")
}

/// Turns of text of varied sizes, and tool calls whose large inputs the text formats do not
/// print (many measured characters, few rendered bytes).
fn messages() -> Vec<Value> {
    let mut out = Vec::new();
    for i in 0..24 {
        let size = [40, 900, 3000, 150][i % 4];
        out.push(json!({"role": "user", "content": format!("q{i} {}", "u".repeat(size))}));
        if i % 5 == 2 {
            out.push(json!({"role": "assistant", "content": [
                {"type": "text", "text": format!("calling {i}")},
                {"type": "tool_use", "id": format!("t{i}"), "name": "lookup",
                 "input": {"blob": "z".repeat(6000)}}
            ]}));
            out.push(json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": format!("t{i}"), "content": "ok"}
            ]}));
        }
        out.push(json!({"role": "assistant", "content": format!("a{i} {}", "é".repeat(size / 2))}));
    }
    out.push(json!({"role": "user", "content": "and now?"}));
    out
}

fn requests() -> Vec<ContextRequest> {
    let with = |format: Format, overrides: PolicyOverrides| ContextRequest {
        format: Some(format),
        overrides,
        current: None,
        escape: true,
        query: None,
        summary: None,
    };
    vec![
        with(Format::Transcript, PolicyOverrides::default()),
        with(
            Format::Transcript,
            PolicyOverrides {
                max_tokens: Some(100_000_000.into()),
                ..PolicyOverrides::default()
            },
        ),
        with(
            Format::Bracket,
            PolicyOverrides {
                max_turns: Some(4.into()),
                ..PolicyOverrides::default()
            },
        ),
        with(
            Format::Transcript,
            PolicyOverrides {
                max_chars: Some(9000.into()),
                ..PolicyOverrides::default()
            },
        ),
        with(Format::Anthropic, PolicyOverrides::default()),
        with(Format::Openai, PolicyOverrides::default()),
        with(Format::Xml, PolicyOverrides::default()),
        with(Format::Task, PolicyOverrides::default()),
        with(
            Format::Transcript,
            PolicyOverrides {
                max_tokens: Some(20_000.into()),
                trim: Some(TrimMode::Stable),
                ..PolicyOverrides::default()
            },
        ),
    ]
}

/// Under any limit, a context is either exactly the unlimited one (when its prompt fits) or
/// refused naming the limit (when it does not): the bounded read never changes an answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_refuses_or_changes_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let e = engine(&dir).await;
    let id = e
        .create_conversation(T, Default::default())
        .await
        .expect("create")
        .id;
    e.append_messages(ConversationRef::new(T, &id), messages())
        .await
        .expect("append");
    for req in requests() {
        let full = e
            .context(ConversationRef::new(T, &id), &req)
            .await
            .expect("unlimited context");
        let size = recall_engine::prompt_bytes(&full.prompt);
        let mut limits = vec![1, 100, 2000, 5000, 9000, 20_000, 60_000, 200_000, 1 << 30];
        limits.extend([size.saturating_sub(1), size, size + 1]);
        for limit in limits {
            let got = e
                .context_within(ConversationRef::new(T, &id), &req, Some(limit))
                .await;
            match got {
                Ok(out) => {
                    assert!(
                        size <= limit,
                        "{req:?}: {size} bytes passed a limit of {limit}"
                    );
                    assert_eq!(out, full, "{req:?} under a limit of {limit}");
                }
                Err(EngineError::ContextTooLarge {
                    size: seen,
                    at_least,
                    limit: l,
                }) => {
                    assert!(size > limit, "{req:?}: {size} bytes refused at {limit}");
                    assert_eq!(l, limit);
                    if at_least {
                        assert!(seen > limit && seen <= size, "{seen} of {size} at {limit}");
                    } else {
                        assert_eq!(seen, size);
                    }
                }
                Err(other) => panic!("{req:?} at {limit}: {other}"),
            }
        }
    }
}

/// The refusal names the limit and how to ask for less; it is bad input (a 4xx, exit 2).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_refusal_names_the_limit() {
    let dir = tempfile::tempdir().expect("temp dir");
    let e = engine(&dir).await;
    let id = e
        .create_conversation(T, Default::default())
        .await
        .expect("create")
        .id;
    let big: Vec<Value> = (0..40)
        .map(|i| {
            json!({"role": if i % 2 == 0 { "user" } else { "assistant" },
                   "content": "w".repeat(10_000)})
        })
        .collect();
    e.append_messages(ConversationRef::new(T, &id), big)
        .await
        .expect("append");
    let req = ContextRequest {
        overrides: PolicyOverrides {
            max_tokens: Some(100_000_000.into()),
            ..PolicyOverrides::default()
        },
        ..ContextRequest::new(Format::Transcript)
    };
    let err = e
        .context_within(ConversationRef::new(T, &id), &req, Some(50_000))
        .await
        .expect_err("over the limit");
    assert!(err.is_bad_input());
    let text = err.to_string();
    assert!(text.contains("over the limit of 50000 bytes"), "{text}");
    assert!(text.contains("max_context_bytes"), "{text}");
    // Refused from the guarded read: what was built is about the limit, not the 400 kB.
    match err {
        EngineError::ContextTooLarge { size, at_least, .. } => {
            assert!(at_least, "refused from the bounded read");
            assert!(size < 100_000, "built {size} bytes to refuse 50000");
        }
        other => panic!("{other}"),
    }
    // Without a limit (the CLI's `recall context`) the whole prompt comes back.
    let out = e
        .context(ConversationRef::new(T, &id), &req)
        .await
        .expect("unlimited");
    assert!(recall_engine::prompt_bytes(&out.prompt) > 400_000);
}

/// An import whose every message is invalid stores nothing, not even an empty conversation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_of_nothing_valid_stores_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let e = engine(&dir).await;
    let input = "{\"role\":\"user\",\"content\":\"\"}\n{\"role\":\"wizard\",\"content\":\"x\"}\n";
    let err = e
        .import(
            T,
            ImportTarget::New { title: None },
            input,
            false,
            &|_, _| {},
        )
        .await
        .expect_err("nothing valid");
    assert!(err.is_bad_input(), "{err}");
    assert!(err.to_string().contains("nothing to import"), "{err}");
    assert!(e
        .list_conversations(T, None, 10)
        .await
        .expect("list")
        .is_empty());
    // Into an existing conversation: refused the same way, the conversation unchanged.
    let id = e
        .create_conversation(T, Default::default())
        .await
        .expect("create")
        .id;
    let err = e
        .import(
            T,
            ImportTarget::Existing(id.clone()),
            input,
            false,
            &|_, _| {},
        )
        .await
        .expect_err("nothing valid");
    assert!(err.is_bad_input(), "{err}");
    assert_eq!(
        e.get_conversation(ConversationRef::new(T, &id))
            .await
            .expect("get")
            .message_count,
        0
    );
}
