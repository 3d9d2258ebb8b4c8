//! The PostgreSQL store: several recall processes may share one database. Everything runs on
//! sqlx's pool; a writer serialises on the conversation's row (`SELECT … FOR UPDATE`, or the
//! `UPDATE` that moves its totals). The append and the other writes that hold that lock are
//! `append.rs`, the context read `window.rs`, search `search.rs`.

mod append;
mod forks;
mod recall;
mod search;
mod summaries;
mod vectors;
mod window;

use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use recall_core::policy::Policy;
use serde_json::Value;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, PgRow};
use sqlx::Row;

use crate::append_plan::Running;
use crate::codec::{
    check_key, check_task_key, check_text, decode_task, encode, encode_batch, encode_task,
    figures_or_measure, now_ms, validate, ConversationColumns, MessageColumns,
};
use crate::error::StoreError;
use crate::keys::{ApiKey, NewApiKey};
use crate::model::{
    Appended, Conversation, ConversationUpdate, MirrorSums, NewConversation, NewFork, NewMessage,
    NewVector, RecallHits, SearchHit, StoredMessage, StoredTask, VectorTodo,
};
use crate::statements::{
    get_conversation_sql, list_conversations_sql, API_KEY_TENANT, CONVERSATION_TENANTS,
    DELETE_MESSAGES, DELETE_STABLE_WINDOWS, GET_TASK, INSERT_API_KEY, INSERT_CONVERSATION,
    INSERT_TASK, LIST_API_KEYS, REVOKE_API_KEY,
};
use crate::summaries::{NewSummary, StoredSummary};
use crate::window::Window;
use crate::Store;
use recall_core::recall::{RecallCandidate, RecallKey, RecallQuery};

static MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// PostgreSQL: several recall processes may share one database.
#[derive(Debug, Clone)]
pub struct PgStore {
    pool: PgPool,
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
        Ok(PgStore { pool })
    }

    /// The connection pool (for tests and tools).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}

/// The conversation in `statements::CONVERSATION_COLUMNS` at columns 0–12.
fn conversation_at(row: &PgRow) -> Result<Conversation, StoreError> {
    let metadata: String = row.try_get(4)?;
    let policy: Option<String> = row.try_get(5)?;
    ConversationColumns {
        id: row.try_get(0)?,
        tenant: row.try_get(1)?,
        title: row.try_get(2)?,
        system_prompt: row.try_get(3)?,
        metadata: &metadata,
        policy: policy.as_deref(),
        created_at: row.try_get(6)?,
        updated_at: row.try_get(7)?,
        message_count: row.try_get(8)?,
        last_seq: row.try_get(9)?,
        total_tokens: row.try_get(10)?,
        parent_id: row.try_get(11)?,
        fork_seq: row.try_get(12)?,
    }
    .decode()
}

/// The message in `statements::MESSAGE_COLUMNS` starting at column `o` (the one-statement
/// context read puts conversation columns before them).
fn stored_at(row: &PgRow, o: usize) -> Result<StoredMessage, StoreError> {
    let role: String = row.try_get(o + 1)?;
    let content: String = row.try_get(o + 2)?;
    let metadata: Option<String> = row.try_get(o + 4)?;
    let status: String = row.try_get(o + 5)?;
    MessageColumns {
        seq: row.try_get(o)?,
        role: &role,
        content: &content,
        client_id: row.try_get(o + 3)?,
        metadata: metadata.as_deref(),
        status: &status,
        created_at: row.try_get(o + 6)?,
        tokens_o200k: row.try_get(o + 7)?,
        tokens_cl100k: row.try_get(o + 8)?,
        chars: row.try_get(o + 9)?,
        flags: row.try_get(o + 10)?,
    }
    .decode()
}

