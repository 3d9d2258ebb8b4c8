//! Recall's store queries (issue 21), one suite on SQLite (a temporary file) and PostgreSQL
//! (a fresh database per test; unreachable → skipped with a notice, or a failure when
//! `CI=true`): lexical ranking with OR semantics below the window, tenant scope that never
//! crosses tenants, and reading hits' neighbours by seq.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use recall_core::message::{Block, Message, Role, ToolResultContent};
use recall_core::policy::RecallScope;
use recall_core::recall::{
    choose, searchable_text, LexicalIndex, RecallCandidate, RecallKey, RecallQuery,
};
use recall_core::tokens::Tokenizer;
use recall_store::{
    ConversationRef, NewConversation, NewFork, NewMessage, RecallChoice, Store, StoreError,
};
use serde_json::json;

const T: &str = "default";

async fn conv(s: &dyn Store, tenant: &str) -> String {
    s.create_conversation(tenant, NewConversation::default())
        .await
        .expect("create")
        .id
}

async fn append(s: &dyn Store, tenant: &str, id: &str, ms: Vec<Message>) {
    s.append(
        tenant,
        id,
        ms.into_iter().map(NewMessage::complete).collect(),
    )
    .await
    .expect("append");
}

fn user(t: &str) -> Message {
    Message::text(Role::User, t)
}

fn assistant(t: &str) -> Message {
    Message::text(Role::Assistant, t)
}

fn query(text: &str, before: i64, scope: RecallScope) -> RecallQuery {
    RecallQuery::new(text, before, 1000, scope)
}

/// (conversation, seq) of the hits, in rank order.
async fn hits(
    s: &dyn Store,
    tenant: &str,
    id: &str,
    q: &RecallQuery,
) -> Vec<(Option<String>, i64)> {
    if q.scope == RecallScope::Conversation {
        assert!(s.catch_up_recall(tenant, id, None).await.expect("index"));
    }
    let h = s.recall_lexical(tenant, id, q).await.expect("recall");
    assert!(h.complete);
    for w in h.hits.windows(2) {
        assert!(w[0].score >= w[1].score, "best first: {:?}", h.hits);
    }
    h.hits
        .into_iter()
        .map(|r| (r.conversation_id, r.seq))
        .collect()
}

fn seqs(v: &[(Option<String>, i64)]) -> Vec<i64> {
    let mut s: Vec<i64> = v.iter().map(|h| h.1).collect();
    s.sort_unstable();
    s
}

async fn lexical_or_semantics_below_the_window(s: &dyn Store) {
    let id = conv(s, T).await;
    append(
        s,
        T,
        &id,
        vec![
            user("My sister Ana moved to Lisbon."),              // 1
            assistant("Lisbon is lovely."),                      // 2
            Message::text(Role::System, "Lisbon system note"),   // 3: never recalled
            user("Let us plan the garden: tomatoes and basil."), // 4
            assistant("Tomatoes need sun."),                     // 5
            user("Where does Ana live?"),                        // 6
        ],
    )
    .await;
    // OR: a message with any of the terms; stop words are no terms.
    let q = query(
        "Where does Ana live in Lisbon?",
        6,
        RecallScope::Conversation,
    );
    assert_eq!(q.terms, ["ana", "live", "lisbon"]);
    let h = hits(s, T, &id, &q).await;
    // 2, 4 and 5 hold them through the messages before them (the system message is none).
    assert_eq!(seqs(&h), [1, 2, 4, 5]);
    // Seq 1 holds two of the terms: first.
    assert_eq!(h[0], (None, 1));
    // Never at or above the window's start.
    let q = query("Ana Lisbon tomatoes", 2, RecallScope::Conversation);
    assert_eq!(seqs(&hits(s, T, &id, &q).await), [1]);
    let q = query("tomatoes", 1, RecallScope::Conversation);
    assert!(hits(s, T, &id, &q).await.is_empty());
    // A query with no terms finds nothing; so does another tenant.
    assert!(
        hits(s, T, &id, &query("is it?", 9, RecallScope::Conversation))
            .await
            .is_empty()
    );
    // Another tenant's conversation is not found, in either scope.
    for scope in [RecallScope::Conversation, RecallScope::Tenant] {
        let err = s
            .recall_lexical("other", &id, &query("Lisbon", 9, scope))
            .await
            .expect_err("another tenant");
        assert!(
            matches!(err, StoreError::ConversationNotFound(_)),
            "{err:?}"
        );
    }
    // Limit.
    let mut q = query("Lisbon tomatoes", 9, RecallScope::Conversation);
    q.limit = 2;
    assert_eq!(hits(s, T, &id, &q).await.len(), 2);
}

