//! Recall's vectors on PostgreSQL (migration 0005): the backlog a catch-up embeds and the
//! brute-force cosine ranking over what is stored.

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
use crate::statements::{RECALL_VECTORS, RECALL_VECTORS_TENANT, VECTORS_BEHIND, VECTOR_PROGRESS};

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
        let progress: Option<(i64, i64)> = sqlx::query_as(VECTOR_PROGRESS)
            .bind(id)
            .bind(tenant)
            .bind(model)
            .fetch_optional(&self.pool)
            .await?;
        let Some((last, embedded)) = progress else {
            return Err(StoreError::ConversationNotFound(id.to_string()));
        };
        let mut complete = embedded >= last.min(query.before - 1);
        let sql = match query.scope {
            RecallScope::Conversation => RECALL_VECTORS,
            RecallScope::Tenant => {
                let behind: i64 = sqlx::query_scalar(VECTORS_BEHIND)
                    .bind(id)
                    .bind(tenant)
                    .bind(model)
                    .fetch_one(&self.pool)
                    .await?;
                complete &= behind == 0;
                RECALL_VECTORS_TENANT
            }
        };
        let dim = i32::try_from(vector.len()).unwrap_or(i32::MAX);
        let mut top = CosineTop::new(vector.to_vec(), query.limit);
        let mut rows = sqlx::query(sql)
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
        Ok(RecallHits {
            hits: top.finish(),
            complete,
        })
    }
}
