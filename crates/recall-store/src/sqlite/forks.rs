//! SQLite's own reads along a fork's chain (`fork_plan`), for its context read and recall:
//! the chain of a history, its system messages, a stable window's rows; and the vacuum.
//! Forking, redaction, message pages, forks and mirror sums are shared (`crate::forks`).

use std::sync::Arc;

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension};

use super::conn::named;
use super::SqliteStore;
use crate::driver::Conv;
use crate::error::StoreError;
use crate::fork_plan::{
    segments, stored_segments, ChainRow, Segment, CHAIN_ROW_SQL, CHAIN_SQL, SYSTEM_UPTO,
};
use crate::ops::ForkOps;
use crate::statements::{stable_rows_sql, SYSTEM_MESSAGES};
use crate::window::StableKey;

/// The segments of conversation `id`'s history, newest first, from its row (the chain a fork
/// stores, migration 0008); not found when it is not the tenant's.
pub(super) fn chain(conn: &Connection, tenant: &str, id: &str) -> Result<Vec<Segment>, StoreError> {
    let row: Option<(Option<String>, i64, Option<String>)> = conn
        .prepare_cached(CHAIN_ROW_SQL)?
        .query_row(named(&[&id, &tenant]).as_slice(), |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .optional()?;
    let Some((parent, fork_seq, stored)) = row else {
        return Err(StoreError::ConversationNotFound(id.to_string()));
    };
    match stored_segments(id, parent.as_deref(), fork_seq, stored.as_deref())? {
        Some(segs) => Ok(segs),
        None => chain_recursive(conn, tenant, id),
    }
}

/// [`chain`] by the recursive query (a fork whose row holds no chain).
pub(super) fn chain_recursive(
    conn: &Connection,
    tenant: &str,
    id: &str,
) -> Result<Vec<Segment>, StoreError> {
    let rows: Vec<ChainRow> = conn
        .prepare_cached(CHAIN_SQL)?
        .query_map(named(&[&id, &tenant]).as_slice(), |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?
        .collect::<Result<_, _>>()?;
    let segs = segments(&rows);
    if segs.is_empty() {
        return Err(StoreError::ConversationNotFound(id.to_string()));
    }
    Ok(segs)
}

/// The system messages of a history, oldest first: (seq, content).
pub(super) fn system_rows(
    conn: &Connection,
    segs: &[Segment],
) -> Result<Vec<(i64, String)>, StoreError> {
    let mut out = Vec::new();
    for seg in segs.iter().rev() {
        let (sql, values): (&str, Vec<&dyn rusqlite::ToSql>) = if seg.upto == i64::MAX {
            (SYSTEM_MESSAGES, vec![&seg.id as &dyn rusqlite::ToSql])
        } else {
            (
                SYSTEM_UPTO,
                vec![&seg.id as &dyn rusqlite::ToSql, &seg.upto],
            )
        };
        let mut stmt = conn.prepare_cached(sql)?;
        let rows = stmt.query_map(named(&values).as_slice(), |r| Ok((r.get(0)?, r.get(1)?)))?;
        for r in rows {
            out.push(r?);
        }
    }
    Ok(out)
}

/// The `(seq, cost, flags)` rows a stable window's catch-up folds (see `fold_stable`), for
/// `from <= seq <= to` of a history.
pub(super) fn stable_rows(
    conn: &Connection,
    segs: &[Segment],
    key: &StableKey,
    from: i64,
    to: i64,
) -> Result<Vec<(i64, i64, i64)>, StoreError> {
    let mut out = Vec::new();
    let sql = stable_rows_sql(key);
    for seg in segs.iter().rev() {
        let upto = seg.upto.min(to);
        if upto < from {
            continue;
        }
        let mut stmt = conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(named(&[&seg.id, &from, &upto]).as_slice(), |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?;
        for r in rows {
            out.push(r?);
        }
    }
    Ok(out)
}

/// Writes the WAL back into the file, vacuums it and truncates the WAL: no removed or
/// redacted text stays in either file. Runs outside any transaction, on the writer
/// connection.
fn compact(conn: &Connection) -> Result<(), StoreError> {
    conn.pragma_update(None, "secure_delete", true)?;
    let done = (|| {
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        conn.execute_batch("VACUUM")?;
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        Ok::<(), StoreError>(())
    })();
    conn.pragma_update(None, "secure_delete", false)?;
    done
}

/// Reads on the calling thread; writes on the writer, each in its transaction.
#[async_trait]
impl ForkOps for SqliteStore {
    async fn chain_of(&self, c: Conv<'_>) -> Result<Vec<Segment>, StoreError> {
        self.read(|conn| chain(conn, c.tenant, c.id))
    }

    /// On the writer connection, outside any transaction (VACUUM cannot run in one), on a
    /// blocking thread: it takes as long as the file is large.
    async fn vacuum(&self) -> Result<(), StoreError> {
        let conns = Arc::clone(&self.conns);
        tokio::task::spawn_blocking(move || {
            let conn = super::conn::lock(&conns.writer);
            compact(&conn)
        })
        .await
        .map_err(|e| StoreError::Internal(format!("compaction stopped: {e}")))?
    }
}
