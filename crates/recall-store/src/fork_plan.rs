//! Forks, the part both databases share (the SQL text and what is decided without I/O).
//!
//! A fork of conversation P at seq k is a conversation whose history is P's messages up to k
//! followed by its own (migration 0006: `parent_id`, `fork_seq`). Nothing of the prefix is
//! copied, so a fork costs the same whatever P's length. The read invariant:
//!
//! - A conversation's own rows all have `seq > fork_seq`; every seq up to `fork_seq` is read
//!   from the parent, recursively. Its history is therefore a *chain* of [`Segment`]s, newest
//!   first: its own rows, then the parent's rows with `seq <= fork_seq`, then the
//!   grandparent's rows up to the parent's `fork_seq`, and so on. Seqs are gapless across
//!   the chain, exactly as in a conversation that holds the same messages.
//! - The fork's running totals (`cum_*` of its rows, `total_*` and `message_count` of its
//!   row) continue from the parent's at k, so every running total read along the chain is the
//!   one a copied conversation would hold: a context read walks (SQLite) or probes
//!   (PostgreSQL) segment after segment with the same plan (`window.rs`) and gets the same
//!   window, byte for byte.
//! - Rows a fork reads never change under it: a message in a fork's prefix cannot be updated
//!   (only redacted, which shifts the totals of every conversation that reads it), a
//!   conversation with forks cannot be cleared, and it cannot be deleted without cascading to
//!   its forks.
//! - A fork is made on the nearest conversation of the chain that holds rows up to k (a fork
//!   of a fork at a seq of the grandparent is a fork of the grandparent), so chains only grow
//!   when a fork really extends one.
//! - Since rows a fork reads never change and its chain's links never change while it exists
//!   (a parent with forks is neither cleared nor deleted without them; a cleared fork
//!   detaches), a fork's row stores its chain once, at creation (migration 0008: `chain`, its
//!   ancestors' segments as JSON, see [`encode_chain`], and `prefix_system`, whether they hold
//!   a system message): reads take the chain from the row instead of a recursive query.
//!
//! A fork's row starts with P's running totals at k (the `cum_*` of P's newest row at or before
//! k) and P's count at k (`k - (last_seq - message_count)`: seqs are gapless from the first
//! present message). A fork cannot start right after a `partial` message, a reply still
//! streaming that is updated when it ends (`StoreError::PartialForkPoint`). Reads take the chain
//! from the row with the header: PostgreSQL unpacks it with `json_to_recordset` inside its one
//! statement, a conversation that is no fork has a NULL chain and one segment, and the prefix's
//! system messages are looked for only when `prefix_system` says there are some. Clearing a fork
//! (the only way its links change) resets both with its `parent_id`; a fork row without a stored
//! chain falls back to the recursive query (`CHAIN_SQL`).
//!
//! SQLite's context read walks on from the fork's oldest row into its parent's rows, one
//! statement per segment; PostgreSQL's one statement probes every segment and keeps the oldest
//! hit (`postgres::forks`). Message pages, system messages and a stable window's catch-up read
//! segment after segment too. The foreign key on `parent_id` backs the rule that a conversation
//! with forks is deleted only with them (`cascade`, its forks first).

use crate::append_plan::Running;
use crate::window::Totals;

/// One conversation's part of a history: its rows with `after < seq <= upto`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub id: String,
    /// The conversation's own `fork_seq` (0 for a conversation that is not a fork): its rows
    /// all come after it.
    pub after: i64,
    /// The last seq read from it (`i64::MAX` for the conversation itself).
    pub upto: i64,
}

/// A row of [`CHAIN_SQL`]: id, parent id, fork seq.
pub(crate) type ChainRow = (String, Option<String>, i64);

/// The segments of a history from its [`CHAIN_SQL`] rows, newest first. Empty when the
/// conversation was not found.
pub(crate) fn segments(rows: &[ChainRow]) -> Vec<Segment> {
    let mut out: Vec<Segment> = Vec::with_capacity(rows.len());
    for (i, (id, _, fork_seq)) in rows.iter().enumerate() {
        let upto = match i {
            0 => i64::MAX,
            _ => {
                // The parent of row i-1 must be row i; a chain that does not link up is cut.
                if rows[i - 1].1.as_deref() != Some(id.as_str()) {
                    break;
                }
                rows[i - 1].2
            }
        };
        out.push(Segment {
            id: id.clone(),
            after: if rows[i].1.is_some() { *fork_seq } else { 0 },
            upto,
        });
    }
    out
}

