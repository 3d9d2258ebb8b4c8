//! SQLite's writes other than the append, each run by the writer (`writer.rs`) in its write
//! transaction with the shared statements (`statements`).

use rusqlite::Connection;

use super::append::running;
use super::conn::{bind_all, named};
use crate::error::StoreError;
use crate::stable::StableRow;
use crate::statements::SAVE_STABLE_WINDOW;
use crate::window::StableKey;
use crate::window_plan::Snapshot;

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
    let mut stmt = tx.prepare_cached(sql)?;
    bind_all(&mut stmt, values)?;
    Ok(stmt.raw_execute()? as u64)
}
