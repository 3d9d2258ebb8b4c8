//! PostgreSQL's answer to a context read (`window_plan`). The window's start comes from index
//! probes on the running-total columns (`messages_cum_*` indexes): one statement in the common
//! case ([`fast_window_sql`]: the conversation, the stable state, the probes and the window),
//! else a read transaction with one statement per probe ([`PgStore::window_in_tx`]: a stable
//! window to catch up and save, or a selection whose repairs leave room for older messages).
//! Every round trip costs, so the probes run in the database; the SQLite store walks the
//! conversation backwards instead (`sqlite/window.rs`).

use std::sync::OnceLock;

use async_trait::async_trait;
use recall_core::message::Role;
use recall_core::policy::Policy;
use recall_core::select::HistoryMessage;
use recall_core::tokens::Tokenizer;
use sqlx::Row;

use super::{conversation_at, stored_at, PgStore};
use crate::codec::decode_message;
use crate::driver::Conv;
use crate::error::StoreError;
use crate::fork_plan::{stored_history_segments, Segment};
use crate::model::{Conversation, StoredMessage};
use crate::ops::WindowOps;
use crate::stable::{stable_key, StableRow, StableStart};
use crate::statements::{CONVERSATION_COLUMNS, MESSAGE_COLUMNS, STABLE_WINDOW};
use crate::window::{threshold_past, StableKey, Total, Window, WindowBounds};
use crate::window_plan::{history_message, room_before, ProbeLimits, Snapshot, SystemParts};

/// A read transaction that sees one snapshot.
const PG_READ: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY";

/// The larger of two SQL expressions.
fn sql_max(a: &str, b: &str) -> String {
    format!("GREATEST({a}, {b})")
}

/// The first message of the history (along the segments `g`) whose running total in
/// `column` reaches `x`, as an SQL expression giving its `out` column (`seq` or `cum_cuts`);
/// NULL when none does. Running totals continue each other along a chain, so it is the one
/// found in the oldest segment that holds one; within a segment one index probe tells: when
/// the first row reaching `x` lies past the segment's end, no row of it does (totals never go
/// down). A fork's own rows start after its fork point, so no lower bound is needed. The
/// segments are probed oldest first (a sorted subquery, `OFFSET 0` keeps its order for the
/// nested loop) and the `LIMIT 1` stops at the first hit: a fork whose window starts in its
/// parent's rows costs one probe, as its parent does.
fn reaching(out: &str, column: &str, x: &str) -> String {
    format!(
        "(SELECT f.{out} FROM (SELECT id, depth, upto FROM g ORDER BY depth DESC OFFSET 0) o \
         CROSS JOIN LATERAL (SELECT seq, cum_cuts FROM messages \
         WHERE conversation_id = o.id AND {column} >= {x} ORDER BY {column}, seq LIMIT 1) f \
         WHERE f.seq <= o.upto ORDER BY o.depth DESC LIMIT 1)"
    )
}

/// The cut count of the first message whose running total in `column` reaches `threshold`,
/// NULL when `threshold` is not positive or nothing reaches it: the first half of a budget's
/// start (see `budget_start`), finished by [`budget_start_sql`].
fn budget_cuts_sql(column: &str, threshold: &str) -> String {
    format!(
        "CASE WHEN {threshold} > 0 THEN {} END",
        reaching("cum_cuts", column, threshold)
    )
}

/// The oldest start a budget lets a selection reach, from its cut count `cuts` (of
/// [`budget_cuts_sql`]): the cut point with that count, 0 for none (the window starts at the
/// beginning).
fn budget_start_sql(cuts: &str) -> String {
    format!(
        "CASE WHEN {cuts} > 0 THEN COALESCE({}, 0) ELSE 0 END",
        reaching("seq", "cum_cuts", cuts)
    )
}