async fn tenant_scope_never_crosses_tenants(s: &dyn Store) {
    let a1 = conv(s, "acme").await;
    let a2 = conv(s, "acme").await;
    let b1 = conv(s, "globex").await;
    for (tenant, id) in [("acme", &a1), ("acme", &a2), ("globex", &b1)] {
        append(
            s,
            tenant,
            id,
            vec![
                user(&format!("zebra secret of {tenant}")),
                assistant("noted zebra"),
                user("zebra again"),
            ],
        )
        .await;
    }
    let q = query("zebra", 3, RecallScope::Tenant);
    let h = hits(s, "acme", &a1, &q).await;
    // This conversation below the window (no id), the tenant's other one whole.
    let mut got: Vec<(Option<String>, i64)> = h.clone();
    got.sort();
    assert_eq!(
        got,
        [
            (None, 1),
            (None, 2),
            (Some(a2.clone()), 1),
            (Some(a2.clone()), 2),
            (Some(a2.clone()), 3)
        ]
    );
    assert!(h.iter().all(|(c, _)| c.as_deref() != Some(b1.as_str())));
    // Conversation scope stays in the conversation.
    let q = query("zebra", 3, RecallScope::Conversation);
    let mut h = hits(s, "acme", &a1, &q).await;
    h.sort();
    assert_eq!(h, [(None, 1), (None, 2)]);

    // Reading by key: another tenant's conversation named in a key reads nothing.
    let q = query("zebra", 3, RecallScope::Tenant);
    let keys = vec![
        RecallKey {
            conversation_id: None,
            seq: 1,
        },
        RecallKey {
            conversation_id: Some(a2.clone()),
            seq: 3,
        },
        RecallKey {
            conversation_id: Some(b1.clone()),
            seq: 1,
        },
    ];
    let read = s
        .recall_messages("acme", &a1, &q, &keys)
        .await
        .expect("read");
    let got: Vec<(Option<String>, i64)> = read
        .iter()
        .map(|c| (c.conversation_id.clone(), c.seq))
        .collect();
    assert_eq!(got, [(None, 1), (Some(a2.clone()), 3)]);
    assert!(read.iter().all(|c| c.at.is_some()));
    assert_eq!(read[0].message, user("zebra secret of acme"));
    // The same from globex's side: acme's messages are never read.
    let read = s
        .recall_messages("globex", &b1, &q, &keys)
        .await
        .expect("read");
    let got: Vec<(Option<String>, i64)> = read
        .iter()
        .map(|c| (c.conversation_id.clone(), c.seq))
        .collect();
    assert_eq!(got, [(None, 1)]);
    assert_eq!(read[0].message, user("zebra secret of globex"));
}

async fn neighbours_are_read_by_seq(s: &dyn Store) {
    let id = conv(s, T).await;
    append(
        s,
        T,
        &id,
        vec![
            user("look it up"),
            Message::blocks(
                Role::Assistant,
                vec![Block::ToolUse {
                    id: "t1".into(),
                    name: "lookup".into(),
                    input: json!({"q": "x"}),
                }],
            ),
            Message::blocks(
                Role::User,
                vec![Block::ToolResult {
                    tool_use_id: "t1".into(),
                    content: ToolResultContent::Text("found it".into()),
                    is_error: None,
                }],
            ),
            Message::text(Role::System, "a system note"),
            assistant("here"),
            user("window"),
        ],
    )
    .await;
    let q = query("found", 6, RecallScope::Conversation);
    let keys: Vec<RecallKey> = (1..=7)
        .map(|seq| RecallKey {
            conversation_id: None,
            seq,
        })
        .collect();
    let read = s.recall_messages(T, &id, &q, &keys).await.expect("read");
    // No system message, nothing from the window (seq 6), nothing that does not exist (7).
    let got: Vec<i64> = read.iter().map(|c| c.seq).collect();
    assert_eq!(got, [1, 2, 3, 5]);
    assert!(read[1].message.has_tool_use());
    assert!(read[2].message.has_tool_result());
    // An unknown conversation is an error like everywhere else, or reads nothing.
    match s.recall_messages(T, "nope", &q, &keys).await {
        Ok(v) => assert!(v.is_empty()),
        Err(StoreError::ConversationNotFound(_)) | Err(StoreError::Invalid(_)) => {}
        Err(e) => panic!("{e}"),
    }
}

