//! The store conformance suite: one set of async tests over `&dyn Store`, run against SQLite
//! (a temporary file) and PostgreSQL (a fresh database per test). See `suite!` at the end.
//!
//! PostgreSQL: `RECALL_TEST_PG_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`);
//! unreachable → skipped with a notice, or a failure when `CI=true`.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use common::{all_messages, check_window, partial, stable_by_fold, with_id, Raw, Rng, StableRow};
use recall_core::extract::measure;
use recall_core::message::{Block, DocumentKind, Message, Role, ToolResultContent};
use recall_core::policy::{Policy, TrimMode};
use recall_core::tokens::Tokenizer;
use recall_store::{
    Appended, MessageStatus, NewConversation, NewMessage, Store, StoreError, DEFAULT_TENANT,
};
use serde_json::{json, Map, Value};

const T: &str = DEFAULT_TENANT;

fn user(t: &str) -> Message {
    Message::text(Role::User, t)
}

fn assistant(t: &str) -> Message {
    Message::text(Role::Assistant, t)
}

fn complete(ms: Vec<Message>) -> Vec<NewMessage> {
    ms.into_iter().map(NewMessage::complete).collect()
}

async fn new_conv(s: &dyn Store) -> String {
    s.create_conversation(T, NewConversation::default())
        .await
        .expect("create")
        .id
}

fn fresh(seqs: std::ops::RangeInclusive<i64>) -> Vec<Appended> {
    seqs.map(|seq| Appended {
        seq,
        duplicate: false,
    })
    .collect()
}

