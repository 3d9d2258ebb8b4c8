//! SQLite's answer to a context read (`window_plan`): a few plain statements on a reader, in
//! one read transaction (one WAL snapshot): the conversation with its totals and stable
//! state, then a walk back from its newest message on the primary key that stops at the
//! window's start (see `window::StartFinder`), so it reads the messages the window holds and
//! no others. When selection's repairs leave room at that start, the same walk goes on.
//!
//! Why not PostgreSQL's one statement with index probes: on SQLite a statement costs what
//! SQLite spends on it (no round trip), and the walk needs no indexes on the running totals.

use std::collections::VecDeque;

use async_trait::async_trait;
use recall_core::message::{Message, Role};
use recall_core::policy::Policy;
use recall_core::select::HistoryMessage;

use super::conn::{message_columns, text, text_or_null, Connections};
use super::forks::stable_rows;
use super::SqliteStore;
use crate::append_plan::contribution;
use crate::codec::decode_message;
use crate::conversations::conversation_row;
use crate::driver::Conv;
use crate::error::StoreError;
use crate::fork_plan::Segment;
use crate::model::Conversation;
use crate::ops::WindowOps;
use crate::stable::{fold_stable, stable_key, StableRow, StableStart};
use crate::window::{StableKey, StartFinder, Stop, Totals, WalkRow, Window, WindowBounds};
use crate::window_plan::{history_message, room_before, Snapshot, SystemParts};

/// What the context read found: the conversation, its window, and the state of a stable
/// window that had to be caught up, to be saved (with the snapshot it was computed from).
pub(super) struct ReadWindow {
    pub conv: Conversation,
    pub window: Window,
    pub save: Option<(StableKey, StableRow, Snapshot)>,
}

/// The conversation (`CONVERSATION_COLUMNS`, 0–12), its totals (13–16), the stable window's
/// state under key `?3` (17–19, NULL without one), whether it holds a system message (20),
/// and a fork's stored chain and whether its prefix holds a system message (21, 22).
const HEADER_SQL: &str = "SELECT c.id, c.tenant, c.title, c.system_prompt, c.metadata, c.policy, \
     c.created_at, c.updated_at, c.message_count, c.last_seq, c.total_o200k, c.parent_id, \
     c.fork_seq, c.total_cl100k, \
     c.total_chars, c.total_chars4, c.total_cuts, w.start_seq, w.cost, w.last_seq, \
     EXISTS (SELECT 1 FROM messages WHERE conversation_id = ?1 AND role = 'system'), \
     c.chain, c.prefix_system FROM conversations c LEFT JOIN stable_windows w \
     ON w.conversation_id = c.id AND w.policy_key = ?3 WHERE c.id = ?1 AND c.tenant = ?2";

/// The conversation's messages newest first, on its primary key: `MESSAGE_COLUMNS` (0–10),
/// then the running totals (11–15: o200k, cl100k, chars, chars4, cuts).
const WALK_SQL: &str = "SELECT seq, role, content, client_id, metadata, status, created_at, \
     tokens_o200k, tokens_cl100k, chars, flags, cum_o200k, cum_cl100k, cum_chars, cum_chars4, \
     cum_cuts FROM messages WHERE conversation_id = ?1 AND seq <= ?2 ORDER BY seq DESC";

/// What [`header`] read: the conversation, its snapshot, its stored stable state and its
/// history's segments (`None` for a fork whose row holds no chain).
type Header = (
    Conversation,
    Snapshot,
    Option<StableRow>,
    Option<Vec<Segment>>,
);

/// The conversation row, its snapshot, its stored stable state and its segments. A fork's
/// snapshot counts the system messages of its prefix too.
fn header(
    tx: &rusqlite::Connection,
    tenant: &str,
    id: &str,
    key_text: &str,
) -> Result<Header, StoreError> {
    let mut stmt = tx.prepare_cached(HEADER_SQL)?;
    let mut rows = stmt.query(rusqlite::params![id, tenant, key_text])?;
    let Some(row) = rows.next()? else {
        return Err(StoreError::ConversationNotFound(id.to_string()));
    };
    let conv = conversation_row(row)?;
    let has_system = row.get::<_, bool>(20)? || row.get::<_, bool>(22)?;
    let (snap, segs) = Snapshot::of_header(&conv, row, has_system, text_or_null(row, 21)?)?;
    let stored = match row.get::<_, Option<i64>>(17)? {
        Some(start_seq) => Some(StableRow {
            start_seq,
            cost: row.get(18)?,
            last_seq: row.get(19)?,
        }),
        None => None,
    };
    Ok((conv, snap, stored, segs))
}

