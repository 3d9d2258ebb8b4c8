//! Recall's vectors on PostgreSQL (migration 0005): the brute-force cosine ranking over what
//! is stored, from the store's copy in conversation scope (`vector_cache.rs`).

use async_trait::async_trait;
use futures::TryStreamExt;
use recall_core::policy::RecallScope;
use recall_core::recall::{CosineTop, RecallQuery};
use sqlx::Row;

use super::PgStore;
use crate::driver::Conv;
use crate::error::StoreError;
use crate::model::RecallHits;
use crate::ops::VectorOps;
use crate::statements::{CACHE_VECTORS, RECALL_VECTORS_TENANT, VECTORS_BEHIND, VECTOR_PROGRESS};
use crate::vector_cache::Chunk;

#[async_trait]
impl VectorOps for PgStore {
    async fn semantic(
        &self,
        c: Conv<'_>,
        query: &RecallQuery,
        model: &str,
        vector: &[f32],
    ) -> Result<RecallHits, StoreError> {
        let (tenant, id) = (c.tenant, c.id);
        let progress: Option<(i64, i64, i64)> = sqlx::query_as(VECTOR_PROGRESS)
            .bind(id)
            .bind(tenant)
            .bind(model)
            .fetch_optional(&self.pool)
            .await?;
        let Some((last, embedded, epoch)) = progress else {
            return Err(StoreError::ConversationNotFound(id.to_string()));
        };
        let mut complete = embedded >= last.min(query.before - 1);
        let dim = i32::try_from(vector.len()).unwrap_or(i32::MAX);
        let mut top = CosineTop::new(vector.to_vec(), query.limit);
        match query.scope {
            RecallScope::Conversation => {
                // From the store's copy, with what was added since read into it.
                let plan = self.vectors.plan(id, model, vector.len(), embedded, epoch);
                let mut new = Chunk::default();
                if !plan.is_current() {
                    let mut rows = sqlx::query(CACHE_VECTORS)
                        .bind(id)
                        .bind(model)
                        .bind(dim)
                        .bind(plan.after)
                        .bind(plan.upto)
                        .fetch(&self.pool);
                    while let Some(row) = rows.try_next().await? {
                        let seq: i64 = row.try_get(0)?;
                        let bytes: Vec<u8> = row.try_get(1)?;
                        new.push_bytes(seq, &bytes, vector.len());
                    }
                }
                self.vectors
                    .finish(id, model, plan, new)
                    .rank(&mut top, query.before);
            }
            RecallScope::Tenant => {
                let behind: i64 = sqlx::query_scalar(VECTORS_BEHIND)
                    .bind(id)
                    .bind(tenant)
                    .bind(model)
                    .fetch_one(&self.pool)
                    .await?;
                complete &= behind == 0;
                let mut rows = sqlx::query(RECALL_VECTORS_TENANT)
                    .bind(id)
                    .bind(tenant)
                    .bind(model)
                    .bind(query.before)
                    .bind(dim)
                    .fetch(&self.pool);
                while let Some(row) = rows.try_next().await? {
                    let conv: Option<String> = row.try_get(0)?;
                    let seq: i64 = row.try_get(1)?;
                    let bytes: Vec<u8> = row.try_get(2)?;
                    top.push_bytes(conv, seq, &bytes);
                }
            }
        }
        Ok(RecallHits {
            hits: top.finish(),
            complete,
        })
    }
}
