//! The SQLite store: one file in WAL mode, driven by rusqlite on connections of its own.
//!
//! sqlx opens the file, switches it to WAL and runs the migrations (and its pool stays open
//! for tests and tools); every operation after that runs on rusqlite. sqlx's SQLite driver
//! runs each connection on a worker thread and hands every statement over and back, about
//! 54 µs a statement on these machines (`context_sqlite/statement` in docs/BENCHMARKS.md):
//! more than the statements themselves. Here a statement costs what SQLite spends on it.
//!
//! - Reads (`window.rs` for the context read; the others below) run on the calling thread, on
//!   the writer connection when it is free (its page cache is warm), else on a reader: a read
//!   in WAL mode never waits for a writer (`conn.rs`).
//! - Writes run on the one writer connection (`writer.rs`): on the calling thread when they
//!   need not wait, else on the writer thread. The append is `append.rs`, the other writes
//!   `writes.rs`, search `search.rs`.

mod append;
mod conn;
mod forks;
mod recall;
mod search;
mod vectors;
mod window;
mod writer;
mod writes;

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use std::task::{Context, Poll, Waker};

use async_trait::async_trait;
use futures::future::BoxFuture;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions, SqliteSynchronous};

use crate::driver::{EachRow, Param, Statements, Tx, Work};
use crate::error::StoreError;
use crate::options::{Durability, SqliteOptions};
use conn::Connections;
use writer::Writer;

static MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");

/// The embedded default: one SQLite file in WAL mode.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    conns: Arc<Connections>,
    writer: Arc<Writer>,
    /// Conversations' vectors in memory, checked against the file at each use.
    pub(super) vectors: Arc<crate::vector_cache::VectorCache>,
}

/// SQLITE_BUSY or SQLITE_LOCKED, with any extended code.
fn is_busy(e: &sqlx::Error) -> bool {
    let Some(db) = e.as_database_error() else {
        return false;
    };
    db.code()
        .and_then(|c| c.parse::<i32>().ok())
        .is_some_and(|c| matches!(c & 0xff, 5 | 6))
}

impl SqliteStore {
    /// Opens (creating if needed) the database file at `path` and runs migrations, with the
    /// default settings.
    pub async fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_with(path, SqliteOptions::default()).await
    }

    /// [`SqliteStore::open`] with `options` (durability) applied to every connection.
    pub async fn open_with(path: &Path, options: SqliteOptions) -> Result<SqliteStore, StoreError> {
        if let Some(dir) = path.parent() {
            if !dir.as_os_str().is_empty() && !dir.exists() {
                std::fs::create_dir_all(dir).map_err(|e| {
                    StoreError::Invalid(format!("cannot create {}: {e}", dir.display()))
                })?;
            }
        }
        // No `journal_mode` here: switching a file to WAL takes an exclusive lock that SQLite
        // does not wait for (no busy handler), so a connection opened while another process
        // holds any lock would fail. WAL is switched on once below, waiting for the lock, and
        // stays on in the file.
        let opts = SqliteConnectOptions::from_str("sqlite://")?
            .filename(path)
            .create_if_missing(true)
            .synchronous(match options.durability {
                Durability::Normal => SqliteSynchronous::Normal,
                Durability::Full => SqliteSynchronous::Full,
            })
            .foreign_keys(true)
            .busy_timeout(conn::BUSY_TIMEOUT);
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .min_connections(1)
            .connect_with(opts)
            .await?;
        let since = std::time::Instant::now();
        let mut pause = Duration::from_millis(2);
        loop {
            match sqlx::query_scalar::<_, String>("PRAGMA journal_mode = WAL")
                .fetch_one(&pool)
                .await
            {
                Ok(_) => break,
                Err(e) if is_busy(&e) && since.elapsed() < conn::BUSY_TIMEOUT => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                Err(e) => return Err(e.into()),
            }
        }
        // Several processes may open a new file at once (two CLI commands, a server and the
        // CLI). SQLite has no migration lock of its own: the write lock taken up front makes
        // them migrate one after the other (each waits on the busy timeout), and the later
        // ones find the schema in place.
        let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
        MIGRATIONS.run(&mut tx).await?;
        tx.commit().await?;
        let conns = Arc::new(Connections::open(path, options.durability)?);
        let writer = Arc::new(Writer::start(Arc::clone(&conns))?);
        Ok(SqliteStore {
            pool,
            conns,
            writer,
            vectors: Arc::default(),
        })
    }

    /// `PRAGMA synchronous` on every kind of connection the store holds (1 NORMAL, 2 FULL),
    /// named: the sqlx pool's and the rusqlite readers' and writer's.
    pub async fn synchronous_levels(&self) -> Result<Vec<(String, i64)>, StoreError> {
        let mut held = Vec::new();
        let mut out = Vec::new();
        for i in 0..self.pool.options().get_max_connections() {
            let mut conn = self.pool.acquire().await?;
            let level: i64 = sqlx::query_scalar("PRAGMA synchronous")
                .fetch_one(&mut *conn)
                .await?;
            out.push((format!("sqlx pool connection {i}"), level));
            held.push(conn);
        }
        drop(held);
        out.extend(self.conns.synchronous_levels()?);
        Ok(out)
    }

    /// The sqlx pool that migrated the file (for tests and tools; the store itself runs on
    /// rusqlite).
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// Runs `read` on a connection for reading (`Connections::reader`), on the calling thread.
    fn read<R>(
        &self,
        read: impl FnOnce(&rusqlite::Connection) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        let reader = self.conns.reader()?;
        read(reader.conn()?)
    }
}

