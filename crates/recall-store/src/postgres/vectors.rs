//! Recall's vectors on PostgreSQL (migration 0005): the backlog a catch-up embeds, saving its
//! vectors in one transaction, and the brute-force cosine ranking over what is stored.

use futures::TryStreamExt;
use recall_core::policy::RecallScope;
use recall_core::recall::{vector_to_bytes, CosineTop, RecallQuery};
use sqlx::Row;

use super::{stored_at, PgStore};
use crate::error::StoreError;
use crate::model::{NewVector, RecallHits, VectorTodo};
use crate::statements::{
    vector_backlog_sql, RECALL_VECTORS, RECALL_VECTORS_TENANT, SAVE_VECTOR, SAVE_VECTOR_PROGRESS,
    VECTORS_BEHIND, VECTOR_PROGRESS,
};

impl PgStore {
    pub(super) async fn backlog(
        &self,
        tenant: &str,
        id: Option<&str>,
        model: &str,
        limit: u32,
    ) -> Result<Vec<VectorTodo>, StoreError> {
        let rows = sqlx::query(&vector_backlog_sql())
            .bind(tenant)
            .bind(id)
            .bind(model)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|r| {
                let conversation_id: String = r.try_get(11)?;
                let m = stored_at(r, 0)?;
                Ok(VectorTodo {
                    conversation_id,
                    seq: m.seq,
                    message: m.message,
                })
            })
            .collect()
    }

    pub(super) async fn save(
        &self,
        tenant: &str,
        model: &str,
        dim: usize,
        vectors: Vec<NewVector>,
        progress: Vec<(String, i64)>,
    ) -> Result<(), StoreError> {
        let dim = i32::try_from(dim).map_err(|_| StoreError::Invalid("dimension".into()))?;
        let mut tx = self.pool.begin().await?;
        for v in &vectors {
            if i32::try_from(v.vector.len()).ok() != Some(dim) {
                return Err(StoreError::Invalid(format!(
                    "a vector of {} values for a model of {dim} dimensions",
                    v.vector.len()
                )));
            }
            sqlx::query(SAVE_VECTOR)
                .bind(&v.conversation_id)
                .bind(v.seq)
                .bind(model)
                .bind(dim)
                .bind(vector_to_bytes(&v.vector))
                .bind(tenant)
                .execute(&mut *tx)
                .await?;
        }
        for (conv, upto) in &progress {
            sqlx::query(SAVE_VECTOR_PROGRESS)
                .bind(conv)
                .bind(model)
                .bind(*upto)
                .bind(tenant)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    pub(super) async fn semantic(
        &self,
        tenant: &str,
        id: &str,
        query: &RecallQuery,
        model: &str,
        vector: &[f32],
    ) -> Result<RecallHits, StoreError> {
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
