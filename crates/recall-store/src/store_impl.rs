//! [`Store`], implemented once for every database ([`Driver`]): the checks each method makes
//! (ids and tenants, batches, words), then its capability's flow — shared (`conversations.rs`,
//! `summaries.rs`) or the database's own (the `*Ops` traits of `driver.rs`).

use async_trait::async_trait;
use recall_core::policy::{Policy, RecallScope};
use recall_core::recall::{RecallCandidate, RecallKey, RecallQuery, RecallSection};

use crate::codec::{check_key, encode, encode_batch, figures_or_measure, validate};
use crate::conversations as conv;
use crate::error::StoreError;
use crate::keys::{ApiKey, NewApiKey};
use crate::model::{
    Appended, Conversation, ConversationRef, ConversationUpdate, MirrorSums, NewConversation,
    NewFork, NewMessage, NewVector, RecallChoice, RecallHits, SearchHit, StoredMessage, StoredTask,
    VectorScope, VectorStatus, VectorTodo,
};
use crate::ops::Driver;
use crate::summaries::{self, NewSummary, StoredSummary};
use crate::window::Window;
use crate::Store;

/// Tenant `tenant`'s conversation `id`, once both are known to be well formed.
fn checked<'a>(tenant: &'a str, id: &'a str) -> Result<ConversationRef<'a>, StoreError> {
    check_key(tenant, id)?;
    Ok(ConversationRef { tenant, id })
}

#[async_trait]
impl<D: Driver> Store for D {
    // Conversations.

    async fn create_conversation(
        &self,
        tenant: &str,
        new: NewConversation,
    ) -> Result<Conversation, StoreError> {
        conv::create(self, tenant, new).await
    }

    async fn open_conversation(
        &self,
        tenant: &str,
        key: &str,
        new: NewConversation,
    ) -> Result<(Conversation, bool), StoreError> {
        conv::open_keyed(self, tenant, key, new).await
    }

    async fn get_conversation(&self, tenant: &str, id: &str) -> Result<Conversation, StoreError> {
        conv::get(self, checked(tenant, id)?).await
    }

    async fn conversation_tenants(&self, id: &str) -> Result<Vec<String>, StoreError> {
        conv::tenants(self, id).await
    }

    async fn list_conversations(
        &self,
        tenant: &str,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Conversation>, StoreError> {
        conv::list(self, tenant, after, limit).await
    }

    async fn update_conversation(
        &self,
        tenant: &str,
        id: &str,
        update: ConversationUpdate,
    ) -> Result<Conversation, StoreError> {
        conv::update_settings(self, checked(tenant, id)?, update).await
    }

    async fn delete_conversation(
        &self,
        tenant: &str,
        id: &str,
        cascade: bool,
    ) -> Result<u64, StoreError> {
        conv::delete(self, checked(tenant, id)?, cascade).await
    }

    async fn clear_conversation(&self, tenant: &str, id: &str) -> Result<u64, StoreError> {
        conv::clear(self, checked(tenant, id)?).await
    }

    // Forks and redaction.

    async fn fork_conversation(
        &self,
        tenant: &str,
        id: &str,
        at: i64,
        new: NewFork,
    ) -> Result<Conversation, StoreError> {
        crate::forks::fork(self, checked(tenant, id)?, at, new).await
    }

    async fn mirror_sums(&self, tenant: &str, id: &str, at: i64) -> Result<MirrorSums, StoreError> {
        crate::forks::mirror_sums(self, checked(tenant, id)?, at).await
    }

    async fn forks(&self, tenant: &str, id: &str) -> Result<Vec<Conversation>, StoreError> {
        crate::forks::forks_of(self, checked(tenant, id)?).await
    }

    async fn redact_message(&self, tenant: &str, id: &str, seq: i64) -> Result<(), StoreError> {
        crate::forks::redact(self, checked(tenant, id)?, seq).await
    }

    async fn compact(&self) -> Result<(), StoreError> {
        self.vacuum().await
    }

    // Messages and the context read.

    async fn append(
        &self,
        tenant: &str,
        id: &str,
        messages: Vec<NewMessage>,
    ) -> Result<Vec<Appended>, StoreError> {
        let c = checked(tenant, id)?;
        if messages.is_empty() {
            return Ok(Vec::new());
        }
        self.append_encoded(c, encode_batch(&messages)?).await
    }

    async fn update_message(
        &self,
        tenant: &str,
        id: &str,
        seq: i64,
        message: NewMessage,
    ) -> Result<(), StoreError> {
        let c = checked(tenant, id)?;
        let e = encode(&message, figures_or_measure(&message));
        validate(&e, &message.message, 0)?;
        crate::messages::replace(self, c, seq, e).await
    }

    async fn messages(
        &self,
        tenant: &str,
        id: &str,
        after: i64,
        limit: u32,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        crate::forks::page(self, checked(tenant, id)?, after, limit).await
    }

    async fn conversation_window(
        &self,
        tenant: &str,
        id: &str,
        policy: &Policy,
    ) -> Result<(Conversation, Window), StoreError> {
        self.read_window(checked(tenant, id)?, policy).await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        crate::driver::rows(self, "SELECT 1", &[], |_| Ok(())).await?;
        Ok(())
    }

    // Tasks.

    async fn create_task(
        &self,
        tenant: &str,
        task: &recall_core::task::Task,
    ) -> Result<StoredTask, StoreError> {
        conv::create_task(self, tenant, task).await
    }

    async fn get_task(&self, tenant: &str, id: &str) -> Result<StoredTask, StoreError> {
        conv::get_task(self, tenant, id).await
    }

    // Search and recall.

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
        let behind = self.recall_behind(checked(tenant, id)?).await?;
        crate::recall_plan::catch_up(behind, budget, |seg, hi| self.recall_index_batch(seg, hi))
            .await
    }

