//! Recall's vectors on SQLite (migration 0005): the backlog a catch-up embeds and the
//! brute-force cosine ranking over what is stored, each vector read in place.

use async_trait::async_trait;
use recall_core::policy::RecallScope;
use recall_core::recall::{CosineTop, RecallQuery};

use super::conn::named;
use super::SqliteStore;
use crate::driver::Conv;
use crate::error::StoreError;
use crate::model::RecallHits;
use crate::ops::VectorOps;
use crate::statements::{RECALL_VECTORS, RECALL_VECTORS_TENANT, VECTORS_BEHIND, VECTOR_PROGRESS};

#[async_trait]
impl VectorOps for SqliteStore {
    async fn semantic(
        &self,
        c: Conv<'_>,
        query: &RecallQuery,
        model: &str,
        vector: &[f32],
    ) -> Result<RecallHits, StoreError> {
        let (tenant, id) = (c.tenant, c.id);
        let dim = i64::try_from(vector.len()).unwrap_or(i64::MAX);
        self.read(|c| {
            let (last, embedded): (i64, i64) = {
                let mut stmt = c.prepare_cached(VECTOR_PROGRESS)?;
                let mut rows = stmt.query(named(&[&id, &tenant, &model]).as_slice())?;
                match rows.next()? {
                    Some(r) => (r.get(0)?, r.get(1)?),
                    None => return Err(StoreError::ConversationNotFound(id.to_string())),
                }
            };
            let mut complete = embedded >= last.min(query.before - 1);
            let sql = match query.scope {
                RecallScope::Conversation => RECALL_VECTORS,
                RecallScope::Tenant => {
                    let mut stmt = c.prepare_cached(VECTORS_BEHIND)?;
                    let behind: i64 =
                        stmt.query_row(named(&[&id, &tenant, &model]).as_slice(), |r| r.get(0))?;
                    complete &= behind == 0;
                    RECALL_VECTORS_TENANT
                }
            };
            let mut top = CosineTop::new(vector.to_vec(), query.limit);
            let mut stmt = c.prepare_cached(sql)?;
            let mut rows =
                stmt.query(named(&[&id, &tenant, &model, &query.before, &dim]).as_slice())?;
            while let Some(row) = rows.next()? {
                let conv: Option<String> = row.get(0)?;
                let seq: i64 = row.get(1)?;
                let bytes = row
                    .get_ref(2)?
                    .as_blob()
                    .map_err(|e| StoreError::Corrupt(format!("vector of seq {seq}: {e}")))?;
                top.push_bytes(conv, seq, bytes);
            }
            Ok(RecallHits {
                hits: top.finish(),
                complete,
            })
        })
    }
}