#[async_trait]
impl Store for PgStore {
    async fn create_conversation(
        &self,
        tenant: &str,
        new: NewConversation,
    ) -> Result<Conversation, StoreError> {
        check_text("tenant", tenant)?;
        check_text("title", new.title.as_deref().unwrap_or(""))?;
        check_text("system prompt", new.system_prompt.as_deref().unwrap_or(""))?;
        let id = uuid::Uuid::now_v7().to_string();
        let now = now_ms();
        let policy = crate::codec::policy_text(new.policy.as_ref())?;
        sqlx::query(INSERT_CONVERSATION)
            .bind(&id)
            .bind(tenant)
            .bind(&new.title)
            .bind(&new.system_prompt)
            .bind(Value::Object(new.metadata.clone()).to_string())
            .bind(policy)
            .bind(now)
            .execute(&self.pool)
            .await?;
        Ok(Conversation {
            id,
            tenant: tenant.to_string(),
            title: new.title,
            system_prompt: new.system_prompt,
            metadata: new.metadata,
            policy: new.policy,
            created_at: now,
            updated_at: now,
            message_count: 0,
            last_seq: 0,
            total_tokens: 0,
            forked_from: None,
        })
    }

    async fn get_conversation(&self, tenant: &str, id: &str) -> Result<Conversation, StoreError> {
        check_key(tenant, id)?;
        let row = sqlx::query(&get_conversation_sql())
            .bind(id)
            .bind(tenant)
            .fetch_optional(&self.pool)
            .await?
            .ok_or_else(|| StoreError::ConversationNotFound(id.to_string()))?;
        conversation_at(&row)
    }

    async fn conversation_tenants(&self, id: &str) -> Result<Vec<String>, StoreError> {
        check_text("conversation id", id)?;
        Ok(sqlx::query_scalar(CONVERSATION_TENANTS)
            .bind(id)
            .fetch_all(&self.pool)
            .await?)
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
        let rows = sqlx::query(&list_conversations_sql())
            .bind(tenant)
            .bind(after.unwrap_or(""))
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(conversation_at).collect()
    }

    async fn delete_conversation(
        &self,
        tenant: &str,
        id: &str,
        cascade: bool,
    ) -> Result<u64, StoreError> {
        check_key(tenant, id)?;
        self.delete_tree(tenant, id, cascade).await
    }

    async fn fork_conversation(
        &self,
        tenant: &str,
        id: &str,
        at: i64,
        new: NewFork,
    ) -> Result<Conversation, StoreError> {
        check_key(tenant, id)?;
        self.fork_in_tx(tenant, id, at, &new).await
    }

    async fn forks(&self, tenant: &str, id: &str) -> Result<Vec<Conversation>, StoreError> {
        check_key(tenant, id)?;
        self.forks_of(tenant, id).await
    }

    async fn mirror_sums(&self, tenant: &str, id: &str, at: i64) -> Result<MirrorSums, StoreError> {
        check_key(tenant, id)?;
        self.mirror_sums_of(tenant, id, at).await
    }

    async fn redact_message(&self, tenant: &str, id: &str, seq: i64) -> Result<(), StoreError> {
        check_key(tenant, id)?;
        self.redact_in_tx(tenant, id, seq).await
    }

    async fn compact(&self) -> Result<(), StoreError> {
        self.vacuum().await
    }

    async fn update_conversation(
        &self,
        tenant: &str,
        id: &str,
        update: ConversationUpdate,
    ) -> Result<Conversation, StoreError> {
        check_key(tenant, id)?;
        self.update_settings(tenant, id, &update).await
    }

