//! The SQL both databases run, defined once. Parameters are `$N` everywhere: PostgreSQL
//! numbers them so, and SQLite reads `$N` as a parameter named `$N` (rusqlite binds them by
//! name, see `sqlite::conn::named`, or by position where every `$N` first appears in order).
//! What only one database runs (its locking read, its context-read probes, its full-text
//! search) is in its own module.

use crate::window::StableKey;

/// The columns of a `conversations` row, as `codec::ConversationColumns` reads them.
pub(crate) const CONVERSATION_COLUMNS: &str = "id, tenant, title, system_prompt, metadata, \
     policy, created_at, updated_at, message_count, last_seq, total_o200k, parent_id, fork_seq";

/// The columns of a `messages` row, as `codec::MessageColumns` reads them.
pub(crate) const MESSAGE_COLUMNS: &str = "seq, role, content, client_id, metadata, status, \
     created_at, tokens_o200k, tokens_cl100k, chars, flags";

/// [`MESSAGE_COLUMNS`] of the table named `alias` in a join.
pub(crate) fn message_columns_of(alias: &str) -> String {
    MESSAGE_COLUMNS
        .split(", ")
        .map(|c| format!("{alias}.{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Messages of tenant `$1`'s conversation `$2` (every conversation of the tenant when `$2` is
/// NULL) that are not embedded yet under model `$3`, oldest first, at most `$4`:
/// [`MESSAGE_COLUMNS`], then the conversation id.
pub(crate) fn vector_backlog_sql() -> String {
    format!(
        "SELECT {}, m.conversation_id FROM conversations c \
         LEFT JOIN vector_progress p ON p.conversation_id = c.id AND p.model = $3 \
         JOIN messages m ON m.conversation_id = c.id AND m.seq > coalesce(p.embedded_seq, 0) \
         WHERE c.tenant = $1 AND (c.id = $2 OR CAST($2 AS TEXT) IS NULL) \
         ORDER BY m.conversation_id, m.seq LIMIT $4",
        message_columns_of("m")
    )
}

/// Saves the vector of message `$2` of conversation `$1` under model `$3` (`$4` dimensions,
/// `$5` the bytes) if the message exists and the conversation belongs to tenant `$6`.
pub(crate) const SAVE_VECTOR: &str = "INSERT INTO message_vectors (conversation_id, seq, \
     model, dim, vector) SELECT $1, $2, $3, $4, $5 WHERE EXISTS (SELECT 1 FROM messages m \
     JOIN conversations c ON c.id = m.conversation_id WHERE m.conversation_id = $1 \
     AND m.seq = $2 AND c.tenant = $6) ON CONFLICT (conversation_id, model, seq) \
     DO UPDATE SET dim = excluded.dim, vector = excluded.vector";

/// Conversation `$1` (of tenant `$4`) is embedded up to seq `$3` under model `$2`; never moves
/// back (a content update moves it back by trigger, migration 0005).
pub(crate) const SAVE_VECTOR_PROGRESS: &str = "INSERT INTO vector_progress (conversation_id, \
     model, embedded_seq) SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM conversations \
     WHERE id = $1 AND tenant = $4) ON CONFLICT (conversation_id, model) \
     DO UPDATE SET embedded_seq = excluded.embedded_seq \
     WHERE vector_progress.embedded_seq < excluded.embedded_seq";

/// How far a conversation (`c`) is embedded under model `$1`: its own messages start after
/// its `fork_seq` (a fork reads the rest from its parent, whose catch-up embeds them).
const EMBEDDED_UPTO: &str = "CASE WHEN coalesce(p.embedded_seq, 0) > c.fork_seq \
     THEN p.embedded_seq ELSE c.fork_seq END";

/// Conversations of tenant `$5` (NULL: of every tenant) not embedded to their end under model
/// `$1`, after tenant `$2` and id `$3` in (tenant, id) order, at most `$4`: tenant, id.
pub(crate) fn vectors_behind_page_sql() -> String {
    format!(
        "SELECT c.tenant, c.id FROM conversations c \
         LEFT JOIN vector_progress p ON p.conversation_id = c.id AND p.model = $1 \
         WHERE c.last_seq > {EMBEDDED_UPTO} AND (c.tenant > $2 OR (c.tenant = $2 AND c.id > $3)) \
         AND (CAST($5 AS TEXT) IS NULL OR c.tenant = $5) ORDER BY c.tenant, c.id LIMIT $4"
    )
}

/// Under model `$1`, of tenant `$2` (NULL: every tenant) and conversation `$3` (NULL: every
/// one): how many conversations have messages not embedded yet, and how many messages.
pub(crate) fn vector_status_sql() -> String {
    format!(
        "SELECT count(DISTINCT c.id), count(m.seq) FROM conversations c \
         LEFT JOIN vector_progress p ON p.conversation_id = c.id AND p.model = $1 \
         JOIN messages m ON m.conversation_id = c.id AND m.seq > {EMBEDDED_UPTO} \
         WHERE (CAST($2 AS TEXT) IS NULL OR c.tenant = $2) \
         AND (CAST($3 AS TEXT) IS NULL OR c.id = $3)"
    )
}

/// Takes the vector lease of tenant `$2`'s conversation `$1` under model `$3` for holder `$4`
/// until `$5`, unless another holder's lease is live at `$6` (renews the holder's own). One
/// row changed: taken.
pub(crate) const TAKE_VECTOR_LEASE: &str = "INSERT INTO vector_leases (conversation_id, model, \
     holder, expires_at) SELECT $1, $3, $4, $5 WHERE EXISTS (SELECT 1 FROM conversations \
     WHERE id = $1 AND tenant = $2) ON CONFLICT (conversation_id, model) DO UPDATE SET \
     holder = excluded.holder, expires_at = excluded.expires_at \
     WHERE vector_leases.holder = excluded.holder OR vector_leases.expires_at < $6";

/// Gives up holder `$3`'s vector lease of conversation `$1` under model `$2`.
pub(crate) const RELEASE_VECTOR_LEASE: &str =
    "DELETE FROM vector_leases WHERE conversation_id = $1 AND model = $2 AND holder = $3";

/// Conversation `$1` of tenant `$2`: its last seq, how far it is embedded under model `$3`,
/// and the epoch of its vectors (migration 0016).
pub(crate) const VECTOR_PROGRESS: &str = "SELECT c.last_seq, coalesce(p.embedded_seq, 0), \
     coalesce(p.epoch, 0) FROM conversations c LEFT JOIN vector_progress p \
     ON p.conversation_id = c.id AND p.model = $3 WHERE c.id = $1 AND c.tenant = $2";

/// The vectors of conversation `$1` (its tenant checked by [`VECTOR_PROGRESS`]) under model
/// `$2` with `$3` dimensions, of seqs above `$4` and at most `$5`, in seq order: what a
/// store's copy of them lacks (`vector_cache.rs`).
pub(crate) const CACHE_VECTORS: &str = "SELECT seq, vector FROM message_vectors \
     WHERE conversation_id = $1 AND model = $2 AND dim = $3 AND seq > $4 AND seq <= $5 \
     ORDER BY seq";

/// How many of tenant `$2`'s conversations other than `$1` are not embedded to their end under
/// model `$3`.
pub(crate) const VECTORS_BEHIND: &str = "SELECT count(*) FROM conversations c \
     LEFT JOIN vector_progress p ON p.conversation_id = c.id AND p.model = $3 \
     WHERE c.tenant = $2 AND c.id <> $1 AND coalesce(p.embedded_seq, 0) < c.last_seq";

/// The vectors recall by meaning ranks in `tenant` scope: conversation `$1`'s below seq `$4`
/// and every one of the tenant's (`$2`) other conversations (with their id), under model `$3`
/// with `$5` dimensions.
pub(crate) const RECALL_VECTORS_TENANT: &str = "SELECT CASE WHEN v.conversation_id = $1 \
     THEN NULL ELSE v.conversation_id END, v.seq, v.vector \
     FROM message_vectors v JOIN conversations c ON c.id = v.conversation_id \
     WHERE c.tenant = $2 AND v.model = $3 AND (v.conversation_id <> $1 OR v.seq < $4) \
     AND v.dim = $5";

/// `INSERT` of a conversation: `$1` id, `$2` tenant, `$3` title, `$4` system prompt, `$5`
/// metadata, `$6` policy, `$7` the time.
pub(crate) const INSERT_CONVERSATION: &str = "INSERT INTO conversations (id, tenant, title, \
     system_prompt, metadata, policy, created_at, updated_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $7)";

/// The conversation tenant `$1` named `$2` (`conversation_keys`, migration 0015).
pub(crate) const KEYED_CONVERSATION: &str =
    "SELECT conversation_id FROM conversation_keys WHERE tenant = $1 AND conv_key = $2";

/// Names conversation `$3` of tenant `$1` with key `$2`, unless the key is taken (0 rows).
pub(crate) const INSERT_CONVERSATION_KEY: &str = "INSERT INTO conversation_keys \
     (tenant, conv_key, conversation_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING";

/// Conversation `$1` of tenant `$2`.
pub(crate) fn get_conversation_sql() -> String {
    format!("SELECT {CONVERSATION_COLUMNS} FROM conversations WHERE id = $1 AND tenant = $2")
}

/// A page of tenant `$1`'s conversations after id `$2`, at most `$3`.
pub(crate) fn list_conversations_sql() -> String {
    format!(
        "SELECT {CONVERSATION_COLUMNS} FROM conversations WHERE tenant = $1 AND id > $2 \
         ORDER BY id LIMIT $3"
    )
}

/// The running totals of conversation `$1` of tenant `$2`, the number of its stable windows
/// that are current and the time of its newest message, for a writer (PostgreSQL adds `FOR
/// UPDATE`; SQLite's writer already holds the database's write lock).
pub(crate) const RUNNING: &str = "SELECT last_seq, message_count, total_o200k, total_cl100k, \
     total_chars, total_chars4, total_turns, total_cuts, (SELECT COUNT(*) FROM stable_windows \
     WHERE conversation_id = $1 AND stable_windows.last_seq = conversations.last_seq), \
     last_at, total_mirror FROM conversations WHERE id = $1 AND tenant = $2";

/// Saves running totals: `$1` last seq, `$2` count, `$3`–`$8` the totals (o200k, cl100k,
/// chars, chars4, turns, cuts), `$9` the time, `$10` the conversation, `$11` the time of its
/// newest message, `$12` its mirror sum.
pub(crate) const SAVE_RUNNING: &str = "UPDATE conversations SET last_seq = $1, \
     message_count = $2, total_o200k = $3, total_cl100k = $4, total_chars = $5, \
     total_chars4 = $6, total_turns = $7, total_cuts = $8, updated_at = $9, last_at = $11, \
     total_mirror = $12 WHERE id = $10";

/// Rows a multi-row `INSERT` of messages writes at most: 18 parameters a row keeps a
/// statement well under SQLite's limit of 32,766. One statement per chunk rather than per row
/// (on SQLite, a statement that writes FTS5 rows ends with a flush of its pending terms: a
/// statement per row would write one tiny index segment per message).
pub(crate) const ROWS_PER_INSERT: usize = 1000;

/// Parameters of one message row in [`insert_messages_sql`], in this order: conversation,
/// seq, client id, role, content, metadata, status, created at, tokens (o200k, cl100k),
/// chars, flags, then the running totals after it (o200k, cl100k, chars, chars4, cuts, mirror).
pub(crate) const MESSAGE_ROW_PARAMS: usize = 18;

/// The `INSERT` of `rows` messages (see [`MESSAGE_ROW_PARAMS`]), parameters `$1`… in order.
pub(crate) fn insert_messages_sql(rows: usize) -> String {
    let mut sql = String::with_capacity(300 + rows * 100);
    sql.push_str(
        "INSERT INTO messages (conversation_id, seq, client_id, role, content, metadata, \
         status, created_at, tokens_o200k, tokens_cl100k, chars, flags, cum_o200k, cum_cl100k, \
         cum_chars, cum_chars4, cum_cuts, cum_mirror) VALUES ",
    );
    for r in 0..rows {
        sql.push_str(if r == 0 { "(" } else { ", (" });
        for c in 0..MESSAGE_ROW_PARAMS {
            if c > 0 {
                sql.push_str(", ");
            }
            sql.push('$');
            sql.push_str(&(r * MESSAGE_ROW_PARAMS + c + 1).to_string());
        }
        sql.push(')');
    }
    sql
}

/// Client ids a statement of [`stored_ids_sql`] looks up at most.
pub(crate) const IDS_PER_LOOKUP: usize = 1000;

/// The stored messages under `ids` client ids of conversation `$1` (`$2`…): client id, seq,
/// role, content, metadata.
pub(crate) fn stored_ids_sql(ids: usize) -> String {
    let list: Vec<String> = (0..ids).map(|i| format!("${}", i + 2)).collect();
    format!(
        "SELECT client_id, seq, role, content, metadata FROM messages \
         WHERE conversation_id = $1 AND client_id IN ({})",
        list.join(", ")
    )
}

/// The figures, role, content and status of message `$2` of conversation `$1` (an update's
/// old values).
pub(crate) const MESSAGE_FIGURES: &str = "SELECT tokens_o200k, tokens_cl100k, chars, flags, \
     role, content, status FROM messages WHERE conversation_id = $1 AND seq = $2";

/// Replaces message `$2` of conversation `$1`: `$3` role, `$4` content, `$5` metadata, `$6`
/// status, `$7`–`$10` tokens (o200k, cl100k), chars, flags.
pub(crate) const UPDATE_MESSAGE: &str = "UPDATE messages SET role = $3, content = $4, \
     metadata = $5, status = $6, tokens_o200k = $7, tokens_cl100k = $8, chars = $9, \
     flags = $10 WHERE conversation_id = $1 AND seq = $2";

/// Shifts the running totals of messages `seq >= $2` of conversation `$1` by `$3`–`$7`
/// (o200k, cl100k, chars, chars4, cuts) and the mirror sum by `$8` (in `0..2^61 - 1`, so the
/// sum of two stays within a signed 64-bit integer; an unknown sum stays unknown).
pub(crate) const SHIFT_RUNNING: &str = "UPDATE messages SET cum_o200k = cum_o200k + $3, \
     cum_cl100k = cum_cl100k + $4, cum_chars = cum_chars + $5, cum_chars4 = cum_chars4 + $6, \
     cum_cuts = cum_cuts + $7, cum_mirror = (cum_mirror + $8) % 2305843009213693951 \
     WHERE conversation_id = $1 AND seq >= $2";

pub(crate) const DELETE_MESSAGES: &str = "DELETE FROM messages WHERE conversation_id = $1";

pub(crate) const DELETE_STABLE_WINDOWS: &str =
    "DELETE FROM stable_windows WHERE conversation_id = $1";

pub(crate) const DELETE_CONVERSATION: &str =
    "DELETE FROM conversations WHERE id = $1 AND tenant = $2";

/// The stable windows of conversation `$1` current at last seq `$2`: key, start, cost.
pub(crate) const CURRENT_STABLE_WINDOWS: &str = "SELECT policy_key, start_seq, cost \
     FROM stable_windows WHERE conversation_id = $1 AND last_seq = $2";

/// A stable window's state: conversation `$1`, key `$2`, start `$3`, cost `$4`, last seq `$5`;
/// the state it replaces is kept as the window's previous one (the right-hand sides read the
/// row as it was).
pub(crate) const UPDATE_STABLE_WINDOW: &str = "UPDATE stable_windows SET prev_start = start_seq, \
     prev_cost = cost, prev_last = last_seq, start_seq = $3, cost = $4, last_seq = $5 \
     WHERE conversation_id = $1 AND policy_key = $2";

/// Message `$2` of conversation `$1` changed size: the stable windows that counted it step
/// back to their previous state when that state is from before it (an exact earlier state of
/// the same fold; the next read catches it up over the window's messages)...
pub(crate) const ROLL_BACK_STABLE_WINDOWS: &str = "UPDATE stable_windows SET \
     start_seq = prev_start, cost = prev_cost, last_seq = prev_last, prev_start = NULL, \
     prev_cost = NULL, prev_last = NULL WHERE conversation_id = $1 AND last_seq >= $2 \
     AND prev_last IS NOT NULL AND prev_last < $2";

/// ...and the others that counted it are dropped (the next read folds them again); windows
/// that have not reached it yet are unaffected.
pub(crate) const DROP_STABLE_WINDOWS_FROM: &str =
    "DELETE FROM stable_windows WHERE conversation_id = $1 AND last_seq >= $2";

/// Saves a caught-up stable window's state (parameters as [`UPDATE_STABLE_WINDOW`]) unless a
/// newer one is stored.
pub(crate) const SAVE_STABLE_WINDOW: &str = "INSERT INTO stable_windows (conversation_id, \
     policy_key, start_seq, cost, last_seq) VALUES ($1, $2, $3, $4, $5) \
     ON CONFLICT (conversation_id, policy_key) DO UPDATE SET \
     prev_start = stable_windows.start_seq, prev_cost = stable_windows.cost, \
     prev_last = stable_windows.last_seq, start_seq = excluded.start_seq, \
     cost = excluded.cost, last_seq = excluded.last_seq \
     WHERE stable_windows.last_seq < excluded.last_seq";

/// The stable state of conversation `$1` under key `$2`: start, cost, last seq.
pub(crate) const STABLE_WINDOW: &str = "SELECT start_seq, cost, last_seq FROM stable_windows \
     WHERE conversation_id = $1 AND policy_key = $2";

/// The figures a stable window's catch-up reads (see `stable::fold_stable`): `seq`, the cost
/// under the key, `flags`, for the non-system messages of conversation `$1` with
/// `$2 <= seq <= $3`.
pub(crate) fn stable_rows_sql(key: &StableKey) -> String {
    format!(
        "SELECT seq, {}, flags FROM messages WHERE conversation_id = $1 \
         AND seq >= $2 AND seq <= $3 AND role <> 'system' ORDER BY seq",
        key.cost_sql()
    )
}

/// Every system message of conversation `$1`, oldest first: seq, content.
pub(crate) const SYSTEM_MESSAGES: &str = "SELECT seq, content FROM messages \
     WHERE conversation_id = $1 AND role = 'system' ORDER BY seq";

/// `INSERT` of a task: `$1` id, `$2` tenant, `$3` priority, `$4` description, `$5` spec, `$6`
/// the time.
pub(crate) const INSERT_TASK: &str = "INSERT INTO tasks (id, tenant, priority, description, \
     spec, created_at) VALUES ($1, $2, $3, $4, $5, $6)";

/// Task `$1` of tenant `$2`: id, spec, created at.
pub(crate) const GET_TASK: &str =
    "SELECT id, spec, created_at FROM tasks WHERE id = $1 AND tenant = $2";

/// `INSERT` of an API key: `$1` id, `$2` tenant, `$3` hash, `$4` label, `$5` the time.
pub(crate) const INSERT_API_KEY: &str = "INSERT INTO api_keys (id, tenant, key_sha256, label, \
     created_at) VALUES ($1, $2, $3, $4, $5)";

/// The tenant of the live (not revoked) key whose SHA-256 is `$1`.
pub(crate) const API_KEY_TENANT: &str =
    "SELECT tenant FROM api_keys WHERE key_sha256 = $1 AND revoked_at IS NULL";

/// Keys of tenant `$1` (all when NULL), oldest first: id, tenant, label, created, revoked.
pub(crate) const LIST_API_KEYS: &str = "SELECT id, tenant, label, created_at, revoked_at \
     FROM api_keys WHERE $1 IS NULL OR tenant = $1 ORDER BY created_at, id";

/// Revokes key `$2` at time `$1` unless revoked already.
pub(crate) const REVOKE_API_KEY: &str =
    "UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL";

/// The tenants holding a conversation with id `$1` (an operator's lookup), in name order.
pub(crate) const CONVERSATION_TENANTS: &str =
    "SELECT tenant FROM conversations WHERE id = $1 ORDER BY tenant LIMIT 20";

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_numbers_every_parameter_in_order() {
        let sql = insert_messages_sql(2);
        let row = |r: usize| {
            let ps: Vec<String> = (1..=MESSAGE_ROW_PARAMS)
                .map(|c| format!("${}", r * MESSAGE_ROW_PARAMS + c))
                .collect();
            format!("({})", ps.join(", "))
        };
        assert!(
            sql.ends_with(&format!("VALUES {}, {}", row(0), row(1))),
            "{sql}"
        );
        assert!(sql.contains("cum_cuts, cum_mirror) VALUES"), "{sql}");
        assert_eq!(
            stored_ids_sql(2),
            "SELECT client_id, seq, role, content, metadata FROM messages \
             WHERE conversation_id = $1 AND client_id IN ($2, $3)"
        );
    }

    /// The shifts' SQL takes sums modulo the modulus recall-core computes them with.
    #[test]
    fn shifts_use_the_mirror_modulus() {
        let m = recall_core::gateway::mirror::MODULUS.to_string();
        assert!(SHIFT_RUNNING.contains(&format!("% {m}")));
        assert!(crate::fork_plan::SHIFT_TOTALS.contains(&format!("% {m}")));
    }
}
