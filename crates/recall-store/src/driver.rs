//! What each database gives the shared store: run a statement, read rows, hold a write
//! transaction or a read snapshot ([`Statements`], [`Tx`]). The operations whose form differs
//! per database (the context read, the append, a fork's chain, recall's index, vectors,
//! search, vacuum) are `ops.rs`. This module is the bottom of the store: it imports nothing
//! of the crate but its error and model types.
//!
//! [`crate::Store`] is implemented once, over any `ops::Driver` (`store_impl.rs`): the checks
//! every method makes and each capability's control flow that is the same on both databases
//! (conversations, tasks, API keys, summaries) are written there and in their capability's
//! module, on this surface. SQLite's driver runs reads on the calling thread and write
//! transactions on its one writer connection (`sqlite/writer.rs`); its [`Tx`] answers at once,
//! so a transaction's flow runs to its end on the writer, never waiting on the runtime.
//! PostgreSQL's runs everything on sqlx's pool.

use async_trait::async_trait;
use futures::future::BoxFuture;

use crate::error::StoreError;
use crate::model::ConversationRef;

/// A value bound to a statement's parameter (`$1`, `$2`, … in order).
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    Int(i64),
    OptInt(Option<i64>),
    Text(String),
    OptText(Option<String>),
    Bytes(Vec<u8>),
    Bool(bool),
}

impl From<i64> for Param {
    fn from(v: i64) -> Param {
        Param::Int(v)
    }
}

impl From<u32> for Param {
    fn from(v: u32) -> Param {
        Param::Int(i64::from(v))
    }
}

impl From<Option<i64>> for Param {
    fn from(v: Option<i64>) -> Param {
        Param::OptInt(v)
    }
}

impl From<bool> for Param {
    fn from(v: bool) -> Param {
        Param::Bool(v)
    }
}

impl From<Vec<u8>> for Param {
    fn from(v: Vec<u8>) -> Param {
        Param::Bytes(v)
    }
}

impl From<&str> for Param {
    fn from(v: &str) -> Param {
        Param::Text(v.to_string())
    }
}

impl From<&String> for Param {
    fn from(v: &String) -> Param {
        Param::Text(v.clone())
    }
}

impl From<String> for Param {
    fn from(v: String) -> Param {
        Param::Text(v)
    }
}

impl From<Option<&str>> for Param {
    fn from(v: Option<&str>) -> Param {
        Param::OptText(v.map(str::to_string))
    }
}

impl From<&Option<String>> for Param {
    fn from(v: &Option<String>) -> Param {
        Param::OptText(v.clone())
    }
}

impl From<Option<String>> for Param {
    fn from(v: Option<String>) -> Param {
        Param::OptText(v)
    }
}

/// The parameters of a statement, in order: `params![id, tenant, limit]`.
macro_rules! params {
    ($($v:expr),* $(,)?) => {
        [$($crate::driver::Param::from($v)),*]
    };
}
pub(crate) use params;

/// One row a statement returned, read by column index.
pub trait Row {
    fn int(&self, i: usize) -> Result<i64, StoreError>;
    fn opt_int(&self, i: usize) -> Result<Option<i64>, StoreError>;
    fn text(&self, i: usize) -> Result<String, StoreError>;
    fn opt_text(&self, i: usize) -> Result<Option<String>, StoreError>;
    /// A truth value (PostgreSQL's `boolean`, SQLite's 0 or 1).
    fn flag(&self, i: usize) -> Result<bool, StoreError>;
}

/// What is done with each row a statement returns.
pub type EachRow<'f> = &'f mut (dyn FnMut(&dyn Row) -> Result<(), StoreError> + Send);

/// An open write transaction.
#[async_trait]
pub trait Tx: Send {
    /// Runs one statement; the rows it changed.
    async fn execute(&mut self, sql: &str, params: &[Param]) -> Result<u64, StoreError>;

    /// Runs one statement and hands `each` its rows in order.
    async fn each(
        &mut self,
        sql: &str,
        params: &[Param],
        each: EachRow<'_>,
    ) -> Result<(), StoreError>;

