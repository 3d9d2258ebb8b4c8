//! Forks on both databases (see `fork_plan`): a fork at every position of a random
//! conversation reads the same windows as a conversation holding the same messages (sliding
//! and stable), forks of forks, paging across the fork point, delete/clear/update rules,
//! redaction (the text leaves rows, search and, after `compact`, the SQLite file's bytes),
//! tenant isolation, and appends to a parent and its fork by two processes at once.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};

use common::{all_messages, check_window, Rng};
use recall_core::extract::measured_text;
use recall_core::message::{Message, Role};
use recall_core::policy::{Policy, TrimMode};
use recall_core::tokens::Tokenizer;
use recall_store::{
    ConversationUpdate, MessageStatus, NewConversation, NewFork, NewMessage, Store, StoreError,
    Window, DEFAULT_TENANT, REDACTED_TEXT,
};

const T: &str = DEFAULT_TENANT;

fn complete(ms: &[Message]) -> Vec<NewMessage> {
    ms.iter().cloned().map(NewMessage::complete).collect()
}

async fn new_conv(s: &dyn Store, system_prompt: Option<&str>) -> String {
    let new = NewConversation {
        system_prompt: system_prompt.map(Into::into),
        title: Some("parent".into()),
        ..NewConversation::default()
    };
    s.create_conversation(T, new).await.expect("create").id
}

/// Appends `ms` in chunks of random sizes.
async fn append_chunks(s: &dyn Store, id: &str, ms: &[Message], rng: &mut Rng) {
    let mut i = 0;
    while i < ms.len() {
        let take = (rng.range(1, 9) as usize).min(ms.len() - i);
        s.append(T, id, complete(&ms[i..i + take])).await.unwrap();
        i += take;
    }
}

/// What a context is made of, comparable: a window's system parts, messages (seq, message,
/// measure), older count and stable start.
fn view(w: &Window) -> String {
    format!(
        "{:?} | {:?} | older {} | stable {:?}",
        w.system_parts,
        w.messages
            .iter()
            .map(|h| (h.index, h.message.to_json().to_string(), h.measure))
            .collect::<Vec<_>>(),
        w.older,
        w.stable_start
    )
}

fn policies(rng: &mut Rng) -> Vec<Policy> {
    let mut out = vec![Policy::default()];
    for t in [Tokenizer::O200k, Tokenizer::Chars4] {
        for budget in [60, 400] {
            out.push(Policy {
                max_tokens: Some(budget),
                tokenizer: t,
                trim: TrimMode::Stable,
                ..Policy::default()
            });
        }
    }
    out.push(Policy {
        max_chars: Some(700),
        trim: TrimMode::Stable,
        low_water: 0.5,
        ..Policy::default()
    });
    for _ in 0..4 {
        out.push(common::policy(rng));
    }
    out
}

/// The two conversations read the same windows under every policy, and their counts agree.
async fn same_windows(s: &dyn Store, a: &str, b: &str, ps: &[Policy], what: &str) {
    for p in ps {
        let (ca, wa) = s.conversation_window(T, a, p).await.unwrap();
        let (cb, wb) = s.conversation_window(T, b, p).await.unwrap();
        assert_eq!(view(&wa), view(&wb), "{what}: windows under {p:?}");
        assert_eq!(
            (ca.message_count, ca.last_seq, ca.total_tokens),
            (cb.message_count, cb.last_seq, cb.total_tokens),
            "{what}: counts"
        );
    }
    let ma = all_messages(s, T, a).await;
    let mb = all_messages(s, T, b).await;
    let strip = |ms: Vec<recall_store::StoredMessage>| {
        ms.into_iter()
            .map(|m| (m.seq, m.message, m.status, m.figures))
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(ma), strip(mb), "{what}: messages");
}

