//! The SQLite store's two hot paths, the context read and the append, on connections of their
//! own driven by rusqlite on the calling thread.
//!
//! sqlx's SQLite driver runs each connection on a worker thread and hands every statement over
//! and back: about 54 µs a statement on these machines (`context_sqlite/statement` in
//! docs/BENCHMARKS.md), more than the statements themselves. An append is four statements and
//! a context build one, so the hand-offs alone kept both paths off their targets. Everything
//! else (migrations, catch-up of stable windows, updates, deletes, keys, tasks, search) stays
//! on sqlx: one file, both drivers on the same bundled SQLite, and SQLite's own locking
//! between their connections.
//!
//! Blocking: a read in WAL mode never waits for a writer, so it runs inline. A write may wait
//! for the write lock (the busy timeout), and the holder may be an sqlx transaction whose task
//! needs the very thread that waits; so writes leave the runtime's worker first
//! (`block_in_place` on a multi-threaded runtime, `spawn_blocking` on a current-thread one).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use recall_core::policy::Policy;
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior};

use super::{
    fast_window_sql, finish_fast_window, now_ms, plan_appends, ConversationColumns, Encoded,
    FastParams, FastRead, MessageColumns, Running, INSERT_MESSAGE_PREFIX, SQLITE_LOCK_RUNNING,
};
use crate::error::StoreError;
use crate::model::{Appended, Conversation};
use crate::window::Window;

/// As sqlx's connections wait for a lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);
/// Idle reader connections kept open (more are opened under load and closed after it).
const IDLE_READERS: usize = 8;

/// The direct connections to one database file.
pub(super) struct Direct {
    path: PathBuf,
    readers: Mutex<Vec<Connection>>,
    /// One writer: SQLite takes one write at a time anyway, and appends in this process queue
    /// here instead of in SQLite's busy handler.
    writer: Mutex<Connection>,
}

impl std::fmt::Debug for Direct {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Direct").field("path", &self.path).finish()
    }
}

/// What an append on the direct writer did.
pub(super) enum Appending {
    Done(Vec<Appended>),
    /// Nothing was written: the conversation has stable windows to advance, which the sqlx
    /// path does.
    NeedsStableWindows(Vec<Encoded>),
}

fn connect(path: &Path) -> Result<Connection, StoreError> {
    // The file exists and is migrated: `SqliteStore::open` opened it with sqlx first.
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", true)?;
    conn.set_prepared_statement_cache_capacity(32);
    Ok(conn)
}

/// A reader taken from the idle list, given back when dropped.
struct Reader<'a> {
    direct: &'a Direct,
    conn: Option<Connection>,
}

impl Drop for Reader<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            let mut idle = lock(&self.direct.readers);
            if idle.len() < IDLE_READERS {
                idle.push(conn);
            }
        }
    }
}

