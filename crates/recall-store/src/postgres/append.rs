//! PostgreSQL's writes that hold the conversation's row lock: the one append path (lock,
//! read the stored client ids, ask the plan in `append_plan`, insert, advance the stable
//! windows), the other writes that change running totals, and saving a caught-up stable
//! window.
//!
//! A batch without client ids or times takes a one-statement path (`UPDATE … RETURNING` the
//! totals): it sets `last_at = GREATEST(last_at, now)`, which is then every message's time.

use std::collections::HashMap;

use async_trait::async_trait;
use sqlx::{PgConnection, Postgres, Transaction};

use super::PgStore;
use crate::append_plan::{plan_appends, Running};
use crate::codec::{now_ms, Encoded};
use crate::driver::Conv;
use crate::error::StoreError;
use crate::fork_plan::Segment;
use crate::model::{Appended, Figures};
use crate::ops::AppendOps;
use crate::stable::{advance, fold_stable, Advance, StableRow};
use crate::statements::{
    insert_messages_sql, CURRENT_STABLE_WINDOWS, ROWS_PER_INSERT, RUNNING, SAVE_RUNNING,
    SAVE_STABLE_WINDOW, UPDATE_STABLE_WINDOW,
};
use crate::window::StableKey;
use crate::window_plan::Snapshot;

type Tx<'a> = Transaction<'a, Postgres>;

/// Takes the conversation's row lock and adds the totals of a batch whose every message is
/// written (no client ids) and gets the clock's time (no `created_at`) in one statement;
/// `$3`–`$10` as `Running::columns`, `$11` the time. Every message of such a batch gets the
/// time of the newest message after it: `$11`, or the newest message's before it when that
/// is later (`GREATEST` passes over a NULL). Returns the totals after it, the stable windows
/// current before it and that time.
const RESERVE_RUNNING: &str = "UPDATE conversations SET last_seq = last_seq + $3, \
     message_count = message_count + $4, total_o200k = total_o200k + $5, \
     total_cl100k = total_cl100k + $6, total_chars = total_chars + $7, \
     total_chars4 = total_chars4 + $8, total_turns = total_turns + $9, \
     total_cuts = total_cuts + $10, updated_at = $11, last_at = GREATEST(last_at, $11) \
     WHERE id = $1 AND tenant = $2 \
     RETURNING last_seq, message_count, total_o200k, total_cl100k, total_chars, total_chars4, \
     total_turns, total_cuts, (SELECT COUNT(*) FROM stable_windows WHERE conversation_id = $1 \
     AND stable_windows.last_seq = conversations.last_seq - $3), last_at, total_mirror";

/// Saves the mirror sum `$2` of conversation `$1` after [`RESERVE_RUNNING`], which cannot move
/// it: each message's term depends on its seq, known only once the lock is held.
const SAVE_MIRROR: &str = "UPDATE conversations SET total_mirror = $2 WHERE id = $1";

fn running_at(row: &sqlx::postgres::PgRow) -> Result<Running, StoreError> {
    crate::append_plan::running_row(row)
}

impl PgStore {
    /// Takes the conversation's row lock; its running totals.
    pub(super) async fn lock_running(
        tx: &mut Tx<'_>,
        tenant: &str,
        id: &str,
    ) -> Result<Running, StoreError> {
        let row = sqlx::query(&format!("{RUNNING} FOR UPDATE"))
            .bind(id)
            .bind(tenant)
            .fetch_optional(&mut **tx)
            .await?
            .ok_or_else(|| StoreError::ConversationNotFound(id.to_string()))?;
        running_at(&row)
    }

    /// Takes the lock and adds the totals of `encoded` (all of which will be written, at the
    /// clock's time `now`) in one statement; returns the totals as they were before, with the
    /// time every message of the batch gets as the newest message's (see `RESERVE_RUNNING`).
    async fn reserve_running(
        tx: &mut Tx<'_>,
        tenant: &str,
        id: &str,
        encoded: &[Encoded],
        now: i64,
    ) -> Result<Running, StoreError> {
        let d = Running::of_batch(encoded);
        let mut q = sqlx::query(RESERVE_RUNNING).bind(id).bind(tenant);
        for v in d.columns() {
            q = q.bind(v);
        }
        let row = q
            .bind(now)
            .fetch_optional(&mut **tx)
            .await?
            .ok_or_else(|| StoreError::ConversationNotFound(id.to_string()))?;
        Ok(running_at(&row)?.before(&d))
    }

    pub(super) async fn save_running(
        tx: &mut Tx<'_>,
        id: &str,
        r: &Running,
    ) -> Result<(), StoreError> {
        let mut q = sqlx::query(SAVE_RUNNING);
        for v in r.columns() {
            q = q.bind(v);
        }
        q.bind(now_ms())
            .bind(id)
            .bind(r.last_at)
            .bind(r.mirror)
            .execute(&mut **tx)
            .await?;
        Ok(())
    }

    /// A stable window's state caught up from `from` to `last_seq` (see `fold_stable`).
    pub(super) async fn stable_catch_up(
        conn: &mut PgConnection,
        segs: &[Segment],
        key: &StableKey,
        from: StableRow,
        last_seq: i64,
    ) -> Result<StableRow, StoreError> {
        let rows = Self::stable_rows_in(conn, segs, key, from.start_seq, last_seq).await?;
        Ok(fold_stable(&rows, key, from, last_seq))
    }