/// The context read (see the module documentation). A stable window's state that is missing
/// or behind is caught up here and returned to be saved.
fn read_window(
    conns: &Connections,
    tenant: &str,
    id: &str,
    policy: &Policy,
) -> Result<ReadWindow, StoreError> {
    let reader = conns.reader()?;
    // Dropped on an early return: rolled back, which ends the read.
    let tx = reader.conn()?.unchecked_transaction()?;
    let key = stable_key(policy);
    let key_text = key.map(|k| k.key()).unwrap_or_default();
    let (conv, mut snap, stored, segs) = header(&tx, tenant, id, &key_text)?;
    // A fork reads its parent's rows up to the fork point (`fork_plan`): the walk, the system
    // messages and a stable window's catch-up go along the chain its row stores.
    let segs = match segs {
        Some(segs) => segs,
        None => {
            snap.has_system = true;
            super::forks::chain_recursive(&tx, tenant, id)?
        }
    };

    // The stable window's start: as stored when it is current (appends advance it), else
    // caught up over the messages since, to be saved after the read.
    let mut save = None;
    let stable_start = match &key {
        None => None,
        Some(key) => match StableStart::of(stored, snap.last_seq) {
            StableStart::Current(start) => Some(start),
            StableStart::CatchUp(row) => {
                let rows = stable_rows(&tx, &segs, key, row.start_seq, snap.last_seq)?;
                let next = fold_stable(&rows, key, row, snap.last_seq);
                save = Some((*key, next, snap));
                Some(next.start_seq)
            }
        },
    };
    let messages = walk(&tx, &segs, policy, &snap, stable_start)?;

    let mut system = SystemParts::default();
    if snap.has_system {
        for (seq, content) in super::forks::system_rows(&tx, &segs)? {
            let m: Message = decode_message(seq, Role::System.as_str(), &content, None, None)?;
            system.add(&m);
        }
    }
    tx.commit()?;
    Ok(ReadWindow {
        window: system.window(conv.message_count, messages, stable_start),
        conv,
        save,
    })
}

/// The history of the window, oldest first: the walk back from the newest message to the
/// start the bounds give, going on past a budget's start while repairs leave room. A fork's
/// walk goes on from its oldest row into its parent's rows up to the fork point, and so on
/// (`segs`, newest first): their running totals continue each other, so the walk is the one
/// over a conversation holding the same messages.
fn walk(
    tx: &rusqlite::Connection,
    segs: &[Segment],
    policy: &Policy,
    snap: &Snapshot,
    stable_start: Option<i64>,
) -> Result<Vec<HistoryMessage>, StoreError> {
    let mut finder = StartFinder::new(WindowBounds::for_policy(policy, &snap.totals), stable_start);
    let mut messages: VecDeque<HistoryMessage> = VecDeque::new();
    // One statement, one segment after the other: a second cursor on the same cached
    // statement would have SQLite prepare it again on every read.
    let mut stmt = tx.prepare_cached(WALK_SQL)?;
    let mut cur = 0;
    let mut rows = match segs.first() {
        Some(seg) => Some(stmt.query(rusqlite::params![seg.id, seg.upto.min(snap.last_seq)])?),
        None => None,
    };
    loop {
        // The next message older than those read; `None` past the oldest.
        let stop = loop {
            let Some(cursor) = rows.as_mut() else {
                break None;
            };
            let Some(row) = cursor.next()? else {
                // This segment is walked: on to the next older one.
                rows = None;
                cur += 1;
                if let Some(seg) = segs.get(cur) {
                    rows =
                        Some(stmt.query(rusqlite::params![seg.id, seg.upto.min(snap.last_seq)])?);
                }
                continue;
            };
            let role = text(row, 1)?;
            if role == Role::System.as_str() {
                // Read with the other system messages; never history.
                continue;
            }
            let m = message_columns(row, role)?.decode()?;
            let [o200k, cl100k, chars, chars4, cuts, _] = contribution(&m.figures, role);
            let walked = WalkRow {
                seq: m.seq,
                cut_point: m.figures.cut_point,
                cum: Totals {
                    o200k: row.get(11)?,
                    cl100k: row.get(12)?,
                    chars: row.get(13)?,
                    chars4: row.get(14)?,
                    cuts: row.get(15)?,
                },
                added: Totals {
                    o200k,
                    cl100k,
                    chars,
                    chars4,
                    cuts,
                },
            };
            messages.push_front(history_message(m, policy));
            match finder.at(&walked) {
                Stop::No => {}
                stop => break Some((stop, walked)),
            }
        };
        // Stored figures are those of whole messages: when selection, walking what was read,
        // gets back to the budget's start with every limit holding (repairs made messages
        // cheaper), older messages may fit too.
        let Some((Stop::Budget, start)) = stop else {
            break;
        };
        let Some(room) = room_before(messages.make_contiguous(), policy) else {
            break;
        };
        finder.set_budgets(StartFinder::extend_past(&start, &room));
    }
    Ok(messages.into())
}

#[async_trait]
impl WindowOps for SqliteStore {
    /// Read on the calling thread; a stable window's state that had to be caught up is saved
    /// after the read, by the writer.
    async fn read_window(
        &self,
        c: Conv<'_>,
        policy: &Policy,
    ) -> Result<(Conversation, Window), StoreError> {
        let read = read_window(&self.conns, c.tenant, c.id, policy)?;
        if let Some((key, save, snap)) = read.save {
            let (tenant, id) = (c.tenant.to_string(), c.id.to_string());
            self.writer
                .write(move |tx| super::writes::save_stable(tx, &tenant, &id, &key, &save, &snap))
                .await?;
        }
        Ok((read.conv, read.window))
    }
}
