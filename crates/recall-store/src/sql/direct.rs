//! The SQLite store's two hot paths, the context read and the append, on connections of their
//! own driven by rusqlite on the calling thread.
//!
//! sqlx's SQLite driver runs each connection on a worker thread and hands every statement over
//! and back: about 54 µs a statement on these machines (`context_sqlite/statement` in
//! docs/BENCHMARKS.md), more than the statements themselves. Here a statement costs what SQLite
//! spends on it, so the context read is a few plain statements in one read transaction (the
//! conversation, then a backward walk over its messages that stops at the window's start)
//! instead of one statement with index probes. Everything else (migrations, saving a caught-up
//! stable window, appends that advance stable windows, updates, deletes, keys, tasks, search)
//! stays on sqlx: one file, both drivers on the same bundled SQLite, and SQLite's own locking
//! between their connections.
//!
//! Blocking: a read in WAL mode never waits for a writer, so it runs inline. A write runs inline
//! too when it need not wait ([`Direct::try_append_now`]: the writer connection is free and
//! the write lock is taken at once). One that would wait goes to a thread of its own
//! ([`Appender`]): the lock's holder may be an sqlx transaction whose task needs the very
//! runtime thread that would wait.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use recall_core::message::Role;
use recall_core::policy::{Policy, TrimMode};
use recall_core::select::HistoryMessage;
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior};

use super::{
    budgets, contribution, decode_message, fold_stable, now_ms, plan_appends, stable_rows_sql,
    walk_reaches_start, ConversationColumns, Encoded, MessageColumns, Running, Snapshot, StableRow,
    INSERT_MESSAGE_PREFIX, SQLITE_LOCK_RUNNING,
};
use crate::error::StoreError;
use crate::model::{Appended, Conversation};
use crate::options::Durability;
use crate::window::{StableKey, StartFinder, Stop, Totals, WalkRow, Window, WindowBounds};

/// As sqlx's connections wait for a lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);
/// Idle reader connections kept open (more are opened under load and closed after it).
const IDLE_READERS: usize = 8;

/// The direct connections to one database file.
pub(super) struct Direct {
    path: PathBuf,
    /// Applied to every connection opened here, as to sqlx's.
    durability: Durability,
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
    /// Nothing was written: [`Direct::try_append_now`] would have had to wait (for the writer
    /// connection or the database's write lock).
    WouldWait(Vec<Encoded>),
}

/// What the context read found: the conversation, its window, and the state of a stable
/// window that had to be caught up, to be saved (with the snapshot it was computed from).
pub(super) struct DirectWindow {
    pub conv: Conversation,
    pub window: Window,
    pub save: Option<(StableKey, StableRow, Snapshot)>,
}

/// The conversation (`CONVERSATION_COLUMNS`, 0–10), its totals (11–14), the stable window's
/// state under key `?3` (15–17, NULL without one) and whether it holds a system message (18).
const HEADER_SQL: &str = "SELECT c.id, c.tenant, c.title, c.system_prompt, c.metadata, c.policy, \
     c.created_at, c.updated_at, c.message_count, c.last_seq, c.total_o200k, c.total_cl100k, \
     c.total_chars, c.total_chars4, c.total_cuts, w.start_seq, w.cost, w.last_seq, \
     EXISTS (SELECT 1 FROM messages WHERE conversation_id = ?1 AND role = 'system') \
     FROM conversations c LEFT JOIN stable_windows w \
     ON w.conversation_id = c.id AND w.policy_key = ?3 WHERE c.id = ?1 AND c.tenant = ?2";

/// The conversation's messages newest first, on its primary key: `MESSAGE_COLUMNS` (0–10),
/// then the running totals (11–15: o200k, cl100k, chars, chars4, cuts).
const WALK_SQL: &str = "SELECT seq, role, content, client_id, metadata, status, created_at, \
     tokens_o200k, tokens_cl100k, chars, flags, cum_o200k, cum_cl100k, cum_chars, cum_chars4, \
     cum_cuts FROM messages WHERE conversation_id = ?1 AND seq <= ?2 ORDER BY seq DESC";

/// Every system message of a conversation, oldest first.
const SYSTEM_SQL: &str = "SELECT seq, content FROM messages WHERE conversation_id = ?1 \
     AND role = 'system' ORDER BY seq";

/// A message from the `MESSAGE_COLUMNS` of a row (`role` already read).
fn message_columns<'r>(
    row: &'r rusqlite::Row<'_>,
    role: &'r str,
) -> Result<MessageColumns<'r>, StoreError> {
    Ok(MessageColumns {
        seq: row.get(0)?,
        role,
        content: text(row, 2)?,
        client_id: row.get(3)?,
        metadata: text_or_null(row, 4)?,
        status: text(row, 5)?,
        created_at: row.get(6)?,
        tokens_o200k: row.get(7)?,
        tokens_cl100k: row.get(8)?,
        chars: row.get(9)?,
        flags: row.get(10)?,
    })
}

