//! Branching through the engine: a fork's context is byte-identical to a copied
//! conversation's in every format (SQLite and PostgreSQL), retry and edit against a fake
//! Anthropic server (the new reply on the fork, the old one listed as an alternative),
//! refusals that change nothing, and settings updates.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use recall_core::context::ContextRequest;
use recall_core::extract::measured_text;
use recall_core::message::Role;
use recall_core::policy::{Count, Format, PolicyOverrides, TrimMode};
use recall_engine::llm::{AnthropicBackend, HttpConfig, RetryPolicy};
use recall_engine::store::{ConversationUpdate, MessageStatus, NewConversation, PgStore};
use recall_engine::{ChatTurn, ConversationRef, Engine, EngineError, Limits, TurnEvent};
use recall_testkit::{anthropic, FakeServer, Reply};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

const T: &str = "default";

async fn sqlite(dir: &tempfile::TempDir) -> Engine {
    let path = dir.path().join("branch.db");
    Engine::open(path.to_str().unwrap(), Limits::default())
        .await
        .unwrap()
}

fn messages(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| match i % 5 {
            0 => json!({"role": "user", "content": format!("question {i}: what about item {i}?")}),
            1 => json!({"role": "assistant", "content": [
                {"type": "text", "text": format!("let me look {i}")},
                {"type": "tool_use", "id": format!("t{i}"), "name": "lookup", "input": {"q": i}}]}),
            2 => json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": format!("t{}", i - 1), "content": format!("found {i}")}]}),
            3 => json!({"role": "assistant", "content": format!("item {i} is fine.\nUser: not a turn")}),
            _ => json!({"role": "system", "content": format!("rule {i}")}),
        })
        .collect()
}

fn requests() -> Vec<ContextRequest> {
    let mut out = Vec::new();
    for f in [
        Format::Transcript,
        Format::Bracket,
        Format::Xml,
        Format::Task,
        Format::Anthropic,
        Format::Openai,
    ] {
        out.push(ContextRequest::new(f));
        for (tokens, stable) in [(120u32, false), (300, true), (60, true)] {
            let mut r = ContextRequest::new(f);
            r.overrides = PolicyOverrides {
                max_tokens: Some(Count::from(tokens)),
                trim: stable.then_some(TrimMode::Stable),
                ..PolicyOverrides::default()
            };
            out.push(r);
        }
        let mut r = ContextRequest::new(f);
        r.overrides.max_turns = Some(Count::from(3u32));
        r.current = Some("and now?".into());
        out.push(r);
    }
    out
}

