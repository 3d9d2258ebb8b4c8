//! Recall's vectors on SQLite (migration 0005): the backlog a catch-up embeds, saving its
//! vectors on the writer, and the brute-force cosine ranking over what is stored.

use recall_core::policy::RecallScope;
use recall_core::recall::{vector_to_bytes, CosineTop, RecallQuery};

use super::conn::{named, stored_message};
use super::SqliteStore;
use crate::error::StoreError;
use crate::model::{NewVector, RecallHits, VectorTodo};
use crate::statements::{
    vector_backlog_sql, RECALL_VECTORS, RECALL_VECTORS_TENANT, SAVE_VECTOR, SAVE_VECTOR_PROGRESS,
    VECTORS_BEHIND, VECTOR_PROGRESS,
};

impl SqliteStore {
    pub(super) fn backlog(
        &self,
        tenant: &str,
        id: Option<&str>,
        model: &str,
        limit: u32,
    ) -> Result<Vec<VectorTodo>, StoreError> {
        let limit = i64::from(limit);
        let sql = vector_backlog_sql();
        self.read(|c| {
            let mut stmt = c.prepare_cached(&sql)?;
            let mut rows = stmt.query(named(&[&tenant, &id, &model, &limit]).as_slice())?;
            let mut out = Vec::new();
            while let Some(row) = rows.next()? {
                let conversation_id: String = row.get(11)?;
                let m = stored_message(row)?;
                out.push(VectorTodo {
                    conversation_id,
                    seq: m.seq,
                    message: m.message,
                });
            }
            Ok(out)
        })
    }

    pub(super) async fn save(
        &self,
        tenant: &str,
        model: &str,
        dim: usize,
        vectors: Vec<NewVector>,
        progress: Vec<(String, i64)>,
    ) -> Result<(), StoreError> {
        let tenant = tenant.to_string();
        let model = model.to_string();
        let dim = i64::try_from(dim).map_err(|_| StoreError::Invalid("dimension".into()))?;
        self.writer
            .write(move |tx| {
                {
                    let mut stmt = tx.prepare_cached(SAVE_VECTOR)?;
                    for v in &vectors {
                        if i64::try_from(v.vector.len()).ok() != Some(dim) {
                            return Err(StoreError::Invalid(format!(
                                "a vector of {} values for a model of {dim} dimensions",
                                v.vector.len()
                            )));
                        }
                        let bytes = vector_to_bytes(&v.vector);
                        stmt.execute(
                            named(&[&v.conversation_id, &v.seq, &model, &dim, &bytes, &tenant])
                                .as_slice(),
                        )?;
                    }
                }
                let mut stmt = tx.prepare_cached(SAVE_VECTOR_PROGRESS)?;
                for (conv, upto) in &progress {
                    stmt.execute(named(&[conv, &model, upto, &tenant]).as_slice())?;
                }
                Ok(())
            })
            .await
    }

    pub(super) fn semantic(
        &self,
        tenant: &str,
        id: &str,
        query: &RecallQuery,
        model: &str,
        vector: &[f32],
    ) -> Result<RecallHits, StoreError> {
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