/// A segment of a stored chain (migration 0008's `chain` column, one JSON object per
/// ancestor): `depth` 1 for the parent, 2 for its parent, and so on.
#[derive(serde::Serialize, serde::Deserialize)]
struct StoredSegment {
    id: String,
    depth: i64,
    after: i64,
    upto: i64,
}

/// The ancestors' segments of a fork at `at` of the history `segs` (newest first): those of
/// the conversation it is made on ([`fork_parent`]), read up to `at`, and of its ancestors.
pub(crate) fn fork_ancestors(segs: &[Segment], at: i64) -> Vec<Segment> {
    let Some(parent) = fork_parent(segs, at) else {
        return Vec::new();
    };
    let from = segs.iter().position(|s| s.id == parent.id).unwrap_or(0);
    let mut out = segs[from..].to_vec();
    if let Some(first) = out.first_mut() {
        first.upto = at;
    }
    out
}

/// A fork's `chain` column: its ancestors' segments (newest first) as a JSON array of
/// `{"id", "depth", "after", "upto"}` objects (PostgreSQL's window read unpacks it with
/// `json_to_recordset`; migration 0008 builds the same).
pub(crate) fn encode_chain(ancestors: &[Segment]) -> Result<String, crate::error::StoreError> {
    let stored: Vec<StoredSegment> = ancestors
        .iter()
        .zip(1..)
        .map(|(s, depth)| StoredSegment {
            id: s.id.clone(),
            depth,
            after: s.after,
            upto: s.upto,
        })
        .collect();
    serde_json::to_string(&stored)
        .map_err(|e| crate::error::StoreError::Corrupt(format!("chain: {e}")))
}

/// The segments of conversation `id`'s history from its row (`parent_id`, `fork_seq` and the
/// stored `chain`), newest first; `None` for a fork whose row holds no chain (read it with
/// [`CHAIN_SQL`]).
pub(crate) fn stored_segments(
    id: &str,
    parent: Option<&str>,
    fork_seq: i64,
    chain: Option<&str>,
) -> Result<Option<Vec<Segment>>, crate::error::StoreError> {
    let own = Segment {
        id: id.to_string(),
        after: if parent.is_some() { fork_seq } else { 0 },
        upto: i64::MAX,
    };
    let chain = match (parent, chain) {
        (None, _) => return Ok(Some(vec![own])),
        (Some(_), None) => return Ok(None),
        (Some(_), Some(c)) => c,
    };
    let mut stored: Vec<StoredSegment> = serde_json::from_str(chain)
        .map_err(|e| crate::error::StoreError::Corrupt(format!("chain of '{id}': {e}")))?;
    stored.sort_by_key(|s| s.depth);
    let mut out = Vec::with_capacity(stored.len() + 1);
    out.push(own);
    out.extend(stored.into_iter().map(|s| Segment {
        id: s.id,
        after: s.after,
        upto: s.upto,
    }));
    Ok(Some(out))
}

/// Conversation `$1` of tenant `$2`'s parent id, fork seq and stored chain (migration 0008).
pub(crate) const CHAIN_ROW_SQL: &str =
    "SELECT parent_id, fork_seq, chain FROM conversations WHERE id = $1 AND tenant = $2";

/// Whether conversation `$1` holds a system message at or before seq `$2` (a fork's
/// `prefix_system` is this along its ancestors' segments).
pub(crate) const SYSTEM_IN_SEGMENT: &str = "SELECT EXISTS (SELECT 1 FROM messages \
     WHERE conversation_id = $1 AND role = 'system' AND seq <= $2)";

/// The segments that hold the history up to `at` (each bounded by it), newest first; those
/// with no row at or before `at` are left out.
pub(crate) fn truncate(segs: &[Segment], at: i64) -> Vec<Segment> {
    segs.iter()
        .filter(|s| s.after < at)
        .map(|s| Segment {
            upto: s.upto.min(at),
            ..s.clone()
        })
        .collect()
}

/// The conversation a fork at `at` of the history `segs` reads from: the newest one holding
/// rows up to `at` (at 0, or when none does, the chain's root).
pub(crate) fn fork_parent(segs: &[Segment], at: i64) -> Option<&Segment> {
    segs.iter().find(|s| s.after < at).or(segs.last())
}

/// The segment whose own row `seq` is.
pub(crate) fn owner(segs: &[Segment], seq: i64) -> Option<&Segment> {
    segs.iter().find(|s| s.after < seq && seq <= s.upto)
}

