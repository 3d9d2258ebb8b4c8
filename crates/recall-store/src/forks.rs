//! Forking, written once on the transaction surface (`driver.rs`): both databases check the
//! fork point, take the history's totals at it and insert the fork's row in one transaction
//! under the parent's row lock. What a fork is, and what is decided without I/O, is
//! `fork_plan`. Redaction is written once here as well (each database's statements around
//! it are its `driver::RedactionFrame`), and so are the reads along a fork's chain that need one
//! snapshot: a page of messages, the forks of a conversation, the mirror sums.

use crate::append_plan::replacement;
use crate::codec::{check_text, message_row, now_ms, policy_text};
use crate::conversations::{conversation_row, get_in, lock_running};
use crate::driver::{params, tx_rows, Conv, RedactionFrame, Statements, Tx};
use crate::error::StoreError;
use crate::fork_plan::{
    after, check_fork_point, count_at, encode_chain, fork_ancestors, fork_parent, fork_running,
    forks_of_sql, owner, page_upto_sql, redaction, segments, stored_segments, truncate, ChainRow,
    Segment, CHAIN_ROW_SQL, CHAIN_SQL, CLIENT_ID_OF, COPY_STABLE_WINDOWS, DESCENDANTS_READING,
    INSERT_FORK, LAST_CUM, MIRROR_AT, MIRROR_TOTAL, REDACTED_IN, REDACT_MESSAGE, SET_CLIENT_ID,
    SHIFT_TOTALS, STATUS_AT, SYSTEM_IN_SEGMENT,
};
use crate::messages::replaced_row;
use crate::model::{Conversation, MirrorSums, NewFork, StoredMessage};
use crate::statements::{
    DELETE_STABLE_WINDOWS, DROP_LEASE_FROM, DROP_SUMMARIES_FROM, MESSAGE_FIGURES, SHIFT_RUNNING,
};
use crate::window::Totals;
use recall_core::gateway::mirror;

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

/// The direct forks of conversation `c` (see [`crate::Store::forks`]).
pub(crate) async fn forks_of<D: Statements>(
    db: &D,
    c: Conv<'_>,
) -> Result<Vec<Conversation>, StoreError> {
    let (tenant, id) = (c.tenant.to_string(), c.id.to_string());
    db.snapshot(Box::new(move |tx| {
        Box::pin(async move {
            let c = Conv::new(&tenant, &id);
            get_in(tx, c).await?;
            tx_rows(
                tx,
                &forks_of_sql(),
                &params![c.id, c.tenant],
                conversation_row,
            )
            .await
        })
    }))
    .await
}

/// The mirror sums of conversation `c`'s history (see [`crate::Store::mirror_sums`]), read in
/// one snapshot.
pub(crate) async fn mirror_sums<D: Statements>(
    db: &D,
    c: Conv<'_>,
    at: i64,
) -> Result<MirrorSums, StoreError> {
    let (tenant, id) = (c.tenant.to_string(), c.id.to_string());
    db.snapshot(Box::new(move |tx| {
        Box::pin(async move {
            let c = Conv::new(&tenant, &id);
            let found = tx_rows(tx, MIRROR_TOTAL, &params![c.id, c.tenant], |r| {
                Ok((r.int(0)?, r.int(1)?, r.opt_int(2)?))
            })
            .await?;
            let Some((last_seq, count, total)) = found.into_iter().next() else {
                return Err(StoreError::ConversationNotFound(c.id.to_string()));
            };
            let segs = chain_in(tx, c).await?;
            let mut sum_at = Some(0);
            for seg in truncate(&segs, at) {
                let found =
                    tx_rows(tx, MIRROR_AT, &params![&seg.id, seg.upto], |r| r.opt_int(0)).await?;
                if let Some(m) = found.into_iter().next() {
                    sum_at = m;
                    break;
                }
            }
            let mut redacted = Vec::new();
            for (seg, from, upto) in after(&segs, at) {
                let seqs =
                    tx_rows(tx, REDACTED_IN, &params![seg, from, upto], |r| r.int(0)).await?;
                redacted.extend(seqs);
            }
            redacted.sort_unstable();
            Ok(MirrorSums {
                last_seq,
                count,
                total,
                at: sum_at,
                redacted,
            })
        })
    }))
    .await
}

