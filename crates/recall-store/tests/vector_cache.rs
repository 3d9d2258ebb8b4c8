//! The store's copy of a conversation's vectors (issue 52) never answers with what is no
//! longer stored, on both databases: two stores on one database (two processes) take turns
//! writing, and every ranking either one gives is the one a fresh store would give.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(unused_macros)]
mod common;

use recall_core::message::{Message, Role};
use recall_core::policy::RecallScope;
use recall_core::recall::RecallQuery;
use recall_store::{NewConversation, NewMessage, NewVector, Store};

const T: &str = "default";
const M: &str = "test-model";

fn unit(i: usize) -> Vec<f32> {
    let mut v = [0.0f32; 4];
    v[i % 4] = 1.0;
    v[(i + 1) % 4] = 0.1 * (i / 4 + 1) as f32;
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / n).collect()
}

async fn ranked(s: &dyn Store, id: &str, q: &[f32], before: i64) -> Vec<i64> {
    let mut query = RecallQuery::new("anything", before, 1000, RecallScope::Conversation);
    query.limit = 100;
    let mut seqs: Vec<i64> = s
        .recall_semantic(T, id, &query, M, q)
        .await
        .unwrap()
        .hits
        .iter()
        .map(|h| h.seq)
        .collect();
    seqs.sort_unstable();
    seqs
}

async fn embed(s: &dyn Store, id: &str, seqs: std::ops::RangeInclusive<i64>) {
    let upto = *seqs.end();
    let vectors = seqs
        .map(|seq| NewVector {
            conversation_id: id.to_string(),
            seq,
            vector: unit(seq as usize),
        })
        .collect();
    s.save_vectors(T, M, 4, vectors, vec![(id.to_string(), upto)])
        .await
        .unwrap();
}

async fn append(s: &dyn Store, id: &str, n: usize) {
    let ms = (0..n)
        .map(|i| NewMessage::complete(Message::text(Role::User, format!("message {i}"))))
        .collect();
    s.append(T, id, ms).await.unwrap();
}

/// Store `a` ranks (and keeps its copy) while store `b` adds vectors, edits a message (its
/// vector goes), redacts one and clears the conversation: `a` follows every change.
async fn a_copy_follows_every_change_made_elsewhere(a: &dyn Store, b: &dyn Store) {
    let id = a
        .create_conversation(T, NewConversation::default())
        .await
        .unwrap()
        .id;
    append(a, &id, 12).await;
    embed(a, &id, 1..=6).await;
    let all = unit(0).iter().map(|_| 1.0).collect::<Vec<f32>>();
    assert_eq!(ranked(a, &id, &all, 100).await, (1..=6).collect::<Vec<_>>());
    // The window leaves out seqs from `before` on, from the copy as from the database.
    assert_eq!(ranked(a, &id, &all, 4).await, [1, 2, 3]);

    // b embeds more: a reads only them into its copy, and ranks them.
    embed(b, &id, 7..=10).await;
    assert_eq!(
        ranked(a, &id, &all, 100).await,
        (1..=10).collect::<Vec<_>>()
    );

    // b edits message 3: its vector is removed (and embedding moves back). a must not rank it.
    b.update_message(
        T,
        &id,
        3,
        NewMessage::complete(Message::text(Role::User, "edited")),
    )
    .await
    .unwrap();
    let expect: Vec<i64> = (1..=10).filter(|s| *s != 3).collect();
    assert_eq!(ranked(a, &id, &all, 100).await, expect);
    // Embedded again (by b) with another vector: a ranks the new one.
    embed(b, &id, 3..=10).await;
    let near3 = unit(3);
    let top = {
        let mut q = RecallQuery::new("x", 100, 1000, RecallScope::Conversation);
        q.limit = 1;
        a.recall_semantic(T, &id, &q, M, &near3).await.unwrap().hits[0].seq
    };
    assert_eq!(top, 3);

    // b redacts message 5: gone from a's ranking too.
    b.redact_message(T, &id, 5).await.unwrap();
    let got = ranked(a, &id, &all, 100).await;
    assert!(!got.contains(&5), "{got:?}");
    assert_eq!(got, ranked(b, &id, &all, 100).await);

    // b clears the conversation: a ranks nothing.
    b.clear_conversation(T, &id).await.unwrap();
    assert!(ranked(a, &id, &all, 100).await.is_empty());

    // New messages after the clear, embedded by b: a sees exactly those.
    append(b, &id, 3).await;
    let c = b.get_conversation(T, &id).await.unwrap();
    embed(b, &id, c.last_seq - 2..=c.last_seq).await;
    assert_eq!(
        ranked(a, &id, &all, 1000).await,
        (c.last_seq - 2..=c.last_seq).collect::<Vec<_>>()
    );
    // Another tenant still finds nothing through a's copy.
    let q = RecallQuery::new("x", 1000, 1000, RecallScope::Conversation);
    assert!(a.recall_semantic("globex", &id, &q, M, &all).await.is_err());
}

mod sqlite {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_copy_follows_every_change_made_elsewhere() {
        let db = crate::common::sqlite().await;
        let b = recall_store::SqliteStore::open(&db.path).await.unwrap();
        super::a_copy_follows_every_change_made_elsewhere(&db.store, &b).await;
    }
}

mod postgres {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_copy_follows_every_change_made_elsewhere() {
        let Some(db) = crate::common::pg().await else {
            return;
        };
        let b = recall_store::PgStore::connect(&db.db.url).await.unwrap();
        super::a_copy_follows_every_change_made_elsewhere(&db.store, &b).await;
    }
}
