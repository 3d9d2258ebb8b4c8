//! The chat turn against fake Anthropic and OpenAI servers on loopback HTTP: what is stored,
//! what is sent, and what survives a broken or cancelled stream.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use recall_core::message::{Content, Role};
use recall_engine::llm::{
    AnthropicBackend, Backend, BackendErrorKind, BackendEvent, HttpConfig, OpenAiBackend,
    RetryPolicy,
};
use recall_engine::store::{MessageStatus, NewConversation, StoredMessage};
use recall_engine::{ChatTurn, ConversationRef, Engine, EngineError, Limits, TurnEvent};
use recall_testkit::{anthropic, openai, FakeServer, Part, Reply};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

const T: &str = "default";

async fn engine(dir: &tempfile::TempDir) -> Engine {
    let path = dir.path().join("chat.db");
    Engine::open(path.to_str().expect("utf-8 path"), Limits::default())
        .await
        .expect("open sqlite")
}

fn anthropic_backend(server: &FakeServer) -> AnthropicBackend {
    let mut c = HttpConfig::anthropic().with_key("sk-ant-test-key");
    c.base_url = server.base_url();
    c.retry = RetryPolicy::none();
    AnthropicBackend::new(c).expect("backend")
}

async fn new_conv(e: &Engine, policy: Option<Value>) -> String {
    e.create_conversation(
        T,
        NewConversation {
            system_prompt: Some("Be brief.".into()),
            policy: policy.map(|p| serde_json::from_value(p).expect("a policy")),
            ..NewConversation::default()
        },
    )
    .await
    .expect("create")
    .id
}

async fn stored(e: &Engine, id: &str) -> Vec<StoredMessage> {
    e.store().messages(T, id, 0, 1000).await.expect("messages")
}

fn text(m: &StoredMessage) -> String {
    match &m.message.content {
        Content::Text(s) => s.clone(),
        Content::Blocks(b) => format!("{b:?}"),
    }
}

/// The texts of the messages of an Anthropic request body.
fn sent_texts(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            let t = match &m["content"] {
                Value::String(s) => s.clone(),
                Value::Array(b) => b
                    .iter()
                    .filter_map(|b| b["text"].as_str())
                    .collect::<Vec<_>>()
                    .join(""),
                _ => String::new(),
            };
            (m["role"].as_str().unwrap_or("").to_string(), t)
        })
        .collect()
}

#[tokio::test]
async fn a_turn_stores_both_messages_and_sends_the_history() {
    let dir = tempfile::tempdir().expect("tempdir");
    let e = engine(&dir).await;
    let id = new_conv(&e, None).await;
    let server = FakeServer::scripted(vec![
        Reply::sse(anthropic::text_reply(&["We use ", "Postgres 16."])),
        Reply::sse(anthropic::text_reply(&["You said Postgres 16."])),
    ])
    .await;
    let backend = anthropic_backend(&server);

    let mut events = Vec::new();
    let first = e
        .chat_turn(
            ConversationRef::new(T, &id),
            &backend,
            ChatTurn::text("Our database is Postgres 16, by the way."),
            CancellationToken::new(),
            |ev| events.push(ev),
        )
        .await
        .expect("turn");
    assert_eq!(first.status, MessageStatus::Complete);
    assert_eq!(first.text(), "We use Postgres 16.");
    assert!(first.error.is_none());
    assert_eq!(first.usage.output_tokens, Some(15));
    assert!(matches!(events[0], TurnEvent::UserStored { seq } if seq == first.user_seq));
    assert!(matches!(events[1], TurnEvent::ContextBuilt { .. }));
    assert!(matches!(
        events.last(),
        Some(TurnEvent::Backend(BackendEvent::Done { .. }))
    ));

    let second = e
        .chat_turn(
            ConversationRef::new(T, &id),
            &backend,
            ChatTurn::text("Which database do we use?"),
            CancellationToken::new(),
            |_| {},
        )
        .await
        .expect("turn 2");
    assert_eq!(second.text(), "You said Postgres 16.");

    // The second request carried the first exchange and the system prompt.
    let reqs = server.requests();
    let body = reqs[1].json();
    assert_eq!(body["system"], "Be brief.");
    assert_eq!(
        sent_texts(&body),
        vec![
            (
                "user".into(),
                "Our database is Postgres 16, by the way.".into()
            ),
            ("assistant".into(), "We use Postgres 16.".into()),
            ("user".into(), "Which database do we use?".into()),
        ]
    );

    let msgs = stored(&e, &id).await;
    assert_eq!(msgs.len(), 4);
    assert!(msgs.iter().all(|m| m.status == MessageStatus::Complete));
    let meta = msgs[1].message.metadata.as_ref().expect("reply metadata");
    assert_eq!(meta["backend"], "anthropic");
    assert_eq!(meta["usage"]["output_tokens"], 15);
    assert_eq!(meta["stop_reason"], "end_turn");
}

