//! Conversations, tasks and API keys: what both databases do the same way, written once on
//! the driver surface (`driver.rs`): creating, reading, listing, changing settings, clearing
//! and deleting (with forks). Each write holds the conversation's row lock where the database
//! locks rows (PostgreSQL; SQLite's one writer holds the database's). Forking and redaction,
//! whose reads go along a fork's chain, are each database's (`*/forks.rs`).

use serde_json::Value;

use crate::append_plan::{running_row, Running};
use crate::codec::{
    check_task_key, check_text, decode_task, encode_task, now_ms, ConversationColumns,
};
use crate::driver::{execute, params, row, rows, tx_rows, Conv, Row, Statements, Tx};
use crate::error::StoreError;
use crate::fork_plan::{apply_update, has_forks, DESCENDANTS, DETACH, FORK_COUNT, UPDATE_SETTINGS};
use crate::keys::{ApiKey, NewApiKey};
use crate::model::{Conversation, ConversationUpdate, NewConversation, StoredTask};
use crate::statements::{
    get_conversation_sql, list_conversations_sql, API_KEY_TENANT, CONVERSATION_TENANTS,
    DELETE_CONVERSATION, DELETE_MESSAGES, DELETE_STABLE_WINDOWS, DROP_LEASE, DROP_SUMMARIES,
    GET_TASK, INSERT_API_KEY, INSERT_CONVERSATION, INSERT_CONVERSATION_KEY, INSERT_TASK,
    KEYED_CONVERSATION, LIST_API_KEYS, REVOKE_API_KEY, RUNNING, SAVE_RUNNING,
};

/// The conversation in `statements::CONVERSATION_COLUMNS` at columns 0–12.
pub(crate) fn conversation_row(r: &dyn Row) -> Result<Conversation, StoreError> {
    let metadata = r.text(4)?;
    let policy = r.opt_text(5)?;
    ConversationColumns {
        id: r.text(0)?,
        tenant: r.text(1)?,
        title: r.opt_text(2)?,
        system_prompt: r.opt_text(3)?,
        metadata: &metadata,
        policy: policy.as_deref(),
        created_at: r.int(6)?,
        updated_at: r.int(7)?,
        message_count: r.int(8)?,
        last_seq: r.int(9)?,
        total_tokens: r.int(10)?,
        parent_id: r.opt_text(11)?,
        fork_seq: r.int(12)?,
    }
    .decode()
}

/// A new conversation's row under a new id, checked, with the values `INSERT_CONVERSATION`
/// takes.
fn new_row(
    tenant: &str,
    new: NewConversation,
) -> Result<(Conversation, Vec<crate::driver::Param>), StoreError> {
    check_text("tenant", tenant)?;
    check_text("title", new.title.as_deref().unwrap_or(""))?;
    check_text("system prompt", new.system_prompt.as_deref().unwrap_or(""))?;
    let id = uuid::Uuid::now_v7().to_string();
    let now = now_ms();
    let policy = crate::codec::policy_text(new.policy.as_ref())?;
    let metadata = Value::Object(new.metadata.clone()).to_string();
    let values = params![
        &id,
        tenant,
        &new.title,
        &new.system_prompt,
        metadata,
        policy,
        now
    ];
    let conv = Conversation {
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
    };
    Ok((conv, values.to_vec()))
}

/// Creates a conversation with a new id (checked by the caller).
pub(crate) async fn create<D: Statements>(
    db: &D,
    tenant: &str,
    new: NewConversation,
) -> Result<Conversation, StoreError> {
    let (conv, values) = new_row(tenant, new)?;
    execute(db, INSERT_CONVERSATION, &values).await?;
    Ok(conv)
}

/// The longest conversation key, in bytes.
pub(crate) const MAX_CONVERSATION_KEY_BYTES: usize = 256;

/// A conversation key a client chose: 1 to 256 bytes, not blank, no control characters (it
/// travels in URLs, logs and error messages).
pub(crate) fn check_conversation_key(key: &str) -> Result<(), StoreError> {
    let bad = |why: &str| StoreError::Invalid(format!("conversation key {why}"));
    if key.trim().is_empty() {
        return Err(bad("is empty"));
    }
    if key.len() > MAX_CONVERSATION_KEY_BYTES {
        return Err(bad(&format!(
            "is longer than {MAX_CONVERSATION_KEY_BYTES} bytes"
        )));
    }
    if key.chars().any(char::is_control) {
        return Err(bad("contains a control character"));
    }
    Ok(())
}

