//! Recall's vectors (migration 0005): the backlog and saving a batch are the same on both
//! databases, written once here; the cosine ranking is each database's (`*/vectors.rs`), where
//! SQLite reads each stored vector in place.

use recall_core::recall::vector_to_bytes;

use crate::codec::message_row;
use crate::driver::{params, rows, Statements};
use crate::error::StoreError;
use crate::model::{NewVector, VectorTodo};
use crate::statements::{vector_backlog_sql, SAVE_VECTOR, SAVE_VECTOR_PROGRESS};

/// Messages not embedded yet under `model` (see [`crate::Store::vector_backlog`]).
pub(crate) async fn backlog<D: Statements>(
    db: &D,
    tenant: &str,
    id: Option<&str>,
    model: &str,
    limit: u32,
) -> Result<Vec<VectorTodo>, StoreError> {
    let values = params![tenant, id, model, limit];
    rows(db, &vector_backlog_sql(), &values, |r| {
        let m = message_row(r, 0)?;
        Ok(VectorTodo {
            conversation_id: r.text(11)?,
            seq: m.seq,
            message: m.message,
        })
    })
    .await
}

/// Saves `vectors` under `model` and marks each conversation of `progress` embedded up to its
/// seq, in one transaction (see [`crate::Store::save_vectors`]).
pub(crate) async fn save<D: Statements>(
    db: &D,
    tenant: &str,
    model: &str,
    dim: usize,
    vectors: Vec<NewVector>,
    progress: Vec<(String, i64)>,
) -> Result<(), StoreError> {
    let dim = i64::try_from(dim).map_err(|_| StoreError::Invalid("dimension".into()))?;
    if let Some(v) = vectors
        .iter()
        .find(|v| i64::try_from(v.vector.len()).ok() != Some(dim))
    {
        return Err(StoreError::Invalid(format!(
            "a vector of {} values for a model of {dim} dimensions",
            v.vector.len()
        )));
    }
    let (tenant, model) = (tenant.to_string(), model.to_string());
    db.write(Box::new(move |tx| {
        Box::pin(async move {
            for v in &vectors {
                let bytes = vector_to_bytes(&v.vector);
                let values = params![&v.conversation_id, v.seq, &model, dim, bytes, &tenant];
                tx.execute(SAVE_VECTOR, &values).await?;
            }
            for (conv, upto) in &progress {
                tx.execute(SAVE_VECTOR_PROGRESS, &params![conv, &model, *upto, &tenant])
                    .await?;
            }
            Ok(())
        })
    }))
    .await
}