/// A fork at every position of a random conversation, continued with messages of its own,
/// reads what a conversation built by appending the same messages reads: after the fork and
/// after every chunk appended to both.
async fn fork_at_every_position(s: &dyn Store) {
    let mut rng = Rng::new(18);
    let mut parent_msgs = vec![Message::text(Role::System, "house rules")];
    parent_msgs.extend(common::conversation(&mut rng, 36));
    let n = parent_msgs.len() as i64;
    let parent = new_conv(s, Some("be brief")).await;
    append_chunks(s, &parent, &parent_msgs, &mut rng).await;
    let ps = policies(&mut rng);
    // Stable windows current at the tip: a fork there starts with them.
    for p in &ps {
        s.context_window(T, &parent, p).await.unwrap();
    }
    for k in 0..=n {
        let fork = s
            .fork_conversation(T, &parent, k, NewFork::default())
            .await
            .unwrap();
        assert_eq!(
            fork.forked_from,
            Some(recall_store::ForkPoint {
                conversation_id: parent.clone(),
                seq: k
            })
        );
        assert_eq!(fork.title.as_deref(), Some("parent"));
        assert_eq!(fork.system_prompt.as_deref(), Some("be brief"));
        let copy = new_conv(s, Some("be brief")).await;
        s.append(T, &copy, complete(&parent_msgs[..k as usize]))
            .await
            .unwrap();
        let what = format!("fork at {k}");
        same_windows(s, &fork.id, &copy, &ps, &what).await;
        let more = common::conversation(&mut rng, 14);
        let mut i = 0;
        while i < more.len() {
            let take = (rng.range(1, 6) as usize).min(more.len() - i);
            let a = s
                .append(T, &fork.id, complete(&more[i..i + take]))
                .await
                .unwrap();
            let b = s
                .append(T, &copy, complete(&more[i..i + take]))
                .await
                .unwrap();
            assert_eq!(a, b, "{what}: seqs of an append");
            i += take;
            same_windows(s, &fork.id, &copy, &ps, &format!("{what} + {i}")).await;
        }
        check_window(s, T, &fork.id, &ps[1], &what).await;
    }
    // The parent is unchanged by its forks.
    assert_eq!(all_messages(s, T, &parent).await.len() as i64, n);
    let forks = s.forks(T, &parent).await.unwrap();
    assert_eq!(
        forks
            .iter()
            .map(|f| f.forked_from.as_ref().unwrap().seq)
            .collect::<Vec<_>>(),
        (0..=n).collect::<Vec<_>>()
    );
}

/// Forks of forks, at points in each ancestor, read like copies; a fork of a fork at a point
/// of its grandparent is made on the grandparent.
async fn forks_of_forks(s: &dyn Store) {
    let mut rng = Rng::new(7);
    let ps = policies(&mut rng);
    let a_msgs = common::conversation(&mut rng, 30);
    let a = new_conv(s, None).await;
    append_chunks(s, &a, &a_msgs, &mut rng).await;
    let b = s
        .fork_conversation(
            T,
            &a,
            20,
            NewFork {
                title: Some("b".into()),
            },
        )
        .await
        .unwrap();
    assert_eq!(b.title.as_deref(), Some("b"));
    let b_msgs = common::conversation(&mut rng, 25);
    append_chunks(s, &b.id, &b_msgs, &mut rng).await;
    let mut b_all: Vec<Message> = a_msgs[..20].to_vec();
    b_all.extend(b_msgs.iter().cloned());
    for (at, on) in [(33, &b.id), (20, &a), (12, &a), (45, &b.id)] {
        let c = s
            .fork_conversation(T, &b.id, at, NewFork::default())
            .await
            .unwrap();
        assert_eq!(
            &c.forked_from.as_ref().unwrap().conversation_id,
            on,
            "fork at {at}"
        );
        let c_msgs = common::conversation(&mut rng, 10);
        append_chunks(s, &c.id, &c_msgs, &mut rng).await;
        // And a fork of that fork, inside its parent's rows.
        let d = s
            .fork_conversation(T, &c.id, at + 4, NewFork::default())
            .await
            .unwrap();
        let d_msgs = common::conversation(&mut rng, 8);
        append_chunks(s, &d.id, &d_msgs, &mut rng).await;

        let mut c_all: Vec<Message> = b_all[..at as usize].to_vec();
        c_all.extend(c_msgs.iter().cloned());
        let mut d_all: Vec<Message> = c_all[..(at + 4) as usize].to_vec();
        d_all.extend(d_msgs.iter().cloned());
        for (conv, all) in [(&c.id, &c_all), (&d.id, &d_all)] {
            let copy = new_conv(s, None).await;
            append_chunks(s, &copy, all, &mut rng).await;
            same_windows(s, conv, &copy, &ps, &format!("fork of fork at {at}")).await;
        }
    }
}

/// Pages of a fork cross its fork points in order, at every page size.
async fn paging_across_fork_points(s: &dyn Store) {
    let mut rng = Rng::new(3);
    let a = new_conv(s, None).await;
    append_chunks(s, &a, &common::conversation(&mut rng, 12), &mut rng).await;
    let b = s
        .fork_conversation(T, &a, 7, NewFork::default())
        .await
        .unwrap();
    append_chunks(s, &b.id, &common::conversation(&mut rng, 6), &mut rng).await;
    let c = s
        .fork_conversation(T, &b.id, 10, NewFork::default())
        .await
        .unwrap();
    append_chunks(s, &c.id, &common::conversation(&mut rng, 5), &mut rng).await;
    let all = all_messages(s, T, &c.id).await;
    assert_eq!(
        all.iter().map(|m| m.seq).collect::<Vec<_>>(),
        (1..=15).collect::<Vec<_>>()
    );
    for size in 1..=16u32 {
        let mut after = 0;
        let mut seen = Vec::new();
        loop {
            let page = s.messages(T, &c.id, after, size).await.unwrap();
            assert!(page.len() <= size as usize);
            let Some(last) = page.last() else { break };
            after = last.seq;
            seen.extend(page);
        }
        assert_eq!(seen, all, "page size {size}");
    }
}