/// How many messages a history holds up to `at`, from its row's `last_seq` and
/// `message_count`: seqs are gapless from the first message present (a clear removes every
/// message and keeps counting), so the first present is `last_seq - count + 1`.
pub(crate) fn count_at(last_seq: i64, count: i64, at: i64) -> i64 {
    (at - (last_seq - count)).clamp(0, count)
}

/// A fork's running totals: those of its parent's history at `at` (`cum`, the running totals
/// of the newest message at or before it, zero when there is none) and `count` messages.
/// Turns are not kept per message, so a fork's `total_turns` counts its own turns only
/// (nothing reads it). `last_at` is the time of that newest message, which the fork's first
/// message of its own may not be earlier than.
/// `mirror` is the parent's mirror sum at `at` (`None`: unknown).
pub(crate) fn fork_running(
    at: i64,
    count: i64,
    cum: Totals,
    last_at: Option<i64>,
    mirror: Option<i64>,
) -> Running {
    Running {
        last_seq: at,
        count,
        o200k: cum.o200k,
        cl100k: cum.cl100k,
        chars: cum.chars,
        chars4: cum.chars4,
        turns: 0,
        cuts: cum.cuts,
        current_windows: 0,
        last_at,
        mirror,
    }
}

/// The last seq, message count and mirror sum of conversation `$1` of tenant `$2`.
pub(crate) const MIRROR_TOTAL: &str =
    "SELECT last_seq, message_count, total_mirror FROM conversations WHERE id = $1 AND tenant = $2";

/// The mirror sum of conversation `$1`'s newest row at or before seq `$2`.
pub(crate) const MIRROR_AT: &str = "SELECT cum_mirror FROM messages WHERE conversation_id = $1 \
     AND seq <= $2 ORDER BY seq DESC LIMIT 1";

/// The redacted messages of conversation `$1` with `$2 < seq <= $3` (index `messages_redacted`).
pub(crate) const REDACTED_IN: &str = "SELECT seq FROM messages WHERE conversation_id = $1 \
     AND seq > $2 AND seq <= $3 AND status = 'redacted' ORDER BY seq";

/// The parts of the segments `segs` after seq `at`, as `(id, after, upto)` bounds for
/// [`REDACTED_IN`].
pub(crate) fn after(segs: &[Segment], at: i64) -> Vec<(String, i64, i64)> {
    segs.iter()
        .filter(|s| s.upto > at)
        .map(|s| (s.id.clone(), s.after.max(at), s.upto))
        .collect()
}

/// The conversation `$1` of tenant `$2` and its ancestors, nearest first: id, parent id, fork
/// seq. No row when the conversation is not the tenant's.
pub(crate) const CHAIN_SQL: &str = "WITH RECURSIVE chain (id, parent_id, fork_seq, depth) AS (\
     SELECT id, parent_id, fork_seq, 0 FROM conversations WHERE id = $1 AND tenant = $2 \
     UNION ALL SELECT c.id, c.parent_id, c.fork_seq, chain.depth + 1 FROM conversations c \
     JOIN chain ON c.id = chain.parent_id) \
     SELECT id, parent_id, fork_seq FROM chain ORDER BY depth";

/// The segments of a history as a common table expression for PostgreSQL, from the
/// conversation's row as CTE `row` gives it (columns `id`, `chain`, `prefix_system`):
/// `g (id, depth, upto, sys)`, one row per segment (depth 0 the conversation itself, 1 its
/// parent, …; `upto` as in [`Segment`]; `sys` false for an ancestor's segment when the stored
/// flag says the prefix holds no system message). Nothing when `row` has no row. A statement
/// reads "this history" as the rows of `g`'s conversations with `seq <= g.upto` (a segment's
/// own rows all lie above its `after`), so a fork's queries cross into its parent's rows with
/// no other change; a conversation that is no fork (`chain` NULL) has one segment.
pub(crate) fn stored_history_segments(row: &str) -> String {
    format!(
        "g AS MATERIALIZED (SELECT {row}.id, CAST(0 AS BIGINT) AS depth, \
         CAST(9223372036854775807 AS BIGINT) AS upto, TRUE AS sys FROM {row} \
         UNION ALL SELECT j.id, j.depth, j.upto, {row}.prefix_system FROM {row} \
         CROSS JOIN LATERAL json_to_recordset(CAST({row}.chain AS JSON)) \
         AS j (id TEXT, depth BIGINT, upto BIGINT))"
    )
}

