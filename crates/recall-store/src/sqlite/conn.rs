//! The SQLite store's connections (rusqlite): the one writer connection (see `writer.rs`)
//! and a few readers, all used on the calling thread. A read never waits: it takes the
//! writer connection when that is free, else a reader (in WAL mode a read never waits for a
//! writer). The writer first because its page cache is warm: every commit from another
//! connection makes a reader drop its whole cache and read its pages again, so on a server
//! whose writes all go through the writer, a read right after a write (a context after an
//! append) costs about a third less there. Also the row helpers every SQLite statement
//! shares.
//!
//! A read holds its connection without awaiting anything, so a write that finds the writer
//! connection taken by a read goes to the writer thread and waits there (`writer.rs`).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use crate::options::Durability;
use rusqlite::{Connection, OpenFlags};

use crate::codec::MessageColumns;
use crate::driver::{EachRow, Param, Row};
use crate::error::StoreError;
use crate::model::StoredMessage;

/// As long as any connection waits for a lock.
pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(30);
/// Idle reader connections kept open (more are opened under load and closed after it).
const IDLE_READERS: usize = 8;

/// The connections to one database file.
pub(super) struct Connections {
    path: PathBuf,
    /// Set on every connection this store opens, readers opened later included.
    durability: Durability,
    readers: Mutex<Vec<Connection>>,
    /// One writer: SQLite takes one write at a time anyway, and writes in this process queue
    /// here instead of in SQLite's busy handler.
    pub(super) writer: Mutex<Connection>,
}

impl std::fmt::Debug for Connections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connections")
            .field("path", &self.path)
            .finish()
    }
}

/// Opens a connection to the (existing, migrated) file.
fn connect(path: &Path, durability: Durability) -> Result<Connection, StoreError> {
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

/// A connection for one read: the writer, held until dropped, or a reader taken from the
/// idle list and given back when dropped.
pub(super) struct Reader<'a> {
    conns: &'a Connections,
    conn: Option<Connection>,
    writer: Option<MutexGuard<'a, Connection>>,
}

impl Reader<'_> {
    pub(super) fn conn(&self) -> Result<&Connection, StoreError> {
        if let Some(w) = &self.writer {
            return Ok(w);
        }
        self.conn
            .as_ref()
            .ok_or_else(|| StoreError::Internal("no reader connection".into()))
    }

    /// [`Reader::conn`], to begin a read transaction on (ended when the reader is dropped).
    pub(super) fn conn_mut(&mut self) -> Result<&mut Connection, StoreError> {
        if let Some(w) = &mut self.writer {
            return Ok(w);
        }
        self.conn
            .as_mut()
            .ok_or_else(|| StoreError::Internal("no reader connection".into()))
    }
}

impl Drop for Reader<'_> {
    fn drop(&mut self) {
        if let Some(writer) = self.writer.take() {
            // Not to pin a WAL snapshot while idle (a write would roll it back first anyway).
            if !writer.is_autocommit() {
                let _ = writer.execute_batch("ROLLBACK");
            }
        }
        if let Some(conn) = self.conn.take() {
            // A read left open would pin its WAL snapshot (and stop checkpoints) while idle.
            if !conn.is_autocommit() && conn.execute_batch("ROLLBACK").is_err() {
                return;
            }
            let mut idle = lock(&self.conns.readers);
            if idle.len() < IDLE_READERS {
                idle.push(conn);
            }
        }
    }
}

/// A poisoned lock only means a panic elsewhere while it was held; the connection inside is
/// still usable (the writer's open transaction, if any, is rolled back before use).
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Connections {
    /// Opens the writer and one reader; `SqliteStore::open` created and migrated the file.
    pub(super) fn open(path: &Path, durability: Durability) -> Result<Connections, StoreError> {
        Ok(Connections {
            path: path.to_path_buf(),
            durability,
            readers: Mutex::new(vec![connect(path, durability)?]),
            writer: Mutex::new(connect(path, durability)?),
        })
    }

    /// `PRAGMA synchronous` as each kind of connection reads it back (a reader, the writer).
    pub(super) fn synchronous_levels(&self) -> Result<Vec<(String, i64)>, StoreError> {
        let level = |c: &Connection| -> Result<i64, StoreError> {
            Ok(c.query_row("PRAGMA synchronous", [], |r| r.get(0))?)
        };
        let reader = self.pooled_reader()?;
        let mut out = vec![("direct reader".to_string(), level(reader.conn()?)?)];
        // A reader opened now, after the first: later connections get the setting too.
        let fresh = connect(&self.path, self.durability)?;
        out.push(("new direct reader".to_string(), level(&fresh)?));
        out.push(("direct writer".to_string(), level(&lock(&self.writer))?));
        Ok(out)
    }

    /// A connection for a read (see the module documentation); never waits. Only for reads
    /// that hold it without awaiting anything: a write waits for the writer while it is held.
    pub(super) fn reader(&self) -> Result<Reader<'_>, StoreError> {
        if let Ok(writer) = self.writer.try_lock() {
            return Ok(Reader {
                conns: self,
                conn: None,
                writer: Some(writer),
            });
        }
        self.pooled_reader()
    }

    /// A reader connection of the pool (a new one when none is idle), never the writer.
    fn pooled_reader(&self) -> Result<Reader<'_>, StoreError> {
        let idle = lock(&self.readers).pop();
        let conn = match idle {
            Some(c) => c,
            None => connect(&self.path, self.durability)?,
        };
        Ok(Reader {
            conns: self,
            conn: Some(conn),
            writer: None,
        })
    }
}