    async fn clear_conversation(&self, tenant: &str, id: &str) -> Result<u64, StoreError> {
        check_key(tenant, id)?;
        let mut tx = self.pool.begin().await?;
        let r = Self::lock_running(&mut tx, tenant, id).await?;
        Self::before_clear(&mut tx, id).await?;
        let removed = sqlx::query(DELETE_MESSAGES)
            .bind(id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        for sql in [
            DELETE_STABLE_WINDOWS,
            crate::summaries::DROP_LEASE,
            crate::summaries::DROP_SUMMARIES,
        ] {
            sqlx::query(sql).bind(id).execute(&mut *tx).await?;
        }
        Self::save_running(&mut tx, id, &Running::cleared(r.last_seq)).await?;
        tx.commit().await?;
        Ok(removed)
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
        self.write_appends(tenant, id, &encoded).await
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
        self.replace_message(tenant, id, seq, &e).await
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
        self.page(tenant, id, after, limit).await
    }

    async fn conversation_window(
        &self,
        tenant: &str,
        id: &str,
        policy: &Policy,
    ) -> Result<(Conversation, Window), StoreError> {
        check_key(tenant, id)?;
        self.read_window(tenant, id, policy).await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    async fn create_task(
        &self,
        tenant: &str,
        task: &recall_core::task::Task,
    ) -> Result<StoredTask, StoreError> {
        let (stored, spec) = encode_task(tenant, task)?;
        sqlx::query(INSERT_TASK)
            .bind(&stored.id)
            .bind(tenant)
            .bind(task.priority.as_str())
            .bind(&task.description)
            .bind(&spec)
            .bind(stored.created_at)
            .execute(&self.pool)
            .await?;
        Ok(stored)
    }

    async fn get_task(&self, tenant: &str, id: &str) -> Result<StoredTask, StoreError> {
        check_task_key(tenant, id)?;
        let row: Option<(String, String, i64)> = sqlx::query_as(GET_TASK)
            .bind(id)
            .bind(tenant)
            .fetch_optional(&self.pool)
            .await?;
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
        self.search_hits(tenant, &words, limit).await
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
        self.recall_read(tenant, id, query, keys).await
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
        self.backlog(tenant, id, model, limit).await
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
        self.semantic(tenant, id, query, model, vector).await
    }

    async fn summary_before(
        &self,
        tenant: &str,
        id: &str,
        before: i64,
    ) -> Result<Option<StoredSummary>, StoreError> {
        self.read_summary_before(tenant, id, before).await
    }

    async fn summaries(
        &self,
        tenant: &str,
        id: &str,
        limit: u32,
    ) -> Result<Vec<StoredSummary>, StoreError> {
        self.read_summaries(tenant, id, limit).await
    }

    async fn take_compaction_lease(
        &self,
        tenant: &str,
        id: &str,
        holder: &str,
        expires_at: i64,
        upto_seq: i64,
    ) -> Result<bool, StoreError> {
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
        let now = now_ms();
        sqlx::query(INSERT_API_KEY)
            .bind(&key.id)
            .bind(&key.tenant)
            .bind(&key.key_sha256)
            .bind(&key.label)
            .bind(now)
            .execute(&self.pool)
            .await?;
        Ok(ApiKey {
            id: key.id,
            tenant: key.tenant,
            label: key.label,
            created_at: now,
            revoked_at: None,
        })
    }

    async fn api_key_tenant(&self, key_sha256: &str) -> Result<Option<String>, StoreError> {
        Ok(sqlx::query_scalar(API_KEY_TENANT)
            .bind(key_sha256)
            .fetch_optional(&self.pool)
            .await?)
    }

    async fn list_api_keys(&self, tenant: Option<&str>) -> Result<Vec<ApiKey>, StoreError> {
        let rows: Vec<(String, String, Option<String>, i64, Option<i64>)> =
            sqlx::query_as(LIST_API_KEYS)
                .bind(tenant)
                .fetch_all(&self.pool)
                .await?;
        Ok(rows
            .into_iter()
            .map(|(id, tenant, label, created_at, revoked_at)| ApiKey {
                id,
                tenant,
                label,
                created_at,
                revoked_at,
            })
            .collect())
    }

    async fn revoke_api_key(&self, id: &str) -> Result<bool, StoreError> {
        let done = sqlx::query(REVOKE_API_KEY)
            .bind(now_ms())
            .bind(id)
            .execute(&self.pool)
            .await?
            .rows_affected();
        Ok(done > 0)
    }
}