fn has_forks<T: std::fmt::Debug>(r: Result<T, StoreError>, what: &str) {
    match r {
        Err(StoreError::HasForks { .. }) => {}
        other => panic!("{what}: expected HasForks, got {other:?}"),
    }
}

/// A parent with forks cannot be deleted (unless cascading) or cleared, and the messages its
/// forks read cannot be updated; later ones can. A cleared fork reads its parent no more.
async fn delete_clear_update_rules(s: &dyn Store) {
    let mut rng = Rng::new(11);
    let msgs = common::conversation(&mut rng, 20);
    let a = new_conv(s, None).await;
    s.append(T, &a, complete(&msgs)).await.unwrap();
    let b = s
        .fork_conversation(T, &a, 10, NewFork::default())
        .await
        .unwrap();
    s.append(T, &b.id, complete(&msgs[..3])).await.unwrap();
    let c = s
        .fork_conversation(T, &b.id, 12, NewFork::default())
        .await
        .unwrap();
    let before_b = all_messages(s, T, &b.id).await;

    has_forks(s.delete_conversation(T, &a, false).await, "delete parent");
    has_forks(s.clear_conversation(T, &a).await, "clear parent");
    has_forks(
        s.update_message(
            T,
            &a,
            10,
            NewMessage::complete(Message::text(Role::User, "x")),
        )
        .await,
        "update a message a fork reads",
    );
    // Nothing changed.
    assert_eq!(all_messages(s, T, &a).await.len(), 20);
    assert_eq!(all_messages(s, T, &b.id).await, before_b);
    // After the fork point the parent's messages are its own.
    s.update_message(
        T,
        &a,
        11,
        NewMessage::complete(Message::text(Role::User, "mine")),
    )
    .await
    .unwrap();
    assert_eq!(all_messages(s, T, &b.id).await, before_b);

    // Clearing the leaf fork: it becomes a conversation of its own, seq keeps counting.
    s.append(T, &c.id, complete(&msgs[..2])).await.unwrap();
    assert_eq!(s.clear_conversation(T, &c.id).await.unwrap(), 2);
    let cleared = s.get_conversation(T, &c.id).await.unwrap();
    assert_eq!(cleared.forked_from, None);
    assert_eq!((cleared.message_count, cleared.last_seq), (0, 14));
    assert!(all_messages(s, T, &c.id).await.is_empty());
    s.append(T, &c.id, complete(&msgs[..1])).await.unwrap();
    assert_eq!(all_messages(s, T, &c.id).await[0].seq, 15);
    assert_eq!(all_messages(s, T, &b.id).await, before_b);

    // Cascade deletes the parent and every fork below it.
    let d = s
        .fork_conversation(T, &b.id, 5, NewFork::default())
        .await
        .unwrap();
    assert_eq!(
        d.forked_from.as_ref().unwrap().conversation_id,
        a,
        "made on the holder"
    );
    assert_eq!(s.delete_conversation(T, &a, true).await.unwrap(), 3);
    for id in [&a, &b.id, &d.id] {
        assert!(matches!(
            s.get_conversation(T, id).await,
            Err(StoreError::ConversationNotFound(_))
        ));
    }
    // The detached fork lives on.
    assert_eq!(all_messages(s, T, &c.id).await.len(), 1);
    assert_eq!(s.delete_conversation(T, &c.id, false).await.unwrap(), 1);
}

