//! Mirror sums on both databases (`Store::mirror_sums`, issue 33): after every kind of write
//! (appends with and without client ids or given times, an update of a streamed reply, a
//! fork and appends to it, a redaction read by a fork, a clear) the stored sums are those
//! `recall_core::gateway::mirror` computes from the history as it reads back, at every seq,
//! and the redacted seqs are listed.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{all_messages, conversation, Rng};
use recall_core::gateway::mirror;
use recall_core::message::{Message, Role};
use recall_store::{
    MessageStatus, NewConversation, NewFork, NewMessage, Store, StoreError, DEFAULT_TENANT,
};

const T: &str = DEFAULT_TENANT;

/// Checks the stored sums of `id` against the history it reads back, at every seq.
async fn check(s: &dyn Store, id: &str, what: &str) {
    let stored = all_messages(s, T, id).await;
    let first = stored.first().map_or(1, |m| m.seq);
    let messages: Vec<Message> = stored.iter().map(|m| m.message.clone()).collect();
    let redacted: Vec<i64> = stored
        .iter()
        .filter(|m| m.status == MessageStatus::Redacted)
        .map(|m| m.seq)
        .collect();
    for (k, at) in (first - 1..=first - 1 + stored.len() as i64).enumerate() {
        let sums = s.mirror_sums(T, id, at).await.expect("mirror sums");
        assert_eq!(sums.count, stored.len() as i64, "{what}: count");
        assert_eq!(
            sums.total,
            Some(mirror::sum_of(first, &messages, &redacted)),
            "{what}: total"
        );
        assert_eq!(
            sums.at,
            Some(mirror::sum_of(first, &messages[..k], &redacted)),
            "{what}: sum at {at}"
        );
        let after: Vec<i64> = redacted.iter().copied().filter(|&r| r > at).collect();
        assert_eq!(sums.redacted, after, "{what}: redacted after {at}");
    }
}

fn complete(ms: &[Message]) -> Vec<NewMessage> {
    ms.iter().cloned().map(NewMessage::complete).collect()
}

async fn mirror_sums_follow_every_write(s: &dyn Store) {
    let mut rng = Rng::new(33);
    let id = s
        .create_conversation(T, NewConversation::default())
        .await
        .unwrap()
        .id;
    check(s, &id, "empty").await;
    let ms = conversation(&mut rng, 24);
    // Plain appends (PostgreSQL's one-statement path), then client ids and given times (the
    // locked path).
    s.append(T, &id, complete(&ms[..8])).await.unwrap();
    check(s, &id, "plain appends").await;
    let with_ids: Vec<NewMessage> = ms[8..14]
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let mut m = m.clone();
            m.id = Some(format!("c-{i}"));
            NewMessage::complete(m)
        })
        .collect();
    s.append(T, &id, with_ids.clone()).await.unwrap();
    // A retry of the same batch writes nothing and moves nothing.
    s.append(T, &id, with_ids).await.unwrap();
    check(s, &id, "client ids and a retry").await;
    // A reply streamed as partial, then completed.
    let last = s
        .append(
            T,
            &id,
            vec![NewMessage {
                message: Message::text(Role::Assistant, "half"),
                status: MessageStatus::Partial,
                figures: None,
            }],
        )
        .await
        .unwrap()[0]
        .seq;
    check(s, &id, "partial reply").await;
    s.update_message(
        T,
        &id,
        last,
        NewMessage::complete(Message::text(Role::Assistant, "half and the rest")),
    )
    .await
    .unwrap();
    check(s, &id, "completed reply").await;

    // A fork in the middle, appended to; then a redaction in the parent's rows it reads.
    let fork = s
        .fork_conversation(T, &id, 6, NewFork { title: None })
        .await
        .unwrap()
        .id;
    check(s, &fork, "fork").await;
    s.append(T, &fork, complete(&ms[14..20])).await.unwrap();
    check(s, &fork, "fork appended").await;
    s.redact_message(T, &fork, 3).await.unwrap();
    check(s, &fork, "fork after a redaction in its parent").await;
    check(s, &id, "parent after the redaction").await;
    s.redact_message(T, &fork, 9).await.unwrap();
    check(s, &fork, "fork after a redaction of its own").await;
    // A fork of the fork, past the redactions.
    let deeper = s
        .fork_conversation(T, &fork, 10, NewFork { title: None })
        .await
        .unwrap()
        .id;
    s.append(T, &deeper, complete(&ms[20..])).await.unwrap();
    check(s, &deeper, "fork of a fork").await;

    // A clear starts over with seqs that keep counting.
    let other = s
        .create_conversation(T, NewConversation::default())
        .await
        .unwrap()
        .id;
    s.append(T, &other, complete(&ms[..5])).await.unwrap();
    s.clear_conversation(T, &other).await.unwrap();
    check(s, &other, "cleared").await;
    s.append(T, &other, complete(&ms[5..9])).await.unwrap();
    check(s, &other, "appended after a clear").await;

    // Another tenant's conversation is not found.
    match s.mirror_sums("someone-else", &id, 0).await {
        Err(StoreError::ConversationNotFound(_)) => {}
        other => panic!("another tenant read mirror sums: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_mirror_sums_follow_every_write() {
    let db = common::sqlite().await;
    mirror_sums_follow_every_write(&db.store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_mirror_sums_follow_every_write() {
    let Some(db) = common::pg().await else { return };
    mirror_sums_follow_every_write(&db.store).await;
}