/// The running totals of the newest message of conversation `$1` at or before seq `$2`:
/// o200k, cl100k, chars, chars4, cuts.
pub(crate) const LAST_CUM: &str = "SELECT cum_o200k, cum_cl100k, cum_chars, cum_chars4, \
     cum_cuts, created_at, cum_mirror FROM messages WHERE conversation_id = $1 AND seq <= $2 ORDER BY seq DESC LIMIT 1";

/// Messages of conversation `$1` with `$2 < seq <= $3`, oldest first, at most `$4`.
pub(crate) fn page_upto_sql() -> String {
    format!(
        "SELECT {} FROM messages WHERE conversation_id = $1 AND seq > $2 AND seq <= $3 \
         ORDER BY seq LIMIT $4",
        crate::statements::MESSAGE_COLUMNS
    )
}

/// The system messages of conversation `$1` up to seq `$2`, oldest first: seq, content.
pub(crate) const SYSTEM_UPTO: &str = "SELECT seq, content FROM messages \
     WHERE conversation_id = $1 AND role = 'system' AND seq <= $2 ORDER BY seq";

/// The status of message `$2` of conversation `$1` (no row when it is not stored there).
pub(crate) const STATUS_AT: &str =
    "SELECT status FROM messages WHERE conversation_id = $1 AND seq = $2";

/// The error for a fork at `at` of conversation `id` when the message there has `status`: a
/// fork reads its prefix unchanged, and a partial message is still updated by the reply
/// that streams it.
pub(crate) fn check_fork_point(
    id: &str,
    at: i64,
    status: Option<&str>,
) -> Result<(), crate::error::StoreError> {
    if status == Some(crate::model::MessageStatus::Partial.as_str()) {
        return Err(crate::error::StoreError::PartialForkPoint {
            conversation: id.to_string(),
            seq: at,
        });
    }
    Ok(())
}

/// Applies a settings change to `conv` (checked as at creation); true when the policy
/// changed, so that its stable windows must be dropped.
pub(crate) fn apply_update(
    conv: &mut crate::model::Conversation,
    update: &crate::model::ConversationUpdate,
) -> Result<bool, crate::error::StoreError> {
    use crate::codec::check_text;
    if let Some(t) = &update.title {
        check_text("title", t.as_deref().unwrap_or(""))?;
        conv.title = t.clone();
    }
    if let Some(p) = &update.system_prompt {
        check_text("system prompt", p.as_deref().unwrap_or(""))?;
        conv.system_prompt = p.clone();
    }
    if let Some(m) = &update.metadata {
        conv.metadata = m.clone();
    }
    let mut policy_changed = false;
    if let Some(p) = &update.policy {
        policy_changed = *p != conv.policy;
        conv.policy = p.clone();
    }
    Ok(policy_changed)
}

/// How many forks conversation `$1` has.
pub(crate) const FORK_COUNT: &str = "SELECT COUNT(*) FROM conversations WHERE parent_id = $1";

/// How many forks of conversation `$1` read its message `$2` (forked at or after it).
pub(crate) const FORKS_READING: &str =
    "SELECT COUNT(*) FROM conversations WHERE parent_id = $1 AND fork_seq >= $2";

/// Every conversation forked from `$1`, directly or not, the deepest first (the order they
/// can be deleted in).
pub(crate) const DESCENDANTS: &str = "WITH RECURSIVE d (id, depth) AS (\
     SELECT id, 1 FROM conversations WHERE parent_id = $1 \
     UNION ALL SELECT c.id, d.depth + 1 FROM conversations c JOIN d ON c.parent_id = d.id) \
     SELECT id FROM d ORDER BY depth DESC, id";

/// Every conversation whose history reads message `$2` of conversation `$1`: its forks made
/// at or after it, theirs made at or after it, and so on.
pub(crate) const DESCENDANTS_READING: &str = "WITH RECURSIVE d (id) AS (\
     SELECT id FROM conversations WHERE parent_id = $1 AND fork_seq >= $2 \
     UNION ALL SELECT c.id FROM conversations c JOIN d ON c.parent_id = d.id \
     WHERE c.fork_seq >= $2) SELECT id FROM d ORDER BY id";

/// The direct forks of conversation `$1` of tenant `$2`, by fork point then id.
pub(crate) fn forks_of_sql() -> String {
    format!(
        "SELECT {} FROM conversations WHERE parent_id = $1 AND tenant = $2 \
         ORDER BY fork_seq, id",
        crate::statements::CONVERSATION_COLUMNS
    )
}