/// Bad fork points and other tenants are refused; nothing is created.
async fn fork_refusals_and_tenants(s: &dyn Store) {
    let a = new_conv(s, None).await;
    s.append(T, &a, complete(&[Message::text(Role::User, "hello")]))
        .await
        .unwrap();
    for at in [-1, 2, i64::MAX] {
        match s.fork_conversation(T, &a, at, NewFork::default()).await {
            Err(StoreError::Invalid(m)) => assert!(m.contains("at:"), "{m}"),
            other => panic!("fork at {at}: {other:?}"),
        }
    }
    assert!(s.forks(T, &a).await.unwrap().is_empty());
    let nf = |r: Result<_, StoreError>, what: &str| match r {
        Err(e) if e.is_not_found() => {}
        other => panic!("{what}: {:?}", other.map(|_: ()| ())),
    };
    nf(
        s.fork_conversation("other", &a, 1, NewFork::default())
            .await
            .map(|_| ()),
        "fork",
    );
    nf(s.forks("other", &a).await.map(|_| ()), "forks");
    nf(s.redact_message("other", &a, 1).await, "redact");
    nf(
        s.update_conversation("other", &a, ConversationUpdate::default())
            .await
            .map(|_| ()),
        "update",
    );
    nf(
        s.delete_conversation("other", &a, true).await.map(|_| ()),
        "delete",
    );
    let f = s
        .fork_conversation(T, &a, 1, NewFork::default())
        .await
        .unwrap();
    nf(
        s.messages("other", &f.id, 0, 10).await.map(|_| ()),
        "messages of a fork",
    );
    nf(
        s.conversation_window("other", &f.id, &Policy::default())
            .await
            .map(|_| ()),
        "window of a fork",
    );
    nf(
        s.redact_message(T, &a, 2).await,
        "redact a seq past the end",
    );
    assert_eq!(s.get_conversation(T, &a).await.unwrap().message_count, 1);
}

/// A reply being streamed is stored partial and updated when it ends: a fork can start
/// before it, not after it, so the update that completes it is never refused.
async fn fork_at_a_partial_reply(s: &dyn Store) {
    let a = new_conv(s, None).await;
    s.append(T, &a, complete(&[Message::text(Role::User, "hello")]))
        .await
        .unwrap();
    let partial = |text: &str, status| NewMessage {
        message: Message::text(Role::Assistant, text),
        status,
        figures: None,
    };
    s.append(T, &a, vec![partial("Hel", MessageStatus::Partial)])
        .await
        .unwrap();
    match s.fork_conversation(T, &a, 2, NewFork::default()).await {
        Err(e @ StoreError::PartialForkPoint { .. }) => {
            let m = e.to_string();
            assert!(
                m.contains("message 2 is partial") && m.contains("fork at 1"),
                "{m}"
            );
        }
        other => panic!("fork at a partial reply: {other:?}"),
    }
    assert!(s.forks(T, &a).await.unwrap().is_empty(), "nothing was made");
    let before = s
        .fork_conversation(T, &a, 1, NewFork::default())
        .await
        .unwrap();
    // The reply ends: its update is not refused, and the fork before it does not see it.
    s.update_message(T, &a, 2, partial("Hello!", MessageStatus::Complete))
        .await
        .unwrap();
    let seen = all_messages(s, T, &before.id).await;
    assert_eq!(seen.len(), 1);
    let after = s
        .fork_conversation(T, &a, 2, NewFork::default())
        .await
        .unwrap();
    let seen = all_messages(s, T, &after.id).await;
    assert_eq!(
        seen.last().unwrap().message,
        Message::text(Role::Assistant, "Hello!")
    );
}

/// Settings change; a policy change drops the stable windows.
async fn update_settings(s: &dyn Store) {
    let a = new_conv(s, Some("old prompt")).await;
    let mut meta = serde_json::Map::new();
    meta.insert("k".into(), serde_json::json!(1));
    let policy: recall_core::policy::ConversationPolicy =
        serde_json::from_value(serde_json::json!({"format": "xml", "max_tokens": 100})).unwrap();
    let up = ConversationUpdate {
        title: Some(None),
        system_prompt: Some(Some("new prompt".into())),
        metadata: Some(meta.clone()),
        policy: Some(Some(policy.clone())),
    };
    let c = s.update_conversation(T, &a, up).await.unwrap();
    assert_eq!(c.title, None);
    assert_eq!(c.system_prompt.as_deref(), Some("new prompt"));
    assert_eq!(c.metadata, meta);
    assert_eq!(c.policy, Some(policy));
    assert_eq!(c, s.get_conversation(T, &a).await.unwrap());
    // Leaving every field out changes nothing.
    let same = s
        .update_conversation(T, &a, ConversationUpdate::default())
        .await
        .unwrap();
    assert_eq!((same.title, same.system_prompt), (c.title, c.system_prompt));
    let bad = ConversationUpdate {
        title: Some(Some("nul\0".into())),
        ..ConversationUpdate::default()
    };
    assert!(matches!(
        s.update_conversation(T, &a, bad).await,
        Err(StoreError::Invalid(_))
    ));
}