fn connect(path: &Path, durability: Durability) -> Result<Connection, StoreError> {
    // The file exists and is migrated: `SqliteStore::open` opened it with sqlx first.
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "synchronous", durability.sqlite_pragma())?;
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
            // A read left open would pin its WAL snapshot (and stop checkpoints) while idle.
            if !conn.is_autocommit() && conn.execute_batch("ROLLBACK").is_err() {
                return;
            }
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
    pub(super) fn open(path: &Path, durability: Durability) -> Result<Direct, StoreError> {
        let writer = connect(path, durability)?;
        let reader = connect(path, durability)?;
        Ok(Direct {
            path: path.to_path_buf(),
            durability,
            readers: Mutex::new(vec![reader]),
            writer: Mutex::new(writer),
        })
    }

    /// `PRAGMA synchronous` on the writer, an idle reader and a newly opened reader.
    pub(super) fn synchronous_levels(&self) -> Result<Vec<(String, i64)>, StoreError> {
        let read = |conn: &Connection| -> Result<i64, StoreError> {
            Ok(conn.query_row("PRAGMA synchronous", [], |r| r.get(0))?)
        };
        let mut out = vec![("direct writer".to_string(), read(&lock(&self.writer))?)];
        let idle = self.reader()?;
        // The idle list is empty while `idle` is out: this one is opened now.
        let fresh = self.reader()?;
        for (name, r) in [("direct reader", &idle), ("new direct reader", &fresh)] {
            let Some(conn) = r.conn.as_ref() else {
                return Err(StoreError::Invalid("no reader connection".into()));
            };
            out.push((name.to_string(), read(conn)?));
        }
        Ok(out)
    }

    fn reader(&self) -> Result<Reader<'_>, StoreError> {
        let idle = lock(&self.readers).pop();
        let conn = match idle {
            Some(c) => c,
            None => connect(&self.path, self.durability)?,
        };
        Ok(Reader {
            direct: self,
            conn: Some(conn),
        })
    }

    /// The tenant of a live API key (see [`super::API_KEY_TENANT`]): one indexed read, asked
    /// by every authenticated request.
    pub(super) fn api_key_tenant(&self, key_sha256: &str) -> Result<Option<String>, StoreError> {
        let reader = self.reader()?;
        let Some(conn) = reader.conn.as_ref() else {
            return Err(StoreError::Invalid("no reader connection".into()));
        };
        let mut stmt = conn.prepare_cached(super::API_KEY_TENANT)?;
        Ok(stmt
            .query_row([key_sha256], |row| row.get::<_, String>(0))
            .optional()?)
    }

    /// The context read: the conversation and its window, in one read transaction (one WAL
    /// snapshot). The window is read by walking the conversation back from its newest message
    /// on the primary key and stops at its start (see [`StartFinder`]), so it reads the
    /// messages the window holds and no others; when selection's repairs leave room at that
    /// start, the same walk goes on (as [`super::pg_window`]'s read does with more probes). A
    /// stable window's state that is missing or behind is caught up here and returned to be
    /// saved.
    pub(super) fn window(
        &self,
        tenant: &str,
        id: &str,
        policy: &Policy,
    ) -> Result<DirectWindow, StoreError> {
        let reader = self.reader()?;
        let Some(conn) = reader.conn.as_ref() else {
            return Err(StoreError::Invalid("no reader connection".into()));
        };
        // Dropped on an early return: rolled back, which ends the read.
        let tx = conn.unchecked_transaction()?;
        let stable_key = if policy.trim == TrimMode::Stable {
            StableKey::of(policy)
        } else {
            None
        };
        let key_text = stable_key.map(|k| k.key()).unwrap_or_default();
        let (conv, snap, stored_stable) = {
            let mut stmt = tx.prepare_cached(HEADER_SQL)?;
            let mut rows = stmt.query(rusqlite::params![id, tenant, key_text])?;
            let Some(row) = rows.next()? else {
                return Err(StoreError::ConversationNotFound(id.to_string()));
            };
            let conv = ConversationColumns {
                id: row.get(0)?,
                tenant: row.get(1)?,
                title: row.get(2)?,
                system_prompt: row.get(3)?,
                metadata: text(row, 4)?,
                policy: text_or_null(row, 5)?,
                created_at: row.get(6)?,
                updated_at: row.get(7)?,
                message_count: row.get(8)?,
                last_seq: row.get(9)?,
                total_tokens: row.get(10)?,
            }
            .decode()?;
            let snap = Snapshot {
                totals: Totals {
                    o200k: conv.total_tokens,
                    cl100k: row.get(11)?,
                    chars: row.get(12)?,
                    chars4: row.get(13)?,
                    cuts: row.get(14)?,
                },
                count: conv.message_count,
                last_seq: conv.last_seq,
                has_system: row.get(18)?,
            };
            let stored: Option<StableRow> = match row.get::<_, Option<i64>>(15)? {
                Some(start_seq) => Some(StableRow {
                    start_seq,
                    cost: row.get(16)?,
                    last_seq: row.get(17)?,
                }),
                None => None,
            };
            (conv, snap, stored)
        };

        // The stable window's start: as stored when it is current (appends advance it),
        // else caught up over the messages since, to be saved after the read.
        let mut save = None;
        let stable_start = match &stable_key {
            None => None,
            Some(key) => match stored_stable {
                Some(row) if row.last_seq >= snap.last_seq => Some(row.start_seq),
                stored => {
                    let row = stored.unwrap_or_default();
                    let mut stmt = tx.prepare_cached(&stable_rows_sql(key))?;
                    let rows = stmt
                        .query_map(
                            &[
                                ("$1", &id as &dyn rusqlite::ToSql),
                                ("$2", &row.start_seq),
                                ("$3", &snap.last_seq),
                            ][..],
                            |r| {
                                Ok((
                                    r.get::<_, i64>(0)?,
                                    r.get::<_, i64>(1)?,
                                    r.get::<_, i64>(2)?,
                                ))
                            },
                        )?
                        .collect::<Result<Vec<_>, _>>()?;
                    let next = fold_stable(&rows, key, row, snap.last_seq);
                    save = Some((*key, next, snap));
                    Some(next.start_seq)
                }
            },
        };

        let mut finder =
            StartFinder::new(WindowBounds::for_policy(policy, &snap.totals), stable_start);
        let mut messages: VecDeque<HistoryMessage> = VecDeque::new();
        {
            let mut stmt = tx.prepare_cached(WALK_SQL)?;
            let mut rows = stmt.query(rusqlite::params![id, snap.last_seq])?;
            'walk: loop {
                // The next message older than those read; `None` past the oldest.
                let stop = loop {
                    let Some(row) = rows.next()? else {
                        break None;
                    };
                    let role = text(row, 1)?;
                    if role == Role::System.as_str() {
                        // Read with the other system messages below; never history.
                        continue;
                    }
                    let m = message_columns(row, role)?.decode()?;
                    let [o200k, cl100k, chars, chars4, cuts, _] = contribution(&m.figures, role);
                    let walked = WalkRow {
                        seq: m.seq,
                        cut_point: m.figures.cut_point,
                        cum: Totals {
                            o200k: row.get(11)?,
                            cl100k: row.get(12)?,
                            chars: row.get(13)?,
                            chars4: row.get(14)?,
                            cuts: row.get(15)?,
                        },
                        added: Totals {
                            o200k,
                            cl100k,
                            chars,
                            chars4,
                            cuts,
                        },
                    };
                    messages.push_front(HistoryMessage {
                        index: m.seq.max(0) as usize,
                        measure: m.figures.measure(policy.tokenizer),
                        message: m.message,
                    });
                    match finder.at(&walked) {
                        Stop::No => {}
                        stop => break Some((stop, walked)),
                    }
                };
                match stop {
                    // Stored figures are those of whole messages: when selection, walking
                    // what was read, gets back to the budget's start with every limit
                    // holding (repairs made messages cheaper), older messages may fit too.
                    Some((Stop::Budget, start)) => {
                        let Some(stats) = walk_reaches_start(messages.make_contiguous(), policy)
                        else {
                            break 'walk;
                        };
                        let room = budgets(policy, &stats);
                        finder.set_budgets(StartFinder::extend_past(&start, &room));
                    }
                    _ => break 'walk,
                }
            }
        }

        let mut system_parts = Vec::new();
        let mut system_count = 0;
        if snap.has_system {
            let mut stmt = tx.prepare_cached(SYSTEM_SQL)?;
            let mut rows = stmt.query([id])?;
            while let Some(row) = rows.next()? {
                let seq: i64 = row.get(0)?;
                let m = decode_message(seq, Role::System.as_str(), text(row, 1)?, None, None)?;
                system_count += 1;
                let text = recall_core::context::system_text(&m);
                // As recall-core gathers them: blank parts are left out.
                if !text.trim().is_empty() {
                    system_parts.push(text);
                }
            }
        }
        tx.commit()?;

        let history_count = (snap.count.max(0) as usize).saturating_sub(system_count);
        let older = history_count.saturating_sub(messages.len());
        Ok(DirectWindow {
            conv,
            window: Window {
                system_parts,
                messages: messages.into(),
                older,
                stable_start,
            },
            save,
        })
    }

    /// Writes an encoded batch in one `BEGIN IMMEDIATE` transaction, waiting for the writer
    /// connection and the write lock (the busy timeout).
    fn append(
        &self,
        tenant: &str,
        id: &str,
        encoded: Vec<Encoded>,
    ) -> Result<Appending, StoreError> {
        let mut conn = lock(&self.writer);
        append_on(&mut conn, tenant, id, encoded, true)
    }

    /// [`Direct::append`] when it need not wait: the writer connection is free and the write
    /// lock is taken at once. Otherwise nothing is written and the batch comes back
    /// ([`Appending::WouldWait`]). This is the common case, a single writer with nobody in its
    /// way, and it runs on the calling thread: no hand-off to the writer thread and back.
    pub(super) fn try_append_now(
        &self,
        tenant: &str,
        id: &str,
        encoded: Vec<Encoded>,
    ) -> Result<Appending, StoreError> {
        let mut conn = match self.writer.try_lock() {
            Ok(c) => c,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return Ok(Appending::WouldWait(encoded)),
        };
        append_on(&mut conn, tenant, id, encoded, false)
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

/// The append of [`Direct::append`] on the locked writer `conn`; with `wait` false, a write
/// lock held elsewhere gives [`Appending::WouldWait`] at once instead of the busy timeout.
fn append_on(
    conn: &mut Connection,
    tenant: &str,
    id: &str,
    encoded: Vec<Encoded>,
    wait: bool,
) -> Result<Appending, StoreError> {
    if !conn.is_autocommit() {
        // Left open by a panic while the lock was held: nothing of it was acknowledged.
        conn.execute_batch("ROLLBACK")?;
    }
    if !wait {
        conn.busy_timeout(Duration::ZERO)?;
    }
    let refused = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
        Ok(tx) => {
            if !wait {
                tx.busy_timeout(BUSY_TIMEOUT)?;
            }
            return write_batch(tx, tenant, id, encoded);
        }
        Err(e) => e,
    };
    if !wait {
        conn.busy_timeout(BUSY_TIMEOUT)?;
        if refused.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy) {
            return Ok(Appending::WouldWait(encoded));
        }
    }
    Err(refused.into())
}