/// A poisoned lock only means a panic elsewhere while it was held; the connection inside is
/// still usable (the writer's open transaction, if any, is rolled back before use).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Direct {
    pub(super) fn open(path: &Path) -> Result<Direct, StoreError> {
        let writer = connect(path)?;
        let reader = connect(path)?;
        Ok(Direct {
            path: path.to_path_buf(),
            readers: Mutex::new(vec![reader]),
            writer: Mutex::new(writer),
        })
    }

    fn reader(&self) -> Result<Reader<'_>, StoreError> {
        let idle = lock(&self.readers).pop();
        let conn = match idle {
            Some(c) => c,
            None => connect(&self.path)?,
        };
        Ok(Reader {
            direct: self,
            conn: Some(conn),
        })
    }

    /// The one-statement context read (see `fast_window_sql`).
    pub(super) fn window_fast(
        &self,
        tenant: &str,
        id: &str,
        policy: &Policy,
    ) -> Result<Option<(Conversation, Window)>, StoreError> {
        let p = FastParams::of(policy);
        let reader = self.reader()?;
        let Some(conn) = reader.conn.as_ref() else {
            return Err(StoreError::Invalid("no reader connection".into()));
        };
        let mut stmt = conn.prepare_cached(fast_window_sql(policy.tokenizer))?;
        // The statement numbers its parameters `$N` (as sqlx binds them), and SQLite numbers
        // named parameters by first use: bind by name.
        let mut rows = stmt.query(
            &[
                ("$1", &id as &dyn rusqlite::ToSql),
                ("$2", &tenant),
                ("$3", &p.max_tokens),
                ("$4", &p.max_chars),
                ("$5", &p.max_turns),
                ("$6", &p.key),
            ][..],
        )?;
        let mut header = None;
        let mut stored = Vec::new();
        while let Some(row) = rows.next()? {
            // The conversation's row has an id and no message; the others the reverse.
            if let Some(conv_id) = row.get::<_, Option<String>>(0)? {
                let metadata = text(row, 4)?;
                let policy = text_or_null(row, 5)?;
                let conv = ConversationColumns {
                    id: conv_id,
                    tenant: row.get(1)?,
                    title: row.get(2)?,
                    system_prompt: row.get(3)?,
                    metadata,
                    policy,
                    created_at: row.get(6)?,
                    updated_at: row.get(7)?,
                    message_count: row.get(8)?,
                    last_seq: row.get(9)?,
                    total_tokens: row.get(10)?,
                }
                .decode()?;
                header = Some((conv, row.get(11)?, row.get(12)?, row.get(13)?, row.get(14)?));
            } else {
                stored.push(
                    MessageColumns {
                        seq: row.get(15)?,
                        role: text(row, 16)?,
                        content: text(row, 17)?,
                        client_id: row.get(18)?,
                        metadata: text_or_null(row, 19)?,
                        status: text(row, 20)?,
                        created_at: row.get(21)?,
                        tokens_o200k: row.get(22)?,
                        tokens_cl100k: row.get(23)?,
                        chars: row.get(24)?,
                        flags: row.get(25)?,
                    }
                    .decode()?,
                );
            }
        }
        let Some((conv, st_start, st_last, turn_floor, start)) = header else {
            return Err(StoreError::ConversationNotFound(id.to_string()));
        };
        let read = FastRead {
            conv,
            st_start,
            st_last,
            turn_floor,
            start,
            stored,
        };
        Ok(finish_fast_window(read, policy, &p))
    }

    /// Writes an encoded batch in one `BEGIN IMMEDIATE` transaction.
    fn append(
        &self,
        tenant: &str,
        id: &str,
        encoded: Vec<Encoded>,
    ) -> Result<Appending, StoreError> {
        let mut conn = lock(&self.writer);
        if !conn.is_autocommit() {
            // Left open by a panic while the lock was held: nothing of it was acknowledged.
            conn.execute_batch("ROLLBACK")?;
        }
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let running = tx
            .prepare_cached(SQLITE_LOCK_RUNNING)?
            .query_row(
                &[("$1", &id as &dyn rusqlite::ToSql), ("$2", &tenant)][..],
                |row| {
                    Ok(Running {
                        last_seq: row.get(0)?,
                        count: row.get(1)?,
                        o200k: row.get(2)?,
                        cl100k: row.get(3)?,
                        chars: row.get(4)?,
                        chars4: row.get(5)?,
                        turns: row.get(6)?,
                        cuts: row.get(7)?,
                        current_windows: row.get(8)?,
                    })
                },
            )
            .optional()?;
        let Some(mut r) = running else {
            return Err(StoreError::ConversationNotFound(id.to_string()));
        };
        if r.current_windows > 0 {
            // Dropping the transaction rolls it back.
            return Ok(Appending::NeedsStableWindows(encoded));
        }
        let before = r.last_seq;
        let mut seen = HashMap::new();
        {
            let mut find = tx.prepare_cached(
                "SELECT seq FROM messages WHERE conversation_id = ?1 AND client_id = ?2",
            )?;
            for cid in encoded.iter().filter_map(|e| e.client_id.as_deref()) {
                if let Some(seq) = find
                    .query_row((id, cid), |row| row.get::<_, i64>(0))
                    .optional()?
                {
                    seen.insert(cid.to_string(), seq);
                }
            }
        }
        let plan = plan_appends(&encoded, &mut r, &seen);
        let now = now_ms();
        if r.last_seq != before {
            // One statement per chunk, as on sqlx: a statement that writes FTS5 rows ends
            // with a flush of FTS5's pending terms, so a statement per row would write (and
            // later merge) one tiny index segment per message.
            for chunk in plan.rows.chunks(ROWS_PER_INSERT) {
                let mut insert = tx.prepare_cached(&insert_sql(chunk.len()))?;
                let mut n = 0;
                let mut bind = |v: &dyn rusqlite::ToSql| -> rusqlite::Result<()> {
                    n += 1;
                    insert.raw_bind_parameter(n, v)
                };
                for (i, seq, run) in chunk {
                    let e = &encoded[*i];
                    let f = &e.figures;
                    bind(&id)?;
                    bind(seq)?;
                    bind(&e.client_id.as_deref())?;
                    bind(&e.role)?;
                    bind(&e.content.as_str())?;
                    bind(&e.metadata.as_deref())?;
                    bind(&e.status)?;
                    bind(&now)?;
                    bind(&f.tokens_o200k)?;
                    bind(&f.tokens_cl100k)?;
                    bind(&f.chars)?;
                    bind(&f.flags())?;
                    bind(&run.o200k)?;
                    bind(&run.cl100k)?;
                    bind(&run.chars)?;
                    bind(&run.chars4)?;
                    bind(&run.cuts)?;
                }
                insert.raw_execute()?;
            }
            tx.prepare_cached(
                "UPDATE conversations SET last_seq = ?1, message_count = ?2, total_o200k = ?3, \
                 total_cl100k = ?4, total_chars = ?5, total_chars4 = ?6, total_turns = ?7, \
                 total_cuts = ?8, updated_at = ?9 WHERE id = ?10",
            )?
            .execute(rusqlite::params![
                r.last_seq, r.count, r.o200k, r.cl100k, r.chars, r.chars4, r.turns, r.cuts, now,
                id,
            ])?;
        }
        tx.commit()?;
        Ok(Appending::Done(plan.out))
    }
}