    async fn recall_lexical(
        &self,
        tenant: &str,
        id: &str,
        query: &RecallQuery,
    ) -> Result<RecallHits, StoreError> {
        let c = checked(tenant, id)?;
        if query.terms.is_empty() || query.limit == 0 {
            return Ok(RecallHits {
                hits: Vec::new(),
                complete: true,
            });
        }
        match query.scope {
            RecallScope::Conversation => self.conversation_hits(c, query).await,
            RecallScope::Tenant => Ok(RecallHits {
                hits: self.tenant_hits(c, query).await?,
                complete: true,
            }),
        }
    }

    async fn recall_messages(
        &self,
        tenant: &str,
        id: &str,
        query: &RecallQuery,
        keys: &[RecallKey],
    ) -> Result<Vec<RecallCandidate>, StoreError> {
        crate::ops::recall_read(self, checked(tenant, id)?, query, keys).await
    }

    async fn recall_choose(&self, choice: RecallChoice<'_>) -> Result<RecallSection, StoreError> {
        check_key(choice.conv.tenant, choice.conv.id)?;
        self.recall_choice(choice).await
    }

    // Vectors.

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
        crate::vectors::backlog(self, tenant, id, model, limit).await
    }

    async fn save_vectors(
        &self,
        tenant: &str,
        model: &str,
        dim: usize,
        vectors: Vec<NewVector>,
        progress: Vec<(String, i64)>,
    ) -> Result<(), StoreError> {
        crate::vectors::save(self, tenant, model, dim, vectors, progress).await
    }

    async fn vectors_behind(
        &self,
        model: &str,
        of: Option<&str>,
        after: Option<ConversationRef<'_>>,
        limit: u32,
    ) -> Result<Vec<(String, String)>, StoreError> {
        crate::vectors::behind(self, model, of, after, limit).await
    }

    async fn vector_status(
        &self,
        scope: VectorScope<'_>,
        model: &str,
    ) -> Result<VectorStatus, StoreError> {
        if let VectorScope::Conversation(c) = scope {
            check_key(c.tenant, c.id)?;
        }
        crate::vectors::status(self, scope, model).await
    }

    async fn take_vector_lease(
        &self,
        c: ConversationRef<'_>,
        model: &str,
        holder: &str,
        expires_at: i64,
    ) -> Result<bool, StoreError> {
        check_key(c.tenant, c.id)?;
        crate::vectors::take_lease(self, c, model, holder, expires_at).await
    }

    async fn release_vector_lease(
        &self,
        c: ConversationRef<'_>,
        model: &str,
        holder: &str,
    ) -> Result<(), StoreError> {
        crate::vectors::release_lease(self, c.id, model, holder).await
    }

    async fn recall_semantic(
        &self,
        tenant: &str,
        id: &str,
        query: &RecallQuery,
        model: &str,
        vector: &[f32],
    ) -> Result<RecallHits, StoreError> {
        self.semantic(checked(tenant, id)?, query, model, vector)
            .await
    }

    // Summaries.

    async fn summary_before(
        &self,
        tenant: &str,
        id: &str,
        before: i64,
    ) -> Result<Option<StoredSummary>, StoreError> {
        summaries::summary_before(self, checked(tenant, id)?, before).await
    }

    async fn summaries(
        &self,
        tenant: &str,
        id: &str,
        limit: u32,
    ) -> Result<Vec<StoredSummary>, StoreError> {
        summaries::summaries(self, checked(tenant, id)?, limit).await
    }

    async fn take_compaction_lease(
        &self,
        tenant: &str,
        id: &str,
        holder: &str,
        expires_at: i64,
        upto_seq: i64,
    ) -> Result<bool, StoreError> {
        let c = checked(tenant, id)?;
        summaries::take_lease(self, c, holder, expires_at, upto_seq).await
    }

    async fn release_compaction_lease(
        &self,
        _tenant: &str,
        id: &str,
        holder: &str,
    ) -> Result<(), StoreError> {
        summaries::release_lease(self, id, holder).await
    }

    async fn commit_summary(
        &self,
        tenant: &str,
        id: &str,
        holder: &str,
        new: NewSummary,
    ) -> Result<StoredSummary, StoreError> {
        summaries::commit(self, checked(tenant, id)?, holder, new).await
    }

    // API keys.

    async fn create_api_key(&self, key: NewApiKey) -> Result<ApiKey, StoreError> {
        conv::create_key(self, key).await
    }

    async fn api_key_tenant(&self, key_sha256: &str) -> Result<Option<String>, StoreError> {
        conv::key_tenant(self, key_sha256).await
    }

    async fn list_api_keys(&self, tenant: Option<&str>) -> Result<Vec<ApiKey>, StoreError> {
        conv::list_keys(self, tenant).await
    }

    async fn revoke_api_key(&self, id: &str) -> Result<bool, StoreError> {
        conv::revoke_key(self, id).await
    }
}
