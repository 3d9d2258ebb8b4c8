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
mod summaries;
mod vectors;
mod window;
mod writer;
mod writes;

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use recall_core::policy::Policy;
use rusqlite::OptionalExtension;
use serde_json::Value;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions, SqliteSynchronous};

use crate::codec::{
    check_key, check_task_key, check_text, decode_task, encode, encode_batch, encode_task,
    figures_or_measure, now_ms, validate,
};
use crate::error::StoreError;
use crate::keys::{ApiKey, NewApiKey};
use crate::model::{
    Appended, Conversation, ConversationUpdate, MirrorSums, NewConversation, NewFork, NewMessage,
    NewVector, RecallHits, SearchHit, StoredMessage, StoredTask, VectorTodo,
};
use crate::options::{Durability, SqliteOptions};
use crate::statements::{
    get_conversation_sql, list_conversations_sql, API_KEY_TENANT, CONVERSATION_TENANTS, GET_TASK,
    INSERT_API_KEY, INSERT_CONVERSATION, INSERT_TASK, LIST_API_KEYS, REVOKE_API_KEY,
};
use crate::summaries::{NewSummary, StoredSummary};
use crate::window::Window;
use crate::Store;
use conn::{named, Connections};
use recall_core::recall::{RecallCandidate, RecallKey, RecallQuery};
use writer::Writer;

static MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");

/// The embedded default: one SQLite file in WAL mode.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    conns: Arc<Connections>,
    writer: Arc<Writer>,
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

#[async_trait]
impl Store for SqliteStore {
    async fn create_conversation(
        &self,
        tenant: &str,
        new: NewConversation,
    ) -> Result<Conversation, StoreError> {
        check_text("tenant", tenant)?;
        check_text("title", new.title.as_deref().unwrap_or(""))?;
        check_text("system prompt", new.system_prompt.as_deref().unwrap_or(""))?;
        let conv = Conversation {
            id: uuid::Uuid::now_v7().to_string(),
            tenant: tenant.to_string(),
            title: new.title,
            system_prompt: new.system_prompt,
            metadata: new.metadata,
            policy: new.policy,
            created_at: now_ms(),
            updated_at: 0,
            message_count: 0,
            last_seq: 0,
            total_tokens: 0,
            forked_from: None,
        };
        let row = conv.clone();
        self.writer
            .write(move |tx| {
                let metadata = Value::Object(row.metadata.clone()).to_string();
                let policy = crate::codec::policy_text(row.policy.as_ref())?;
                writes::execute(
                    tx,
                    INSERT_CONVERSATION,
                    &[
                        &row.id,
                        &row.tenant,
                        &row.title,
                        &row.system_prompt,
                        &metadata,
                        &policy,
                        &row.created_at,
                    ],
                )
            })
            .await?;
        Ok(Conversation {
            updated_at: conv.created_at,
            ..conv
        })
    }

    async fn get_conversation(&self, tenant: &str, id: &str) -> Result<Conversation, StoreError> {
        check_key(tenant, id)?;
        self.read(|c| {
            c.prepare_cached(&get_conversation_sql())?
                .query_row(named(&[&id, &tenant]).as_slice(), |row| {
                    Ok(conn::conversation(row))
                })
                .optional()?
                .ok_or_else(|| StoreError::ConversationNotFound(id.to_string()))?
        })
    }

    async fn conversation_tenants(&self, id: &str) -> Result<Vec<String>, StoreError> {
        check_text("conversation id", id)?;
        self.read(|c| {
            let mut stmt = c.prepare_cached(CONVERSATION_TENANTS)?;
            let tenants = stmt
                .query_map(named(&[&id]).as_slice(), |r| r.get(0))?
                .collect::<Result<Vec<String>, _>>()?;
            Ok(tenants)
        })
    }