/// A text column, borrowed from the row.
fn text<'r>(row: &'r rusqlite::Row<'_>, i: usize) -> Result<&'r str, StoreError> {
    row.get_ref(i)?
        .as_str()
        .map_err(|e| StoreError::Corrupt(format!("column {i}: {e}")))
}

fn text_or_null<'r>(row: &'r rusqlite::Row<'_>, i: usize) -> Result<Option<&'r str>, StoreError> {
    row.get_ref(i)?
        .as_str_or_null()
        .map_err(|e| StoreError::Corrupt(format!("column {i}: {e}")))
}

/// Rows a multi-row `INSERT` writes at most: 17 parameters a row stays well under SQLite's
/// 32,766.
const ROWS_PER_INSERT: usize = 1000;

/// The `INSERT` of `rows` messages, with numbered parameters.
fn insert_sql(rows: usize) -> String {
    let mut sql = String::with_capacity(INSERT_MESSAGE_PREFIX.len() + rows * 80);
    sql.push_str(INSERT_MESSAGE_PREFIX);
    sql.push_str("VALUES ");
    for r in 0..rows {
        if r > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        for c in 0..17 {
            if c > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!("?{}", r * 17 + c + 1));
        }
        sql.push(')');
    }
    sql
}

/// Appends on the direct writer, off the runtime's worker thread (see the module docs).
pub(super) async fn append(
    direct: &Arc<Direct>,
    tenant: &str,
    id: &str,
    encoded: Vec<Encoded>,
) -> Result<Appending, StoreError> {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(RuntimeFlavor::MultiThread) => {
            tokio::task::block_in_place(|| direct.append(tenant, id, encoded))
        }
        Ok(_) => {
            let direct = Arc::clone(direct);
            let (tenant, id) = (tenant.to_string(), id.to_string());
            match tokio::task::spawn_blocking(move || direct.append(&tenant, &id, encoded)).await {
                Ok(done) => done,
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                // The runtime is shutting down; the write may or may not have happened, and
                // it was not acknowledged.
                Err(_) => Err(StoreError::Invalid(
                    "the append was interrupted: the runtime is shutting down".into(),
                )),
            }
        }
        Err(_) => direct.append(tenant, id, encoded),
    }
}