/// The whole context read as one statement, so that it is one round trip and, without a
/// transaction, still one snapshot (a statement reads one snapshot on SQLite and PostgreSQL):
/// the conversation row, the stable window's state, the turn and budget probes of
/// `WindowBounds` computed from the row's totals, and the messages from the start they give
/// plus every system message. A fork's probes and messages go along its chain
/// (`fork_plan::stored_history_segments`, from the chain its row stores): its own rows, then
/// its parent's up to the fork point, and so on; the prefix's system messages are looked for
/// only when the row says it holds some.
/// Parameters: `$1` id, `$2` tenant, `$3` token budget, `$4` character budget, `$5` turn
/// limit (`i64::MAX` for none: the thresholds go negative), `$6` the stable key (empty for
/// none). Columns: the conversation's (0–12), the stable state's start and last seq (13, 14),
/// the turn floor (15), the start (16), whether the row is a fork's that stores no chain (17:
/// then the read is redone in a transaction), then `MESSAGE_COLUMNS` (18–28): one row of the
/// conversation (message columns NULL), one per message (the others NULL), in no particular
/// order.
/// The CTEs are materialized so that each probe runs once, not once per reference.
fn fast_window_sql(t: Tokenizer) -> &'static str {
    // Built once per tokenizer: the text is the statement caches' key.
    static SQL: [OnceLock<String>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let slot = match t {
        Tokenizer::O200k => 0,
        Tokenizer::Cl100k => 1,
        Tokenizer::Chars4 => 2,
    };
    SQL[slot].get_or_init(|| build_fast_window_sql(t))
}

fn build_fast_window_sql(t: Tokenizer) -> String {
    let cum_tokens = Total::tokens(t).column();
    let total_tokens = cum_tokens.replacen("cum_", "total_", 1);
    let tok_cuts = budget_cuts_sql(cum_tokens, "c.total_tok - $3");
    let ch_cuts = budget_cuts_sql("cum_chars", "c.total_ch - $4");
    let turn_floor = reaching("seq", "cum_cuts", "c.total_cut - $5");
    let b_tokens = budget_start_sql("w.tok_cuts");
    let b_chars = budget_start_sql("w.ch_cuts");
    let stable = "CASE WHEN w.st_last >= w.last_seq THEN w.st_start ELSE 0 END";
    let start = sql_max(
        &sql_max("w.turn_floor", stable),
        &sql_max(&b_tokens, &b_chars),
    );
    // A segment's rows, by a parameterized probe on the primary key: LATERAL, and OFFSET 0
    // so that the planner keeps it a probe per segment rather than a join over the table.
    // The window's upper bound (`seq <= last_seq`) holds for every row; it is there for
    // PostgreSQL's planner, which estimates a lone `seq >= (subquery)` at a third of the
    // conversation and then scans the table (4 ms at 10,000 messages) instead of the primary
    // key (0.15 ms): a closed range is estimated small.
    // Branches of a UNION ALL fill the other branch's columns with NULL; no ORDER BY (a
    // sort would copy every message into a temporary b-tree): the caller orders by seq.
    let no_message = ["NULL"; 11].join(", ");
    let no_header = ["NULL"; 18].join(", ");
    let segments = stored_history_segments("c");
    format!(
        "WITH c AS MATERIALIZED (SELECT {CONVERSATION_COLUMNS}, {total_tokens} AS total_tok, \
         total_chars AS total_ch, total_cuts AS total_cut, chain, prefix_system \
         FROM conversations WHERE id = $1 AND tenant = $2), \
         {segments}, \
         w AS MATERIALIZED (SELECT c.*, \
         (SELECT start_seq FROM stable_windows WHERE conversation_id = $1 AND policy_key = $6) AS st_start, \
         (SELECT last_seq FROM stable_windows WHERE conversation_id = $1 AND policy_key = $6) AS st_last, \
         CASE WHEN c.total_cut - $5 >= 1 THEN COALESCE({turn_floor}, 0) ELSE 0 END AS turn_floor, \
         {tok_cuts} AS tok_cuts, {ch_cuts} AS ch_cuts FROM c), \
         s AS MATERIALIZED (SELECT w.*, {start} AS start FROM w) \
         SELECT s.id, s.tenant, s.title, s.system_prompt, s.metadata, s.policy, s.created_at, \
         s.updated_at, s.message_count, s.last_seq, s.total_o200k, s.parent_id, s.fork_seq, \
         s.st_start, s.st_last, \
         s.turn_floor, s.start, s.parent_id IS NOT NULL AND s.chain IS NULL, {no_message} FROM s \
         UNION ALL SELECT {no_header}, m.* FROM g CROSS JOIN LATERAL (SELECT {MESSAGE_COLUMNS} \
         FROM messages WHERE conversation_id = g.id AND role = 'system' AND seq <= g.upto \
         OFFSET 0) m WHERE g.sys AND EXISTS (SELECT 1 FROM s) \
         UNION ALL SELECT {no_header}, m.* FROM g CROSS JOIN LATERAL (SELECT {MESSAGE_COLUMNS} \
         FROM messages WHERE conversation_id = g.id AND role <> 'system' \
         AND seq >= (SELECT start FROM s) AND seq <= LEAST(g.upto, (SELECT last_seq FROM s)) \
         OFFSET 0) m"
    )
}