    async fn list_conversations(
        &self,
        tenant: &str,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Conversation>, StoreError> {
        if let Some(a) = after {
            check_text("cursor", a)?;
        }
        if tenant.contains('\0') {
            return Ok(Vec::new());
        }
        let after = after.unwrap_or("");
        let limit = i64::from(limit);
        self.read(|c| {
            let mut stmt = c.prepare_cached(&list_conversations_sql())?;
            let mut rows = stmt.query(named(&[&tenant, &after, &limit]).as_slice())?;
            let mut out = Vec::new();
            while let Some(row) = rows.next()? {
                out.push(conn::conversation(row)?);
            }
            Ok(out)
        })
    }

    async fn delete_conversation(
        &self,
        tenant: &str,
        id: &str,
        cascade: bool,
    ) -> Result<u64, StoreError> {
        check_key(tenant, id)?;
        let (tenant, id) = (tenant.to_string(), id.to_string());
        self.writer
            .write(move |tx| forks::delete(tx, &tenant, &id, cascade))
            .await
    }

    async fn fork_conversation(
        &self,
        tenant: &str,
        id: &str,
        at: i64,
        new: NewFork,
    ) -> Result<Conversation, StoreError> {
        check_key(tenant, id)?;
        let (tenant, id) = (tenant.to_string(), id.to_string());
        let fork_id = uuid::Uuid::now_v7().to_string();
        self.writer
            .write(move |tx| forks::fork(tx, &tenant, &id, at, &new, &fork_id))
            .await
    }

    async fn forks(&self, tenant: &str, id: &str) -> Result<Vec<Conversation>, StoreError> {
        check_key(tenant, id)?;
        self.read(|c| forks::forks(c, tenant, id))
    }

    async fn mirror_sums(&self, tenant: &str, id: &str, at: i64) -> Result<MirrorSums, StoreError> {
        check_key(tenant, id)?;
        self.read(|c| forks::mirror_sums(c, tenant, id, at))
    }

    async fn redact_message(&self, tenant: &str, id: &str, seq: i64) -> Result<(), StoreError> {
        check_key(tenant, id)?;
        let (tenant, id) = (tenant.to_string(), id.to_string());
        self.writer
            .write(move |tx| forks::redact(tx, &tenant, &id, seq))
            .await
    }

    /// On the writer connection, outside any transaction (VACUUM cannot run in one), on a
    /// blocking thread: it takes as long as the file is large.
    async fn compact(&self) -> Result<(), StoreError> {
        let conns = Arc::clone(&self.conns);
        tokio::task::spawn_blocking(move || {
            let conn = conn::lock(&conns.writer);
            forks::compact(&conn)
        })
        .await
        .map_err(|e| StoreError::Internal(format!("compaction stopped: {e}")))?
    }

    async fn update_conversation(
        &self,
        tenant: &str,
        id: &str,
        update: ConversationUpdate,
    ) -> Result<Conversation, StoreError> {
        check_key(tenant, id)?;
        let (tenant, id) = (tenant.to_string(), id.to_string());
        self.writer
            .write(move |tx| forks::update_settings(tx, &tenant, &id, &update))
            .await
    }

    async fn clear_conversation(&self, tenant: &str, id: &str) -> Result<u64, StoreError> {
        check_key(tenant, id)?;
        let (tenant, id) = (tenant.to_string(), id.to_string());
        self.writer
            .write(move |tx| writes::clear_conversation(tx, &tenant, &id))
            .await
    }

    async fn append(
        &self,
        tenant: &str,
        id: &str,
        messages: Vec<NewMessage>,
    ) -> Result<Vec<Appended>, StoreError> {
        check_key(tenant, id)?;
        if messages.is_empty() {
            return Ok(Vec::new());
        }
        let encoded = encode_batch(&messages)?;
        let (tenant, id) = (tenant.to_string(), id.to_string());
        self.writer
            .write(move |tx| append::append(tx, &tenant, &id, &encoded))
            .await
    }

    async fn update_message(
        &self,
        tenant: &str,
        id: &str,
        seq: i64,
        message: NewMessage,
    ) -> Result<(), StoreError> {
        check_key(tenant, id)?;
        let e = encode(&message, figures_or_measure(&message));
        validate(&e, &message.message, 0)?;
        let (tenant, id) = (tenant.to_string(), id.to_string());
        self.writer
            .write(move |tx| writes::update_message(tx, &tenant, &id, seq, &e))
            .await
    }

    async fn messages(
        &self,
        tenant: &str,
        id: &str,
        after: i64,
        limit: u32,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        check_key(tenant, id)?;
        // Along the chain of a fork (`forks::page`), which also tells a missing conversation.
        self.read(|c| forks::page(c, tenant, id, after, limit))
    }

    /// Read on the calling thread (see `window.rs`); a stable window's state that had to be
    /// caught up is saved after the read, by the writer.
    async fn conversation_window(
        &self,
        tenant: &str,
        id: &str,
        policy: &Policy,
    ) -> Result<(Conversation, Window), StoreError> {
        check_key(tenant, id)?;
        let read = window::read_window(&self.conns, tenant, id, policy)?;
        if let Some((key, save, snap)) = read.save {
            let (tenant, id) = (tenant.to_string(), id.to_string());
            self.writer
                .write(move |tx| writes::save_stable(tx, &tenant, &id, &key, &save, &snap))
                .await?;
        }
        Ok((read.conv, read.window))
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.read(|c| Ok(c.query_row("SELECT 1", [], |_| Ok(()))?))
    }

    async fn create_task(
        &self,
        tenant: &str,
        task: &recall_core::task::Task,
    ) -> Result<StoredTask, StoreError> {
        let (stored, spec) = encode_task(tenant, task)?;
        let (id, tenant, now) = (stored.id.clone(), stored.tenant.clone(), stored.created_at);
        let (priority, description) = (task.priority.as_str(), task.description.clone());
        self.writer
            .write(move |tx| {
                writes::execute(
                    tx,
                    INSERT_TASK,
                    &[&id, &tenant, &priority, &description, &spec, &now],
                )
            })
            .await?;
        Ok(stored)
    }

    async fn get_task(&self, tenant: &str, id: &str) -> Result<StoredTask, StoreError> {
        check_task_key(tenant, id)?;
        let row: Option<(String, String, i64)> = self.read(|c| {
            Ok(c.prepare_cached(GET_TASK)?
                .query_row(named(&[&id, &tenant]).as_slice(), |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .optional()?)
        })?;
        let (id, spec, created_at) = row.ok_or_else(|| StoreError::TaskNotFound(id.to_string()))?;
        decode_task(id, tenant, &spec, created_at)
    }

    async fn search_messages(
        &self,
        tenant: &str,
        query: &str,
        limit: u32,
    ) -> Result<Vec<SearchHit>, StoreError> {
        let words = crate::search::search_words(query)?;
        if tenant.contains('\0') || limit == 0 {
            return Ok(Vec::new());
        }
        if search::pending(&self.conns, tenant)? {
            let tenant = tenant.to_string();
            self.writer
                .write(move |tx| search::catch_up(tx, &tenant))
                .await?;
        }
        search::hits(&self.conns, tenant, &words, limit)
    }

    async fn catch_up_recall(
        &self,
        tenant: &str,
        id: &str,
        budget: Option<std::time::Duration>,
    ) -> Result<bool, StoreError> {
        check_key(tenant, id)?;
        self.catch_up_index(tenant, id, budget).await
    }

    async fn recall_lexical(
        &self,
        tenant: &str,
        id: &str,
        query: &RecallQuery,
    ) -> Result<RecallHits, StoreError> {
        check_key(tenant, id)?;
        self.recall_hits(tenant, id, query).await
    }

    async fn recall_messages(
        &self,
        tenant: &str,
        id: &str,
        query: &RecallQuery,
        keys: &[RecallKey],
    ) -> Result<Vec<RecallCandidate>, StoreError> {
        check_key(tenant, id)?;
        self.recall_read(tenant, id, query, keys)
    }

    async fn recall_choose(
        &self,
        tenant: &str,
        id: &str,
        query: &RecallQuery,
        hits: &[recall_core::recall::Ranked],
        tokenizer: recall_core::tokens::Tokenizer,
        escape: bool,
        complete: bool,
    ) -> Result<recall_core::recall::RecallSection, StoreError> {
        check_key(tenant, id)?;
        self.recall_lazily(tenant, id, query, hits, tokenizer, escape, complete)
    }

    async fn vector_backlog(
        &self,
        tenant: &str,
        id: Option<&str>,
        model: &str,
        limit: u32,
    ) -> Result<Vec<VectorTodo>, StoreError> {
        if let Some(id) = id {
            check_key(tenant, id)?;
        }
        self.backlog(tenant, id, model, limit)
    }

    async fn save_vectors(
        &self,
        tenant: &str,
        model: &str,
        dim: usize,
        vectors: Vec<NewVector>,
        progress: Vec<(String, i64)>,
    ) -> Result<(), StoreError> {
        self.save(tenant, model, dim, vectors, progress).await
    }

    async fn recall_semantic(
        &self,
        tenant: &str,
        id: &str,
        query: &RecallQuery,
        model: &str,
        vector: &[f32],
    ) -> Result<RecallHits, StoreError> {
        check_key(tenant, id)?;
        self.semantic(tenant, id, query, model, vector)
    }

    async fn summary_before(
        &self,
        tenant: &str,
        id: &str,
        before: i64,
    ) -> Result<Option<StoredSummary>, StoreError> {
        self.read_summary_before(tenant, id, before)
    }

    async fn summaries(
        &self,
        tenant: &str,
        id: &str,
        limit: u32,
    ) -> Result<Vec<StoredSummary>, StoreError> {
        self.read_summaries(tenant, id, limit)
    }

    async fn take_compaction_lease(
        &self,
        tenant: &str,
        id: &str,
        holder: &str,
        expires_at: i64,
        upto_seq: i64,
    ) -> Result<bool, StoreError> {
        check_key(tenant, id)?;
        self.write_lease(tenant, id, holder, expires_at, upto_seq)
            .await
    }

    async fn release_compaction_lease(
        &self,
        _tenant: &str,
        id: &str,
        holder: &str,
    ) -> Result<(), StoreError> {
        self.write_release(id, holder).await
    }

    async fn commit_summary(
        &self,
        tenant: &str,
        id: &str,
        holder: &str,
        new: NewSummary,
    ) -> Result<StoredSummary, StoreError> {
        self.write_summary(tenant, id, holder, new).await
    }

    async fn create_api_key(&self, key: NewApiKey) -> Result<ApiKey, StoreError> {
        check_text("tenant", &key.tenant)?;
        check_text("label", key.label.as_deref().unwrap_or(""))?;
        let stored = ApiKey {
            id: key.id,
            tenant: key.tenant,
            label: key.label,
            created_at: now_ms(),
            revoked_at: None,
        };
        let row = stored.clone();
        let hash = key.key_sha256;
        self.writer
            .write(move |tx| {
                writes::execute(
                    tx,
                    INSERT_API_KEY,
                    &[&row.id, &row.tenant, &hash, &row.label, &row.created_at],
                )
            })
            .await?;
        Ok(stored)
    }

    /// The key lookup of every authenticated request: one indexed read on the calling thread.
    async fn api_key_tenant(&self, key_sha256: &str) -> Result<Option<String>, StoreError> {
        self.read(|c| {
            Ok(c.prepare_cached(API_KEY_TENANT)?
                .query_row(named(&[&key_sha256]).as_slice(), |row| row.get(0))
                .optional()?)
        })
    }

    async fn list_api_keys(&self, tenant: Option<&str>) -> Result<Vec<ApiKey>, StoreError> {
        self.read(|c| {
            let mut stmt = c.prepare_cached(LIST_API_KEYS)?;
            let keys = stmt
                .query_map(named(&[&tenant]).as_slice(), |r| {
                    Ok(ApiKey {
                        id: r.get(0)?,
                        tenant: r.get(1)?,
                        label: r.get(2)?,
                        created_at: r.get(3)?,
                        revoked_at: r.get(4)?,
                    })
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(keys)
        })
    }

    async fn revoke_api_key(&self, id: &str) -> Result<bool, StoreError> {
        let id = id.to_string();
        let done = self
            .writer
            .write(move |tx| writes::execute(tx, REVOKE_API_KEY, &[&now_ms(), &id]))
            .await?;
        Ok(done > 0)
    }
}