/// Redacting a message a fork reads (asked through the fork): gone from both histories and
/// from search, seq and role kept, totals right (windows equal a copy's), recorded as the
/// status.
async fn redaction(s: &dyn Store) {
    let mut rng = Rng::new(5);
    let mut msgs = common::conversation(&mut rng, 16);
    msgs[4] = Message::text(Role::User, "my password is zebracorn42 please forget it");
    let a = new_conv(s, None).await;
    s.append(T, &a, complete(&msgs)).await.unwrap();
    let b = s
        .fork_conversation(T, &a, 10, NewFork::default())
        .await
        .unwrap();
    let more = common::conversation(&mut rng, 6);
    s.append(T, &b.id, complete(&more)).await.unwrap();
    let ps = policies(&mut rng);
    for p in &ps {
        s.context_window(T, &b.id, p).await.unwrap();
    }
    assert_eq!(
        s.search_messages(T, "zebracorn42", 10).await.unwrap().len(),
        1
    );

    s.redact_message(T, &b.id, 5).await.unwrap();
    for id in [&a, &b.id] {
        let all = all_messages(s, T, id).await;
        let m = &all[4];
        assert_eq!((m.seq, m.status), (5, MessageStatus::Redacted));
        assert_eq!(m.message.role, Role::User);
        assert_eq!(measured_text(&m.message), REDACTED_TEXT);
        assert!(all
            .iter()
            .all(|m| !measured_text(&m.message).contains("zebracorn42")));
    }
    assert!(s
        .search_messages(T, "zebracorn42", 10)
        .await
        .unwrap()
        .is_empty());
    assert!(s
        .search_messages(T, "password", 10)
        .await
        .unwrap()
        .is_empty());

    let mut copy_msgs: Vec<Message> = msgs[..10].to_vec();
    copy_msgs[4] = Message::text(Role::User, REDACTED_TEXT);
    copy_msgs.extend(more.iter().cloned());
    let copy = new_conv(s, None).await;
    s.append(T, &copy, complete(&copy_msgs)).await.unwrap();
    for p in &ps {
        let (_, wb) = s.conversation_window(T, &b.id, p).await.unwrap();
        let (_, wc) = s.conversation_window(T, &copy, p).await.unwrap();
        assert_eq!(view(&wb), view(&wc), "after redaction under {p:?}");
        check_window(s, T, &a, p, "parent after redaction").await;
    }
    // Again: the same outcome.
    s.redact_message(T, &a, 5).await.unwrap();
    assert_eq!(
        measured_text(&all_messages(s, T, &a).await[4].message),
        REDACTED_TEXT
    );
    s.compact().await.unwrap();
}

/// A redacted message keeps no client id in clear (it may carry user data), only what a
/// retry needs to be recognised: the same id again is a conflict, and the text is not
/// stored again, on a fork reading the message too (issue 33, item 11).
async fn redaction_keeps_only_a_hash_of_the_client_id(s: &dyn Store) {
    let a = new_conv(s, None).await;
    let cid = "ticket 4417 from jane.doe@example.com";
    let mut m = Message::text(Role::User, "my password is zebracorn42");
    m.id = Some(cid.to_string());
    s.append(T, &a, vec![NewMessage::complete(m.clone())])
        .await
        .unwrap();
    s.redact_message(T, &a, 1).await.unwrap();
    let stored = all_messages(s, T, &a).await;
    let kept = stored[0].message.id.clone().unwrap_or_default();
    assert!(kept.starts_with("redacted:"), "{kept}");
    assert!(!kept.contains("jane") && !kept.contains("4417"), "{kept}");
    // The client retries the original append: recognised, refused, nothing stored.
    let err = s
        .append(T, &a, vec![NewMessage::complete(m.clone())])
        .await
        .expect_err("a conflict");
    assert!(
        matches!(&err, StoreError::Conflict { seq: 1, .. }),
        "{err:?}"
    );
    assert_eq!(all_messages(s, T, &a).await.len(), 1);
    assert!(s
        .search_messages(T, "zebracorn42", 10)
        .await
        .unwrap()
        .is_empty());
    // Other ids are unaffected; redacting twice changes nothing more.
    let mut other = Message::text(Role::Assistant, "noted");
    other.id = Some("reply-1".into());
    s.append(T, &a, vec![NewMessage::complete(other)])
        .await
        .unwrap();
    s.redact_message(T, &a, 1).await.unwrap();
    let stored = all_messages(s, T, &a).await;
    assert_eq!(stored[0].message.id.as_deref(), Some(kept.as_str()));
    assert_eq!(stored[1].message.id.as_deref(), Some("reply-1"));
}

suite!(
    fork_at_every_position,
    forks_of_forks,
    paging_across_fork_points,
    delete_clear_update_rules,
    fork_refusals_and_tenants,
    fork_at_a_partial_reply,
    update_settings,
    redaction,
    redaction_keeps_only_a_hash_of_the_client_id,
);

/// Whether `needle` occurs in the file at `path` (a missing file holds nothing).
fn file_holds(path: &std::path::Path, needle: &[u8]) -> bool {
    std::fs::read(path).is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle))
}