async fn recall_follows_updates_and_clears(s: &dyn Store) {
    let id = conv(s, T).await;
    append(
        s,
        T,
        &id,
        vec![user("the walrus sings"), assistant("ok"), user("next")],
    )
    .await;
    let q = query("walrus", 3, RecallScope::Conversation);
    // Seq 2's document holds seq 1's words at a lower weight.
    assert_eq!(hits(s, T, &id, &q).await, [(None, 1), (None, 2)]);
    s.update_message(
        T,
        &id,
        2,
        NewMessage::complete(assistant("a walrus indeed")),
    )
    .await
    .expect("update");
    assert_eq!(seqs(&hits(s, T, &id, &q).await), [1, 2]);
    s.update_message(T, &id, 1, NewMessage::complete(user("the seal sings")))
        .await
        .expect("update");
    assert_eq!(hits(s, T, &id, &q).await, [(None, 2)]);
    s.clear_conversation(T, &id).await.expect("clear");
    append(s, T, &id, vec![user("walrus"), user("walrus")]).await;
    let q = query("walrus", 5, RecallScope::Conversation);
    assert_eq!(hits(s, T, &id, &q).await, [(None, 4)]);
}

/// The store's ranking of `id` against recall-core's in-memory one (`LexicalIndex`, what
/// `recall render` runs) over the same messages: random queries and window starts, the same
/// hits in the same order with the same scores.
async fn same_ranking_as_memory(s: &dyn Store, id: &str, rng: &mut common::Rng, what: &str) {
    let all = common::all_messages(s, T, id).await;
    let last = all.last().map_or(1, |m| m.seq);
    for round in 0..16 {
        let before = i64::try_from(rng.range(1, (last + 1) as u64)).unwrap();
        let words = rng.range(1, 10);
        let text = common::text(rng, words);
        let q = query(&text, before, RecallScope::Conversation);
        let texts: Vec<(i64, String, i64)> = all
            .iter()
            .filter(|m| m.seq < before && m.message.role != Role::System)
            .map(|m| (m.seq, searchable_text(&m.message), m.created_at))
            .collect();
        let want = LexicalIndex::new(
            texts
                .iter()
                .map(|(seq, t, at)| (*seq, t.as_str(), Some(*at))),
        )
        .rank(&q.terms, q.limit);
        assert!(s.catch_up_recall(T, id, None).await.expect("index"));
        let got = s.recall_lexical(T, id, &q).await.expect("recall").hits;
        let ctx = format!(
            "{what}, round {round}: before {before}, terms {:?}",
            q.terms
        );
        assert_eq!(
            got.iter().map(|h| h.seq).collect::<Vec<_>>(),
            want.iter().map(|h| h.seq).collect::<Vec<_>>(),
            "{ctx}"
        );
        for (g, w) in got.iter().zip(&want) {
            assert!(g.conversation_id.is_none(), "{ctx}");
            assert!(
                (g.score - w.score).abs() <= 1e-9 * w.score.abs().max(1.0),
                "{ctx}: seq {} scored {} against {}",
                g.seq,
                g.score,
                w.score
            );
        }
        // The choice within a budget, from the store's reads, is core's over the messages in
        // memory: the same section, byte for byte.
        let mut q = q;
        q.budget = rng.range(40, 800);
        let candidates: Vec<RecallCandidate> = all
            .iter()
            .filter(|m| m.seq < before && m.message.role != Role::System)
            .map(|m| RecallCandidate {
                conversation_id: None,
                seq: m.seq,
                message: m.message.clone(),
                at: Some(m.created_at),
            })
            .collect();
        // Every vocabulary (SQLite takes the BPE counts its index keeps), escaping on or off.
        let tokenizer = *rng.pick(&Tokenizer::ALL);
        let escape = rng.chance(0.7);
        let want = choose(&q, &want, &candidates, &tokenizer, escape, true);
        let got = s
            .recall_choose(RecallChoice {
                conv: ConversationRef::new(T, id),
                query: &q,
                hits: &got,
                tokenizer,
                escape,
                complete: true,
            })
            .await
            .expect("choose");
        let ctx = format!("{ctx}, budget {}, {tokenizer}, escape {escape}", q.budget);
        assert_eq!(got.text, want.text, "{ctx}");
        assert_eq!(got.stats.tokens, want.stats.tokens, "{ctx}");
        assert!(got.stats.tokens <= q.budget, "{ctx}");
    }
}

