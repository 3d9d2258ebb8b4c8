//! Recall's vectors (migration 0005): the backlog and saving a batch are the same on both
//! databases, written once here; the cosine ranking is each database's (`*/vectors.rs`), where
//! SQLite reads each stored vector in place.

use recall_core::recall::vector_to_bytes;

use crate::codec::{message_row, now_ms};
use crate::driver::{execute, params, row, rows, Conv, Statements};
use crate::error::StoreError;
use crate::model::{NewVector, VectorScope, VectorStatus, VectorTodo};
use crate::statements::{
    vector_backlog_sql, vector_status_sql, vectors_behind_page_sql, RELEASE_VECTOR_LEASE,
    SAVE_VECTOR, SAVE_VECTOR_PROGRESS, TAKE_VECTOR_LEASE,
};

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

/// Conversations of any tenant behind under `model` (see [`crate::Store::vectors_behind`]).
pub(crate) async fn behind<D: Statements>(
    db: &D,
    model: &str,
    of: Option<&str>,
    after: Option<Conv<'_>>,
    limit: u32,
) -> Result<Vec<(String, String)>, StoreError> {
    let (tenant, id) = after.map_or(("", ""), |c| (c.tenant, c.id));
    let values = params![model, tenant, id, limit, of];
    rows(db, &vectors_behind_page_sql(), &values, |r| {
        Ok((r.text(0)?, r.text(1)?))
    })
    .await
}

/// What is left to embed under `model` over `scope` (see [`crate::Store::vector_status`]).
pub(crate) async fn status<D: Statements>(
    db: &D,
    scope: VectorScope<'_>,
    model: &str,
) -> Result<VectorStatus, StoreError> {
    let (tenant, id) = match scope {
        VectorScope::Store => (None, None),
        VectorScope::Tenant(t) => (Some(t), None),
        VectorScope::Conversation(c) => {
            // Not found is an error, not "nothing behind".
            crate::conversations::get(db, c).await?;
            (Some(c.tenant), Some(c.id))
        }
    };
    let values = params![model, tenant, id];
    let counts = row(db, &vector_status_sql(), &values, |r| {
        Ok((r.int(0)?, r.int(1)?))
    })
    .await?;
    let (conversations, messages) = counts.unwrap_or((0, 0));
    Ok(VectorStatus {
        conversations_behind: u64::try_from(conversations).unwrap_or(0),
        messages_behind: u64::try_from(messages).unwrap_or(0),
    })
}

/// Takes or renews a vector lease (see [`crate::Store::take_vector_lease`]).
pub(crate) async fn take_lease<D: Statements>(
    db: &D,
    c: Conv<'_>,
    model: &str,
    holder: &str,
    expires_at: i64,
) -> Result<bool, StoreError> {
    let values = params![c.id, c.tenant, model, holder, expires_at, now_ms()];
    crate::summaries::take_lease_row(db, c, TAKE_VECTOR_LEASE, &values).await
}

/// Gives a vector lease up (see [`crate::Store::release_vector_lease`]).
pub(crate) async fn release_lease<D: Statements>(
    db: &D,
    id: &str,
    model: &str,
    holder: &str,
) -> Result<(), StoreError> {
    if [id, model, holder].iter().any(|s| s.contains('\0')) {
        return Ok(());
    }
    execute(db, RELEASE_VECTOR_LEASE, &params![id, model, holder]).await?;
    Ok(())
}
