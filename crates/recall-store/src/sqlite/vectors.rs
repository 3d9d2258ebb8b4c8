//! Recall's vectors on SQLite (migration 0005): the brute-force cosine ranking over what is
//! stored, from the store's copy in conversation scope (`vector_cache.rs`), each vector read
//! in place in tenant scope.

use async_trait::async_trait;
use recall_core::policy::RecallScope;
use recall_core::recall::{CosineTop, RecallQuery};

use super::conn::named;
use super::SqliteStore;
use crate::driver::Conv;
use crate::error::StoreError;
use crate::model::RecallHits;
use crate::ops::VectorOps;
use crate::statements::{CACHE_VECTORS, RECALL_VECTORS_TENANT, VECTORS_BEHIND, VECTOR_PROGRESS};
use crate::vector_cache::Chunk;

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
        let cache = &self.vectors;
        self.read(|c| {
            let (last, embedded, epoch): (i64, i64, i64) = {
                let mut stmt = c.prepare_cached(VECTOR_PROGRESS)?;
                let mut rows = stmt.query(named(&[&id, &tenant, &model]).as_slice())?;
                match rows.next()? {
                    Some(r) => (r.get(0)?, r.get(1)?, r.get(2)?),
                    None => return Err(StoreError::ConversationNotFound(id.to_string())),
                }
            };
            let mut complete = embedded >= last.min(query.before - 1);
            let mut top = CosineTop::new(vector.to_vec(), query.limit);
            match query.scope {
                RecallScope::Conversation => {
                    // From the store's copy, with what was added since read into it.
                    let plan = cache.plan(id, model, vector.len(), embedded, epoch);
                    let mut new = Chunk::default();
                    if !plan.is_current() {
                        let mut stmt = c.prepare_cached(CACHE_VECTORS)?;
                        let mut rows = stmt.query(
                            named(&[&id, &model, &dim, &plan.after, &plan.upto]).as_slice(),
                        )?;
                        while let Some(row) = rows.next()? {
                            let seq: i64 = row.get(0)?;
                            let bytes = row.get_ref(1)?.as_blob().map_err(|e| {
                                StoreError::Corrupt(format!("vector of seq {seq}: {e}"))
                            })?;
                            new.push_bytes(seq, bytes, vector.len());
                        }
                    }
                    cache
                        .finish(id, model, plan, new)
                        .rank(&mut top, query.before);
                }
                RecallScope::Tenant => {
                    let mut stmt = c.prepare_cached(VECTORS_BEHIND)?;
                    let behind: i64 =
                        stmt.query_row(named(&[&id, &tenant, &model]).as_slice(), |r| r.get(0))?;
                    complete &= behind == 0;
                    let mut stmt = c.prepare_cached(RECALL_VECTORS_TENANT)?;
                    let mut rows =
                        stmt.query(named(&[&id, &tenant, &model, &query.before, &dim]).as_slice())?;
                    while let Some(row) = rows.next()? {
                        let conv: Option<String> = row.get(0)?;
                        let seq: i64 = row.get(1)?;
                        let bytes = row.get_ref(2)?.as_blob().map_err(|e| {
                            StoreError::Corrupt(format!("vector of seq {seq}: {e}"))
                        })?;
                        top.push_bytes(conv, seq, bytes);
                    }
                }
            }
            Ok(RecallHits {
                hits: top.finish(),
                complete,
            })
        })
    }
}