/// `INSERT` of a fork: `$1` id, `$2` tenant, `$3` title, `$4` system prompt, `$5` metadata,
/// `$6` policy, `$7` the time, `$8` parent, `$9` fork seq (also its last seq), `$10`–`$16`
/// as `Running::columns` after the last seq (count, o200k, cl100k, chars, chars4, turns,
/// cuts), `$17` the chain ([`encode_chain`]), `$18` whether it holds a system message, `$19`
/// the time of its newest message (`Running::last_at`).
pub(crate) const INSERT_FORK: &str = "INSERT INTO conversations (id, tenant, title, \
     system_prompt, metadata, policy, created_at, updated_at, parent_id, fork_seq, last_seq, \
     message_count, total_o200k, total_cl100k, total_chars, total_chars4, total_turns, \
     total_cuts, chain, prefix_system, last_at, total_mirror) VALUES ($1, $2, $3, $4, $5, $6, \
     $7, $7, $8, $9, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)";

/// Gives fork `$1` the stable windows of conversation `$2` that are current at `$3` (a fork
/// at the tip has the same history, so the same windows).
pub(crate) const COPY_STABLE_WINDOWS: &str = "INSERT INTO stable_windows (conversation_id, \
     policy_key, start_seq, cost, last_seq) SELECT $1, policy_key, start_seq, cost, last_seq \
     FROM stable_windows WHERE conversation_id = $2 AND last_seq = $3";

/// Makes conversation `$1` a conversation of its own (a cleared fork reads nothing of its
/// parent any more).
pub(crate) const DETACH: &str = "UPDATE conversations SET parent_id = NULL, fork_seq = 0, \
     chain = NULL, prefix_system = FALSE WHERE id = $1";

/// Redacts message `$2` of conversation `$1`: `$3` the content, `$4`–`$7` tokens (o200k,
/// cl100k), chars, flags of it; the metadata goes, the status records the redaction.
/// The client id of message `$2` of conversation `$1` (a redaction replaces it by its hash).
pub(crate) const CLIENT_ID_OF: &str =
    "SELECT client_id FROM messages WHERE conversation_id = $1 AND seq = $2";

/// Sets the client id of message `$2` of conversation `$1` to `$3`.
pub(crate) const SET_CLIENT_ID: &str =
    "UPDATE messages SET client_id = $3 WHERE conversation_id = $1 AND seq = $2";

pub(crate) const REDACT_MESSAGE: &str = "UPDATE messages SET content = $3, metadata = NULL, \
     status = 'redacted', tokens_o200k = $4, tokens_cl100k = $5, chars = $6, flags = $7 \
     WHERE conversation_id = $1 AND seq = $2";

/// Shifts the totals of conversation `$1` by `$2`–`$7` (o200k, cl100k, chars, chars4, cuts,
/// turns) and its mirror sum by `$8` (as `SHIFT_RUNNING`), and drops nothing else.
pub(crate) const SHIFT_TOTALS: &str = "UPDATE conversations SET total_o200k = total_o200k + $2, \
     total_cl100k = total_cl100k + $3, total_chars = total_chars + $4, \
     total_chars4 = total_chars4 + $5, total_cuts = total_cuts + $6, \
     total_turns = total_turns + $7, \
     total_mirror = (total_mirror + $8) % 2305843009213693951 WHERE id = $1";

/// Replaces the settings of conversation `$1`: `$2` title, `$3` system prompt, `$4`
/// metadata, `$5` policy, `$6` the time.
pub(crate) const UPDATE_SETTINGS: &str = "UPDATE conversations SET title = $2, \
     system_prompt = $3, metadata = $4, policy = $5, updated_at = $6 WHERE id = $1";

/// What a redacted message is stored as: [`crate::model::REDACTED_TEXT`] under its role
/// (`old_role`), measured as such.
pub(crate) fn redaction(old_role: &str) -> Result<crate::codec::Encoded, crate::error::StoreError> {
    let role = recall_core::message::Role::parse(old_role)
        .ok_or_else(|| crate::error::StoreError::Corrupt(format!("message role '{old_role}'")))?;
    let m = recall_core::message::Message::text(role, crate::model::REDACTED_TEXT);
    let figures = crate::model::Figures::of(&m);
    let mut e = crate::codec::encode(&crate::model::NewMessage::complete(m), figures);
    e.status = crate::model::MessageStatus::Redacted.as_str();
    Ok(e)
}