/// The conversation tenant named `key`, created with `new` when the key is new: whether it
/// was created. Two processes opening one new key at once get one conversation: the key's
/// insert decides (PostgreSQL's waits for the other transaction and then does nothing; the
/// loser removes the conversation it made and reads the winner's). SQLite has one writer.
pub(crate) async fn open_keyed<D: Statements>(
    db: &D,
    tenant: &str,
    key: &str,
    new: NewConversation,
) -> Result<(Conversation, bool), StoreError> {
    check_text("tenant", tenant)?;
    check_conversation_key(key)?;
    let (conv, values) = new_row(tenant, new)?;
    let (tenant, key) = (tenant.to_string(), key.to_string());
    db.write(Box::new(move |tx| {
        Box::pin(async move {
            if let Some(existing) = keyed_in(tx, &tenant, &key).await? {
                return Ok((existing, false));
            }
            tx.execute(INSERT_CONVERSATION, &values).await?;
            let named = tx
                .execute(INSERT_CONVERSATION_KEY, &params![&tenant, &key, &conv.id])
                .await?;
            if named == 1 {
                return Ok((conv, true));
            }
            // Another transaction named it first: ours is not wanted.
            tx.execute(DELETE_CONVERSATION, &params![&conv.id, &tenant])
                .await?;
            let winner = keyed_in(tx, &tenant, &key).await?.ok_or_else(|| {
                StoreError::Invalid(format!(
                    "conversation key {key:?} vanished while opening it"
                ))
            })?;
            Ok((winner, false))
        })
    }))
    .await
}

/// The conversation tenant named `key`, in the write transaction `tx`.
async fn keyed_in(
    tx: &mut dyn Tx,
    tenant: &str,
    key: &str,
) -> Result<Option<Conversation>, StoreError> {
    let found = tx_rows(tx, KEYED_CONVERSATION, &params![tenant, key], |r| r.text(0)).await?;
    match found.into_iter().next() {
        Some(id) => Ok(Some(get_in(tx, Conv::new(tenant, &id)).await?)),
        None => Ok(None),
    }
}

/// One conversation; another tenant's is not found.
pub(crate) async fn get<D: Statements>(db: &D, c: Conv<'_>) -> Result<Conversation, StoreError> {
    row(
        db,
        &get_conversation_sql(),
        &params![c.id, c.tenant],
        conversation_row,
    )
    .await?
    .ok_or_else(|| StoreError::ConversationNotFound(c.id.to_string()))
}

/// The tenants holding a conversation `id`.
pub(crate) async fn tenants<D: Statements>(db: &D, id: &str) -> Result<Vec<String>, StoreError> {
    check_text("conversation id", id)?;
    rows(db, CONVERSATION_TENANTS, &params![id], |r| r.text(0)).await
}

/// A tenant's conversations after the cursor.
pub(crate) async fn list<D: Statements>(
    db: &D,
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
    let values = params![tenant, after.unwrap_or(""), limit];
    rows(db, &list_conversations_sql(), &values, conversation_row).await
}

/// The conversation's running totals, its row locked until the transaction ends.
pub(crate) async fn lock_running(tx: &mut dyn Tx, c: Conv<'_>) -> Result<Running, StoreError> {
    let sql = format!("{RUNNING}{}", tx.lock_rows());
    let found = tx_rows(tx, &sql, &params![c.id, c.tenant], running_row).await?;
    found
        .into_iter()
        .next()
        .ok_or_else(|| StoreError::ConversationNotFound(c.id.to_string()))
}

/// Saves the running totals of conversation `id`.
pub(crate) async fn save_running(tx: &mut dyn Tx, id: &str, r: &Running) -> Result<(), StoreError> {
    let [a, b, c, d, e, f, g, h] = r.columns();
    let values = params![a, b, c, d, e, f, g, h, now_ms(), id, r.last_at, r.mirror];
    tx.execute(SAVE_RUNNING, &values).await?;
    Ok(())
}

/// A conversation in the write transaction `tx`.
pub(crate) async fn get_in(tx: &mut dyn Tx, c: Conv<'_>) -> Result<Conversation, StoreError> {
    let sql = get_conversation_sql();
    let found = tx_rows(tx, &sql, &params![c.id, c.tenant], conversation_row).await?;
    found
        .into_iter()
        .next()
        .ok_or_else(|| StoreError::ConversationNotFound(c.id.to_string()))
}

/// How many forks conversation `id` has.
async fn fork_count(tx: &mut dyn Tx, id: &str) -> Result<i64, StoreError> {
    let n = tx_rows(tx, FORK_COUNT, &params![id], |r| r.int(0)).await?;
    Ok(n.first().copied().unwrap_or(0))
}

/// Changes a conversation's settings; a policy change drops its stable windows.
pub(crate) async fn update_settings<D: Statements>(
    db: &D,
    c: Conv<'_>,
    update: ConversationUpdate,
) -> Result<Conversation, StoreError> {
    let (tenant, id) = (c.tenant.to_string(), c.id.to_string());
    db.write(Box::new(move |tx| {
        Box::pin(async move {
            let c = Conv::new(&tenant, &id);
            lock_running(tx, c).await?;
            let mut conv = get_in(tx, c).await?;
            if apply_update(&mut conv, &update)? {
                tx.execute(DELETE_STABLE_WINDOWS, &params![&id]).await?;
            }
            let metadata = Value::Object(conv.metadata.clone()).to_string();
            let policy = crate::codec::policy_text(conv.policy.as_ref())?;
            let values = params![
                &id,
                &conv.title,
                &conv.system_prompt,
                metadata,
                policy,
                now_ms()
            ];
            tx.execute(UPDATE_SETTINGS, &values).await?;
            get_in(tx, c).await
        })
    }))
    .await
}

