//! SQLite's writes other than the append, each run by the writer (`writer.rs`) in its write
//! transaction with the shared statements (`statements`).

use rusqlite::Connection;

use super::append::{running, save_running};
use super::conn::named;
use crate::append_plan::replacement;
use crate::codec::Encoded;
use crate::error::StoreError;
use crate::stable::StableRow;
use crate::statements::{
    DROP_STABLE_WINDOWS_FROM, ROLL_BACK_STABLE_WINDOWS, SAVE_STABLE_WINDOW, SHIFT_RUNNING,
    UPDATE_MESSAGE,
};
use crate::window::StableKey;
use crate::window_plan::Snapshot;
use recall_core::gateway::mirror;

/// Replaces message `seq` (encoded as `e`) and shifts the running totals after it.
pub(super) fn update_message(
    tx: &Connection,
    tenant: &str,
    id: &str,
    seq: i64,
    e: &Encoded,
) -> Result<(), StoreError> {
    let mut r = running(tx, tenant, id)?;
    super::forks::before_update(tx, id, seq)?;
    let Some(old) = super::forks::replaced(tx, id, seq)? else {
        return Err(StoreError::MessageNotFound {
            conversation: id.to_string(),
            seq,
        });
    };
    let f = &e.figures;
    let delta = replacement((&old.figures, &old.role), (f, e.role));
    let d_mirror = mirror::shift(seq, old.mirror, e.mirror);
    tx.prepare_cached(UPDATE_MESSAGE)?.execute(
        named(&[
            &id,
            &seq,
            &e.role,
            &e.content,
            &e.metadata,
            &e.status,
            &f.tokens_o200k,
            &f.tokens_cl100k,
            &f.chars,
            &f.flags(),
        ])
        .as_slice(),
    )?;
    let [d_o, d_c, d_ch, d_c4, d_cuts, _] = delta;
    if [d_o, d_c, d_ch, d_c4, d_cuts, d_mirror] != [0; 6] {
        tx.prepare_cached(SHIFT_RUNNING)?.execute(
            named(&[&id, &seq, &d_o, &d_c, &d_ch, &d_c4, &d_cuts, &d_mirror]).as_slice(),
        )?;
    }
    if [d_o, d_c, d_ch, d_c4, d_cuts] != [0; 5] {
        // Stable windows that counted the old size step back, or go.
        for sql in [ROLL_BACK_STABLE_WINDOWS, DROP_STABLE_WINDOWS_FROM] {
            tx.prepare_cached(sql)?
                .execute(named(&[&id, &seq]).as_slice())?;
        }
    }
    r.shift(delta);
    r.mirror = r.mirror.map(|m| mirror::add(m, d_mirror));
    save_running(tx, id, &r)
}

/// Saves a stable window's state, unless the conversation changed since the read that
/// computed it (`snap`: an update or a clear would make it stale) or is gone.
pub(super) fn save_stable(
    tx: &Connection,
    tenant: &str,
    id: &str,
    key: &StableKey,
    save: &StableRow,
    snap: &Snapshot,
) -> Result<(), StoreError> {
    let r = match running(tx, tenant, id) {
        Ok(r) => r,
        // Deleted meanwhile: nothing to save.
        Err(StoreError::ConversationNotFound(_)) => return Ok(()),
        Err(e) => return Err(e),
    };
    if snap.unchanged(&r) {
        tx.prepare_cached(SAVE_STABLE_WINDOW)?.execute(
            named(&[&id, &key.key(), &save.start_seq, &save.cost, &save.last_seq]).as_slice(),
        )?;
    }
    Ok(())
}

/// Runs one statement of the shared text with `values` as `$1`…; returns the rows changed.
pub(super) fn execute(
    tx: &Connection,
    sql: &str,
    values: &[&dyn rusqlite::ToSql],
) -> Result<u64, StoreError> {
    Ok(tx.prepare_cached(sql)?.execute(named(values).as_slice())? as u64)
}
