//! Compaction's storage, shared by both engines (migration 0009): the summary versions a
//! conversation keeps, the lease that lets one summariser at a time work on it, and their SQL.
//! What goes into a summary is the engine's and recall-core's (`recall_core::summary`).
//!
//! The lease (`compaction_leases`, a row per conversation) is taken by one conditional upsert
//! when it is free, expired or the taker's own, and names the last message the summariser reads
//! (`upto_seq`). A version commits in one transaction (on SQLite's writer; PostgreSQL locks the
//! lease row `FOR UPDATE`) only while its writer holds the lease and no other version was
//! committed since it started; else nothing is written (`StoreError::CompactionBusy`). A
//! redaction or a deletion drops the versions that reach the message (`to_seq ≥ seq`): by the
//! triggers of migration 0009 on `messages` for the conversation that stores it, and in the
//! redaction's transaction for every fork that reads it; a clear drops all of a conversation's
//! versions. The same statements first delete the lease of a summariser reading the message
//! (`upto_seq ≥ seq`), so its commit fails; on PostgreSQL the lease row's lock orders a
//! redaction after a commit in flight, whose version it then drops.

use recall_core::tokens::Tokenizer;

use crate::codec::now_ms;
use crate::driver::{execute, params, row, rows, tx_rows, Conv, Row, Statements};

/// A committed summary version.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StoredSummary {
    /// 1, 2, …: the order the versions were committed in.
    pub version: i64,
    /// The first message it covers.
    pub from_seq: i64,
    /// The last message it covers.
    pub to_seq: i64,
    pub text: String,
    /// Tokens of its section (`recall_core::summary::render_summary`, escaped) per counter.
    pub tokens: SummaryTokens,
    /// The backend and model that wrote it.
    pub backend: String,
    pub model: String,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
}

/// A summary section's tokens under each counter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SummaryTokens {
    pub o200k: u64,
    pub cl100k: u64,
    pub chars4: u64,
}

impl SummaryTokens {
    /// The count under `t`.
    pub fn get(&self, t: Tokenizer) -> u64 {
        match t {
            Tokenizer::O200k => self.o200k,
            Tokenizer::Cl100k => self.cl100k,
            Tokenizer::Chars4 => self.chars4,
        }
    }
}

/// A summary to commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSummary {
    pub from_seq: i64,
    pub to_seq: i64,
    pub text: String,
    pub tokens: SummaryTokens,
    pub backend: String,
    pub model: String,
    /// The version it was written from (the newest when the summariser started; `None`: there
    /// was none). The commit is refused when another version was committed since.
    pub after_version: Option<i64>,
}

/// The columns a [`StoredSummary`] is read from, in order.
const COLUMNS: &str = "s.version, s.from_seq, s.to_seq, s.text, s.tokens_o200k, \
     s.tokens_cl100k, s.tokens_chars4, s.backend, s.model, s.created_at";

/// Tenant `$2`'s conversation `$1`: its newest summary ending before seq `$3`.
pub(crate) fn summary_before_sql() -> String {
    format!(
        "SELECT {COLUMNS} FROM summaries s JOIN conversations c ON c.id = s.conversation_id \
         WHERE s.conversation_id = $1 AND c.tenant = $2 AND s.to_seq < $3 \
         ORDER BY s.to_seq DESC, s.version DESC LIMIT 1"
    )
}

/// Tenant `$2`'s conversation `$1`: its summaries, newest version first, at most `$3`.
pub(crate) fn list_summaries_sql() -> String {
    format!(
        "SELECT {COLUMNS} FROM summaries s JOIN conversations c ON c.id = s.conversation_id \
         WHERE s.conversation_id = $1 AND c.tenant = $2 ORDER BY s.version DESC LIMIT $3"
    )
}

/// Takes the lease of tenant `$2`'s conversation `$1` for holder `$3` until `$4`, reading
/// messages up to `$6`, unless another holder's lease is live at `$5` (renews the holder's
/// own). One row changed: taken.
pub(crate) const TAKE_LEASE: &str = "INSERT INTO compaction_leases (conversation_id, holder, \
     expires_at, upto_seq) SELECT $1, $3, $4, $6 WHERE EXISTS (SELECT 1 FROM conversations \
     WHERE id = $1 AND tenant = $2) ON CONFLICT (conversation_id) DO UPDATE SET \
     holder = excluded.holder, expires_at = excluded.expires_at, upto_seq = excluded.upto_seq \
     WHERE compaction_leases.holder = excluded.holder OR compaction_leases.expires_at < $5";

/// Gives up holder `$2`'s lease of conversation `$1`.
pub(crate) const RELEASE_LEASE: &str =
    "DELETE FROM compaction_leases WHERE conversation_id = $1 AND holder = $2";

/// Who holds conversation `$1`'s lease.
pub(crate) const LEASE_HOLDER: &str =
    "SELECT holder FROM compaction_leases WHERE conversation_id = $1";

/// Conversation `$1`'s newest version (NULL: none).
pub(crate) const NEWEST_VERSION: &str =
    "SELECT max(version) FROM summaries WHERE conversation_id = $1";

/// Inserts a version.
pub(crate) const INSERT_SUMMARY: &str = "INSERT INTO summaries (conversation_id, version, \
     from_seq, to_seq, text, tokens_o200k, tokens_cl100k, tokens_chars4, backend, model, \
     created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";