#[tokio::test]
async fn a_dropped_stream_keeps_the_user_turn_and_a_partial_reply() {
    let dir = tempfile::tempdir().expect("tempdir");
    let e = engine(&dir).await;
    let id = new_conv(&e, None).await;
    let server = FakeServer::scripted(vec![
        Reply::sse(vec![
            anthropic::message_start("msg_1", 10),
            anthropic::block_start(0, json!({"type":"text","text":""})),
            anthropic::text_delta(0, "The answer is "),
            // Let the delta reach the client before the connection breaks.
            Part::Pause(Duration::from_millis(200)),
            Part::Drop,
        ]),
        Reply::sse(anthropic::text_reply(&["ok"])),
    ])
    .await;
    let backend = anthropic_backend(&server);
    let out = e
        .chat_turn(
            ConversationRef::new(T, &id),
            &backend,
            ChatTurn::text("What is the answer?"),
            CancellationToken::new(),
            |_| {},
        )
        .await
        .expect("turn");
    assert_eq!(out.status, MessageStatus::Partial);
    let err = out.error.expect("error");
    assert!(err.output_started);
    let msgs = stored(&e, &id).await;
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    assert_eq!(text(&msgs[0]), "What is the answer?");
    assert_eq!(text(&msgs[1]), "The answer is ");
    assert_eq!(msgs[1].status, MessageStatus::Partial);
    assert!(msgs[1].message.metadata.as_ref().expect("meta")["error"]
        .as_str()
        .expect("error text")
        .contains("dropped"));

    // The partial reply is history for the next turn.
    e.chat_turn(
        ConversationRef::new(T, &id),
        &backend,
        ChatTurn::text("Go on."),
        CancellationToken::new(),
        |_| {},
    )
    .await
    .expect("turn 2");
    let body = server.requests()[1].json();
    assert_eq!(
        sent_texts(&body)[1],
        ("assistant".into(), "The answer is ".into())
    );
}

#[tokio::test]
async fn an_auth_failure_stores_the_user_turn_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let e = engine(&dir).await;
    let id = new_conv(&e, None).await;
    let server = FakeServer::scripted(vec![Reply::json(
        401,
        json!({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}),
    )])
    .await;
    let backend = anthropic_backend(&server);
    let out = e
        .chat_turn(
            ConversationRef::new(T, &id),
            &backend,
            ChatTurn::text("hello"),
            CancellationToken::new(),
            |_| {},
        )
        .await
        .expect("turn");
    assert!(out.reply_seq.is_none());
    let err = out.error.expect("error");
    assert!(matches!(err.kind, BackendErrorKind::Auth { .. }), "{err:?}");
    assert!(!err.to_string().contains("sk-ant-test-key"));
    let msgs = stored(&e, &id).await;
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].message.role, Role::User);
}

