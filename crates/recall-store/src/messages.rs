//! Replacing a stored message (a streamed reply saved as it arrives, then completed), written
//! once on the transaction surface (`driver.rs`): the same statements and checks on both
//! databases, under the conversation's row lock. Also the part of an append both databases
//! share inside their own transaction: finding the messages already stored under a batch's
//! client ids.

use std::collections::HashMap;

use recall_core::gateway::mirror;

use crate::append_plan::{lookup_ids, replacement, Replaced, StoredId};
use crate::codec::Encoded;
use crate::conversations::{lock_running, save_running};
use crate::driver::{params, tx_rows, Conv, Param, Row, Statements, Tx};
use crate::error::StoreError;
use crate::fork_plan::{has_forks, FORKS_READING};
use crate::statements::{
    stored_ids_sql, DROP_STABLE_WINDOWS_FROM, IDS_PER_LOOKUP, MESSAGE_FIGURES,
    ROLL_BACK_STABLE_WINDOWS, SHIFT_RUNNING, UPDATE_MESSAGE,
};

/// Message `seq` as a row of `statements::MESSAGE_FIGURES` gives it.
pub(crate) fn replaced_row(r: &dyn Row, seq: i64) -> Result<Replaced, StoreError> {
    let figures = (r.int(0)?, r.int(1)?, r.int(2)?, r.int(3)?);
    let content = r.text(5)?;
    Replaced::from_columns(seq, figures, r.text(4)?, &content, &r.text(6)?)
}

/// The messages of conversation `id` already stored under the client ids of `encoded`, by
/// the id given (an id a redaction rewrote leads back to the one given: `lookup_ids`). Run in
/// the append's transaction, after its row lock.
pub(crate) async fn stored_ids(
    tx: &mut dyn Tx,
    id: &str,
    encoded: &[Encoded],
) -> Result<HashMap<String, StoredId>, StoreError> {
    let ids: Vec<&str> = encoded
        .iter()
        .filter_map(|e| e.client_id.as_deref())
        .collect();
    let (lookup, back) = lookup_ids(&ids);
    let mut seen = HashMap::new();
    for chunk in lookup.chunks(IDS_PER_LOOKUP) {
        let params: Vec<Param> = std::iter::once(Param::from(id))
            .chain(chunk.iter().map(Param::from))
            .collect();
        tx.each(&stored_ids_sql(chunk.len()), &params, &mut |r| {
            if let Some(given) = back.get(&r.text(0)?) {
                let stored = StoredId {
                    seq: r.int(1)?,
                    role: r.text(2)?,
                    content: r.text(3)?,
                    metadata: r.opt_text(4)?,
                };
                seen.insert(given.clone(), stored);
            }
            Ok(())
        })
        .await?;
    }
    Ok(seen)
}

/// Replaces message `seq` of conversation `c` with `e` (see [`crate::Store::update_message`]):
/// refused while forks read it; later running totals, stable windows and the mirror sum
/// follow the change of size.
pub(crate) async fn replace<D: Statements>(
    db: &D,
    c: Conv<'_>,
    seq: i64,
    e: Encoded,
) -> Result<(), StoreError> {
    let (tenant, id) = (c.tenant.to_string(), c.id.to_string());
    db.write(Box::new(move |tx| {
        Box::pin(async move { replace_in(tx, Conv::new(&tenant, &id), seq, &e).await })
    }))
    .await
}

async fn replace_in(tx: &mut dyn Tx, c: Conv<'_>, seq: i64, e: &Encoded) -> Result<(), StoreError> {
    let id = c.id;
    let mut r = lock_running(tx, c).await?;
    let reading = tx_rows(tx, FORKS_READING, &params![id, seq], |r| r.int(0)).await?;
    let forks = reading.first().copied().unwrap_or(0);
    if forks > 0 {
        return Err(has_forks(id, forks, &format!("update message {seq} of")));
    }
    let mut old = Vec::new();
    tx.each(MESSAGE_FIGURES, &params![id, seq], &mut |r| {
        old.push(replaced_row(r, seq)?);
        Ok(())
    })
    .await?;
    let old = old.pop().ok_or_else(|| StoreError::MessageNotFound {
        conversation: id.to_string(),
        seq,
    })?;
    let f = &e.figures;
    let delta = replacement((&old.figures, &old.role), (f, e.role));
    let d_mirror = mirror::shift(seq, old.mirror, e.mirror);
    let values = params![
        id,
        seq,
        e.role,
        &e.content,
        &e.metadata,
        e.status,
        f.tokens_o200k,
        f.tokens_cl100k,
        f.chars,
        f.flags(),
    ];
    tx.execute(UPDATE_MESSAGE, &values).await?;
    let [d_o, d_c, d_ch, d_c4, d_cuts, _] = delta;
    if [d_o, d_c, d_ch, d_c4, d_cuts, d_mirror] != [0; 6] {
        let values = params![id, seq, d_o, d_c, d_ch, d_c4, d_cuts, d_mirror];
        tx.execute(SHIFT_RUNNING, &values).await?;
    }
    if [d_o, d_c, d_ch, d_c4, d_cuts] != [0; 5] {
        // Stable windows that counted the old size step back, or go.
        for sql in [ROLL_BACK_STABLE_WINDOWS, DROP_STABLE_WINDOWS_FROM] {
            tx.execute(sql, &params![id, seq]).await?;
        }
    }
    r.shift(delta);
    r.mirror = r.mirror.map(|m| mirror::add(m, d_mirror));
    save_running(tx, id, &r).await
}