/// After a redaction and `compact` (the documented checkpoint and vacuum), neither the SQLite
/// file nor its WAL holds the text, in any case; before it, the file did.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_file_forgets_redacted_text() {
    let db = common::sqlite().await;
    let s = &db.store;
    let a = new_conv(s, None).await;
    let secret = "Quokkasecret9731";
    let mut rng = Rng::new(9);
    let mut msgs = common::conversation(&mut rng, 40);
    msgs[7] = Message::text(Role::User, format!("remember {secret} for me"));
    msgs[8] = Message::text(Role::Assistant, "noted");
    s.append(T, &a, complete(&msgs)).await.unwrap();
    // Indexed for search, read into a stable window, forked.
    assert_eq!(s.search_messages(T, secret, 5).await.unwrap().len(), 1);
    let b = s
        .fork_conversation(T, &a, 20, NewFork::default())
        .await
        .unwrap();
    s.append(T, &b.id, complete(&msgs[..5])).await.unwrap();
    s.compact().await.unwrap();
    let wal = db.path.with_extension("db-wal");
    let lower = secret.to_lowercase();
    assert!(
        file_holds(&db.path, secret.as_bytes()),
        "the test must see the text first"
    );

    s.redact_message(T, &b.id, 8).await.unwrap();
    s.compact().await.unwrap();
    for (path, what) in [(&db.path, "file"), (&wal, "WAL")] {
        assert!(
            !file_holds(path, secret.as_bytes()),
            "the {what} still holds the text"
        );
        assert!(
            !file_holds(path, lower.as_bytes()),
            "the {what} still holds its words"
        );
    }
    assert!(s.search_messages(T, secret, 5).await.unwrap().is_empty());
    // The store still works.
    assert_eq!(all_messages(s, T, &b.id).await.len(), 25);
    check_window(s, T, &b.id, &Policy::default(), "after compact").await;
}

// ---------------------------------------------------------------------------------------------
// Two processes: one appends to a parent, the other to its fork, at the same time.
// ---------------------------------------------------------------------------------------------

const WORKER_URL: &str = "RECALL_FORK_WORKER_URL";
const PER_PROCESS: usize = 120;

/// Not a test of its own: the body of a child process (runs only when the parent test sets
/// `RECALL_FORK_WORKER_URL`). Waits for `go <mine> <other> <fork point>`, then appends to
/// `mine`, meeting the other process at its first message and halfway.
#[test]
fn fork_append_worker() {
    let Ok(url) = std::env::var(WORKER_URL) else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let store = recall_store::open(&url)
            .await
            .expect("worker opens the store");
        println!("\nready");
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).unwrap();
        let parts: Vec<&str> = line.split_whitespace().collect();
        let (mine, other, base) = (parts[1], parts[2], parts[3].parse::<i64>().unwrap());
        let mut last = 0;
        for i in 0..PER_PROCESS {
            let m = Message::text(Role::User, format!("{mine} message {i}"));
            let r = store
                .append(T, mine, vec![NewMessage::complete(m)])
                .await
                .unwrap();
            assert!(r[0].seq > last, "{r:?} after {last}");
            last = r[0].seq;
            if i == 0 || i == PER_PROCESS / 2 {
                let start = std::time::Instant::now();
                loop {
                    let theirs = store.get_conversation(T, other).await.unwrap().last_seq;
                    if theirs > base + i as i64 {
                        break;
                    }
                    assert!(
                        start.elapsed() < std::time::Duration::from_secs(60),
                        "never met"
                    );
                    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                }
            }
        }
        println!("done");
    });
}