/// What [`fast_window_sql`] returned, decoded.
struct FastRead {
    conv: Conversation,
    /// The stable window's start and last seq, when one is stored.
    st_start: Option<i64>,
    st_last: Option<i64>,
    turn_floor: i64,
    start: i64,
    /// The messages read, in no particular order.
    stored: Vec<StoredMessage>,
}

/// The window of a one-statement read, or `None` when that read cannot finish the job: a
/// stable window whose state is missing or behind (it must be caught up and saved), or a
/// selection whose repairs leave room for older messages.
fn finish_fast_window(
    read: FastRead,
    policy: &Policy,
    p: &ProbeLimits,
) -> Option<(Conversation, Window)> {
    let FastRead {
        conv,
        st_start,
        st_last,
        turn_floor,
        start,
        mut stored,
    } = read;
    let stable_start = if p.stable {
        let stored = st_start
            .zip(st_last)
            .map(|(start_seq, last_seq)| StableRow {
                start_seq,
                cost: 0,
                last_seq,
            });
        match StableStart::of(stored, conv.last_seq) {
            StableStart::Current(s) => Some(s),
            StableStart::CatchUp(_) => return None,
        }
    } else {
        None
    };
    let floor = turn_floor.max(stable_start.unwrap_or(0));
    stored.sort_unstable_by_key(|m| m.seq);
    let mut system = SystemParts::default();
    let mut messages = Vec::with_capacity(stored.len());
    for m in stored {
        if m.message.role == Role::System {
            system.add(&m.message);
        } else {
            messages.push(history_message(m, policy));
        }
    }
    if start > floor && room_before(&messages, policy).is_some() {
        return None;
    }
    let window = system.window(conv.message_count, messages, stable_start);
    Some((conv, window))
}

impl PgStore {
    /// The conversation row as the read transaction sees it, and its history's segments
    /// (`None` for a fork whose row holds no chain). A fork's snapshot counts the system
    /// messages of its prefix too.
    async fn snapshot(
        conn: &mut sqlx::PgConnection,
        tenant: &str,
        id: &str,
    ) -> Result<(Conversation, Snapshot, Option<Vec<Segment>>), StoreError> {
        let sql = format!(
            "SELECT {CONVERSATION_COLUMNS}, total_cl100k, total_chars, total_chars4, total_cuts, \
             CAST(CASE WHEN prefix_system OR EXISTS (SELECT 1 FROM messages \
             WHERE conversation_id = $1 AND role = 'system') THEN 1 ELSE 0 END AS BIGINT), \
             chain FROM conversations WHERE id = $1 AND tenant = $2"
        );
        let row = sqlx::query(&sql)
            .bind(id)
            .bind(tenant)
            .fetch_optional(&mut *conn)
            .await?
            .ok_or_else(|| StoreError::ConversationNotFound(id.to_string()))?;
        let conv = conversation_at(&row)?;
        let has_system = row.try_get::<i64, _>(17)? != 0;
        let chain: Option<String> = row.try_get(18)?;
        let (snap, segs) = Snapshot::of_header(&conv, &row, has_system, chain.as_deref())?;
        Ok((conv, snap, segs))
    }

    /// The seq of the cut point numbered `cut` (the newest cut point at or before a
    /// message whose `cum_cuts` is `cut`); 0 when `cut` is 0.
    pub(super) async fn cut_start(
        conn: &mut sqlx::PgConnection,
        id: &str,
        cut: i64,
    ) -> Result<i64, StoreError> {
        if cut <= 0 {
            return Ok(0);
        }
        let seq: Option<i64> = sqlx::query_scalar(
            "SELECT seq FROM messages WHERE conversation_id = $1 AND cum_cuts >= $2 \
             ORDER BY cum_cuts, seq LIMIT 1",
        )
        .bind(id)
        .bind(cut)
        .fetch_optional(&mut *conn)
        .await?;
        Ok(seq.unwrap_or(0))
    }