/// A page of conversation `c`'s history (see [`crate::Store::messages`]): messages with
/// `seq > after`, oldest first, at most `limit`, across a fork's chain, in one snapshot.
pub(crate) async fn page<D: Statements>(
    db: &D,
    c: Conv<'_>,
    after: i64,
    limit: u32,
) -> Result<Vec<StoredMessage>, StoreError> {
    let (tenant, id) = (c.tenant.to_string(), c.id.to_string());
    db.snapshot(Box::new(move |tx| {
        Box::pin(async move {
            let segs = chain_in(tx, Conv::new(&tenant, &id)).await?;
            let mut out = Vec::new();
            for seg in segs.iter().rev() {
                let left = i64::from(limit) - out.len() as i64;
                if left <= 0 {
                    break;
                }
                if seg.upto <= after {
                    continue;
                }
                let sql = page_upto_sql();
                let params = params![&seg.id, after, seg.upto, left];
                out.extend(tx_rows(tx, &sql, &params, |r| message_row(r, 0)).await?);
            }
            Ok(out)
        })
    }))
    .await
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

/// Redacts message `seq` of conversation `c`'s history where it is stored, and shifts the
/// running totals of every conversation that reads it (see [`crate::Store::redact_message`]).
pub(crate) async fn redact<D: Statements>(db: &D, c: Conv<'_>, seq: i64) -> Result<(), StoreError> {
    let (tenant, id) = (c.tenant.to_string(), c.id.to_string());
    let frame = db.redaction_frame();
    db.write(Box::new(move |tx| {
        Box::pin(async move { redact_in(tx, Conv::new(&tenant, &id), seq, frame).await })
    }))
    .await
}

async fn redact_in(
    tx: &mut dyn Tx,
    c: Conv<'_>,
    seq: i64,
    frame: RedactionFrame,
) -> Result<(), StoreError> {
    let segs = chain_in(tx, c).await?;
    let not_found = || StoreError::MessageNotFound {
        conversation: c.id.to_string(),
        seq,
    };
    let o = owner(&segs, seq).ok_or_else(not_found)?.id.clone();
    let mut readers = tx_rows(tx, DESCENDANTS_READING, &params![&o, seq], |r| r.text(0)).await?;
    readers.insert(0, o.clone());
    // Every conversation whose totals move is locked first, in id order after the owner
    // (appends lock one row; two redactions lock in the same order).
    let lock = format!(
        "SELECT 1 FROM conversations WHERE id = $1{}",
        tx.lock_rows()
    );
    for r in &readers {
        tx.each(&lock, &params![r], &mut |_| Ok(())).await?;
    }
    let mut found = Vec::new();
    tx.each(MESSAGE_FIGURES, &params![&o, seq], &mut |r| {
        found.push(replaced_row(r, seq)?);
        Ok(())
    })
    .await?;
    let old = found.pop().ok_or_else(not_found)?;
    let e = redaction(&old.role)?;
    let f = &e.figures;
    for sql in frame.before {
        tx.each(sql, &[], &mut |_| Ok(())).await?;
    }
    let values = params![
        &o,
        seq,
        &e.content,
        f.tokens_o200k,
        f.tokens_cl100k,
        f.chars,
        f.flags()
    ];
    tx.execute(REDACT_MESSAGE, &values).await?;
    // The client id may carry user data: only its hash stays, for a retry to be recognised.
    let cid = tx_rows(tx, CLIENT_ID_OF, &params![&o, seq], |r| r.opt_text(0)).await?;
    if let Some(cid) = cid.into_iter().flatten().next() {
        let hashed = crate::append_plan::redacted_client_id(&cid);
        tx.execute(SET_CLIENT_ID, &params![&o, seq, hashed]).await?;
    }
    let [d_o, d_c, d_ch, d_c4, d_cuts, d_turns] =
        replacement((&old.figures, &old.role), (f, e.role));
    let d_mirror = mirror::shift(seq, old.mirror, mirror::REDACTED);
    // The forks' documents may hold the message's words (`DROP_RECALL_INDEX`), under the lock
    // their catch-up takes.
    for r in readers.iter().filter(|r| **r != o) {
        if let Some(sql) = frame.index_lock {
            tx.each(sql, &params![r], &mut |_| Ok(())).await?;
        }
        for sql in crate::recall_plan::DROP_RECALL_INDEX {
            tx.execute(sql, &params![r]).await?;
        }
    }
    for r in &readers {
        if [d_o, d_c, d_ch, d_c4, d_cuts, d_mirror] != [0; 6] {
            let values = params![r, seq, d_o, d_c, d_ch, d_c4, d_cuts, d_mirror];
            tx.execute(SHIFT_RUNNING, &values).await?;
        }
        if [d_o, d_c, d_ch, d_c4, d_cuts] != [0; 5] {
            // Stable windows counted the old size.
            tx.execute(DELETE_STABLE_WINDOWS, &params![r]).await?;
        }
        let values = params![r, d_o, d_c, d_ch, d_c4, d_cuts, d_turns, d_mirror];
        tx.execute(SHIFT_TOTALS, &values).await?;
        // A summary stands for the message as it was; a summariser reading it cannot commit.
        // The lease goes first (see migration 0009's trigger).
        for sql in [DROP_LEASE_FROM, DROP_SUMMARIES_FROM] {
            tx.execute(sql, &params![r, seq]).await?;
        }
    }
    for sql in frame.after {
        tx.each(sql, &[], &mut |_| Ok(())).await?;
    }
    Ok(())
}