struct Worker {
    child: Child,
    stdin: ChildStdin,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Worker {
    fn spawn(url: &str) -> Worker {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "fork_append_worker",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(WORKER_URL, url)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn worker");
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Worker {
            child,
            stdin,
            lines,
        }
    }

    fn expect_line(&mut self, want: &str) {
        for line in self.lines.by_ref() {
            if line.expect("worker stdout").trim_end() == want {
                return;
            }
        }
        let status = self.child.wait().unwrap();
        panic!("worker exited ({status}) before saying {want:?}");
    }
}

fn parent_and_fork_in_two_processes(url: &str) {
    let mut workers = [Worker::spawn(url), Worker::spawn(url)];
    for w in &mut workers {
        w.expect_line("ready");
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let store = rt.block_on(recall_store::open(url)).unwrap();
    let s = store.as_ref();
    let mut rng = Rng::new(1);
    let base_msgs = common::conversation(&mut rng, 30);
    let (parent, fork) = rt.block_on(async {
        let parent = new_conv(s, None).await;
        s.append(T, &parent, complete(&base_msgs)).await.unwrap();
        let fork = s
            .fork_conversation(T, &parent, 30, NewFork::default())
            .await
            .unwrap();
        (parent, fork.id)
    });
    for (w, (mine, other)) in workers.iter_mut().zip([(&parent, &fork), (&fork, &parent)]) {
        writeln!(w.stdin, "go {mine} {other} 30").unwrap();
        w.stdin.flush().unwrap();
    }
    for w in &mut workers {
        w.expect_line("done");
        assert!(w.child.wait().unwrap().success());
    }
    rt.block_on(async {
        for (id, other) in [(&parent, &fork), (&fork, &parent)] {
            let all = all_messages(s, T, id).await;
            let n = 30 + PER_PROCESS;
            assert_eq!(
                all.iter().map(|m| m.seq).collect::<Vec<_>>(),
                (1..=n as i64).collect::<Vec<_>>()
            );
            for (i, m) in all[30..].iter().enumerate() {
                assert_eq!(measured_text(&m.message), format!("{id} message {i}"));
            }
            assert!(all
                .iter()
                .all(|m| !measured_text(&m.message).starts_with(other.as_str())));
            let p = Policy {
                max_tokens: Some(300),
                ..Policy::default()
            };
            check_window(s, T, id, &p, "two processes").await;
        }
    });
}

#[test]
fn sqlite_parent_and_fork_in_two_processes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    parent_and_fork_in_two_processes(path.to_str().unwrap());
}

#[test]
fn postgres_parent_and_fork_in_two_processes() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let Some(db) = rt.block_on(common::pg_database()) else {
        return;
    };
    parent_and_fork_in_two_processes(&db.url);
    drop(db);
}

/// Raw access to a store's database, for what no `Store` method does: undoing and redoing
/// migration 0008's backfill.
enum Raw {
    Sqlite(std::path::PathBuf),
    Pg(String),
}

/// Migration 0008's backfill statements (the file's part from its `-- Backfill` line).
fn backfill_sql(raw: &Raw) -> &'static str {
    let file = match raw {
        Raw::Sqlite(_) => include_str!("../migrations/sqlite/0008_fork_chain.sql"),
        Raw::Pg(_) => include_str!("../migrations/postgres/0008_fork_chain.sql"),
    };
    &file[file.find("-- Backfill").expect("backfill part")..]
}

impl Raw {
    async fn exec(&self, sql: &str) {
        match self {
            Raw::Sqlite(path) => {
                let c = rusqlite::Connection::open(path).unwrap();
                c.busy_timeout(std::time::Duration::from_secs(5)).unwrap();
                c.execute_batch(sql).unwrap();
            }
            Raw::Pg(url) => {
                let pool = sqlx::PgPool::connect(url).await.unwrap();
                sqlx::raw_sql(sql).execute(&pool).await.unwrap();
                pool.close().await;
            }
        }
    }

    /// Every conversation's id, stored chain (as JSON) and prefix flag, by id.
    async fn chains(&self) -> Vec<(String, Option<serde_json::Value>, bool)> {
        let sql = "SELECT id, chain, prefix_system FROM conversations ORDER BY id";
        let rows: Vec<(String, Option<String>, bool)> = match self {
            Raw::Sqlite(path) => {
                let c = rusqlite::Connection::open(path).unwrap();
                let mut stmt = c.prepare(sql).unwrap();
                let rows = stmt
                    .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                    .unwrap();
                rows.collect::<Result<_, _>>().unwrap()
            }
            Raw::Pg(url) => {
                let pool = sqlx::PgPool::connect(url).await.unwrap();
                let rows = sqlx::query_as(sql).fetch_all(&pool).await.unwrap();
                pool.close().await;
                rows
            }
        };
        rows.into_iter()
            .map(|(id, chain, sys)| {
                let chain = chain.map(|c| serde_json::from_str(&c).unwrap());
                (id, chain, sys)
            })
            .collect()
    }
}