/// Forks at every position, continued, give the contexts of a conversation holding the same
/// messages, in every format, byte for byte.
async fn contexts_are_byte_identical(e: &Engine) {
    let all = messages(28);
    let extra = messages(33)[28..].to_vec();
    let new = || NewConversation {
        system_prompt: Some("Be brief.".into()),
        ..NewConversation::default()
    };
    let parent = e.create_conversation(T, new()).await.unwrap().id;
    e.append_messages(ConversationRef::new(T, &parent), all.clone())
        .await
        .unwrap();
    let reqs = requests();
    for k in 0..=all.len() {
        let fork = e
            .fork_conversation(ConversationRef::new(T, &parent), k as i64, None)
            .await
            .unwrap();
        e.append_messages(ConversationRef::new(T, &fork.id), extra.clone())
            .await
            .unwrap();
        let copy = e.create_conversation(T, new()).await.unwrap().id;
        let mut same: Vec<Value> = all[..k].to_vec();
        same.extend(extra.iter().cloned());
        e.append_messages(ConversationRef::new(T, &copy), same)
            .await
            .unwrap();
        for r in &reqs {
            let (a, b) = match (
                e.context(ConversationRef::new(T, &fork.id), r).await,
                e.context(ConversationRef::new(T, &copy), r).await,
            ) {
                (Ok(a), Ok(b)) => (a, b),
                // A request the history cannot answer (xml without a current user message)
                // fails the same way on both.
                (Err(a), Err(b)) => {
                    assert_eq!(a.to_string(), b.to_string(), "fork at {k}");
                    continue;
                }
                (a, b) => panic!(
                    "fork at {k}, {:?}: {:?} vs {:?}",
                    r.format,
                    a.err(),
                    b.err()
                ),
            };
            assert_eq!(
                a.prompt, b.prompt,
                "fork at {k}, {:?} {:?}",
                r.format, r.overrides
            );
            assert_eq!(
                serde_json::to_value(&a.stats).unwrap(),
                serde_json::to_value(&b.stats).unwrap(),
                "stats, fork at {k}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_contexts_are_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    contexts_are_byte_identical(&sqlite(&dir).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_contexts_are_byte_identical() {
    let Some(db) = recall_testkit::pg::pg_database().await else {
        return;
    };
    let store = PgStore::connect(&db.url).await.unwrap();
    contexts_are_byte_identical(&Engine::new(Arc::new(store), Limits::default())).await;
}

fn backend(server: &FakeServer) -> AnthropicBackend {
    let mut c = HttpConfig::anthropic().with_key("sk-ant-test-key");
    c.base_url = server.base_url();
    c.retry = RetryPolicy::none();
    AnthropicBackend::new(c).unwrap()
}

fn texts(e: &[recall_engine::store::StoredMessage]) -> Vec<String> {
    e.iter().map(|m| measured_text(&m.message)).collect()
}

#[tokio::test]
async fn retry_and_edit_make_forks_and_keep_the_old_path() {
    let dir = tempfile::tempdir().unwrap();
    let e = sqlite(&dir).await;
    let id = e
        .create_conversation(T, NewConversation::default())
        .await
        .unwrap()
        .id;
    let server = FakeServer::scripted(vec![
        Reply::sse(anthropic::text_reply(&["Paris."])),
        Reply::sse(anthropic::text_reply(&["It is Paris, ", "the capital."])),
        Reply::sse(anthropic::text_reply(&["Rome."])),
    ])
    .await;
    let b = backend(&server);
    let first = e
        .chat_turn(
            ConversationRef::new(T, &id),
            &b,
            ChatTurn::text("Capital of France?"),
            CancellationToken::new(),
            |_| {},
        )
        .await
        .unwrap();
    assert_eq!((first.user_seq, first.reply_seq), (1, Some(2)));

    // Retry the reply: a fork at 1, the same question sent again, the new reply at seq 2.
    let mut events = Vec::new();
    let retried = e
        .retry_turn(
            ConversationRef::new(T, &id),
            2,
            &b,
            ChatTurn::default(),
            CancellationToken::new(),
            |ev| events.push(ev),
        )
        .await
        .unwrap();
    let fork = &retried.conversation;
    assert!(
        matches!(&events[0], TurnEvent::Forked { conversation_id } if *conversation_id == fork.id)
    );
    assert_eq!(retried.outcome.reply_seq, Some(2));
    assert_eq!(retried.outcome.text(), "It is Paris, the capital.");
    let sent = server.requests()[1].json();
    assert_eq!(sent["messages"].as_array().unwrap().len(), 1, "{sent}");
    assert!(
        sent["messages"][0]
            .to_string()
            .contains("Capital of France?"),
        "{sent}"
    );
    assert!(
        !sent.to_string().contains("Paris"),
        "the old reply is not sent: {sent}"
    );
    let on_fork = e.store().messages(T, &fork.id, 0, 10).await.unwrap();
    assert_eq!(
        texts(&on_fork),
        ["Capital of France?", "It is Paris, the capital."]
    );
    let old = e.store().messages(T, &id, 0, 10).await.unwrap();
    assert_eq!(texts(&old), ["Capital of France?", "Paris."]);
    // Both replies are alternatives at seq 2, from either side.
    for from in [&id, &fork.id] {
        let alts = e
            .alternatives(ConversationRef::new(T, from), 2)
            .await
            .unwrap();
        let got: Vec<(String, String, bool)> = alts
            .iter()
            .map(|a| {
                (
                    a.conversation_id.clone(),
                    measured_text(&a.message.message),
                    a.current,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (id.clone(), "Paris.".to_string(), from == &id),
                (
                    fork.id.clone(),
                    "It is Paris, the capital.".to_string(),
                    from == &fork.id
                ),
            ]
        );
    }

    // Edit the question on the retried path: a fork of the fork at 0.
    let edited = e
        .edit_turn(
            ConversationRef::new(T, &fork.id),
            1,
            &b,
            ChatTurn::text("Capital of Italy?"),
            CancellationToken::new(),
            |_| {},
        )
        .await
        .unwrap();
    assert_eq!(edited.outcome.text(), "Rome.");
    let msgs = e
        .store()
        .messages(T, &edited.conversation.id, 0, 10)
        .await
        .unwrap();
    assert_eq!(texts(&msgs), ["Capital of Italy?", "Rome."]);
    let alts = e
        .alternatives(ConversationRef::new(T, &edited.conversation.id), 1)
        .await
        .unwrap();
    // The retry reads the original's first message: two paths differ at seq 1.
    assert_eq!(alts.len(), 2, "{alts:?}");
    assert_eq!(alts.iter().filter(|a| a.current).count(), 1);
    assert!(alts
        .iter()
        .any(|a| measured_text(&a.message.message) == "Capital of Italy?" && a.current));

    // Refusals change nothing: a retry of a user message, an edit of a reply, a seq past the
    // end, an empty edit.
    let before = e.forks(ConversationRef::new(T, &id)).await.unwrap().len();
    let no_call = |_| {};
    assert!(matches!(
        e.retry_turn(
            ConversationRef::new(T, &id),
            1,
            &b,
            ChatTurn::default(),
            CancellationToken::new(),
            no_call
        )
        .await,
        Err(EngineError::Invalid(_))
    ));
    assert!(matches!(
        e.edit_turn(
            ConversationRef::new(T, &id),
            2,
            &b,
            ChatTurn::text("x"),
            CancellationToken::new(),
            |_| {}
        )
        .await,
        Err(EngineError::Invalid(_))
    ));
    // A seq the conversation does not hold is the caller's mistake (the conversation exists).
    assert!(matches!(
        e.retry_turn(ConversationRef::new(T, &id),
            9,
            &b,
            ChatTurn::default(),
            CancellationToken::new(),
            |_| {}
        )
        .await,
        Err(EngineError::Invalid(m)) if m.contains("has no message 9")
    ));
    assert!(matches!(
        e.edit_turn(
            ConversationRef::new(T, &id),
            1,
            &b,
            ChatTurn::text("  "),
            CancellationToken::new(),
            |_| {}
        )
        .await,
        Err(EngineError::Invalid(_))
    ));
    assert!(e
        .retry_turn(
            ConversationRef::new("other", &id),
            2,
            &b,
            ChatTurn::default(),
            CancellationToken::new(),
            |_| {}
        )
        .await
        .unwrap_err()
        .is_not_found());
    assert_eq!(
        e.forks(ConversationRef::new(T, &id)).await.unwrap().len(),
        before
    );
    assert_eq!(server.requests().len(), 3);

    // The parent cannot go while forks read it.
    let err = e
        .delete_conversation(ConversationRef::new(T, &id), false)
        .await
        .unwrap_err();
    assert!(err.is_conflict(), "{err}");
    assert_eq!(
        e.delete_conversation(ConversationRef::new(T, &id), true)
            .await
            .unwrap(),
        3
    );
}

#[tokio::test]
async fn update_checks_the_policy_and_redaction_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let e = sqlite(&dir).await;
    let id = e
        .create_conversation(T, NewConversation::default())
        .await
        .unwrap()
        .id;
    let xml = ConversationUpdate {
        policy: Some(Some(
            serde_json::from_value(json!({"format": "xml"})).unwrap(),
        )),
        ..ConversationUpdate::default()
    };
    let c = e
        .update_conversation(ConversationRef::new(T, &id), xml)
        .await
        .unwrap();
    assert_eq!(c.policy.unwrap().format, Some(Format::Xml));
    e.append_messages(
        ConversationRef::new(T, &id),
        vec![json!({"role": "user", "content": "secret plan"})],
    )
    .await
    .unwrap();
    e.redact_message(ConversationRef::new(T, &id), 1)
        .await
        .unwrap();
    let m = &e.store().messages(T, &id, 0, 10).await.unwrap()[0];
    assert_eq!(
        (m.status, m.message.role),
        (MessageStatus::Redacted, Role::User)
    );
    let ctx = e
        .context(
            ConversationRef::new(T, &id),
            &ContextRequest::new(Format::Transcript),
        )
        .await
        .unwrap();
    assert!(!format!("{:?}", ctx.prompt).contains("secret"));
}

/// A reply that failed before any text left the user message unanswered: retrying it answers
/// it in place (no fork, nothing lost or doubled), after which it has a reply and a second
/// retry of it is refused.
#[tokio::test]
async fn retry_of_an_unanswered_message_answers_it_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let e = sqlite(&dir).await;
    let id = e
        .create_conversation(T, NewConversation::default())
        .await
        .unwrap()
        .id;
    let server = FakeServer::scripted(vec![
        Reply::json(
            500,
            json!({"type": "error", "error": {"type": "api_error", "message": "down"}}),
        ),
        Reply::sse(anthropic::text_reply(&["Paris."])),
    ])
    .await;
    let b = backend(&server);
    let failed = e
        .chat_turn(
            ConversationRef::new(T, &id),
            &b,
            ChatTurn::text("Capital of France?"),
            CancellationToken::new(),
            |_| {},
        )
        .await
        .unwrap();
    assert!(failed.error.is_some());
    assert_eq!((failed.user_seq, failed.reply_seq), (1, None));

    let mut events = Vec::new();
    let retried = e
        .retry_turn(
            ConversationRef::new(T, &id),
            1,
            &b,
            ChatTurn::default(),
            CancellationToken::new(),
            |ev| events.push(ev),
        )
        .await
        .unwrap();
    assert_eq!(retried.conversation.id, id, "answered in place");
    assert!(
        !events
            .iter()
            .any(|ev| matches!(ev, TurnEvent::Forked { .. })),
        "no fork"
    );
    assert_eq!(retried.outcome.reply_seq, Some(2));
    let sent = server.requests()[1].json();
    assert_eq!(sent["messages"].as_array().unwrap().len(), 1, "{sent}");
    let stored = e.store().messages(T, &id, 0, 10).await.unwrap();
    assert_eq!(texts(&stored), ["Capital of France?", "Paris."]);
    assert!(e
        .forks(ConversationRef::new(T, &id))
        .await
        .unwrap()
        .is_empty());

    // Now it has a reply: retrying the user message again is refused and changes nothing.
    let err = e
        .retry_turn(
            ConversationRef::new(T, &id),
            1,
            &b,
            ChatTurn::default(),
            CancellationToken::new(),
            |_| {},
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("with a reply after it"), "{err}");
    assert_eq!(e.store().messages(T, &id, 0, 10).await.unwrap().len(), 2);
    assert_eq!(server.requests().len(), 2);
}