/// A transaction: the writer's (`writer.rs` began it and ends it), or a read snapshot on a
/// reader ([`Statements::snapshot`]).
pub(super) struct SqliteTx<'c>(pub(super) &'c mut rusqlite::Connection);

#[async_trait]
impl Tx for SqliteTx<'_> {
    async fn execute(&mut self, sql: &str, params: &[Param]) -> Result<u64, StoreError> {
        let values: Vec<&dyn rusqlite::ToSql> = params.iter().map(|p| p as _).collect();
        writes::execute(self.0, sql, &values)
    }

    async fn each(
        &mut self,
        sql: &str,
        params: &[Param],
        each: EachRow<'_>,
    ) -> Result<(), StoreError> {
        conn::each_row(self.0, sql, params, each)
    }

    fn lock_rows(&self) -> &'static str {
        ""
    }
}

/// Runs a transaction's flow to its end at once, on the writer: [`SqliteTx`] answers every
/// call without waiting, so the flow never waits either; one that did would hold the write
/// lock on nothing, and is refused instead.
pub(super) fn run_now<R>(mut flow: BoxFuture<'_, Result<R, StoreError>>) -> Result<R, StoreError> {
    let mut cx = Context::from_waker(Waker::noop());
    match flow.as_mut().poll(&mut cx) {
        Poll::Ready(r) => r,
        Poll::Pending => Err(StoreError::Internal(
            "a SQLite write waited on something other than the database".into(),
        )),
    }
}

#[async_trait]
impl Statements for SqliteStore {
    /// On the calling thread (see `SqliteStore::read`).
    async fn each(&self, sql: &str, params: &[Param], each: EachRow<'_>) -> Result<(), StoreError> {
        self.read(|c| conn::each_row(c, sql, params, each))
    }

    async fn write<R: Send + 'static>(&self, work: Work<R>) -> Result<R, StoreError> {
        self.writer
            .write(move |conn| run_now(work(&mut SqliteTx(conn))))
            .await
    }

    /// A deferred transaction on a reader: in WAL mode its first read fixes the snapshot
    /// the rest see (the reader rolls it back when it is given back, whatever happened).
    async fn snapshot<R: Send + 'static>(&self, work: Work<R>) -> Result<R, StoreError> {
        let mut reader = self.conns.reader()?;
        let conn = reader.conn_mut()?;
        conn.execute_batch("BEGIN DEFERRED")?;
        run_now(work(&mut SqliteTx(conn)))
    }

    fn lock_rows(&self) -> &'static str {
        ""
    }

    fn fork_index_mark(&self) -> Option<&'static str> {
        Some("UPDATE conversations SET indexed_seq = $2 WHERE id = $1")
    }

    /// Deleted text is overwritten (`secure_delete`), and the search index is merged so that
    /// no older FTS5 segment keeps the redacted words (the trigger replaced the message's
    /// searchable text). One writer: no lock to take for the recall index.
    fn redaction_frame(&self) -> crate::driver::RedactionFrame {
        crate::driver::RedactionFrame {
            before: &["PRAGMA secure_delete = 1"],
            after: &[
                "INSERT INTO message_fts (message_fts) VALUES ('optimize')",
                "PRAGMA secure_delete = 0",
            ],
            index_lock: None,
        }
    }
}