    /// See [`Statements::lock_rows`].
    fn lock_rows(&self) -> &'static str;
}

/// The rows of one statement in `tx`, each read by `map`.
pub(crate) async fn tx_rows<T: Send>(
    tx: &mut dyn Tx,
    sql: &str,
    params: &[Param],
    map: fn(&dyn Row) -> Result<T, StoreError>,
) -> Result<Vec<T>, StoreError> {
    let mut out = Vec::new();
    tx.each(sql, params, &mut |r| {
        out.push(map(r)?);
        Ok(())
    })
    .await?;
    Ok(out)
}

/// A write: run in one transaction, committed when it returns `Ok`, rolled back otherwise.
pub type Work<R> =
    Box<dyn for<'t> FnOnce(&'t mut dyn Tx) -> BoxFuture<'t, Result<R, StoreError>> + Send>;

/// Statements on one database: the surface the shared control flow runs on.
#[async_trait]
pub trait Statements: Send + Sync {
    /// Runs one read statement and hands `each` its rows in order.
    async fn each(&self, sql: &str, params: &[Param], each: EachRow<'_>) -> Result<(), StoreError>;

    /// Runs `work` in one write transaction.
    async fn write<R: Send + 'static>(&self, work: Work<R>) -> Result<R, StoreError>;

    /// Runs `work`'s reads in one snapshot: every statement sees the same state of the
    /// database (a read that crosses a fork's chain must not see a write land half-way).
    async fn snapshot<R: Send + 'static>(&self, work: Work<R>) -> Result<R, StoreError>;

    /// What a read in a write transaction ends with to lock the rows it returns until the
    /// transaction ends (` FOR UPDATE`); empty where the transaction holds the database's one
    /// write lock already (SQLite).
    fn lock_rows(&self) -> &'static str;

    /// The statement that marks a new fork `$1` as indexed for search up to its fork point
    /// `$2`, where the search index is kept by the store per conversation (SQLite's FTS5);
    /// `None` where the database's own index follows every write (PostgreSQL).
    fn fork_index_mark(&self) -> Option<&'static str>;

    /// What this database runs around a redaction (see [`RedactionFrame`]).
    fn redaction_frame(&self) -> RedactionFrame;
}

/// What a database runs around a redaction besides the shared statements, each through
/// [`Tx::each`] (a pragma answers with a row): before the message is rewritten, and after
/// every total moved; and the statement (`$1` a conversation) that takes the lock a recall
/// index catch-up of that conversation takes, where it takes one.
#[derive(Debug, Clone, Copy)]
pub struct RedactionFrame {
    pub before: &'static [&'static str],
    pub after: &'static [&'static str],
    pub index_lock: Option<&'static str>,
}

/// A conversation of a tenant, as the driver surface takes it.
pub type Conv<'a> = ConversationRef<'a>;

/// The rows of one read, each read by `map`.
pub(crate) async fn rows<D: Statements + ?Sized, T: Send>(
    db: &D,
    sql: &str,
    params: &[Param],
    map: fn(&dyn Row) -> Result<T, StoreError>,
) -> Result<Vec<T>, StoreError> {
    let mut out = Vec::new();
    db.each(sql, params, &mut |r| {
        out.push(map(r)?);
        Ok(())
    })
    .await?;
    Ok(out)
}

/// The first row of one read, if any, read by `map` (for reads of one row by key).
pub(crate) async fn row<D: Statements + ?Sized, T: Send>(
    db: &D,
    sql: &str,
    params: &[Param],
    map: fn(&dyn Row) -> Result<T, StoreError>,
) -> Result<Option<T>, StoreError> {
    Ok(rows(db, sql, params, map).await?.into_iter().next())
}

/// Runs one write statement in a transaction of its own; the rows it changed.
pub(crate) async fn execute<D: Statements + ?Sized>(
    db: &D,
    sql: &'static str,
    params: &[Param],
) -> Result<u64, StoreError> {
    let params = params.to_vec();
    db.write(Box::new(move |tx| {
        Box::pin(async move { tx.execute(sql, &params).await })
    }))
    .await
}