/// The names of `$1`…`$N`, for binding the shared statements' parameters by name.
const NAMES: [&str; 24] = [
    "$1", "$2", "$3", "$4", "$5", "$6", "$7", "$8", "$9", "$10", "$11", "$12", "$13", "$14", "$15",
    "$16", "$17", "$18", "$19", "$20", "$21", "$22", "$23", "$24",
];

/// `values` as the parameters `$1`… of a shared statement (see `crate::statements`), bound by
/// name: SQLite numbers `$N` parameters by first appearance, not by their digits.
pub(super) fn named<'a>(
    values: &[&'a dyn rusqlite::ToSql],
) -> Vec<(&'static str, &'a dyn rusqlite::ToSql)> {
    // A value past the names would be dropped without a word, and its parameter bound NULL.
    debug_assert!(values.len() <= NAMES.len(), "more parameters than NAMES");
    NAMES.iter().copied().zip(values.iter().copied()).collect()
}

/// Binds `values` to `stmt` as its parameters `$1`… by name (as [`named`], but any number of
/// them: the client-id lookup binds up to `IDS_PER_LOOKUP + 1`). A value whose `$N` the
/// statement does not hold is an error, never dropped.
pub(super) fn bind_all(
    stmt: &mut rusqlite::Statement<'_>,
    values: &[&dyn rusqlite::ToSql],
) -> Result<(), StoreError> {
    for (i, v) in values.iter().enumerate() {
        let owned;
        let name = match NAMES.get(i) {
            Some(n) => *n,
            None => {
                owned = format!("${}", i + 1);
                owned.as_str()
            }
        };
        let at = stmt.parameter_index(name)?.ok_or_else(|| {
            StoreError::Internal(format!("the statement has no parameter {name}"))
        })?;
        stmt.raw_bind_parameter(at, v)?;
    }
    Ok(())
}

/// A text column, borrowed from the row.
pub(super) fn text<'r>(row: &'r rusqlite::Row<'_>, i: usize) -> Result<&'r str, StoreError> {
    row.get_ref(i)?
        .as_str()
        .map_err(|e| StoreError::Corrupt(format!("column {i}: {e}")))
}

/// A text column that may be NULL, borrowed from the row.
pub(super) fn text_or_null<'r>(
    row: &'r rusqlite::Row<'_>,
    i: usize,
) -> Result<Option<&'r str>, StoreError> {
    row.get_ref(i)?
        .as_str_or_null()
        .map_err(|e| StoreError::Corrupt(format!("column {i}: {e}")))
}

/// The message columns (`statements::MESSAGE_COLUMNS`, 0–10) of a row whose role is read.
pub(super) fn message_columns<'r>(
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

/// The message in `statements::MESSAGE_COLUMNS` at columns 0–10.
pub(super) fn stored_message(row: &rusqlite::Row<'_>) -> Result<StoredMessage, StoreError> {
    message_columns(row, text(row, 1)?)?.decode()
}

impl rusqlite::ToSql for Param {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, Value};
        Ok(match self {
            Param::Int(v) | Param::OptInt(Some(v)) => ToSqlOutput::from(*v),
            Param::Text(s) | Param::OptText(Some(s)) => ToSqlOutput::from(s.as_str()),
            Param::OptInt(None) | Param::OptText(None) => ToSqlOutput::Owned(Value::Null),
            Param::Bytes(b) => ToSqlOutput::from(b.as_slice()),
            Param::Bool(b) => ToSqlOutput::from(*b),
        })
    }
}

impl Row for rusqlite::Row<'_> {
    fn int(&self, i: usize) -> Result<i64, StoreError> {
        Ok(self.get(i)?)
    }
    fn opt_int(&self, i: usize) -> Result<Option<i64>, StoreError> {
        Ok(self.get(i)?)
    }
    fn text(&self, i: usize) -> Result<String, StoreError> {
        Ok(self.get(i)?)
    }
    fn opt_text(&self, i: usize) -> Result<Option<String>, StoreError> {
        Ok(self.get(i)?)
    }
    fn flag(&self, i: usize) -> Result<bool, StoreError> {
        Ok(self.get(i)?)
    }
}

/// Runs `sql` with `params` on `conn`, handing `each` its rows.
pub(super) fn each_row(
    conn: &Connection,
    sql: &str,
    params: &[Param],
    each: EachRow<'_>,
) -> Result<(), StoreError> {
    let values: Vec<&dyn rusqlite::ToSql> = params.iter().map(|p| p as _).collect();
    let mut stmt = conn.prepare_cached(sql)?;
    bind_all(&mut stmt, &values)?;
    let mut rows = stmt.raw_query();
    while let Some(row) = rows.next()? {
        each(row)?;
    }
    Ok(())
}