/// The error of a write refused because forks read the conversation.
pub(crate) fn has_forks(id: &str, forks: i64, what: &str) -> crate::error::StoreError {
    crate::error::StoreError::HasForks {
        conversation: id.to_string(),
        forks: forks.max(0) as u64,
        what: what.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, parent: Option<&str>, fork_seq: i64) -> ChainRow {
        (id.into(), parent.map(Into::into), fork_seq)
    }

    #[test]
    fn a_chain_reads_each_ancestor_up_to_the_fork_point() {
        let rows = [
            row("f", Some("p"), 7),
            row("p", Some("g"), 3),
            row("g", None, 0),
        ];
        let segs = segments(&rows);
        let seg = |id: &str, after, upto| Segment {
            id: id.into(),
            after,
            upto,
        };
        assert_eq!(
            segs,
            vec![seg("f", 7, i64::MAX), seg("p", 3, 7), seg("g", 0, 3)]
        );
        assert_eq!(owner(&segs, 8).map(|s| s.id.as_str()), Some("f"));
        assert_eq!(owner(&segs, 7).map(|s| s.id.as_str()), Some("p"));
        assert_eq!(owner(&segs, 1).map(|s| s.id.as_str()), Some("g"));
        // A fork of f at 5 reads p's rows up to 5: it is made on p; at 2 on g; at 0 on g.
        assert_eq!(fork_parent(&segs, 9).map(|s| s.id.as_str()), Some("f"));
        assert_eq!(fork_parent(&segs, 5).map(|s| s.id.as_str()), Some("p"));
        assert_eq!(fork_parent(&segs, 2).map(|s| s.id.as_str()), Some("g"));
        assert_eq!(fork_parent(&segs, 0).map(|s| s.id.as_str()), Some("g"));
        assert_eq!(truncate(&segs, 5), vec![seg("p", 3, 5), seg("g", 0, 3)]);
        // A chain whose links do not match is cut where they stop matching.
        let broken = [row("f", Some("p"), 7), row("x", None, 0)];
        assert_eq!(segments(&broken), vec![seg("f", 7, i64::MAX)]);
        assert!(segments(&[]).is_empty());
    }

    #[test]
    fn a_fork_stores_the_chain_the_recursive_query_reads() {
        let rows = [
            row("f", Some("p"), 7),
            row("p", Some("g"), 3),
            row("g", None, 0),
        ];
        let segs = segments(&rows);
        // A fork of f at `at`, made on `on`: its stored chain decodes to the segments of the
        // chain rows it will have.
        for (at, on, on_parent, on_seq) in [
            (9, "f", Some("p"), 7),
            (7, "p", Some("g"), 3),
            (5, "p", Some("g"), 3),
            (2, "g", None, 0),
            (0, "g", None, 0),
        ] {
            let ancestors = fork_ancestors(&segs, at);
            let from = rows.iter().position(|r| r.0 == on).unwrap();
            let mut chain_rows = vec![row("x", Some(on), at)];
            chain_rows.extend(rows[from..].iter().cloned());
            assert_eq!(chain_rows[1], row(on, on_parent, on_seq));
            let stored =
                stored_segments("x", Some(on), at, Some(&encode_chain(&ancestors).unwrap()))
                    .unwrap()
                    .unwrap();
            assert_eq!(stored, segments(&chain_rows), "fork at {at}");
        }
        // Objects in any order (as an aggregate may build them), decoded by depth.
        let json =
            r#"[{"id":"g","depth":2,"after":0,"upto":3},{"upto":7,"after":3,"depth":1,"id":"p"}]"#;
        assert_eq!(
            stored_segments("f", Some("p"), 7, Some(json))
                .unwrap()
                .unwrap(),
            segs
        );
        assert_eq!(
            stored_segments("g", None, 0, None).unwrap().unwrap(),
            segments(&rows[2..])
        );
        assert!(stored_segments("f", Some("p"), 7, None).unwrap().is_none());
        assert!(stored_segments("f", Some("p"), 7, Some("{")).is_err());
    }

    #[test]
    fn count_at_a_seq_of_a_gapless_history() {
        // Seqs 1..=10: 10 messages.
        assert_eq!(count_at(10, 10, 4), 4);
        assert_eq!(count_at(10, 10, 0), 0);
        // Cleared at 6, then 7..=10 appended: 4 messages.
        assert_eq!(count_at(10, 4, 8), 2);
        assert_eq!(count_at(10, 4, 5), 0);
        assert_eq!(count_at(10, 4, 10), 4);
    }
}