    /// The oldest start a budget lets a selection reach when stored figures are what
    /// selection counts: the cut point at or before the first message whose running
    /// total in `column` reaches `threshold` (see `WindowBounds`); 0 for everything.
    pub(super) async fn budget_start(
        conn: &mut sqlx::PgConnection,
        id: &str,
        column: &str,
        threshold: i64,
    ) -> Result<i64, StoreError> {
        if threshold <= 0 {
            return Ok(0);
        }
        // One statement for both probes (each is a round trip): the cut count of the
        // first message reaching the threshold, then the cut point with that count
        // (none when the count is 0: the window starts at the beginning).
        let sql = format!(
            "SELECT seq FROM messages WHERE conversation_id = $1 AND cum_cuts >= \
             (SELECT cum_cuts FROM messages WHERE conversation_id = $1 AND {column} >= $2 \
             ORDER BY {column}, seq LIMIT 1) AND (SELECT cum_cuts FROM messages \
             WHERE conversation_id = $1 AND {column} >= $2 ORDER BY {column}, seq LIMIT 1) > 0 \
             ORDER BY cum_cuts, seq LIMIT 1"
        );
        let seq: Option<i64> = sqlx::query_scalar(&sql)
            .bind(id)
            .bind(threshold)
            .fetch_optional(&mut *conn)
            .await?;
        Ok(seq.unwrap_or(0))
    }

    /// The running total in `column` just before `seq` (0 when nothing is older).
    pub(super) async fn total_before(
        conn: &mut sqlx::PgConnection,
        id: &str,
        column: &str,
        seq: i64,
    ) -> Result<i64, StoreError> {
        let sql = format!(
            "SELECT {column} FROM messages WHERE conversation_id = $1 AND seq < $2 \
             ORDER BY seq DESC LIMIT 1"
        );
        let v: Option<i64> = sqlx::query_scalar(&sql)
            .bind(id)
            .bind(seq)
            .fetch_optional(&mut *conn)
            .await?;
        Ok(v.unwrap_or(0))
    }