/// One ranking everywhere: a random conversation (tool pairs, system messages, punctuation,
/// non-ASCII words, terms held by more messages than a ranking reads), a fork of it with
/// messages of its own, and both again after a redaction in the shared prefix and an update
/// of the fork's own rows moved the index back.
async fn ranking_is_recall_cores(s: &dyn Store) {
    let mut rng = common::Rng::new(0x7265_6361_6c6c);
    let id = conv(s, T).await;
    append(s, T, &id, common::conversation(&mut rng, 400)).await;
    same_ranking_as_memory(s, &id, &mut rng, "conversation").await;
    let fork = s
        .fork_conversation(T, &id, 250, NewFork::default())
        .await
        .expect("fork")
        .id;
    append(s, T, &fork, common::conversation(&mut rng, 150)).await;
    same_ranking_as_memory(s, &fork, &mut rng, "fork").await;
    s.redact_message(T, &id, 10).await.expect("redact");
    s.update_message(
        T,
        &fork,
        300,
        NewMessage::complete(user("memory tokens Ωμέγα")),
    )
    .await
    .expect("update");
    same_ranking_as_memory(s, &id, &mut rng, "conversation after a redaction").await;
    same_ranking_as_memory(s, &fork, &mut rng, "fork after a redaction and an update").await;
    // More messages, then the index catches up from where it was.
    append(s, T, &fork, common::conversation(&mut rng, 50)).await;
    same_ranking_as_memory(s, &fork, &mut rng, "fork, appended to").await;
}

/// Two stores on one database (two processes' worth of connections) catching up the same
/// conversation's index at once: both finish, neither fails on the other's rows, and both
/// rank as memory does afterwards.
async fn concurrent_catch_ups(a: &dyn Store, b: &dyn Store) {
    let mut rng = common::Rng::new(7);
    let id = conv(a, T).await;
    // More than one catch-up batch (`INDEX_BATCH`, 1,000 messages).
    append(a, T, &id, common::conversation(&mut rng, 2_500)).await;
    let q = query(
        "memory conversation tokens",
        2_400,
        RecallScope::Conversation,
    );
    let (ca, cb) = tokio::join!(
        a.catch_up_recall(T, &id, None),
        b.catch_up_recall(T, &id, None)
    );
    assert!(ca.expect("first store") && cb.expect("second store"));
    let (ra, rb) = tokio::join!(a.recall_lexical(T, &id, &q), b.recall_lexical(T, &id, &q));
    let (ra, rb) = (ra.expect("first store"), rb.expect("second store"));
    let seqs = |h: &[recall_core::recall::Ranked]| h.iter().map(|h| h.seq).collect::<Vec<_>>();
    assert_eq!(seqs(&ra.hits), seqs(&rb.hits));
    assert!(!ra.hits.is_empty());
    same_ranking_as_memory(a, &id, &mut rng, "after concurrent catch-ups").await;
}

#[tokio::test]
async fn sqlite_concurrent_catch_ups() {
    let db = common::sqlite().await;
    let other = recall_store::SqliteStore::open(&db.path)
        .await
        .expect("second store");
    concurrent_catch_ups(&db.store, &other).await;
}

#[tokio::test]
async fn postgres_concurrent_catch_ups() {
    let Some(db) = common::pg().await else { return };
    let other = recall_store::PgStore::connect(&db.db.url)
        .await
        .expect("second store");
    concurrent_catch_ups(&db.store, &other).await;
}

/// A unit vector along axis `i` of 4, tilted toward axis `j` by `t`.
fn unit(i: usize, j: usize, t: f32) -> Vec<f32> {
    let mut v = [0.0f32; 4];
    v[i] += 1.0;
    v[j] += t;
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / n).collect()
}

