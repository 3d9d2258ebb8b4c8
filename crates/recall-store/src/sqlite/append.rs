//! SQLite's one append path, run by the writer (`writer.rs`) in its write transaction: read
//! the totals and the stored client ids, ask the plan (`append_plan`), insert the rows, save
//! the totals and advance the stable windows that were current (`stable`).
//!
//! An append writes as few pages as it can (every page a commit changes is written to the
//! WAL): the message row, its primary-key entry and the conversation row. No index on the
//! running totals and no search indexing at append (migration 0004).

use std::collections::HashMap;

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension};

use super::conn::named;
use super::forks::stable_rows;
use super::SqliteStore;
use crate::append_plan::{plan_appends, running_row, Running};
use crate::codec::{now_ms, Encoded};
use crate::driver::Conv;
use crate::error::StoreError;
use crate::model::{Appended, Figures};
use crate::ops::AppendOps;
use crate::stable::{advance, fold_stable, Advance, StableRow};
use crate::statements::{
    insert_messages_sql, CURRENT_STABLE_WINDOWS, ROWS_PER_INSERT, RUNNING, SAVE_RUNNING,
    UPDATE_STABLE_WINDOW,
};
use crate::window::StableKey;

/// The conversation's running totals, read under the write lock.
pub(super) fn running(tx: &Connection, tenant: &str, id: &str) -> Result<Running, StoreError> {
    tx.prepare_cached(RUNNING)?
        .query_row(named(&[&id, &tenant]).as_slice(), |row| {
            Ok(running_row(row))
        })
        .optional()?
        .ok_or_else(|| StoreError::ConversationNotFound(id.to_string()))?
}

/// Saves the running totals of conversation `id`.
pub(super) fn save_running(tx: &Connection, id: &str, r: &Running) -> Result<(), StoreError> {
    let [a, b, c, d, e, f, g, h] = r.columns();
    let now = now_ms();
    tx.prepare_cached(SAVE_RUNNING)?.execute(
        named(&[
            &a, &b, &c, &d, &e, &f, &g, &h, &now, &id, &r.last_at, &r.mirror,
        ])
        .as_slice(),
    )?;
    Ok(())
}

/// Appends an encoded batch in the writer's transaction (committed by the writer).
fn append(
    tx: &mut Connection,
    tenant: &str,
    id: &str,
    encoded: &[Encoded],
) -> Result<Vec<Appended>, StoreError> {
    let mut r = running(tx, tenant, id)?;
    let before = r.last_seq;
    let seen = if encoded.iter().any(|e| e.client_id.is_some()) {
        // The shared lookup answers at once on SQLite (`run_now`).
        super::run_now(Box::pin(crate::messages::stored_ids(
            &mut super::SqliteTx(tx),
            id,
            encoded,
        )))?
    } else {
        HashMap::new()
    };
    let plan = plan_appends(encoded, &mut r, &seen, now_ms())?;
    // A batch of retries writes nothing.
    if r.last_seq == before {
        return Ok(plan.out);
    }
    for chunk in plan.rows.chunks(ROWS_PER_INSERT) {
        let mut insert = tx.prepare_cached(&insert_messages_sql(chunk.len()))?;
        let mut n = 0;
        let mut bind = |v: &dyn rusqlite::ToSql| -> rusqlite::Result<()> {
            n += 1;
            insert.raw_bind_parameter(n, v)
        };
        for (i, seq, at, run) in chunk {
            let e = &encoded[*i];
            let f = &e.figures;
            bind(&id)?;
            bind(seq)?;
            bind(&e.client_id.as_deref())?;
            bind(&e.role)?;
            bind(&e.content.as_str())?;
            bind(&e.metadata.as_deref())?;
            bind(&e.status)?;
            bind(at)?;
            bind(&f.tokens_o200k)?;
            bind(&f.tokens_cl100k)?;
            bind(&f.chars)?;
            bind(&f.flags())?;
            bind(&run.o200k)?;
            bind(&run.cl100k)?;
            bind(&run.chars)?;
            bind(&run.chars4)?;
            bind(&run.cuts)?;
            bind(&run.mirror)?;
        }
        insert.raw_execute()?;
    }
    save_running(tx, id, &r)?;
    if r.current_windows > 0 {
        advance_stable(tx, tenant, id, before, r.last_seq, &plan.added)?;
    }
    Ok(plan.out)
}

/// Advances the stable windows that were current before the append (`before`: the last seq
/// then) over the history it wrote (`added`), up to `last_seq` (see `stable::advance`).
/// Windows behind `before` are left to the catch-up of the next context build.
fn advance_stable(
    tx: &Connection,
    tenant: &str,
    id: &str,
    before: i64,
    last_seq: i64,
    added: &[Figures],
) -> Result<(), StoreError> {
    let current: Vec<(String, i64, i64)> = tx
        .prepare_cached(CURRENT_STABLE_WINDOWS)?
        .query_map(named(&[&id, &before]).as_slice(), |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?
        .collect::<Result<_, _>>()?;
    for (policy_key, start_seq, cost) in current {
        // A key this version did not write is never looked up again: leave it.
        let Some(key) = StableKey::parse(&policy_key) else {
            continue;
        };
        let next = match advance(&key, (start_seq, cost), added, before, last_seq) {
            Advance::Grown(next) => next,
            Advance::CatchUp(from) => catch_up(tx, tenant, id, &key, from, last_seq)?,
        };
        tx.prepare_cached(UPDATE_STABLE_WINDOW)?.execute(
            named(&[
                &id,
                &policy_key,
                &next.start_seq,
                &next.cost,
                &next.last_seq,
            ])
            .as_slice(),
        )?;
    }
    Ok(())
}

/// A stable window's state caught up from `from` to `last_seq`.
fn catch_up(
    tx: &Connection,
    tenant: &str,
    id: &str,
    key: &StableKey,
    from: StableRow,
    last_seq: i64,
) -> Result<StableRow, StoreError> {
    // A fork's window may start in its parent's rows.
    let segs = super::forks::chain(tx, tenant, id)?;
    let rows = stable_rows(tx, &segs, key, from.start_seq, last_seq)?;
    Ok(fold_stable(&rows, key, from, last_seq))
}

#[async_trait]
impl AppendOps for SqliteStore {
    async fn append_encoded(
        &self,
        c: Conv<'_>,
        encoded: Vec<Encoded>,
    ) -> Result<Vec<Appended>, StoreError> {
        let (tenant, id) = (c.tenant.to_string(), c.id.to_string());
        self.writer
            .write(move |tx| append(tx, &tenant, &id, &encoded))
            .await
    }
}