/// What a commit checks under the conversation's lock, given the lease's holder and the newest
/// version it found: the error when the commit must not happen.
pub(crate) fn check_commit(
    conversation: &str,
    holder: &str,
    lease_holder: Option<&str>,
    newest: Option<i64>,
    new: &NewSummary,
) -> Result<i64, crate::StoreError> {
    if lease_holder != Some(holder) || newest != new.after_version {
        return Err(crate::StoreError::CompactionBusy {
            conversation: conversation.to_string(),
        });
    }
    if new.from_seq > new.to_seq || new.text.trim().is_empty() {
        return Err(crate::StoreError::Invalid(format!(
            "a summary must cover at least one message and hold text (got {}..={})",
            new.from_seq, new.to_seq
        )));
    }
    Ok(newest.unwrap_or(0) + 1)
}

/// A [`StoredSummary`] from a row of [`COLUMNS`].
pub(crate) fn summary_row(r: &dyn Row) -> Result<StoredSummary, crate::StoreError> {
    let n =
        |i: usize| -> Result<u64, crate::StoreError> { Ok(u64::try_from(r.int(i)?).unwrap_or(0)) };
    Ok(StoredSummary {
        version: r.int(0)?,
        from_seq: r.int(1)?,
        to_seq: r.int(2)?,
        text: r.text(3)?,
        tokens: SummaryTokens {
            o200k: n(4)?,
            cl100k: n(5)?,
            chars4: n(6)?,
        },
        backend: r.text(7)?,
        model: r.text(8)?,
        created_at: r.int(9)?,
    })
}

/// Tenant `c.tenant`'s conversation: its newest summary ending before `before`.
pub(crate) async fn summary_before<D: Statements>(
    db: &D,
    c: Conv<'_>,
    before: i64,
) -> Result<Option<StoredSummary>, crate::StoreError> {
    let sql = summary_before_sql();
    row(db, &sql, &params![c.id, c.tenant, before], summary_row).await
}

/// The conversation's summary versions, newest first, at most `limit`.
pub(crate) async fn summaries<D: Statements>(
    db: &D,
    c: Conv<'_>,
    limit: u32,
) -> Result<Vec<StoredSummary>, crate::StoreError> {
    rows(
        db,
        &list_summaries_sql(),
        &params![c.id, c.tenant, limit],
        summary_row,
    )
    .await
}

/// Takes or renews the lease (see [`crate::Store::take_compaction_lease`]).
pub(crate) async fn take_lease<D: Statements>(
    db: &D,
    c: Conv<'_>,
    holder: &str,
    expires_at: i64,
    upto_seq: i64,
) -> Result<bool, crate::StoreError> {
    let values = params![c.id, c.tenant, holder, expires_at, now_ms(), upto_seq];
    take_lease_row(db, c, TAKE_LEASE, &values).await
}

/// Runs a lease's conditional upsert (`sql`) for conversation `c`: true when it changed a row
/// (taken or renewed); when it did not, the lease is another holder's, unless the
/// conversation is not this tenant's ([`crate::StoreError::ConversationNotFound`]). Both
/// leases (compaction's, the vector catch-up's) are taken this way.
pub(crate) async fn take_lease_row<D: Statements>(
    db: &D,
    c: Conv<'_>,
    sql: &'static str,
    values: &[crate::driver::Param],
) -> Result<bool, crate::StoreError> {
    let taken = execute(db, sql, values).await?;
    if taken == 0 {
        crate::conversations::get(db, c).await?;
    }
    Ok(taken > 0)
}

/// Gives holder `holder`'s lease of conversation `id` up.
pub(crate) async fn release_lease<D: Statements>(
    db: &D,
    id: &str,
    holder: &str,
) -> Result<(), crate::StoreError> {
    if id.contains('\0') || holder.contains('\0') {
        return Ok(());
    }
    execute(db, RELEASE_LEASE, &params![id, holder]).await?;
    Ok(())
}

/// Commits a version in one transaction, while `holder` holds the lease and no other version
/// came since `new.after_version` (the lease row locked where the database can).
pub(crate) async fn commit<D: Statements>(
    db: &D,
    c: Conv<'_>,
    holder: &str,
    new: NewSummary,
) -> Result<StoredSummary, crate::StoreError> {
    crate::conversations::get(db, c).await?;
    let (id, holder) = (c.id.to_string(), holder.to_string());
    let lease_sql = format!("{LEASE_HOLDER}{}", db.lock_rows());
    db.write(Box::new(move |tx| {
        Box::pin(async move {
            let lease = tx_rows(tx, &lease_sql, &params![&id], |r| r.text(0)).await?;
            let newest = tx_rows(tx, NEWEST_VERSION, &params![&id], |r| r.opt_int(0)).await?;
            let newest = newest.into_iter().next().flatten();
            let version = check_commit(
                &id,
                &holder,
                lease.first().map(String::as_str),
                newest,
                &new,
            )?;
            let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
            let created_at = now_ms();
            let values = params![
                &id,
                version,
                new.from_seq,
                new.to_seq,
                &new.text,
                n(new.tokens.o200k),
                n(new.tokens.cl100k),
                n(new.tokens.chars4),
                &new.backend,
                &new.model,
                created_at,
            ];
            tx.execute(INSERT_SUMMARY, &values).await?;
            Ok(StoredSummary {
                version,
                from_seq: new.from_seq,
                to_seq: new.to_seq,
                text: new.text,
                tokens: new.tokens,
                backend: new.backend,
                model: new.model,
                created_at,
            })
        })
    }))
    .await
}