/// Deletes a conversation and, with `cascade`, its forks (deepest first); how many.
pub(crate) async fn delete<D: Statements>(
    db: &D,
    c: Conv<'_>,
    cascade: bool,
) -> Result<u64, StoreError> {
    let (tenant, id) = (c.tenant.to_string(), c.id.to_string());
    db.write(Box::new(move |tx| {
        Box::pin(async move {
            lock_running(tx, Conv::new(&tenant, &id)).await?;
            let forks = fork_count(tx, &id).await?;
            if forks > 0 && !cascade {
                return Err(has_forks(&id, forks, "delete"));
            }
            let mut ids = if forks > 0 {
                tx_rows(tx, DESCENDANTS, &params![&id], |r| r.text(0)).await?
            } else {
                Vec::new()
            };
            ids.push(id.clone());
            for d in &ids {
                tx.execute(DELETE_STABLE_WINDOWS, &params![d]).await?;
                tx.execute(DELETE_MESSAGES, &params![d]).await?;
                tx.execute(DELETE_CONVERSATION, &params![d, &tenant])
                    .await?;
            }
            Ok(ids.len() as u64)
        })
    }))
    .await
}

/// Removes a conversation's messages, its stable windows and summaries, keeps the rest; a
/// conversation with forks is refused, a fork stops reading its parent.
pub(crate) async fn clear<D: Statements>(db: &D, c: Conv<'_>) -> Result<u64, StoreError> {
    let (tenant, id) = (c.tenant.to_string(), c.id.to_string());
    db.write(Box::new(move |tx| {
        Box::pin(async move {
            let r = lock_running(tx, Conv::new(&tenant, &id)).await?;
            let forks = fork_count(tx, &id).await?;
            if forks > 0 {
                return Err(has_forks(&id, forks, "clear"));
            }
            tx.execute(DETACH, &params![&id]).await?;
            let removed = tx.execute(DELETE_MESSAGES, &params![&id]).await?;
            for sql in [DELETE_STABLE_WINDOWS, DROP_LEASE, DROP_SUMMARIES] {
                tx.execute(sql, &params![&id]).await?;
            }
            save_running(tx, &id, &Running::cleared(r.last_seq)).await?;
            Ok(removed)
        })
    }))
    .await
}

/// Stores a validated task under a new id.
pub(crate) async fn create_task<D: Statements>(
    db: &D,
    tenant: &str,
    task: &recall_core::task::Task,
) -> Result<StoredTask, StoreError> {
    let (stored, spec) = encode_task(tenant, task)?;
    let values = params![
        &stored.id,
        tenant,
        task.priority.as_str(),
        &task.description,
        spec,
        stored.created_at,
    ];
    execute(db, INSERT_TASK, &values).await?;
    Ok(stored)
}

/// One task; another tenant's is not found.
pub(crate) async fn get_task<D: Statements>(
    db: &D,
    tenant: &str,
    id: &str,
) -> Result<StoredTask, StoreError> {
    check_task_key(tenant, id)?;
    let found = row(db, GET_TASK, &params![id, tenant], |r| {
        Ok((r.text(0)?, r.text(1)?, r.int(2)?))
    })
    .await?;
    let (id, spec, created_at) = found.ok_or_else(|| StoreError::TaskNotFound(id.to_string()))?;
    decode_task(id, tenant, &spec, created_at)
}

/// Stores an API key's hash.
pub(crate) async fn create_key<D: Statements>(
    db: &D,
    key: NewApiKey,
) -> Result<ApiKey, StoreError> {
    check_text("tenant", &key.tenant)?;
    check_text("label", key.label.as_deref().unwrap_or(""))?;
    let now = now_ms();
    let values = params![&key.id, &key.tenant, &key.key_sha256, &key.label, now];
    execute(db, INSERT_API_KEY, &values).await?;
    Ok(ApiKey {
        id: key.id,
        tenant: key.tenant,
        label: key.label,
        created_at: now,
        revoked_at: None,
    })
}

/// The tenant of an unrevoked key, by its hash: the lookup of every authenticated request.
pub(crate) async fn key_tenant<D: Statements>(
    db: &D,
    key_sha256: &str,
) -> Result<Option<String>, StoreError> {
    row(db, API_KEY_TENANT, &params![key_sha256], |r| r.text(0)).await
}

/// API keys, of one tenant or all, oldest first.
pub(crate) async fn list_keys<D: Statements>(
    db: &D,
    tenant: Option<&str>,
) -> Result<Vec<ApiKey>, StoreError> {
    rows(db, LIST_API_KEYS, &params![tenant], |r| {
        Ok(ApiKey {
            id: r.text(0)?,
            tenant: r.text(1)?,
            label: r.opt_text(2)?,
            created_at: r.int(3)?,
            revoked_at: r.opt_int(4)?,
        })
    })
    .await
}

/// Revokes a key; false when no unrevoked key has that id.
pub(crate) async fn revoke_key<D: Statements>(db: &D, id: &str) -> Result<bool, StoreError> {
    Ok(execute(db, REVOKE_API_KEY, &params![now_ms(), id]).await? > 0)
}
