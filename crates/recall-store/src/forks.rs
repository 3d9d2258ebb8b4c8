//! Forking, written once on the transaction surface (`driver.rs`): both databases check the
//! fork point, take the history's totals at it and insert the fork's row in one transaction
//! under the parent's row lock. What a fork is, and what is decided without I/O, is
//! `fork_plan`; redaction and the reads along a fork's chain are each database's
//! (`*/forks.rs`).

use crate::codec::{check_text, now_ms, policy_text};
use crate::conversations::{get_in, lock_running};
use crate::driver::{params, tx_rows, Conv, Statements, Tx};
use crate::error::StoreError;
use crate::fork_plan::{
    check_fork_point, count_at, encode_chain, fork_ancestors, fork_parent, fork_running, owner,
    segments, stored_segments, truncate, ChainRow, Segment, CHAIN_ROW_SQL, CHAIN_SQL,
    COPY_STABLE_WINDOWS, INSERT_FORK, LAST_CUM, STATUS_AT, SYSTEM_IN_SEGMENT,
};
use crate::model::{Conversation, NewFork};
use crate::window::Totals;

/// The segments of a history, newest first, in the transaction `tx`: the chain the row
/// stores (migration 0008), else the recursive query; not found when it is not the tenant's.
async fn chain_in(tx: &mut dyn Tx, c: Conv<'_>) -> Result<Vec<Segment>, StoreError> {
    let found = tx_rows(tx, CHAIN_ROW_SQL, &params![c.id, c.tenant], |r| {
        Ok((r.opt_text(0)?, r.int(1)?, r.opt_text(2)?))
    })
    .await?;
    let Some((parent, fork_seq, stored)) = found.into_iter().next() else {
        return Err(StoreError::ConversationNotFound(c.id.to_string()));
    };
    if let Some(segs) = stored_segments(c.id, parent.as_deref(), fork_seq, stored.as_deref())? {
        return Ok(segs);
    }
    let rows: Vec<ChainRow> = tx_rows(tx, CHAIN_SQL, &params![c.id, c.tenant], |r| {
        Ok((r.text(0)?, r.opt_text(1)?, r.int(2)?))
    })
    .await?;
    let segs = segments(&rows);
    if segs.is_empty() {
        return Err(StoreError::ConversationNotFound(c.id.to_string()));
    }
    Ok(segs)
}

/// The running totals of a history up to `at`, the time of its newest message and its mirror
/// sum (those of its newest message at or before it; an empty history's sum is 0).
async fn totals_at(
    tx: &mut dyn Tx,
    segs: &[Segment],
    at: i64,
) -> Result<(Totals, Option<i64>, Option<i64>), StoreError> {
    for seg in truncate(segs, at) {
        let found = tx_rows(tx, LAST_CUM, &params![&seg.id, seg.upto], |r| {
            let t = Totals {
                o200k: r.int(0)?,
                cl100k: r.int(1)?,
                chars: r.int(2)?,
                chars4: r.int(3)?,
                cuts: r.int(4)?,
            };
            Ok((t, r.int(5)?, r.opt_int(6)?))
        })
        .await?;
        if let Some((t, last_at, mirror)) = found.into_iter().next() {
            return Ok((t, Some(last_at), mirror));
        }
    }
    Ok((Totals::default(), None, Some(0)))
}

/// Forks conversation `c` at `at` (see [`crate::Store::fork_conversation`]).
pub(crate) async fn fork<D: Statements>(
    db: &D,
    c: Conv<'_>,
    at: i64,
    new: NewFork,
) -> Result<Conversation, StoreError> {
    let (tenant, id) = (c.tenant.to_string(), c.id.to_string());
    let mark = db.fork_index_mark();
    db.write(Box::new(move |tx| {
        Box::pin(async move { fork_in(tx, Conv::new(&tenant, &id), at, &new, mark).await })
    }))
    .await
}

async fn fork_in(
    tx: &mut dyn Tx,
    c: Conv<'_>,
    at: i64,
    new: &NewFork,
    mark: Option<&'static str>,
) -> Result<Conversation, StoreError> {
    let id = c.id;
    lock_running(tx, c).await?;
    let segs = chain_in(tx, c).await?;
    let from = get_in(tx, c).await?;
    if at < 0 || at > from.last_seq {
        return Err(StoreError::Invalid(format!(
            "at: {at} is not a point of conversation '{id}' (0 to its last seq, {})",
            from.last_seq
        )));
    }
    let parent = fork_parent(&segs, at)
        .map(|s| s.id.clone())
        .unwrap_or_else(|| id.to_string());
    if let Some(o) = owner(&segs, at) {
        let status = tx_rows(tx, STATUS_AT, &params![&o.id, at], |r| r.text(0)).await?;
        check_fork_point(id, at, status.first().map(String::as_str))?;
    }
    let (totals, last_at, mirror) = totals_at(tx, &segs, at).await?;
    let count = count_at(from.last_seq, from.message_count, at);
    let run = fork_running(at, count, totals, last_at, mirror);
    let title = new.title.clone().or_else(|| from.title.clone());
    check_text("title", title.as_deref().unwrap_or(""))?;
    let fork_id = uuid::Uuid::now_v7().to_string();
    let [_, count, o, c2, ch, c4, turns, cuts] = run.columns();
    // What every read of the fork would otherwise find again: its chain, and whether its
    // prefix holds a system message.
    let ancestors = fork_ancestors(&segs, at);
    let mut prefix_system = false;
    for seg in &ancestors {
        let found = tx_rows(tx, SYSTEM_IN_SEGMENT, &params![&seg.id, seg.upto], |r| {
            r.flag(0)
        })
        .await?;
        prefix_system |= found.first().copied().unwrap_or(false);
    }
    let metadata = serde_json::Value::Object(from.metadata.clone()).to_string();
    let values = params![
        &fork_id,
        c.tenant,
        &title,
        &from.system_prompt,
        metadata,
        policy_text(from.policy.as_ref())?,
        now_ms(),
        &parent,
        at,
        count,
        o,
        c2,
        ch,
        c4,
        turns,
        cuts,
        encode_chain(&ancestors)?,
        prefix_system,
        run.last_at,
        run.mirror,
    ];
    tx.execute(INSERT_FORK, &values).await?;
    if let Some(sql) = mark {
        // Its own rows start after `at`: a search index kept per conversation has nothing of
        // it to catch up.
        tx.execute(sql, &params![&fork_id, at]).await?;
    }
    if at == from.last_seq {
        tx.execute(COPY_STABLE_WINDOWS, &params![&fork_id, id, at])
            .await?;
    }
    get_in(tx, Conv::new(c.tenant, &fork_id)).await
}