async fn vectors_backlog_save_and_rank(s: &dyn Store) {
    let id = conv(s, T).await;
    let other = conv(s, T).await;
    let foreign = conv(s, "globex").await;
    append(
        s,
        T,
        &id,
        vec![
            user("one"),
            Message::text(Role::System, "sys"),
            assistant("two"),
            user("three"),
            user("window"),
        ],
    )
    .await;
    append(s, T, &other, vec![user("elsewhere")]).await;
    append(s, "globex", &foreign, vec![user("foreign")]).await;
    const M: &str = "test-model";
    // Everything is behind; the backlog is per tenant, oldest first, limited.
    let todo = s
        .vector_backlog(T, Some(&id), M, 100)
        .await
        .expect("backlog");
    assert_eq!(
        todo.iter().map(|t| t.seq).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5]
    );
    let all = s.vector_backlog(T, None, M, 100).await.expect("backlog");
    assert_eq!(all.len(), 6);
    assert!(all.iter().all(|t| t.conversation_id != foreign));
    assert_eq!(s.vector_backlog(T, Some(&id), M, 2).await.unwrap().len(), 2);

    let q = query("anything", 5, RecallScope::Conversation);
    let before = s
        .recall_semantic(T, &id, &q, M, &unit(0, 1, 0.0))
        .await
        .expect("rank");
    assert!(!before.complete && before.hits.is_empty());

    // Embed seqs 1..=3 (not the system message), progress to 3.
    let v = |seq: i64, i: usize, t: f32| recall_store::NewVector {
        conversation_id: id.clone(),
        seq,
        vector: unit(i, 1, t),
    };
    s.save_vectors(
        T,
        M,
        4,
        vec![v(1, 0, 0.1), v(3, 0, 0.5)],
        vec![(id.clone(), 3)],
    )
    .await
    .expect("save");
    let after = s
        .recall_semantic(T, &id, &q, M, &unit(0, 1, 0.0))
        .await
        .expect("rank");
    // Below the window (seq 5) everything up to 4 must be embedded: 4 is not yet.
    assert!(!after.complete);
    assert_eq!(after.hits.iter().map(|h| h.seq).collect::<Vec<_>>(), [1, 3]);
    assert!(after.hits[0].score > after.hits[1].score);
    s.save_vectors(T, M, 4, vec![v(4, 2, 0.0)], vec![(id.clone(), 5)])
        .await
        .expect("save");
    let done = s
        .recall_semantic(T, &id, &q, M, &unit(0, 1, 0.0))
        .await
        .expect("rank");
    assert!(done.complete);
    assert!(s
        .vector_backlog(T, Some(&id), M, 100)
        .await
        .unwrap()
        .is_empty());
    // Another model sees none of them; a wrong length is refused.
    let none = s
        .recall_semantic(T, &id, &q, "other-model", &unit(0, 1, 0.0))
        .await
        .unwrap();
    assert!(none.hits.is_empty() && !none.complete);
    assert!(matches!(
        s.save_vectors(
            T,
            M,
            4,
            vec![recall_store::NewVector {
                conversation_id: id.clone(),
                seq: 2,
                vector: vec![1.0]
            }],
            vec![]
        )
        .await,
        Err(StoreError::Invalid(_))
    ));
    // Another tenant cannot write vectors into this conversation, nor read them.
    s.save_vectors("globex", M, 4, vec![v(2, 3, 0.0)], vec![(id.clone(), 9)])
        .await
        .expect("a no-op");
    assert_eq!(
        s.recall_semantic(T, &id, &q, M, &unit(3, 1, 0.0))
            .await
            .unwrap()
            .hits
            .len(),
        3
    );
    assert!(matches!(
        s.recall_semantic("globex", &id, &q, M, &unit(0, 1, 0.0))
            .await,
        Err(StoreError::ConversationNotFound(_))
    ));

    // Tenant scope: the other conversation once embedded, never globex's.
    s.save_vectors(
        T,
        M,
        4,
        vec![recall_store::NewVector {
            conversation_id: other.clone(),
            seq: 1,
            vector: unit(0, 1, 0.0),
        }],
        vec![(other.clone(), 1)],
    )
    .await
    .unwrap();
    s.save_vectors(
        "globex",
        M,
        4,
        vec![recall_store::NewVector {
            conversation_id: foreign.clone(),
            seq: 1,
            vector: unit(0, 1, 0.0),
        }],
        vec![(foreign.clone(), 1)],
    )
    .await
    .unwrap();
    let tq = query("anything", 5, RecallScope::Tenant);
    let t = s
        .recall_semantic(T, &id, &tq, M, &unit(0, 1, 0.0))
        .await
        .unwrap();
    assert!(t.complete);
    assert_eq!(t.hits[0].conversation_id.as_deref(), Some(other.as_str()));
    assert!(t
        .hits
        .iter()
        .all(|h| h.conversation_id.as_deref() != Some(foreign.as_str())));

    // An update drops the message's vector and moves progress back; a clear drops them all.
    s.update_message(T, &id, 3, NewMessage::complete(user("three, edited")))
        .await
        .unwrap();
    let todo = s.vector_backlog(T, Some(&id), M, 100).await.unwrap();
    assert_eq!(todo.iter().map(|t| t.seq).collect::<Vec<_>>(), [3, 4, 5]);
    let r = s
        .recall_semantic(T, &id, &q, M, &unit(0, 1, 0.0))
        .await
        .unwrap();
    assert_eq!(r.hits.iter().map(|h| h.seq).collect::<Vec<_>>(), [1, 4]);
    s.clear_conversation(T, &id).await.unwrap();
    let r = s
        .recall_semantic(T, &id, &q, M, &unit(0, 1, 0.0))
        .await
        .unwrap();
    assert!(r.hits.is_empty());
    s.delete_conversation(T, &other, false).await.unwrap();
}