    /// Advances, inside an append's transaction, the stable windows that were current before
    /// it over the history it wrote (see `stable::advance`). Windows behind `before` are left
    /// to the catch-up of the next context build.
    async fn advance_stable(
        tx: &mut Tx<'_>,
        tenant: &str,
        id: &str,
        before: i64,
        last_seq: i64,
        added: &[Figures],
    ) -> Result<(), StoreError> {
        let current: Vec<(String, i64, i64)> = sqlx::query_as(CURRENT_STABLE_WINDOWS)
            .bind(id)
            .bind(before)
            .fetch_all(&mut **tx)
            .await?;
        for (policy_key, start_seq, cost) in current {
            // A key this version did not write is never looked up again: leave it.
            let Some(key) = StableKey::parse(&policy_key) else {
                continue;
            };
            let next = match advance(&key, (start_seq, cost), added, before, last_seq) {
                Advance::Grown(next) => next,
                Advance::CatchUp(from) => {
                    // A fork's window may start in its parent's rows.
                    let segs = Self::chain(tx, tenant, id).await?;
                    Self::stable_catch_up(tx, &segs, &key, from, last_seq).await?
                }
            };
            sqlx::query(UPDATE_STABLE_WINDOW)
                .bind(id)
                .bind(&policy_key)
                .bind(next.start_seq)
                .bind(next.cost)
                .bind(next.last_seq)
                .execute(&mut **tx)
                .await?;
        }
        Ok(())
    }

    /// Saves a stable window's state, unless the conversation changed since the read that
    /// computed it (`snap`) or is gone.
    pub(super) async fn save_stable(
        &self,
        tenant: &str,
        id: &str,
        key: &StableKey,
        save: &StableRow,
        snap: &Snapshot,
    ) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        let r = match Self::lock_running(&mut tx, tenant, id).await {
            Ok(r) => r,
            // Deleted meanwhile: nothing to save.
            Err(StoreError::ConversationNotFound(_)) => return Ok(()),
            Err(e) => return Err(e),
        };
        if snap.unchanged(&r) {
            sqlx::query(SAVE_STABLE_WINDOW)
                .bind(id)
                .bind(key.key())
                .bind(save.start_seq)
                .bind(save.cost)
                .bind(save.last_seq)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }
}

#[async_trait]
impl AppendOps for PgStore {
    /// PostgreSQL's one append path, in one transaction.
    async fn append_encoded(
        &self,
        c: Conv<'_>,
        encoded: Vec<Encoded>,
    ) -> Result<Vec<Appended>, StoreError> {
        let (tenant, id) = (c.tenant, c.id);
        let encoded = encoded.as_slice();
        let has_client_ids = encoded.iter().any(|e| e.client_id.is_some());
        // Given times are checked against the newest message's under the lock.
        let locked = has_client_ids || encoded.iter().any(|e| e.created_at.is_some());
        let mut tx = self.pool.begin().await?;
        let now = now_ms();
        // Without client ids or given times every message is written at the clock's time, so
        // the new totals are known before the lock: one `UPDATE … RETURNING` takes the lock
        // and moves the totals. Otherwise which messages are written, and whether their times
        // follow the history's, is known only under the lock: lock, read, then save the
        // totals.
        let (mut r, seen) = if locked {
            let r = Self::lock_running(&mut tx, tenant, id).await?;
            let seen = if has_client_ids {
                crate::messages::stored_ids(&mut super::PgTx(&mut tx), id, encoded).await?
            } else {
                HashMap::new()
            };
            (r, seen)
        } else {
            let r = Self::reserve_running(&mut tx, tenant, id, encoded, now).await?;
            (r, HashMap::new())
        };
        let before = r.last_seq;
        let plan = plan_appends(encoded, &mut r, &seen, now)?;
        // A batch of retries writes nothing.
        if r.last_seq == before {
            tx.commit().await?;
            return Ok(plan.out);
        }
        for chunk in plan.rows.chunks(ROWS_PER_INSERT) {
            let sql = insert_messages_sql(chunk.len());
            let mut q = sqlx::query(&sql);
            for (i, seq, at, run) in chunk {
                let e = &encoded[*i];
                let f = &e.figures;
                q = q
                    .bind(id)
                    .bind(*seq)
                    .bind(e.client_id.as_deref())
                    .bind(e.role)
                    .bind(e.content.as_str())
                    .bind(e.metadata.as_deref())
                    .bind(e.status)
                    .bind(*at)
                    .bind(f.tokens_o200k)
                    .bind(f.tokens_cl100k)
                    .bind(f.chars)
                    .bind(f.flags())
                    .bind(run.o200k)
                    .bind(run.cl100k)
                    .bind(run.chars)
                    .bind(run.chars4)
                    .bind(run.cuts)
                    .bind(run.mirror);
            }
            q.execute(&mut *tx).await?;
        }
        if r.current_windows > 0 {
            Self::advance_stable(&mut tx, tenant, id, before, r.last_seq, &plan.added).await?;
        }
        if locked {
            Self::save_running(&mut tx, id, &r).await?;
        } else if r.mirror.is_some() {
            sqlx::query(SAVE_MIRROR)
                .bind(id)
                .bind(r.mirror)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(plan.out)
    }
}