#[tokio::test]
async fn cancelling_saves_what_arrived_as_partial() {
    let dir = tempfile::tempdir().expect("tempdir");
    let e = engine(&dir).await;
    let id = new_conv(&e, None).await;
    let server = FakeServer::scripted(vec![Reply::sse(vec![
        anthropic::message_start("msg_1", 10),
        anthropic::block_start(0, json!({"type":"text","text":""})),
        anthropic::text_delta(0, "Partial words"),
        Part::Pause(Duration::from_secs(30)),
        anthropic::text_delta(0, " never sent"),
    ])])
    .await;
    let backend = anthropic_backend(&server);
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let out = tokio::time::timeout(
        Duration::from_secs(20),
        e.chat_turn(
            ConversationRef::new(T, &id),
            &backend,
            ChatTurn::text("Tell me a long story"),
            cancel,
            move |ev| {
                if matches!(ev, TurnEvent::Backend(BackendEvent::TextDelta(_))) {
                    trigger.cancel();
                }
            },
        ),
    )
    .await
    .expect("cancel ends the turn promptly")
    .expect("turn");
    assert_eq!(out.status, MessageStatus::Partial);
    assert!(matches!(
        out.error.as_ref().map(|e| &e.kind),
        Some(BackendErrorKind::Cancelled)
    ));
    let msgs = stored(&e, &id).await;
    assert_eq!(text(&msgs[1]), "Partial words");
    assert_eq!(msgs[1].status, MessageStatus::Partial);
}

#[tokio::test]
async fn a_streaming_reply_is_saved_as_partial_before_it_ends() {
    let dir = tempfile::tempdir().expect("tempdir");
    let e = engine(&dir).await;
    let id = new_conv(&e, None).await;
    let server = FakeServer::scripted(vec![Reply::sse(vec![
        anthropic::message_start("msg_1", 10),
        anthropic::block_start(0, json!({"type":"text","text":""})),
        anthropic::text_delta(0, "First half."),
        Part::Pause(Duration::from_millis(1500)),
        anthropic::text_delta(0, " Second half."),
        anthropic::block_stop(0),
        anthropic::message_delta("end_turn", 5),
        anthropic::message_stop(),
    ])])
    .await;
    let backend = Arc::new(anthropic_backend(&server));
    let (e2, id2, b2) = (e.clone(), id.clone(), backend.clone());
    let turn = tokio::spawn(async move {
        e2.chat_turn(
            ConversationRef::new(T, &id2),
            b2.as_ref(),
            ChatTurn::text("Two halves, please"),
            CancellationToken::new(),
            |_| {},
        )
        .await
    });
    // While the server pauses, a reader (another process, after a crash) sees the partial.
    let mut seen = None;
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let msgs = stored(&e, &id).await;
        if msgs.len() == 2 {
            seen = Some((text(&msgs[1]), msgs[1].status));
            break;
        }
    }
    assert_eq!(
        seen,
        Some(("First half.".to_string(), MessageStatus::Partial))
    );
    let out = turn.await.expect("join").expect("turn");
    assert_eq!(out.status, MessageStatus::Complete);
    let msgs = stored(&e, &id).await;
    assert_eq!(msgs.len(), 2, "updated in place, not appended twice");
    assert_eq!(text(&msgs[1]), "First half. Second half.");
    assert_eq!(msgs[1].status, MessageStatus::Complete);
}

#[tokio::test]
async fn bad_turns_change_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let e = engine(&dir).await;
    let id = new_conv(&e, None).await;
    let server = FakeServer::scripted(vec![]).await;
    let backend = anthropic_backend(&server);
    for content in ["", "   \n\t "] {
        let err = e
            .chat_turn(
                ConversationRef::new(T, &id),
                &backend,
                ChatTurn::text(content),
                CancellationToken::new(),
                |_| {},
            )
            .await
            .expect_err("empty message");
        assert!(err.is_bad_input(), "{err}");
        assert!(err.to_string().contains("empty"), "{err}");
    }
    let err = e
        .chat_turn(
            ConversationRef::new(T, "no-such-conversation"),
            &backend,
            ChatTurn::text("hi"),
            CancellationToken::new(),
            |_| {},
        )
        .await
        .expect_err("unknown id");
    assert!(err.is_not_found(), "{err}");
    // Another tenant cannot chat in this conversation.
    let err = e
        .chat_turn(
            ConversationRef::new("other-tenant", &id),
            &backend,
            ChatTurn::text("hi"),
            CancellationToken::new(),
            |_| {},
        )
        .await
        .expect_err("other tenant");
    assert!(err.is_not_found(), "{err}");
    assert!(stored(&e, &id).await.is_empty());
    assert!(server.requests().is_empty(), "nothing reached the backend");
}