fn assert_not_found<T: std::fmt::Debug>(r: Result<T, StoreError>, what: &str) {
    match r {
        Err(StoreError::ConversationNotFound(_)) => {}
        other => panic!("{what}: expected ConversationNotFound, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Conversations
// ---------------------------------------------------------------------------------------------

async fn create_get_list(s: &dyn Store) {
    let mut meta = Map::new();
    meta.insert("zeta".into(), json!(1));
    meta.insert("alpha".into(), json!({"nested": [1.5, "x", null]}));
    let new = NewConversation {
        title: Some("Trip planning ✈️".into()),
        system_prompt: Some("You are terse.".into()),
        metadata: meta.clone(),
        policy: Some(serde_json::from_value(json!({"format": "xml", "max_turns": 5})).unwrap()),
    };
    let created = s.create_conversation(T, new.clone()).await.unwrap();
    assert_eq!(created.tenant, T);
    assert_eq!(created.title, new.title);
    assert_eq!(created.message_count, 0);
    assert_eq!(created.last_seq, 0);
    let got = s.get_conversation(T, &created.id).await.unwrap();
    assert_eq!(got, created);
    // Metadata keys come back in their order.
    let keys: Vec<&String> = got.metadata.keys().collect();
    assert_eq!(keys, ["zeta", "alpha"]);

    let mut ids = vec![created.id.clone()];
    for _ in 0..6 {
        ids.push(new_conv(s).await);
    }
    // Another tenant's conversations never show up.
    let theirs = s
        .create_conversation("other", NewConversation::default())
        .await
        .unwrap();
    ids.sort();
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = s.list_conversations(T, after.as_deref(), 3).await.unwrap();
        assert!(page.len() <= 3);
        if page.is_empty() {
            break;
        }
        assert!(page.iter().all(|c| c.tenant == T));
        after = page.last().map(|c| c.id.clone());
        seen.extend(page.into_iter().map(|c| c.id));
    }
    assert_eq!(
        seen, ids,
        "pagination covers every conversation once, in id order"
    );
    let all = s.list_conversations(T, None, 100).await.unwrap();
    assert_eq!(all.len(), 7);
    assert_eq!(all[0], s.get_conversation(T, &all[0].id).await.unwrap());
    let other = s.list_conversations("other", None, 100).await.unwrap();
    assert_eq!(other.len(), 1);
    assert_eq!(other[0].id, theirs.id);
    assert!(s
        .list_conversations("nobody", None, 100)
        .await
        .unwrap()
        .is_empty());
    assert!(s.list_conversations(T, None, 0).await.unwrap().is_empty());
    s.ping().await.unwrap();
}

async fn tenant_scoping(s: &dyn Store) {
    let id = new_conv(s).await;
    s.append(T, &id, complete(vec![user("mine"), assistant("yes")]))
        .await
        .unwrap();
    let before = s.get_conversation(T, &id).await.unwrap();
    let x = "intruder";
    assert_not_found(s.get_conversation(x, &id).await, "get");
    assert_not_found(s.messages(x, &id, 0, 10).await, "messages");
    assert_not_found(
        s.append(x, &id, complete(vec![user("sneaky")])).await,
        "append",
    );
    assert_not_found(
        s.update_message(x, &id, 1, NewMessage::complete(user("changed")))
            .await,
        "update_message",
    );
    assert_not_found(
        s.context_window(x, &id, &Policy::default()).await,
        "context_window",
    );
    assert_not_found(s.clear_conversation(x, &id).await, "clear");
    assert_not_found(s.delete_conversation(x, &id, false).await, "delete");
    assert!(s.list_conversations(x, None, 10).await.unwrap().is_empty());
    // Nothing changed for the owner.
    let after = s.get_conversation(T, &id).await.unwrap();
    assert_eq!(after, before);
    let msgs = all_messages(s, T, &id).await;
    assert_eq!(msgs.len(), 2);
    assert_eq!(msgs[0].message, user("mine"));
    // The operator's lookup (the CLI's "held by tenant …") names the owner only.
    assert_eq!(
        s.conversation_tenants(&id).await.unwrap(),
        vec![T.to_string()]
    );

    // Unknown ids are not found either, whoever asks.
    let nope = "0190d3c2-0000-7000-8000-000000000000";
    assert!(s.conversation_tenants(nope).await.unwrap().is_empty());
    assert_not_found(s.get_conversation(T, nope).await, "get unknown");
    assert_not_found(s.messages(T, nope, 0, 10).await, "messages unknown");
    assert_not_found(s.append(T, nope, complete(vec![user("x")])).await, "append");
    assert_not_found(
        s.context_window(T, nope, &Policy::default()).await,
        "window",
    );
    assert_not_found(s.clear_conversation(T, nope).await, "clear unknown");
    assert_not_found(
        s.delete_conversation(T, nope, false).await,
        "delete unknown",
    );
    assert_not_found(
        s.update_message(T, nope, 1, NewMessage::complete(user("x")))
            .await,
        "update unknown",
    );
}

async fn delete_conversation(s: &dyn Store) {
    let id = new_conv(s).await;
    let keep = new_conv(s).await;
    s.append(T, &id, complete(vec![user("a"), assistant("b")]))
        .await
        .unwrap();
    s.append(T, &keep, complete(vec![user("kept")]))
        .await
        .unwrap();
    let p = Policy {
        max_tokens: Some(100),
        trim: TrimMode::Stable,
        ..Policy::default()
    };
    s.context_window(T, &id, &p).await.unwrap();
    s.delete_conversation(T, &id, false).await.unwrap();
    assert_not_found(s.get_conversation(T, &id).await, "get after delete");
    assert_not_found(s.messages(T, &id, 0, 10).await, "messages after delete");
    assert_not_found(s.delete_conversation(T, &id, false).await, "second delete");
    assert_not_found(
        s.append(T, &id, complete(vec![user("late")])).await,
        "append after delete",
    );
    let listed: Vec<String> = s
        .list_conversations(T, None, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(listed, vec![keep.clone()]);
    assert_eq!(all_messages(s, T, &keep).await.len(), 1);
}

async fn clear_conversation(s: &dyn Store) {
    let id = new_conv(s).await;
    let mut batch = complete(vec![user("one"), assistant("two"), user("three")]);
    batch.push(NewMessage::complete(Message::text(Role::System, "sys")));
    s.append(T, &id, batch).await.unwrap();
    let p = Policy {
        max_tokens: Some(30),
        trim: TrimMode::Stable,
        ..Policy::default()
    };
    s.context_window(T, &id, &p).await.unwrap();
    assert_eq!(s.clear_conversation(T, &id).await.unwrap(), 4);
    let c = s.get_conversation(T, &id).await.unwrap();
    assert_eq!(c.message_count, 0);
    assert_eq!(c.last_seq, 4, "clearing keeps the seq counter");
    assert_eq!(c.total_tokens, 0);
    assert!(all_messages(s, T, &id).await.is_empty());
    for policy in [Policy::default(), p.clone()] {
        let w = s.context_window(T, &id, &policy).await.unwrap();
        assert!(w.messages.is_empty());
        assert!(w.system_parts.is_empty());
        assert_eq!(w.older, 0);
    }
    // seq continues after the clear; running totals start over.
    let a = s
        .append(T, &id, complete(vec![user("four"), assistant("five")]))
        .await
        .unwrap();
    assert_eq!(a, fresh(5..=6));
    let msgs = all_messages(s, T, &id).await;
    assert_eq!(msgs.iter().map(|m| m.seq).collect::<Vec<_>>(), vec![5, 6]);
    assert_eq!(s.clear_conversation(T, &id).await.unwrap(), 2);
    assert_eq!(s.clear_conversation(T, &id).await.unwrap(), 0);
    let a = s
        .append(T, &id, complete(vec![user("again")]))
        .await
        .unwrap();
    assert_eq!(a, fresh(7..=7));
    for policy in [
        Policy::default(),
        p,
        Policy {
            max_tokens: Some(5),
            ..Policy::default()
        },
    ] {
        check_window(s, T, &id, &policy, "after clear").await;
    }
}

// ---------------------------------------------------------------------------------------------
// Appending
// ---------------------------------------------------------------------------------------------

async fn append_single_and_batch(s: &dyn Store) {
    let id = new_conv(s).await;
    assert!(s.append(T, &id, Vec::new()).await.unwrap().is_empty());
    let mut expected = Vec::new();
    for i in 0..5 {
        let m = if i % 2 == 0 {
            user(&format!("u{i}"))
        } else {
            assistant(&format!("a{i}"))
        };
        let r = s
            .append(T, &id, vec![NewMessage::complete(m.clone())])
            .await
            .unwrap();
        assert_eq!(r, fresh(i + 1..=i + 1));
        expected.push(m);
    }
    let batch: Vec<Message> = (0..40).map(|i| user(&format!("batch {i}"))).collect();
    let r = s.append(T, &id, complete(batch.clone())).await.unwrap();
    assert_eq!(r, fresh(6..=45));
    expected.extend(batch);
    let msgs = all_messages(s, T, &id).await;
    assert_eq!(
        msgs.iter().map(|m| m.seq).collect::<Vec<_>>(),
        (1..=45).collect::<Vec<_>>()
    );
    for (got, want) in msgs.iter().zip(&expected) {
        assert_eq!(&got.message, want);
        assert_eq!(got.status, MessageStatus::Complete);
        assert!(
            got.created_at > 1_600_000_000_000,
            "created_at is epoch millis"
        );
    }
    let c = s.get_conversation(T, &id).await.unwrap();
    assert_eq!((c.message_count, c.last_seq), (45, 45));
    let tokens: u64 = expected
        .iter()
        .map(|m| measure(m, &Tokenizer::O200k).tokens)
        .sum();
    assert_eq!(c.total_tokens, tokens as i64);
    assert!(c.updated_at >= c.created_at);
}

async fn idempotent_client_ids(s: &dyn Store) {
    let id = new_conv(s).await;
    let first = s
        .append(T, &id, vec![with_id(user("hello"), "c-1")])
        .await
        .unwrap();
    assert_eq!(first, fresh(1..=1));
    let before = s.get_conversation(T, &id).await.unwrap();
    // A retry (the same message) returns the first append's seq and writes nothing.
    let retry = s
        .append(T, &id, vec![with_id(user("hello"), "c-1")])
        .await
        .unwrap();
    assert_eq!(
        retry,
        vec![Appended {
            seq: 1,
            duplicate: true
        }]
    );
    let after = s.get_conversation(T, &id).await.unwrap();
    assert_eq!(
        (after.message_count, after.last_seq, after.total_tokens),
        (before.message_count, before.last_seq, before.total_tokens)
    );
    let msgs = all_messages(s, T, &id).await;
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].message, with_id(user("hello"), "c-1").message);

    // A batch: new, seen before, new twice over, no id.
    let r = s
        .append(
            T,
            &id,
            vec![
                with_id(assistant("reply"), "c-2"),
                with_id(user("hello"), "c-1"),
                with_id(user("three"), "c-3"),
                with_id(user("three"), "c-3"),
                NewMessage::complete(user("no id")),
                with_id(assistant("reply"), "c-2"),
            ],
        )
        .await
        .unwrap();
    let d = |seq, duplicate| Appended { seq, duplicate };
    assert_eq!(
        r,
        vec![
            d(2, false),
            d(1, true),
            d(3, false),
            d(3, true),
            d(4, false),
            d(2, true)
        ]
    );
    let msgs = all_messages(s, T, &id).await;
    let got: Vec<(i64, Option<String>, Message)> = msgs
        .iter()
        .map(|m| (m.seq, m.message.id.clone(), m.message.clone()))
        .collect();
    let want = vec![
        (1, Some("c-1".into()), with_id(user("hello"), "c-1").message),
        (
            2,
            Some("c-2".into()),
            with_id(assistant("reply"), "c-2").message,
        ),
        (3, Some("c-3".into()), with_id(user("three"), "c-3").message),
        (4, None, user("no id")),
    ];
    assert_eq!(got, want);
    assert_eq!(s.get_conversation(T, &id).await.unwrap().message_count, 4);
    // Client ids are per conversation.
    let other = new_conv(s).await;
    let r = s
        .append(T, &other, vec![with_id(user("same id elsewhere"), "c-1")])
        .await
        .unwrap();
    assert_eq!(r, fresh(1..=1));
    // Ids that only differ in case or padding are different ids.
    let r = s
        .append(
            T,
            &id,
            vec![with_id(user("x"), "C-1"), with_id(user("y"), "c-1 ")],
        )
        .await
        .unwrap();
    assert_eq!(r, fresh(5..=6));
}

/// A batch of more client ids than one lookup statement holds (1,000 a statement, each id
/// also looked up as a redaction would have left it): the first append stores every message,
/// its retry stores none and answers every seq.
async fn many_client_ids_in_one_batch(s: &dyn Store) {
    let id = new_conv(s).await;
    let batch = |n: usize| -> Vec<NewMessage> {
        (0..n)
            .map(|i| with_id(user(&format!("message {i}")), &format!("bulk-{i}")))
            .collect()
    };
    let first = s.append(T, &id, batch(1_200)).await.unwrap();
    assert_eq!(first, fresh(1..=1_200));
    let retry = s.append(T, &id, batch(1_200)).await.unwrap();
    assert!(retry.iter().all(|a| a.duplicate), "a retry stores nothing");
    assert_eq!(
        retry.iter().map(|a| a.seq).collect::<Vec<_>>(),
        (1..=1_200).collect::<Vec<i64>>()
    );
    assert_eq!(
        s.get_conversation(T, &id).await.unwrap().message_count,
        1_200
    );
}

/// Asserts a conflict on message `index` of a batch, for `client_id` stored (or planned) as
/// `seq`.
fn assert_conflict<T: std::fmt::Debug>(
    r: Result<T, StoreError>,
    index: usize,
    client_id: &str,
    seq: i64,
) {
    match r {
        Err(StoreError::Conflict {
            index: i,
            client_id: c,
            seq: q,
        }) if (i, c.as_str(), q) == (index, client_id, seq) => {}
        other => panic!(
            "expected a conflict on messages[{index}] ({client_id}, seq {seq}), got {other:?}"
        ),
    }
}

/// A client id reused for a different message is a conflict decided under the lock, and
/// nothing of its batch is written: against a stored message, within one batch, and with
/// metadata. The same message again (metadata keys in another order) is a duplicate.
async fn client_id_conflicts(s: &dyn Store) {
    let id = new_conv(s).await;
    let mut meta = Map::new();
    meta.insert("a".into(), json!(1));
    meta.insert("b".into(), json!({"x": true, "y": [1, 2]}));
    let mut tagged = assistant("tagged");
    tagged.metadata = Some(meta);
    s.append(
        T,
        &id,
        vec![with_id(user("first"), "x1"), with_id(tagged.clone(), "m1")],
    )
    .await
    .unwrap();
    let before = all_messages(s, T, &id).await;
    let conv_before = s.get_conversation(T, &id).await.unwrap();

    // Issue 16, defect 1: a batch whose third message reuses a stored id for different
    // content; the new second message must not be stored either.
    let r = s
        .append(
            T,
            &id,
            vec![
                with_id(user("first"), "x1"),
                NewMessage::complete(user("ok2")),
                with_id(assistant("different"), "x1"),
            ],
        )
        .await;
    assert_conflict(r, 2, "x1", 1);
    // The role alone differing is a different message.
    assert_conflict(
        s.append(T, &id, vec![with_id(assistant("first"), "x1")])
            .await,
        0,
        "x1",
        1,
    );
    // Metadata differing (or missing) is a different message.
    let mut other_meta = tagged.clone();
    other_meta
        .metadata
        .as_mut()
        .unwrap()
        .insert("a".into(), json!(2));
    assert_conflict(
        s.append(T, &id, vec![with_id(other_meta, "m1")]).await,
        0,
        "m1",
        2,
    );
    assert_conflict(
        s.append(T, &id, vec![with_id(assistant("tagged"), "m1")])
            .await,
        0,
        "m1",
        2,
    );
    // Within one batch: the second use of a new id for a different message; its seq is the
    // one the first would have had.
    let r = s
        .append(
            T,
            &id,
            vec![
                NewMessage::complete(user("new")),
                with_id(user("batch"), "b1"),
                with_id(user("batch, changed"), "b1"),
            ],
        )
        .await;
    assert_conflict(r, 2, "b1", 4);
    assert_eq!(
        all_messages(s, T, &id).await,
        before,
        "a refused batch wrote something"
    );
    let conv_after = s.get_conversation(T, &id).await.unwrap();
    assert_eq!(
        (
            conv_after.message_count,
            conv_after.last_seq,
            conv_after.total_tokens
        ),
        (
            conv_before.message_count,
            conv_before.last_seq,
            conv_before.total_tokens
        )
    );

    // The same message, metadata keys in another order: a duplicate, not a conflict.
    let mut reordered = Map::new();
    reordered.insert("b".into(), json!({"y": [1, 2], "x": true}));
    reordered.insert("a".into(), json!(1));
    let mut again = assistant("tagged");
    again.metadata = Some(reordered);
    let r = s.append(T, &id, vec![with_id(again, "m1")]).await.unwrap();
    assert_eq!(
        r,
        vec![Appended {
            seq: 2,
            duplicate: true
        }]
    );

    // With a stable window to advance (the append path that carries that logic), the same.
    let policy = Policy {
        max_tokens: Some(50),
        trim: TrimMode::Stable,
        ..Policy::default()
    };
    s.context_window(T, &id, &policy).await.unwrap();
    let before = all_messages(s, T, &id).await;
    let r = s
        .append(
            T,
            &id,
            vec![
                NewMessage::complete(user("after window")),
                with_id(user("not first"), "x1"),
            ],
        )
        .await;
    assert_conflict(r, 1, "x1", 1);
    assert_eq!(all_messages(s, T, &id).await, before);
    let r = s
        .append(
            T,
            &id,
            vec![
                NewMessage::complete(user("fine")),
                with_id(user("first"), "x1"),
            ],
        )
        .await
        .unwrap();
    assert_eq!(
        r,
        vec![
            Appended {
                seq: 3,
                duplicate: false
            },
            Appended {
                seq: 1,
                duplicate: true
            }
        ]
    );
}

async fn message_paging(s: &dyn Store) {
    let id = new_conv(s).await;
    let batch: Vec<Message> = (0..23)
        .map(|i| {
            if i % 3 == 2 {
                Message::text(Role::System, format!("s{i}"))
            } else {
                user(&format!("m{i}"))
            }
        })
        .collect();
    s.append(T, &id, complete(batch.clone())).await.unwrap();
    let mut after = 0;
    let mut seen = Vec::new();
    loop {
        let page = s.messages(T, &id, after, 5).await.unwrap();
        assert!(page.len() <= 5);
        let Some(last) = page.last() else { break };
        assert!(page.iter().all(|m| m.seq > after));
        after = last.seq;
        seen.extend(page);
    }
    assert_eq!(
        seen.iter().map(|m| m.seq).collect::<Vec<_>>(),
        (1..=23).collect::<Vec<_>>()
    );
    for (m, want) in seen.iter().zip(&batch) {
        assert_eq!(&m.message, want, "system messages are listed too");
    }
    let mid = s.messages(T, &id, 10, 3).await.unwrap();
    assert_eq!(
        mid.iter().map(|m| m.seq).collect::<Vec<_>>(),
        vec![11, 12, 13]
    );
    assert!(s.messages(T, &id, 23, 10).await.unwrap().is_empty());
    assert!(s.messages(T, &id, 1000, 10).await.unwrap().is_empty());
    assert!(s.messages(T, &id, 0, 0).await.unwrap().is_empty());
    assert_eq!(s.messages(T, &id, -5, 2).await.unwrap()[0].seq, 1);
    // An empty conversation lists nothing (and is found).
    let empty = new_conv(s).await;
    assert!(s.messages(T, &empty, 0, 10).await.unwrap().is_empty());
}

async fn update_message(s: &dyn Store) {
    let id = new_conv(s).await;
    let mut rng = Rng::new(7);
    let mut history = common::conversation(&mut rng, 40);
    history.insert(5, Message::text(Role::System, "be helpful"));
    s.append(T, &id, complete(history)).await.unwrap();
    // A streamed reply: stored partial with what arrived, grown, then completed.
    let streaming = Message::blocks(
        Role::Assistant,
        vec![Block::Text {
            text: "The answer".into(),
        }],
    );
    let seq = s.append(T, &id, vec![partial(streaming)]).await.unwrap()[0].seq;
    s.append(T, &id, complete(vec![user("and then?")]))
        .await
        .unwrap();
    let stored = &s.messages(T, &id, seq - 1, 1).await.unwrap()[0];
    assert_eq!(stored.status, MessageStatus::Partial);
    let policies = [
        Policy {
            max_tokens: Some(400),
            ..Policy::default()
        },
        Policy {
            max_chars: Some(1500),
            tokenizer: Tokenizer::Chars4,
            ..Policy::default()
        },
        Policy {
            max_tokens: Some(600),
            tokenizer: Tokenizer::Cl100k,
            trim: TrimMode::Stable,
            low_water: 0.5,
            ..Policy::default()
        },
        Policy {
            max_tokens: Some(300),
            tokenizer: Tokenizer::Chars4,
            trim: TrimMode::Stable,
            ..Policy::default()
        },
    ];
    for p in &policies {
        check_window(s, T, &id, p, "before update").await;
    }
    let grown = Message::blocks(
        Role::Assistant,
        vec![Block::Text {
            text: "The answer is a much longer text now. ".repeat(60),
        }],
    );
    s.update_message(T, &id, seq, partial(grown.clone()))
        .await
        .unwrap();
    for p in &policies {
        check_window(s, T, &id, p, "after growing").await;
    }
    let done = Message::blocks(
        Role::Assistant,
        vec![
            Block::Thinking {
                thinking: "hmm".into(),
                signature: Some("sig".into()),
            },
            Block::Text { text: "42.".into() },
        ],
    );
    s.update_message(T, &id, seq, NewMessage::complete(done.clone()))
        .await
        .unwrap();
    let stored = &s.messages(T, &id, seq - 1, 1).await.unwrap()[0];
    assert_eq!(stored.seq, seq);
    assert_eq!(stored.status, MessageStatus::Complete);
    assert_eq!(stored.message, done);
    assert_eq!(
        stored.figures.measure(Tokenizer::O200k),
        measure(&done, &Tokenizer::O200k)
    );
    for p in &policies {
        check_window(s, T, &id, p, "after completing").await;
    }
    // Updating an older message (a cut point becoming a non-turn, and back) keeps every later
    // running total right.
    let first_user = all_messages(s, T, &id)
        .await
        .into_iter()
        .find(|m| m.message.is_cut_point())
        .unwrap();
    s.update_message(
        T,
        &id,
        first_user.seq,
        NewMessage::complete(Message::blocks(
            Role::Assistant,
            vec![Block::Text {
                text: "now an assistant message ".repeat(20),
            }],
        )),
    )
    .await
    .unwrap();
    for p in &policies {
        check_window(s, T, &id, p, "after role change").await;
    }
    // A history message becoming a system message leaves the history (and its budgets), and
    // a system message becoming history joins them.
    let all = all_messages(s, T, &id).await;
    let system_seq = all
        .iter()
        .find(|m| m.message.role == Role::System)
        .map(|m| m.seq)
        .expect("a system message");
    let last_user = all
        .iter()
        .rev()
        .find(|m| m.message.is_cut_point())
        .unwrap()
        .seq;
    s.update_message(
        T,
        &id,
        last_user,
        NewMessage::complete(Message::text(Role::System, "now a rule ".repeat(50))),
    )
    .await
    .unwrap();
    for p in &policies {
        check_window(s, T, &id, p, "user became system").await;
    }
    s.update_message(
        T,
        &id,
        system_seq,
        NewMessage::complete(user(&"now a question ".repeat(40))),
    )
    .await
    .unwrap();
    for p in &policies {
        check_window(s, T, &id, p, "system became user").await;
    }
    let total: u64 = all_messages(s, T, &id)
        .await
        .iter()
        .filter(|m| m.message.role != Role::System)
        .map(|m| measure(&m.message, &Tokenizer::O200k).tokens)
        .sum();
    assert_eq!(
        s.get_conversation(T, &id).await.unwrap().total_tokens,
        total as i64
    );
    match s
        .update_message(T, &id, 9999, NewMessage::complete(user("x")))
        .await
    {
        Err(StoreError::MessageNotFound { seq: 9999, .. }) => {}
        other => panic!("expected MessageNotFound, got {other:?}"),
    }
}

async fn system_messages(s: &dyn Store) {
    let id = new_conv(s).await;
    let big_system = "Rules of the house. ".repeat(400);
    s.append(
        T,
        &id,
        complete(vec![
            Message::text(Role::System, "first rule"),
            user("hello"),
            assistant("hi"),
        ]),
    )
    .await
    .unwrap();
    let turns: Vec<Message> = (0..30)
        .flat_map(|i| {
            [
                user(&format!("question {i} about the weather")),
                assistant(&format!("answer {i}: it is sunny")),
            ]
        })
        .collect();
    s.append(T, &id, complete(turns.clone())).await.unwrap();
    s.append(
        T,
        &id,
        complete(vec![
            Message::text(Role::System, big_system.clone()),
            Message::blocks(
                Role::System,
                vec![
                    Block::Text {
                        text: "part one".into(),
                    },
                    Block::Text {
                        text: "part two".into(),
                    },
                ],
            ),
            user("last question"),
        ]),
    )
    .await
    .unwrap();
    let w = s.context_window(T, &id, &Policy::default()).await.unwrap();
    assert_eq!(
        w.system_parts,
        vec![
            "first rule".to_string(),
            big_system.clone(),
            "part one\npart two".into()
        ]
    );
    assert!(w.messages.iter().all(|m| m.message.role != Role::System));
    assert_eq!(w.messages.len(), 63);
    assert_eq!(w.older, 0);
    // System messages are not history: they never take room in a budget.
    for p in [
        Policy {
            max_tokens: Some(200),
            ..Policy::default()
        },
        Policy {
            max_chars: Some(500),
            ..Policy::default()
        },
        Policy {
            max_tokens: Some(150),
            tokenizer: Tokenizer::Chars4,
            trim: TrimMode::Stable,
            ..Policy::default()
        },
    ] {
        check_window(s, T, &id, &p, "system messages").await;
    }
    let c = s.get_conversation(T, &id).await.unwrap();
    assert_eq!(c.message_count, 66);
    let history_tokens: u64 = all_messages(s, T, &id)
        .await
        .iter()
        .filter(|m| m.message.role != Role::System)
        .map(|m| measure(&m.message, &Tokenizer::O200k).tokens)
        .sum();
    assert_eq!(c.total_tokens, history_tokens as i64);
}

async fn figures_match_core(s: &dyn Store) {
    let id = new_conv(s).await;
    let mut rng = Rng::new(11);
    let msgs = common::conversation(&mut rng, 60);
    s.append(T, &id, complete(msgs.clone())).await.unwrap();
    let stored = all_messages(s, T, &id).await;
    assert_eq!(stored.len(), msgs.len());
    for (st, m) in stored.iter().zip(&msgs) {
        for t in Tokenizer::ALL {
            assert_eq!(
                st.figures.measure(t),
                measure(m, &t),
                "seq {} under {t}",
                st.seq
            );
            assert_eq!(st.figures.tokens(t), measure(m, &t).tokens as i64);
        }
        assert_eq!(st.figures.starts_turn, m.starts_turn());
        assert_eq!(st.figures.cut_point, m.is_cut_point());
    }
    // The window carries the same measures under the policy's tokenizer.
    for t in Tokenizer::ALL {
        let w = s
            .context_window(
                T,
                &id,
                &Policy {
                    tokenizer: t,
                    ..Policy::default()
                },
            )
            .await
            .unwrap();
        for h in &w.messages {
            let m = &msgs[h.index - 1];
            assert_eq!(h.measure, measure(m, &t));
        }
    }
    // Figures the caller computed are stored as given (an import measures in parallel).
    let m = user("precomputed");
    let f = recall_store::Figures::of(&m);
    let seq = s
        .append(
            T,
            &id,
            vec![NewMessage {
                message: m.clone(),
                status: MessageStatus::Complete,
                figures: Some(f),
            }],
        )
        .await
        .unwrap()[0]
        .seq;
    let back = &s.messages(T, &id, seq - 1, 1).await.unwrap()[0];
    assert_eq!(back.figures, f);
}

async fn round_trip_every_block(s: &dyn Store) {
    let id = new_conv(s).await;
    let mut meta = Map::new();
    meta.insert("z_last_first".into(), json!("kept in order"));
    meta.insert(
        "a".into(),
        json!({"b": [1, 2.5, -0.0, 1e-300, 12345678901234567890u64]}),
    );
    let mut rng = Rng::new(5);
    let floats: Vec<Value> = (0..50)
        .map(|_| json!((rng.f64() - 0.5) * 10f64.powi(rng.range(0, 40) as i32 - 20)))
        .collect();
    let messages = vec![
        Message {
            role: Role::User,
            content: recall_core::message::Content::Text(
                "plain text with \u{0} nul, \"quotes\", emoji 👩‍💻 and\nnewlines".into(),
            ),
            id: Some("client-1".into()),
            metadata: Some(meta.clone()),
            created_at: None,
        },
        Message::blocks(
            Role::Assistant,
            vec![
                Block::Thinking {
                    thinking: "let me think".into(),
                    signature: Some("EqQBCkYIBxgCKkD…".into()),
                },
                Block::Thinking {
                    thinking: "unsigned".into(),
                    signature: None,
                },
                Block::RedactedThinking {
                    data: "cmVkYWN0ZWQ=".into(),
                },
                Block::Text {
                    text: "calling tools".into(),
                },
                Block::ToolUse {
                    id: "toolu_01".into(),
                    name: "search_documents".into(),
                    input: json!({"q": "rust", "limit": 5, "floats": floats, "deep": {"z": 1, "a": [null, true]}}),
                },
                Block::ToolUse {
                    id: "toolu_02".into(),
                    name: "noop".into(),
                    input: json!({}),
                },
                Block::Other {
                    raw: json!({"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"query": "x"}}),
                },
            ],
        ),
        Message::blocks(
            Role::User,
            vec![
                Block::ToolResult {
                    tool_use_id: "toolu_01".into(),
                    content: ToolResultContent::Blocks(vec![
                        Block::Text {
                            text: "result".into(),
                        },
                        Block::Image {
                            raw: json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}),
                        },
                    ]),
                    is_error: Some(false),
                },
                Block::ToolResult {
                    tool_use_id: "toolu_02".into(),
                    content: ToolResultContent::Text(String::new()),
                    is_error: Some(true),
                },
            ],
        ),
        Message::blocks(
            Role::User,
            vec![
                Block::Document {
                    kind: DocumentKind::Document,
                    label: "Spec".into(),
                    raw: json!({"type": "document", "title": "Spec", "source": {"type": "text", "media_type": "text/plain", "data": "body"}, "citations": {"enabled": true}}),
                },
                Block::Document {
                    kind: DocumentKind::SearchResult,
                    label: "https://example.com".into(),
                    raw: json!({"type": "search_result", "source": "https://example.com", "title": "", "content": [{"type": "text", "text": "snippet"}]}),
                },
                Block::Image {
                    raw: json!({"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}}),
                },
                Block::Text {
                    text: "what are these?".into(),
                },
            ],
        ),
        Message {
            metadata: Some(Map::new()),
            ..Message::blocks(
                Role::Assistant,
                vec![
                    Block::Other {
                        raw: json!({"type": "future_block", "payload": {"x": [1, {"y": "z"}]}, "a": 1}),
                    },
                    Block::Text { text: " ".into() },
                ],
            )
        },
        Message::text(Role::System, "system text"),
        Message::blocks(
            Role::System,
            vec![Block::Text {
                text: "system block".into(),
            }],
        ),
    ];
    let mut batch = complete(messages.clone());
    batch[4].status = MessageStatus::Partial;
    s.append(T, &id, batch).await.unwrap();
    let stored = all_messages(s, T, &id).await;
    assert_eq!(stored.len(), messages.len());
    for (st, m) in stored.iter().zip(&messages) {
        assert_eq!(
            st.message.to_json().to_string(),
            m.to_json().to_string(),
            "seq {}",
            st.seq
        );
        assert_eq!(&st.message, m);
    }
    assert_eq!(stored[4].status, MessageStatus::Partial);
    assert_eq!(stored[0].status, MessageStatus::Complete);
    // The window gives the same messages back.
    let w = s.context_window(T, &id, &Policy::default()).await.unwrap();
    for h in &w.messages {
        assert_eq!(h.message, messages[h.index - 1]);
    }
}

async fn invalid_messages_rejected(s: &dyn Store) {
    let id = new_conv(s).await;
    s.append(T, &id, complete(vec![user("ok")])).await.unwrap();
    let bad = [
        user(""),
        user("   \n"),
        Message::blocks(Role::Assistant, Vec::new()),
        Message::blocks(
            Role::Assistant,
            vec![Block::Thinking {
                thinking: "only thinking".into(),
                signature: None,
            }],
        ),
        Message::blocks(
            Role::User,
            vec![Block::Other {
                raw: json!({"type": "tool_use"}),
            }],
        ),
    ];
    for m in bad {
        // Alone, and in a batch with a good message: nothing is written either way.
        for batch in [
            vec![NewMessage::complete(m.clone())],
            vec![
                NewMessage::complete(user("good")),
                NewMessage::complete(m.clone()),
            ],
        ] {
            match s.append(T, &id, batch).await {
                Err(StoreError::Invalid(_)) => {}
                other => panic!("{m:?}: expected Invalid, got {other:?}"),
            }
        }
        match s
            .update_message(T, &id, 1, NewMessage::complete(m.clone()))
            .await
        {
            Err(StoreError::Invalid(_)) => {}
            other => panic!("update {m:?}: expected Invalid, got {other:?}"),
        }
    }
    let msgs = all_messages(s, T, &id).await;
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].message, user("ok"));
    let c = s.get_conversation(T, &id).await.unwrap();
    assert_eq!((c.message_count, c.last_seq), (1, 1));
    // Every method still works on the conversation.
    s.context_window(T, &id, &Policy::default()).await.unwrap();
    // Text columns cannot hold NUL on every database: rejected the same way everywhere.
    match s
        .append(T, &id, vec![with_id(user("x"), "nul\u{0}id")])
        .await
    {
        Err(StoreError::Invalid(_)) => {}
        other => panic!("NUL client id: expected Invalid, got {other:?}"),
    }
    match s
        .create_conversation(
            T,
            NewConversation {
                title: Some("a\u{0}b".into()),
                ..NewConversation::default()
            },
        )
        .await
    {
        Err(StoreError::Invalid(_)) => {}
        other => panic!("NUL title: expected Invalid, got {other:?}"),
    }
    assert_not_found(s.get_conversation(T, "nul\u{0}").await, "NUL id");
    assert_not_found(s.get_conversation("t\u{0}", &id).await, "NUL tenant");
}

// ---------------------------------------------------------------------------------------------
// Context windows
// ---------------------------------------------------------------------------------------------

/// Random conversations, appended in random chunks; after each chunk, random policies (and a
/// fixed set of stable ones, so their persisted state advances step by step) are checked
/// against the selection over the whole conversation in memory.
async fn context_window_matches_memory(s: &dyn Store) {
    let seed = std::env::var("RECALL_TEST_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20240601u64);
    let mut rng = Rng::new(seed);
    for round in 0..10 {
        let id = new_conv(s).await;
        let n = rng.range(20, 140) as usize;
        let msgs = common::conversation(&mut rng, n);
        let stable: Vec<Policy> = (0..3)
            .map(|_| {
                let mut p = common::policy(&mut rng);
                p.trim = TrimMode::Stable;
                if p.max_tokens.is_none() && p.max_chars.is_none() {
                    p.max_tokens = Some(rng.range(50, 3000));
                }
                p
            })
            .collect();
        let mut i = 0;
        while i < msgs.len() {
            let take = (rng.range(1, 25) as usize).min(msgs.len() - i);
            s.append(T, &id, complete(msgs[i..i + take].to_vec()))
                .await
                .unwrap();
            i += take;
            let what = format!("seed {seed} round {round} after {i} messages");
            for p in &stable {
                check_window(s, T, &id, p, &what).await;
            }
            for _ in 0..3 {
                let p = common::policy(&mut rng);
                check_window(s, T, &id, &p, &what).await;
            }
        }
    }
}

/// Selection over a window must not stop early because a tool_use without a result (stripped
/// by recall-core's repair) costs less than its stored figures.
async fn orphan_tool_use_does_not_shrink_window(s: &dyn Store) {
    let id = new_conv(s).await;
    let mut msgs = Vec::new();
    for i in 0..10 {
        msgs.push(user(&format!("question {i}")));
        msgs.push(assistant(&format!("answer {i}")));
    }
    msgs.push(user("run the big tool"));
    // An interrupted tool call: a huge input, never answered.
    msgs.push(Message::blocks(
        Role::Assistant,
        vec![Block::ToolUse {
            id: "toolu_lost".into(),
            name: "run_code".into(),
            input: json!({"code": "x = 1\n".repeat(500)}),
        }],
    ));
    msgs.push(user("never mind, what's 2+2?"));
    s.append(T, &id, complete(msgs)).await.unwrap();
    for t in Tokenizer::ALL {
        for max in [40, 80, 150, 400] {
            let p = Policy {
                max_tokens: Some(max),
                tokenizer: t,
                ..Policy::default()
            };
            check_window(s, T, &id, &p, "orphan tool_use").await;
        }
        let p = Policy {
            max_chars: Some(200),
            tokenizer: t,
            ..Policy::default()
        };
        check_window(s, T, &id, &p, "orphan tool_use (chars)").await;
    }
    // The newest message an unanswered tool call (an agent loop mid-turn).
    s.append(
        T,
        &id,
        complete(vec![Message::blocks(
            Role::Assistant,
            vec![
                Block::Text {
                    text: "let me check".into(),
                },
                Block::ToolUse {
                    id: "toolu_pending".into(),
                    name: "search_documents".into(),
                    input: json!({"q": "y ".repeat(800)}),
                },
            ],
        )]),
    )
    .await
    .unwrap();
    for max in [30, 60, 120] {
        let p = Policy {
            max_tokens: Some(max),
            ..Policy::default()
        };
        check_window(s, T, &id, &p, "pending tool_use").await;
    }
}

/// The conversation read with its window is the conversation and the window read apart: with
/// no messages, with system messages, and for every kind of limit.
async fn conversation_window_agrees(s: &dyn Store) {
    let new = NewConversation {
        system_prompt: Some("be brief".into()),
        ..NewConversation::default()
    };
    let id = s.create_conversation(T, new).await.unwrap().id;
    let (conv, w) = s
        .conversation_window(T, &id, &Policy::default())
        .await
        .unwrap();
    assert_eq!(conv, s.get_conversation(T, &id).await.unwrap());
    assert!(w.messages.is_empty() && w.system_parts.is_empty() && w.older == 0);
    let mut msgs = vec![Message::text(Role::System, "rule one")];
    for i in 0..40 {
        msgs.push(user(&format!("question {i}")));
        msgs.push(assistant(&format!(
            "answer {i} with a few more words in it"
        )));
    }
    msgs.push(Message::text(Role::System, "rule two"));
    s.append(T, &id, complete(msgs)).await.unwrap();
    let policies = [
        Policy::default(),
        Policy {
            max_tokens: Some(100),
            ..Policy::default()
        },
        Policy {
            max_chars: Some(300),
            max_turns: Some(3),
            ..Policy::default()
        },
        Policy {
            max_tokens: Some(120),
            trim: TrimMode::Stable,
            ..Policy::default()
        },
    ];
    for p in &policies {
        let (conv, w) = s.conversation_window(T, &id, p).await.unwrap();
        assert_eq!(conv, s.get_conversation(T, &id).await.unwrap(), "{p:?}");
        let apart = s.context_window(T, &id, p).await.unwrap();
        assert_eq!(w.system_parts, vec!["rule one", "rule two"], "{p:?}");
        assert_eq!(w.system_parts, apart.system_parts, "{p:?}");
        assert_eq!(w.older, apart.older, "{p:?}");
        assert_eq!(w.stable_start, apart.stable_start, "{p:?}");
        let seqs =
            |w: &recall_store::Window| w.messages.iter().map(|h| h.index).collect::<Vec<_>>();
        assert_eq!(seqs(&w), seqs(&apart), "{p:?}");
        assert_eq!(w.older + w.messages.len(), 80, "{p:?}");
        check_window(s, T, &id, p, "conversation_window").await;
    }
    assert_not_found(
        s.conversation_window("other", &id, &Policy::default())
            .await,
        "conversation_window of another tenant",
    );
}

/// The store reads a window whose size follows the budget, not the conversation.
async fn context_window_is_bounded(s: &dyn Store) {
    let id = new_conv(s).await;
    let mut rng = Rng::new(3);
    let mut msgs = Vec::with_capacity(2000);
    for i in 0..1000 {
        msgs.push(user(&format!(
            "question {i}: {}",
            common::text(&mut rng, 10)
        )));
        msgs.push(assistant(&common::text(&mut rng, 30)));
    }
    for chunk in msgs.chunks(500) {
        s.append(T, &id, complete(chunk.to_vec())).await.unwrap();
    }
    for t in Tokenizer::ALL {
        for trim in [TrimMode::Sliding, TrimMode::Stable] {
            let p = Policy {
                max_tokens: Some(2000),
                tokenizer: t,
                trim,
                ..Policy::default()
            };
            let w = s.context_window(T, &id, &p).await.unwrap();
            assert!(
                w.messages.len() < 200,
                "{t} {trim:?}: read {} of 2000 messages for a 2000-token budget",
                w.messages.len()
            );
            assert_eq!(w.older + w.messages.len(), 2000);
            check_window(s, T, &id, &p, "bounded").await;
        }
    }
    let p = Policy {
        max_turns: Some(5),
        ..Policy::default()
    };
    let w = s.context_window(T, &id, &p).await.unwrap();
    assert!(
        w.messages.len() <= 14,
        "read {} for 5 turns",
        w.messages.len()
    );
    check_window(s, T, &id, &p, "bounded turns").await;
    let p = Policy {
        max_chars: Some(3000),
        ..Policy::default()
    };
    let w = s.context_window(T, &id, &p).await.unwrap();
    assert!(
        w.messages.len() < 100,
        "read {} for 3000 chars",
        w.messages.len()
    );
    check_window(s, T, &id, &p, "bounded chars").await;
}

// ---------------------------------------------------------------------------------------------
// Stable window state
// ---------------------------------------------------------------------------------------------

/// Stable policies over every cost measure: o200k, cl100k and chars4 token budgets, a
/// character budget; low-water marks that move the start often and seldom.
fn stable_policies() -> Vec<Policy> {
    let stable = |tokenizer, max_tokens, max_chars, low_water| Policy {
        max_tokens,
        max_chars,
        tokenizer,
        trim: TrimMode::Stable,
        low_water,
        ..Policy::default()
    };
    vec![
        stable(Tokenizer::O200k, Some(1500), None, 0.6),
        stable(Tokenizer::Cl100k, Some(1000), Some(50), 0.5),
        stable(Tokenizer::Chars4, Some(2500), None, 0.8),
        stable(Tokenizer::O200k, None, Some(6000), 0.3),
    ]
}

/// The only stable window row of a conversation.
async fn only_row(raw: Raw<'_>, id: &str, what: &str) -> StableRow {
    let rows = raw.stable_rows(id).await;
    assert_eq!(rows.len(), 1, "{what}: stable rows {rows:?}");
    rows.into_iter().next().expect("one row")
}

/// Checks the stored row of `policy`'s window against the pure fold over the whole
/// conversation, and that it is current (its last seq is the conversation's).
async fn check_row(
    s: &dyn Store,
    raw: Raw<'_>,
    id: &str,
    policy: &Policy,
    what: &str,
) -> StableRow {
    let row = only_row(raw, id, what).await;
    let conv = s.get_conversation(T, id).await.unwrap();
    assert_eq!(row.3, conv.last_seq, "{what}: row not current {row:?}");
    let all = all_messages(s, T, id).await;
    let (start, cost) = stable_by_fold(&all, policy).expect("history");
    assert_eq!(
        (row.1, row.2),
        (start, cost),
        "{what}: stored (start, cost) != pure fold\npolicy: {policy:?}"
    );
    row
}

/// Once a context build has created a stable window, every append advances its stored state
/// (no context build in between) to what the pure fold gives for the whole conversation:
/// appends that fit only grow its cost, appends that overflow move its start.
async fn stable_window_advanced_on_append(s: &dyn Store, raw: Raw<'_>) {
    let mut rng = Rng::new(4242);
    for (n, p) in stable_policies().into_iter().enumerate() {
        let id = new_conv(s).await;
        let msgs = common::conversation(&mut rng, 30);
        s.append(T, &id, complete(msgs)).await.unwrap();
        assert!(
            raw.stable_rows(&id).await.is_empty(),
            "append creates no window"
        );
        check_window(s, T, &id, &p, "first build").await;
        let mut row = check_row(s, raw, &id, &p, "after the first build").await;
        let (mut moved, mut grew) = (0, 0);
        for step in 0..60 {
            let what = format!("policy {n} step {step}");
            // 1 to 4 messages: turns, tool exchanges, system messages, documents.
            let k = rng.range(1, 4) as usize;
            let batch = common::conversation(&mut rng, k);
            s.append(T, &id, complete(batch)).await.unwrap();
            let next = check_row(s, raw, &id, &p, &what).await;
            if next.1 != row.1 {
                moved += 1;
            } else if next.2 != row.2 {
                grew += 1;
            }
            row = next;
            if step % 7 == 6 {
                // A context build finds the window current and uses it as it is.
                check_window(s, T, &id, &p, &what).await;
                assert_eq!(
                    only_row(raw, &id, &what).await,
                    row,
                    "{what}: build rewrote"
                );
            }
        }
        // Both ways an append takes were taken.
        assert!(moved >= 2, "policy {n}: the window moved {moved} times");
        assert!(
            grew >= 2,
            "policy {n}: the window grew in place {grew} times"
        );
    }
}

/// A window left behind (as recall versions that only advanced windows at context builds
/// would leave it) is not advanced by appends; the next context build catches it up.
async fn stale_stable_window_caught_up(s: &dyn Store, raw: Raw<'_>) {
    let mut rng = Rng::new(99);
    for p in stable_policies() {
        let id = new_conv(s).await;
        s.append(T, &id, complete(common::conversation(&mut rng, 40)))
            .await
            .unwrap();
        check_window(s, T, &id, &p, "first build").await;
        let old = check_row(s, raw, &id, &p, "first build").await;
        s.append(T, &id, complete(common::conversation(&mut rng, 20)))
            .await
            .unwrap();
        check_row(s, raw, &id, &p, "advanced").await;
        raw.set_stable_row(&id, &old).await;
        for _ in 0..3 {
            s.append(T, &id, complete(common::conversation(&mut rng, 15)))
                .await
                .unwrap();
            assert_eq!(
                only_row(raw, &id, "stale").await,
                old,
                "a stale window moved"
            );
        }
        check_window(s, T, &id, &p, "catch-up").await;
        check_row(s, raw, &id, &p, "caught up").await;
        s.append(T, &id, complete(common::conversation(&mut rng, 10)))
            .await
            .unwrap();
        check_row(s, raw, &id, &p, "advanced after the catch-up").await;
    }
}

/// A streamed reply is appended as partial and rewritten as it grows: each rewrite steps the
/// windows that counted it back to their state before it (kept, not dropped), and the next
/// context build catches them up to exactly what the pure fold over the whole conversation
/// gives, the reply at its final size.
async fn stable_window_steps_back_on_a_streamed_reply(s: &dyn Store, raw: Raw<'_>) {
    let mut rng = Rng::new(31);
    for (n, p) in stable_policies().into_iter().enumerate() {
        let id = new_conv(s).await;
        s.append(T, &id, complete(common::conversation(&mut rng, 30)))
            .await
            .unwrap();
        check_window(s, T, &id, &p, "first build").await;
        for turn in 0..12 {
            let what = format!("policy {n} turn {turn}");
            s.append(T, &id, complete(vec![user("what next?")]))
                .await
                .unwrap();
            let before = only_row(raw, &id, &what).await;
            let reply = |k: usize| assistant(&"streamed words ".repeat(1 + k * (turn + 1) * 9));
            let seq = s.append(T, &id, vec![partial(reply(0))]).await.unwrap()[0].seq;
            for k in 1..4 {
                s.update_message(T, &id, seq, partial(reply(k)))
                    .await
                    .unwrap();
                let row = only_row(raw, &id, &what).await;
                assert!(
                    row.3 < seq,
                    "{what}: the window still counts the old size {row:?}"
                );
                assert_eq!(
                    row, before,
                    "{what}: stepped back to its state before the reply"
                );
            }
            s.update_message(T, &id, seq, NewMessage::complete(reply(4)))
                .await
                .unwrap();
            check_window(s, T, &id, &p, &what).await;
            check_row(s, raw, &id, &p, &what).await;
        }
    }
}

/// Updating a message's size or clearing the conversation discards the window; appends do
/// not recreate it, and the next context build starts it over from the messages present.
async fn stable_window_reset_by_update_and_clear(s: &dyn Store, raw: Raw<'_>) {
    let mut rng = Rng::new(7);
    let p = stable_policies().remove(0);
    let id = new_conv(s).await;
    let mut msgs = vec![user("first question"), assistant("first answer")];
    msgs.extend(common::conversation(&mut rng, 40));
    s.append(T, &id, complete(msgs)).await.unwrap();
    check_window(s, T, &id, &p, "first build").await;
    check_row(s, raw, &id, &p, "first build").await;

    s.update_message(
        T,
        &id,
        2,
        NewMessage::complete(assistant(&"longer ".repeat(400))),
    )
    .await
    .unwrap();
    assert!(
        raw.stable_rows(&id).await.is_empty(),
        "update kept the window"
    );
    s.append(T, &id, complete(common::conversation(&mut rng, 5)))
        .await
        .unwrap();
    assert!(
        raw.stable_rows(&id).await.is_empty(),
        "append recreated the window"
    );
    check_window(s, T, &id, &p, "after update").await;
    check_row(s, raw, &id, &p, "rebuilt after update").await;
    s.append(T, &id, complete(common::conversation(&mut rng, 5)))
        .await
        .unwrap();
    check_row(s, raw, &id, &p, "advanced after update").await;

    s.clear_conversation(T, &id).await.unwrap();
    assert!(
        raw.stable_rows(&id).await.is_empty(),
        "clear kept the window"
    );
    s.append(T, &id, complete(common::conversation(&mut rng, 30)))
        .await
        .unwrap();
    assert!(
        raw.stable_rows(&id).await.is_empty(),
        "append recreated the window"
    );
    check_window(s, T, &id, &p, "after clear").await;
    let row = check_row(s, raw, &id, &p, "rebuilt after clear").await;
    let first = all_messages(s, T, &id).await[0].seq;
    assert!(row.1 >= first, "window starts before the clear: {row:?}");
    s.append(T, &id, complete(common::conversation(&mut rng, 30)))
        .await
        .unwrap();
    check_row(s, raw, &id, &p, "advanced after clear").await;
}

suite!(
    create_get_list,
    tenant_scoping,
    delete_conversation,
    clear_conversation,
    append_single_and_batch,
    idempotent_client_ids,
    many_client_ids_in_one_batch,
    client_id_conflicts,
    message_paging,
    update_message,
    system_messages,
    figures_match_core,
    round_trip_every_block,
    invalid_messages_rejected,
    context_window_matches_memory,
    orphan_tool_use_does_not_shrink_window,
    context_window_is_bounded,
    conversation_window_agrees,
);

/// Tests that also read tables directly.
macro_rules! raw_suite {
    ($($name:ident),* $(,)?) => {
        mod sqlite_state {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = crate::common::sqlite().await;
                    super::$name(&db.store, crate::common::Raw::Sqlite(db.store.pool())).await;
                }
            )*
        }
        mod postgres_state {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let Some(db) = crate::common::pg().await else { return };
                    super::$name(&db.store, crate::common::Raw::Pg(db.store.pool())).await;
                }
            )*
        }
    };
}

raw_suite!(
    stable_window_advanced_on_append,
    stale_stable_window_caught_up,
    stable_window_reset_by_update_and_clear,
    stable_window_steps_back_on_a_streamed_reply,
);