/// The batch written in the open write transaction `tx`, committed.
fn write_batch(
    tx: rusqlite::Transaction<'_>,
    tenant: &str,
    id: &str,
    encoded: Vec<Encoded>,
) -> Result<Appending, StoreError> {
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
            r.last_seq, r.count, r.o200k, r.cl100k, r.chars, r.chars4, r.turns, r.cuts, now, id,
        ])?;
    }
    tx.commit()?;
    Ok(Appending::Done(plan.out))
}

/// One append for the writer thread, and where its outcome goes.
struct AppendJob {
    tenant: String,
    id: String,
    encoded: Vec<Encoded>,
    reply: tokio::sync::oneshot::Sender<Result<Appending, StoreError>>,
}

/// The thread that runs this process's direct appends, one after the other, on the writer
/// connection. Dropping the last handle ends the thread (and with it the connections).
#[derive(Debug)]
pub(super) struct Appender {
    jobs: std::sync::mpsc::Sender<AppendJob>,
}

impl Appender {
    pub(super) fn start(direct: Arc<Direct>) -> Result<Appender, StoreError> {
        let (jobs, queue) = std::sync::mpsc::channel::<AppendJob>();
        std::thread::Builder::new()
            .name("recall-sqlite-writer".into())
            .spawn(move || {
                for job in queue {
                    // A panic fails that append, not the ones after it.
                    let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        direct.append(&job.tenant, &job.id, job.encoded)
                    }))
                    .unwrap_or(Err(StoreError::Database(sqlx::Error::WorkerCrashed)));
                    // Nobody waiting (the request was dropped): the append stands, unacknowledged.
                    let _ = job.reply.send(done);
                }
            })
            .map_err(|e| {
                StoreError::Invalid(format!("cannot start the SQLite writer thread: {e}"))
            })?;
        Ok(Appender { jobs })
    }

    /// Appends on the writer thread, which waits for the writer connection and the write lock
    /// (held perhaps by an sqlx transaction whose task needs a runtime thread) so that no
    /// runtime thread does. One thread, rather than `block_in_place`, also keeps the thread
    /// count (and the memory of per-thread allocator arenas) flat under load.
    pub(super) async fn append(
        &self,
        tenant: &str,
        id: &str,
        encoded: Vec<Encoded>,
    ) -> Result<Appending, StoreError> {
        let (reply, outcome) = tokio::sync::oneshot::channel();
        let job = AppendJob {
            tenant: tenant.to_string(),
            id: id.to_string(),
            encoded,
            reply,
        };
        self.jobs
            .send(job)
            .map_err(|_| StoreError::Database(sqlx::Error::WorkerCrashed))?;
        outcome
            .await
            .unwrap_or(Err(StoreError::Database(sqlx::Error::WorkerCrashed)))
    }
}