/// The chain a fork's row stores (migration 0008) reads as the recursive query does: forks
/// whose prefix holds a system message or not (in the parent, in the grandparent only, in the
/// fork's own rows only), forks of forks, a fork at 0 and a cleared (detached) fork all read
/// what a copied conversation reads; so do they with the stored chains gone (a row from before
/// the migration) and after the migration's backfill, which stores what forking stored.
async fn stored_chains(s: &dyn Store, raw: Raw) {
    let mut rng = Rng::new(8);
    let ps = policies(&mut rng);
    let mut with_system = vec![Message::text(Role::System, "house rules")];
    with_system.extend(common::conversation(&mut rng, 30));
    // Random conversations hold system messages now and then: none in these.
    let no_system = |mut ms: Vec<Message>| {
        ms.retain(|m| m.role != Role::System);
        ms
    };
    let plain = no_system(common::conversation(&mut rng, 30));
    let a = new_conv(s, None).await;
    append_chunks(s, &a, &with_system, &mut rng).await;
    let b = new_conv(s, None).await;
    append_chunks(s, &b, &plain, &mut rng).await;
    // (conversation, the messages a copy holds)
    let mut pairs: Vec<(String, Vec<Message>)> = Vec::new();
    let fork = |on: String, at: i64, from: &[Message], own: Vec<Message>| {
        let mut all = from[..at as usize].to_vec();
        all.extend(own.iter().cloned());
        (on, at, own, all)
    };
    // f1: prefix with a system message; f2: none in the prefix, one of its own.
    let mut own2 = no_system(common::conversation(&mut rng, 5));
    let own2_system = own2.len() + 1;
    own2.push(Message::text(Role::System, "fork rules"));
    own2.extend(common::conversation(&mut rng, 3));
    let plan = [
        fork(
            a.clone(),
            20,
            &with_system,
            common::conversation(&mut rng, 8),
        ),
        fork(b.clone(), 15, &plain, own2),
        fork(b.clone(), 0, &plain, common::conversation(&mut rng, 4)),
    ];
    let mut made = Vec::new();
    for (on, at, own, all) in plan {
        let f = s
            .fork_conversation(T, &on, at, NewFork::default())
            .await
            .unwrap();
        append_chunks(s, &f.id, &own, &mut rng).await;
        made.push((f.id.clone(), all.clone()));
        pairs.push((f.id, all));
    }
    // Forks of forks: g1 on f1 (the system message is in its grandparent only), g2 on f2 at a
    // point of b (made on b), g3 on f2 past its own system message.
    // The seq of f2's system message.
    let f2_system = (15 + own2_system) as i64;
    for (i, at) in [(0usize, 24i64), (1, 9), (1, f2_system + 1)] {
        let (on, from) = made[i].clone();
        let own = common::conversation(&mut rng, 5);
        let f = s
            .fork_conversation(T, &on, at, NewFork::default())
            .await
            .unwrap();
        append_chunks(s, &f.id, &own, &mut rng).await;
        let mut all = from[..at as usize].to_vec();
        all.extend(own);
        pairs.push((f.id, all));
    }
    // A cleared fork, beside a copy cleared the same way.
    let c = s
        .fork_conversation(T, &a, 12, NewFork::default())
        .await
        .unwrap();
    let copy_c = new_conv(s, None).await;
    s.append(T, &copy_c, complete(&with_system[..12]))
        .await
        .unwrap();
    let more = common::conversation(&mut rng, 6);
    for id in [&c.id, &copy_c] {
        s.append(T, id, complete(&more[..3])).await.unwrap();
        s.clear_conversation(T, id).await.unwrap();
        s.append(T, id, complete(&more[3..])).await.unwrap();
    }

    let check = |what: &'static str| {
        let pairs = &pairs;
        let ps = &ps;
        let (c, copy_c) = (&c.id, &copy_c);
        async move {
            for (id, all) in pairs {
                let copy = new_conv(s, None).await;
                s.append(T, &copy, complete(all)).await.unwrap();
                same_windows(s, id, &copy, ps, what).await;
            }
            same_windows(s, c, copy_c, ps, what).await;
        }
    };
    check("stored chains").await;
    let stored = raw.chains().await;
    let by_id = |id: &str| stored.iter().find(|r| r.0 == id).unwrap().clone();
    assert!(by_id(&pairs[0].0).2, "f1's prefix holds a system message");
    assert!(!by_id(&pairs[1].0).2, "f2's prefix holds none");
    assert!(by_id(&pairs[3].0).2, "g1's grandparent holds one");
    assert!(!by_id(&pairs[4].0).2, "g2's prefix (b's) holds none");
    assert!(by_id(&pairs[5].0).2, "g3's prefix holds f2's");
    assert_eq!(by_id(&c.id).1, None, "a cleared fork has no chain");
    assert!(!by_id(&c.id).2);
    assert_eq!(
        by_id(&a).1,
        None,
        "a conversation that is no fork has no chain"
    );

    raw.exec("UPDATE conversations SET chain = NULL, prefix_system = FALSE")
        .await;
    check("chains not stored").await;
    raw.exec(backfill_sql(&raw)).await;
    // (The reads above made more copies: those rows are left out.)
    let mut after = raw.chains().await;
    after.retain(|r| stored.iter().any(|x| x.0 == r.0));
    assert_eq!(after, stored, "the backfill stores what forking did");
    check("backfilled chains").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_stored_chains() {
    let db = common::sqlite().await;
    stored_chains(&db.store, Raw::Sqlite(db.path.clone())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_stored_chains() {
    let Some(db) = common::pg().await else { return };
    let url = db.db.url.clone();
    stored_chains(&db.store, Raw::Pg(url)).await;
}
