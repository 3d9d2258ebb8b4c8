//! Message times (issue 37, real times) on both databases: a given `created_at` is kept, one
//! earlier than the message before it (stored, in the batch, or a fork's parent at the fork
//! point) or too far in the future refuses the whole batch, a message without one never goes
//! backwards, a client-id retry ignores the time, and concurrent appends keep times in order.
//!
//! PostgreSQL: `RECALL_TEST_PG_URL` (see `common`); unreachable → skipped with a notice.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use recall_core::message::{Message, Role};
use recall_core::time::{parse_rfc3339, TimeRefusal, MAX_FUTURE_SKEW_MS};
use recall_store::{NewConversation, NewFork, NewMessage, Store, StoreError, DEFAULT_TENANT};

const T: &str = DEFAULT_TENANT;

fn at(text: &str) -> i64 {
    parse_rfc3339(text).unwrap()
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn msg(role: Role, text: &str, created_at: Option<i64>) -> NewMessage {
    let mut m = Message::text(role, text);
    m.created_at = created_at;
    NewMessage::complete(m)
}

async fn new_conv(s: &dyn Store) -> String {
    s.create_conversation(T, NewConversation::default())
        .await
        .unwrap()
        .id
}

/// The stored times of a history, oldest first.
async fn times(s: &dyn Store, id: &str) -> Vec<i64> {
    let page = s.messages(T, id, 0, 1000).await.unwrap();
    page.iter().map(|m| m.created_at).collect()
}

async fn given_times_are_kept(s: &dyn Store) {
    let id = new_conv(s).await;
    let (a, b) = (
        at("2023-05-08T13:56:00Z"),
        at("2023-05-08T15:56:00.250+02:00"),
    );
    s.append(
        T,
        &id,
        vec![
            msg(Role::User, "a", Some(a)),
            msg(Role::Assistant, "b", Some(a)), // equal: fine
            msg(Role::User, "c", Some(b)),
        ],
    )
    .await
    .unwrap();
    let before = now_ms();
    s.append(T, &id, vec![msg(Role::Assistant, "d", None)])
        .await
        .unwrap();
    let t = times(s, &id).await;
    assert_eq!(&t[..3], &[a, a, b]);
    assert!(
        t[3] >= before && t[3] <= now_ms(),
        "the clock's time: {t:?}"
    );
    // Tool messages and system messages take times like any other.
    s.append(T, &id, vec![msg(Role::System, "s", Some(now_ms()))])
        .await
        .unwrap();
    assert_eq!(times(s, &id).await.len(), 5);
}

async fn backwards_refuses_the_whole_batch(s: &dyn Store) {
    let id = new_conv(s).await;
    let (t1, t2) = (at("2024-01-01T00:00:00Z"), at("2024-01-02T00:00:00Z"));
    s.append(T, &id, vec![msg(Role::User, "first", Some(t2))])
        .await
        .unwrap();
    let conv = s.get_conversation(T, &id).await.unwrap();
    // Older than the stored message.
    match s
        .append(
            T,
            &id,
            vec![
                msg(Role::Assistant, "x", Some(t1)),
                msg(Role::User, "y", None),
            ],
        )
        .await
    {
        Err(StoreError::Time(TimeRefusal::Backwards {
            index: 0,
            created_at,
            previous,
        })) => assert_eq!((created_at, previous), (t1, t2)),
        other => panic!("{other:?}"),
    }
    // Older than the message before it in the batch: the first is not stored either.
    let t3 = t2 + 1000;
    match s
        .append(
            T,
            &id,
            vec![
                msg(Role::Assistant, "x", Some(t3)),
                msg(Role::User, "y", None),
                msg(Role::Assistant, "z", Some(t3 - 1)),
            ],
        )
        .await
    {
        Err(StoreError::Time(TimeRefusal::Backwards {
            index: 2,
            created_at,
            previous,
        })) => {
            assert_eq!(created_at, t3 - 1);
            // The message without a time got the clock's, after t3.
            assert!(previous >= t3, "{previous}");
        }
        other => panic!("{other:?}"),
    }
    let after = s.get_conversation(T, &id).await.unwrap();
    assert_eq!(after.last_seq, conv.last_seq);
    assert_eq!(after.message_count, 1);
    assert_eq!(times(s, &id).await, vec![t2]);
    // The same batch in order is stored.
    s.append(
        T,
        &id,
        vec![
            msg(Role::Assistant, "x", Some(t3)),
            msg(Role::User, "y", Some(t3 + 5)),
        ],
    )
    .await
    .unwrap();
    assert_eq!(times(s, &id).await, vec![t2, t3, t3 + 5]);
}

async fn the_future_within_the_skew_only(s: &dyn Store) {
    let id = new_conv(s).await;
    let too_late = now_ms() + MAX_FUTURE_SKEW_MS + 60_000;
    match s
        .append(T, &id, vec![msg(Role::User, "later", Some(too_late))])
        .await
    {
        Err(StoreError::Time(TimeRefusal::Future {
            index: 0,
            created_at,
            now,
        })) => {
            assert_eq!(created_at, too_late);
            assert!(now <= too_late - MAX_FUTURE_SKEW_MS);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.get_conversation(T, &id).await.unwrap().message_count, 0);
    // A little ahead of the clock is fine, and the next message without a time is not
    // earlier than it (the clock's time would be).
    let ahead = now_ms() + 60_000;
    s.append(T, &id, vec![msg(Role::User, "soon", Some(ahead))])
        .await
        .unwrap();
    s.append(T, &id, vec![msg(Role::Assistant, "now", None)])
        .await
        .unwrap();
    s.append(
        T,
        &id,
        vec![msg(Role::User, "a", None), msg(Role::Assistant, "b", None)],
    )
    .await
    .unwrap();
    assert_eq!(times(s, &id).await, vec![ahead; 4]);
}

async fn a_retry_ignores_the_time(s: &dyn Store) {
    let id = new_conv(s).await;
    let t = at("2023-05-08T13:56:00Z");
    let with_id = |created_at| {
        let mut m = msg(Role::User, "hello", created_at);
        m.message.id = Some("c-1".into());
        m
    };
    let first = s.append(T, &id, vec![with_id(Some(t))]).await.unwrap();
    for again in [None, Some(t + 1), Some(t - 1)] {
        let r = s.append(T, &id, vec![with_id(again)]).await.unwrap();
        assert_eq!(r[0].seq, first[0].seq);
        assert!(r[0].duplicate);
    }
    assert_eq!(times(s, &id).await, vec![t]);
}

async fn a_fork_follows_its_fork_point(s: &dyn Store) {
    let id = new_conv(s).await;
    let (t1, t2, t3) = (
        at("2024-03-01T10:00:00Z"),
        at("2024-03-01T11:00:00Z"),
        at("2024-03-01T12:00:00Z"),
    );
    s.append(
        T,
        &id,
        vec![
            msg(Role::User, "1", Some(t1)),
            msg(Role::Assistant, "2", Some(t2)),
            msg(Role::User, "3", Some(t3)),
        ],
    )
    .await
    .unwrap();
    let fork = s
        .fork_conversation(T, &id, 2, NewFork::default())
        .await
        .unwrap()
        .id;
    // Before the fork point's message: refused; between it and the parent's next: fine.
    match s
        .append(T, &fork, vec![msg(Role::User, "x", Some(t2 - 1))])
        .await
    {
        Err(StoreError::Time(TimeRefusal::Backwards { previous, .. })) => {
            assert_eq!(previous, t2)
        }
        other => panic!("{other:?}"),
    }
    s.append(T, &fork, vec![msg(Role::User, "x", Some(t2 + 1))])
        .await
        .unwrap();
    assert_eq!(times(s, &fork).await, vec![t1, t2, t2 + 1]);
    // A fork of the fork at its parent's rows, and at seq 0 (no message before).
    let deeper = s
        .fork_conversation(T, &fork, 1, NewFork::default())
        .await
        .unwrap()
        .id;
    s.append(T, &deeper, vec![msg(Role::User, "y", Some(t1))])
        .await
        .unwrap();
    let empty = s
        .fork_conversation(T, &id, 0, NewFork::default())
        .await
        .unwrap()
        .id;
    s.append(T, &empty, vec![msg(Role::User, "z", Some(t1 - 1))])
        .await
        .unwrap();
}

async fn a_clear_leaves_no_time_to_follow(s: &dyn Store) {
    let id = new_conv(s).await;
    let t = at("2024-03-01T10:00:00Z");
    s.append(T, &id, vec![msg(Role::User, "1", Some(t))])
        .await
        .unwrap();
    s.clear_conversation(T, &id).await.unwrap();
    s.append(T, &id, vec![msg(Role::User, "older", Some(t - 1))])
        .await
        .unwrap();
    assert_eq!(times(s, &id).await, vec![t - 1]);
}

/// Appends from several tasks at once, with and without times and client ids: whatever the
/// interleaving, times follow seqs.
async fn concurrent_appends_keep_times_in_order(s: Arc<dyn Store>) {
    let id = new_conv(s.as_ref()).await;
    let mut tasks = Vec::new();
    for w in 0..4 {
        let (s, id) = (s.clone(), id.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0..10 {
                let mut m = msg(Role::User, &format!("{w}-{i}"), None);
                match (w + i) % 3 {
                    0 => m.message.created_at = Some(now_ms()),
                    1 => m.message.id = Some(format!("{w}-{i}")),
                    _ => {}
                }
                match s.append(T, &id, vec![m]).await {
                    // A time read before another task stored a later one: refused, nothing
                    // stored.
                    Ok(_) | Err(StoreError::Time(TimeRefusal::Backwards { .. })) => {}
                    Err(e) => panic!("{e}"),
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let t = times(s.as_ref(), &id).await;
    assert!(t.len() >= 26, "{}", t.len()); // every message without a time
    assert!(t.windows(2).all(|w| w[0] <= w[1]), "{t:?}");
}

/// Migration 0011's backfill gives every conversation the time forking and appending stored:
/// a conversation's newest message, a fork's parent's message at the fork point when the fork
/// has no row of its own, none for an empty or cleared one.
async fn the_backfill_stores_what_appends_did(s: &dyn Store, raw: common::Raw<'_>) {
    let a = new_conv(s).await;
    let t = at("2024-03-01T10:00:00Z");
    s.append(
        T,
        &a,
        vec![
            msg(Role::User, "1", Some(t)),
            msg(Role::Assistant, "2", Some(t + 1)),
            msg(Role::User, "3", None),
        ],
    )
    .await
    .unwrap();
    let bare_fork = s
        .fork_conversation(T, &a, 2, NewFork::default())
        .await
        .unwrap()
        .id;
    let fork = s
        .fork_conversation(T, &a, 1, NewFork::default())
        .await
        .unwrap()
        .id;
    s.append(T, &fork, vec![msg(Role::Assistant, "x", Some(t + 5))])
        .await
        .unwrap();
    let _ = s
        .fork_conversation(T, &fork, 2, NewFork::default())
        .await
        .unwrap();
    let _empty = new_conv(s).await;
    let cleared = new_conv(s).await;
    s.append(T, &cleared, vec![msg(Role::User, "gone", None)])
        .await
        .unwrap();
    s.clear_conversation(T, &cleared).await.unwrap();

    let sql = "SELECT id, last_at FROM conversations ORDER BY id";
    let file = match raw {
        common::Raw::Sqlite(_) => include_str!("../migrations/sqlite/0011_last_at.sql"),
        common::Raw::Pg(_) => include_str!("../migrations/postgres/0011_last_at.sql"),
    };
    let backfill = &file[file.find("-- Backfill").unwrap()..];
    let stored: Vec<(String, Option<i64>)> = match raw {
        common::Raw::Sqlite(p) => {
            let rows = sqlx::query_as(sql).fetch_all(p).await.unwrap();
            sqlx::raw_sql("UPDATE conversations SET last_at = NULL")
                .execute(p)
                .await
                .unwrap();
            sqlx::raw_sql(backfill).execute(p).await.unwrap();
            assert_eq!(
                sqlx::query_as::<_, (String, Option<i64>)>(sql)
                    .fetch_all(p)
                    .await
                    .unwrap(),
                rows
            );
            rows
        }
        common::Raw::Pg(p) => {
            let rows = sqlx::query_as(sql).fetch_all(p).await.unwrap();
            sqlx::raw_sql("UPDATE conversations SET last_at = NULL")
                .execute(p)
                .await
                .unwrap();
            sqlx::raw_sql(backfill).execute(p).await.unwrap();
            assert_eq!(
                sqlx::query_as::<_, (String, Option<i64>)>(sql)
                    .fetch_all(p)
                    .await
                    .unwrap(),
                rows
            );
            rows
        }
    };
    let of = |id: &str| stored.iter().find(|r| r.0 == id).unwrap().1;
    assert_eq!(of(&bare_fork), Some(t + 1));
    assert_eq!(of(&fork), Some(t + 5));
    assert_eq!(of(&cleared), None);
    assert!(of(&a).unwrap() > t + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_backfill_on_sqlite() {
    let db = common::sqlite().await;
    the_backfill_stores_what_appends_did(&db.store, common::Raw::Sqlite(db.store.pool())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_backfill_on_postgres() {
    let Some(db) = common::pg().await else { return };
    the_backfill_stores_what_appends_did(&db.store, common::Raw::Pg(db.store.pool())).await;
}

macro_rules! suite {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = crate::common::sqlite().await;
                    super::$name(&db.store).await;
                }
            )*
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn concurrent_appends_keep_times_in_order() {
                let db = crate::common::sqlite().await;
                super::concurrent_appends_keep_times_in_order(std::sync::Arc::new(db.store.clone()))
                    .await;
            }
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let Some(db) = crate::common::pg().await else { return };
                    super::$name(&db.store).await;
                }
            )*
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn concurrent_appends_keep_times_in_order() {
                let Some(db) = crate::common::pg().await else { return };
                super::concurrent_appends_keep_times_in_order(std::sync::Arc::new(db.store.clone()))
                    .await;
            }
        }
    };
}

suite!(
    given_times_are_kept,
    backwards_refuses_the_whole_batch,
    the_future_within_the_skew_only,
    a_retry_ignores_the_time,
    a_fork_follows_its_fork_point,
    a_clear_leaves_no_time_to_follow,
);
