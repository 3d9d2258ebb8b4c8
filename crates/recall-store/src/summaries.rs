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

/// Drops conversation `$1`'s versions covering seq `$2` or later: what a redaction does to
/// every conversation that reads the message (the trigger of migration 0009 covers only the
/// one that stores it).
pub(crate) const DROP_SUMMARIES_FROM: &str =
    "DELETE FROM summaries WHERE conversation_id = $1 AND to_seq >= $2";

/// Drops every version of conversation `$1` (a clear: a fork's versions may end inside its
/// parent's part, which its clear does not delete).
pub(crate) const DROP_SUMMARIES: &str = "DELETE FROM summaries WHERE conversation_id = $1";

/// Deletes the lease of a summariser of conversation `$1` reading seq `$2` (what a redaction
/// does to every conversation that reads the message, before it drops their versions: the
/// summariser's commit then fails).
pub(crate) const DROP_LEASE_FROM: &str =
    "DELETE FROM compaction_leases WHERE conversation_id = $1 AND upto_seq >= $2";

/// Deletes conversation `$1`'s lease (a clear).
pub(crate) const DROP_LEASE: &str = "DELETE FROM compaction_leases WHERE conversation_id = $1";

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

/// A [`StoredSummary`] from its columns, in [`COLUMNS`] order.
#[allow(clippy::too_many_arguments)]
pub(crate) fn stored(
    version: i64,
    from_seq: i64,
    to_seq: i64,
    text: String,
    o200k: i64,
    cl100k: i64,
    chars4: i64,
    backend: String,
    model: String,
    created_at: i64,
) -> StoredSummary {
    let n = |v: i64| u64::try_from(v).unwrap_or(0);
    StoredSummary {
        version,
        from_seq,
        to_seq,
        text,
        tokens: SummaryTokens {
            o200k: n(o200k),
            cl100k: n(cl100k),
            chars4: n(chars4),
        },
        backend,
        model,
        created_at,
    }
}
