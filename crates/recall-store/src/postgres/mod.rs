//! The PostgreSQL store: several recall processes may share one database. Everything runs on
//! sqlx's pool; a writer serialises on the conversation's row (`SELECT … FOR UPDATE`, or the
//! `UPDATE` that moves its totals). The append and the other writes that hold that lock are
//! `append.rs`, the context read `window.rs`, search `search.rs`.

mod append;
mod forks;
mod recall;
mod search;
mod vectors;
mod window;

use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::postgres::{PgArguments, PgConnectOptions, PgPool, PgPoolOptions, PgRow};
use sqlx::query::Query;
use sqlx::{PgConnection, Postgres, Row as _};

use crate::driver::{EachRow, Param, Row, Statements, Tx, Work};
use crate::error::StoreError;
use crate::model::{Conversation, StoredMessage};

static MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// PostgreSQL: several recall processes may share one database.
#[derive(Debug, Clone)]
pub struct PgStore {
    pool: PgPool,
    /// Conversations' vectors in memory, checked against the database at each use.
    vectors: std::sync::Arc<crate::vector_cache::VectorCache>,
}

impl PgStore {
    /// Connects to `url` and runs migrations (safe to run from several processes at once:
    /// sqlx takes an advisory lock).
    pub async fn connect(url: &str) -> Result<PgStore, StoreError> {
        let opts = PgConnectOptions::from_str(url)?;
        let user = opts.get_username().to_string();
        let database = opts.get_database().unwrap_or(&user).to_string();
        // A connection (with its prepared statements) survives idle spells.
        let pool = PgPoolOptions::new()
            .max_connections(8)
            .min_connections(1)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(opts)
            .await
            .map_err(|e| crate::error::pg_connect_error(e, &user, &database))?;
        MIGRATIONS.run(&pool).await?;
        Ok(PgStore {
            pool,
            vectors: std::sync::Arc::default(),
        })
    }

    /// The connection pool (for tests and tools).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}

/// The conversation in `statements::CONVERSATION_COLUMNS` at columns 0–12.
fn conversation_at(row: &PgRow) -> Result<Conversation, StoreError> {
    crate::conversations::conversation_row(row)
}

/// The message in `statements::MESSAGE_COLUMNS` starting at column `o` (the one-statement
/// context read puts conversation columns before them).
fn stored_at(row: &PgRow, o: usize) -> Result<StoredMessage, StoreError> {
    crate::codec::message_row(row, o)
}

impl Row for PgRow {
    fn int(&self, i: usize) -> Result<i64, StoreError> {
        Ok(self.try_get(i)?)
    }
    fn opt_int(&self, i: usize) -> Result<Option<i64>, StoreError> {
        Ok(self.try_get(i)?)
    }
    fn text(&self, i: usize) -> Result<String, StoreError> {
        Ok(self.try_get(i)?)
    }
    fn opt_text(&self, i: usize) -> Result<Option<String>, StoreError> {
        Ok(self.try_get(i)?)
    }
    fn flag(&self, i: usize) -> Result<bool, StoreError> {
        Ok(self.try_get(i)?)
    }
}

/// `sql` with `params` bound as `$1`… in order (NULLs typed as their column's kind).
fn bound<'q>(sql: &'q str, params: &'q [Param]) -> Query<'q, Postgres, PgArguments> {
    params.iter().fold(sqlx::query(sql), |q, p| match p {
        Param::Int(v) => q.bind(*v),
        Param::OptInt(v) => q.bind(*v),
        Param::Text(v) => q.bind(v.as_str()),
        Param::OptText(v) => q.bind(v.as_deref()),
        Param::Bytes(v) => q.bind(v.as_slice()),
        Param::Bool(v) => q.bind(*v),
    })
}

/// A write transaction on one pooled connection.
pub(super) struct PgTx<'c>(&'c mut PgConnection);

#[async_trait]
impl Tx for PgTx<'_> {
    async fn execute(&mut self, sql: &str, params: &[Param]) -> Result<u64, StoreError> {
        Ok(bound(sql, params)
            .execute(&mut *self.0)
            .await?
            .rows_affected())
    }

    async fn each(
        &mut self,
        sql: &str,
        params: &[Param],
        each: EachRow<'_>,
    ) -> Result<(), StoreError> {
        for row in bound(sql, params).fetch_all(&mut *self.0).await? {
            each(&row)?;
        }
        Ok(())
    }

    fn lock_rows(&self) -> &'static str {
        " FOR UPDATE"
    }
}

#[async_trait]
impl Statements for PgStore {
    async fn each(&self, sql: &str, params: &[Param], each: EachRow<'_>) -> Result<(), StoreError> {
        for row in bound(sql, params).fetch_all(&self.pool).await? {
            each(&row)?;
        }
        Ok(())
    }

    async fn write<R: Send + 'static>(&self, work: Work<R>) -> Result<R, StoreError> {
        let mut tx = self.pool.begin().await?;
        let out = work(&mut PgTx(&mut tx)).await?;
        tx.commit().await?;
        Ok(out)
    }

    async fn snapshot<R: Send + 'static>(&self, work: Work<R>) -> Result<R, StoreError> {
        let mut tx = self
            .pool
            .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .await?;
        let out = work(&mut PgTx(&mut tx)).await?;
        tx.commit().await?;
        Ok(out)
    }

    fn lock_rows(&self) -> &'static str {
        " FOR UPDATE"
    }

    fn fork_index_mark(&self) -> Option<&'static str> {
        None
    }

    /// The advisory lock a recall index catch-up of the conversation takes (`recall.rs`).
    fn redaction_frame(&self) -> crate::driver::RedactionFrame {
        crate::driver::RedactionFrame {
            before: &[],
            after: &[],
            index_lock: Some(
                "SELECT pg_advisory_xact_lock(hashtextextended('recall_index:' || $1, 0))",
            ),
        }
    }
}