/// The index is caught up on request, within a budget when one is given (a batch at least),
/// and recall ranks what is indexed, saying when that is not everything (issue 33: no
/// context waits on a whole backlog).
async fn the_index_catches_up_within_a_budget(s: &dyn Store) {
    let mut rng = common::Rng::new(11);
    let id = conv(s, T).await;
    // More than two catch-up batches (`INDEX_BATCH`, 1,000 messages), then a needle.
    append(s, T, &id, common::conversation(&mut rng, 2_500)).await;
    append(
        s,
        T,
        &id,
        vec![user("the xylophonist tuned the glockenspiel")],
    )
    .await;
    let q = query("xylophonist glockenspiel", 2_600, RecallScope::Conversation);
    let ranked = |h: &recall_store::RecallHits| h.hits.iter().map(|h| h.seq).collect::<Vec<_>>();
    // Nothing indexed: nothing ranked, and said so.
    let h = s.recall_lexical(T, &id, &q).await.expect("recall");
    assert!(!h.complete && h.hits.is_empty(), "{:?}", ranked(&h));
    // A spent budget: one batch, not the rest.
    let done = s.catch_up_recall(T, &id, Some(std::time::Duration::ZERO));
    assert!(!done.await.expect("index"));
    let h = s.recall_lexical(T, &id, &q).await.expect("recall");
    assert!(!h.complete);
    assert!(!ranked(&h).contains(&2_501), "{:?}", ranked(&h));
    // No budget: everything.
    assert!(s.catch_up_recall(T, &id, None).await.expect("index"));
    let h = s.recall_lexical(T, &id, &q).await.expect("recall");
    assert!(h.complete);
    assert_eq!(ranked(&h).first(), Some(&2_501));
    // Caught up: true at once, whatever the budget; appends put it behind again.
    let done = s.catch_up_recall(T, &id, Some(std::time::Duration::ZERO));
    assert!(done.await.expect("index"));
    append(s, T, &id, vec![user("a second xylophonist")]).await;
    let q = query("xylophonist", 2_600, RecallScope::Conversation);
    assert!(!s.recall_lexical(T, &id, &q).await.expect("recall").complete);
    assert!(s.catch_up_recall(T, &id, None).await.expect("index"));
    let h = s.recall_lexical(T, &id, &q).await.expect("recall");
    assert!(
        h.complete && ranked(&h).contains(&2_502),
        "{:?}",
        ranked(&h)
    );
    // Another tenant's conversation is not found.
    let err = s
        .catch_up_recall("other", &id, None)
        .await
        .expect_err("other");
    assert!(
        matches!(err, StoreError::ConversationNotFound(_)),
        "{err:?}"
    );
}

suite!(
    lexical_or_semantics_below_the_window,
    tenant_scope_never_crosses_tenants,
    neighbours_are_read_by_seq,
    recall_follows_updates_and_clears,
    vectors_backlog_save_and_rank,
    ranking_is_recall_cores,
    the_index_catches_up_within_a_budget,
);