#[tokio::test]
async fn a_repeated_client_id_is_a_conflict_and_sends_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let e = engine(&dir).await;
    let id = new_conv(&e, None).await;
    let server = FakeServer::scripted(vec![Reply::sse(anthropic::text_reply(&["hi"]))]).await;
    let backend = anthropic_backend(&server);
    let turn = ChatTurn {
        client_id: Some("req-1".into()),
        ..ChatTurn::text("hello")
    };
    e.chat_turn(
        ConversationRef::new(T, &id),
        &backend,
        turn.clone(),
        CancellationToken::new(),
        |_| {},
    )
    .await
    .expect("first");
    let err = e
        .chat_turn(
            ConversationRef::new(T, &id),
            &backend,
            turn,
            CancellationToken::new(),
            |_| {},
        )
        .await
        .expect_err("retry");
    assert!(
        matches!(err, EngineError::AlreadySent { seq: 1, .. }) && err.is_conflict(),
        "{err}"
    );
    assert_eq!(server.requests().len(), 1);
    assert_eq!(stored(&e, &id).await.len(), 2);
    // The same client id with a different message is a conflict naming it and its seq; nothing
    // is stored or sent.
    let err = e
        .chat_turn(
            ConversationRef::new(T, &id),
            &backend,
            ChatTurn {
                client_id: Some("req-1".into()),
                ..ChatTurn::text("something else")
            },
            CancellationToken::new(),
            |_| {},
        )
        .await
        .expect_err("reused id");
    match &err {
        EngineError::Conflict {
            index: 0,
            client_id,
            seq: 1,
        } if client_id == "req-1" => {}
        other => panic!("not a conflict on req-1 at seq 1: {other:?}"),
    }
    assert!(err.is_conflict() && err.is_bad_input());
    assert_eq!(server.requests().len(), 1);
    assert_eq!(stored(&e, &id).await.len(), 2);
}

#[tokio::test]
async fn the_conversation_policy_limits_what_is_sent_and_trimming_is_reported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let e = engine(&dir).await;
    let id = new_conv(&e, Some(json!({"max_turns": 1}))).await;
    let server = FakeServer::start(Arc::new(|_, _| {
        Reply::sse(anthropic::text_reply(&["noted"]))
    }))
    .await;
    let backend = anthropic_backend(&server);
    let mut notices = Vec::new();
    for msg in ["one", "two", "three"] {
        e.chat_turn(
            ConversationRef::new(T, &id),
            &backend,
            ChatTurn::text(msg),
            CancellationToken::new(),
            |ev| {
                if let TurnEvent::ContextBuilt { stats } = ev {
                    notices.push(stats.notice);
                }
            },
        )
        .await
        .expect("turn");
    }
    let body = server.requests()[2].json();
    assert_eq!(sent_texts(&body), vec![("user".into(), "three".into())]);
    assert_eq!(
        notices,
        vec![
            None,
            Some("Trimmed old messages to fit context window".to_string()),
            Some("Trimmed old messages to fit context window".to_string()),
        ]
    );
}

#[tokio::test]
async fn openai_turns_work_the_same_way() {
    let dir = tempfile::tempdir().expect("tempdir");
    let e = engine(&dir).await;
    let id = new_conv(&e, None).await;
    let server = FakeServer::scripted(vec![Reply::sse(vec![
        openai::chunk(json!({"role":"assistant","content":"Hel"}), Value::Null),
        openai::chunk(json!({"content":"lo"}), json!("stop")),
        openai::usage(12, 2),
        openai::done(),
    ])])
    .await;
    let backend = OpenAiBackend::new(HttpConfig {
        base_url: server.base_url(),
        model: "local-model".into(),
        retry: RetryPolicy::none(),
        ..HttpConfig::openai()
    })
    .expect("backend");
    assert_eq!(backend.name(), "openai");
    let out = e
        .chat_turn(
            ConversationRef::new(T, &id),
            &backend,
            ChatTurn::text("Say hello"),
            CancellationToken::new(),
            |_| {},
        )
        .await
        .expect("turn");
    assert_eq!(out.text(), "Hello");
    assert_eq!(out.usage.input_tokens, Some(12));
    let body = server.requests()[0].json();
    assert_eq!(
        body["messages"][0],
        json!({"role":"system","content":"Be brief."})
    );
    assert_eq!(body["model"], "local-model");
}