    /// Non-system messages with `from <= seq < before`, oldest first, measured under `t`.
    pub(super) async fn history(
        conn: &mut sqlx::PgConnection,
        id: &str,
        from: i64,
        before: i64,
        policy: &Policy,
    ) -> Result<Vec<HistoryMessage>, StoreError> {
        let sql = format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages WHERE conversation_id = $1 AND seq >= $2 \
             AND seq < $3 AND role <> 'system' ORDER BY seq"
        );
        let rows = sqlx::query(&sql)
            .bind(id)
            .bind(from)
            .bind(before)
            .fetch_all(&mut *conn)
            .await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            out.push(history_message(stored_at(row, 0)?, policy));
        }
        Ok(out)
    }

    /// The stable window's first seq under `key`, advanced over the history appended
    /// since its state was saved, and the state to save when the stored one is missing
    /// or behind `last_seq` (the conversation's, as the read saw it). A current state
    /// (appends advance it) is returned without reading any message.
    async fn stable_start(
        conn: &mut sqlx::PgConnection,
        segs: &[Segment],
        key: &StableKey,
        last_seq: i64,
    ) -> Result<(i64, Option<StableRow>), StoreError> {
        let id = segs.first().map_or("", |s| s.id.as_str());
        let state: Option<(i64, i64, i64)> = sqlx::query_as(STABLE_WINDOW)
            .bind(id)
            .bind(key.key())
            .fetch_optional(&mut *conn)
            .await?;
        let stored = state.map(|(start_seq, cost, last_seq)| StableRow {
            start_seq,
            cost,
            last_seq,
        });
        match StableStart::of(stored, last_seq) {
            StableStart::Current(start) => Ok((start, None)),
            StableStart::CatchUp(from) => {
                let next = Self::stable_catch_up(conn, segs, key, from, last_seq).await?;
                Ok((next.start_seq, Some(next)))
            }
        }
    }

    /// The one-statement context read (see [`fast_window_sql`]); its result is interpreted
    /// by [`finish_fast_window`].
    async fn window_fast_sqlx(
        &self,
        tenant: &str,
        id: &str,
        policy: &Policy,
    ) -> Result<Option<(Conversation, Window)>, StoreError> {
        let key = stable_key(policy);
        let p = ProbeLimits::of(policy, key.as_ref());
        let rows = sqlx::query(fast_window_sql(policy.tokenizer))
            .bind(id)
            .bind(tenant)
            .bind(p.max_tokens)
            .bind(p.max_chars)
            .bind(p.max_turns)
            .bind(&p.key)
            .fetch_all(&self.pool)
            .await?;
        // The conversation's row: its id is never NULL. Without it, no other row
        // either (every branch requires it).
        let mut header = None;
        for row in &rows {
            if row.try_get::<Option<String>, _>(0)?.is_some() {
                header = Some(row);
                break;
            }
        }
        let Some(first) = header else {
            return Err(StoreError::ConversationNotFound(id.to_string()));
        };
        if first.try_get::<bool, _>(17)? {
            // A fork whose chain is not stored: its segments were not read.
            return Ok(None);
        }
        let mut stored = Vec::with_capacity(rows.len());
        for row in &rows {
            // The conversation's row has no message.
            if row.try_get::<Option<i64>, _>(18)?.is_some() {
                stored.push(stored_at(row, 18)?);
            }
        }
        let read = FastRead {
            conv: conversation_at(first)?,
            st_start: first.try_get(13)?,
            st_last: first.try_get(14)?,
            turn_floor: first.try_get(15)?,
            start: first.try_get(16)?,
            stored,
        };
        Ok(finish_fast_window(read, policy, &p))
    }

    /// The context read in one read transaction, with every probe a statement of its
    /// own: the path taken when the one-statement read finds a stable window to catch
    /// up or a repaired selection that needs older messages.
    async fn window_in_tx(
        &self,
        tenant: &str,
        id: &str,
        policy: &Policy,
    ) -> Result<(Conversation, Window), StoreError> {
        // One snapshot: totals, system messages and history agree even while other
        // connections append.
        let mut tx = self.pool.begin_with(PG_READ).await?;
        let conn: &mut sqlx::PgConnection = &mut tx;
        let (conv, mut snap, segs) = Self::snapshot(conn, tenant, id).await?;
        // A fork's probes and reads go along its chain (`forks.rs`, `fork_plan`), as its row
        // stores it.
        let segs = match segs {
            Some(segs) => segs,
            None => {
                snap.has_system = true;
                Self::chain_recursive(conn, tenant, id).await?
            }
        };
        let bounds = WindowBounds::for_policy(policy, &snap.totals);
        // Starts selection never walks past: the turn limit's (one turn further back,
        // so the unit that breaks the limit is read too) and the stable window's.
        let mut floor = match bounds.min_cut {
            Some(c) => Self::cut_start_in(conn, &segs, c).await?,
            None => 0,
        };
        let stable_key = stable_key(policy);
        let (stable_start, save) = match &stable_key {
            Some(key) => {
                let (s, save) = Self::stable_start(conn, &segs, key, snap.last_seq).await?;
                (Some(s), save)
            }
            None => (None, None),
        };
        if let Some(s) = stable_start {
            floor = floor.max(s);
        }
        let mut start = floor;
        for (total, threshold) in &bounds.budgets {
            start =
                start.max(Self::budget_start_in(conn, &segs, total.column(), *threshold).await?);
        }

        let system_rows: Vec<(i64, String)> = if !snap.has_system {
            Vec::new()
        } else {
            Self::system_in(conn, &segs).await?
        };
        let mut system = SystemParts::default();
        for (seq, content) in system_rows {
            system.add(&decode_message(
                seq,
                Role::System.as_str(),
                &content,
                None,
                None,
            )?);
        }

        let mut messages = Self::history_in(conn, &segs, start, i64::MAX, policy).await?;
        // Budgets cut by stored figures, which are those of whole messages. Selection
        // drops unmatched tool blocks (a tool call never answered), and a repaired
        // message costs less than its figures: when the walk gets back to the start
        // of what was read with every limit holding, older messages may fit too. Read
        // further back, as far as the remaining room reaches, until the walk stops
        // inside what was read.
        while start > floor {
            let Some(room) = room_before(&messages, policy) else {
                break;
            };
            let mut next = floor;
            for (total, max, kept) in room {
                let column = total.column();
                let before = Self::total_before_in(conn, &segs, column, start).await?;
                let threshold = threshold_past(before, max, kept);
                next = next.max(Self::budget_start_in(conn, &segs, column, threshold).await?);
            }
            let mut older = Self::history_in(conn, &segs, next, start, policy).await?;
            older.append(&mut messages);
            messages = older;
            start = next;
        }
        tx.commit().await?;

        if let (Some(key), Some(save)) = (&stable_key, &save) {
            self.save_stable(tenant, id, key, save, &snap).await?;
        }
        let window = system.window(snap.count, messages, stable_start);
        Ok((conv, window))
    }
}

#[async_trait]
impl WindowOps for PgStore {
    /// The conversation and its window: one statement when it can, else the transaction.
    async fn read_window(
        &self,
        c: Conv<'_>,
        policy: &Policy,
    ) -> Result<(Conversation, Window), StoreError> {
        let (tenant, id) = (c.tenant, c.id);
        if let Some(found) = self.window_fast_sqlx(tenant, id, policy).await? {
            return Ok(found);
        }
        self.window_in_tx(tenant, id, policy).await
    }
}
