//! The pure plan of a context read, written once: what to ask the database (the stable key,
//! the turn and budget bounds from the conversation's totals, the limits a one-statement probe
//! takes) and how to finish a window from the answers (when repairs leave room for older
//! messages, how far further back to read; gathering system messages; counting what was not
//! read). SQLite answers by walking the conversation backwards (`sqlite::window`), PostgreSQL
//! with index probes (`postgres::window`); neither decides anything this module decides.

use recall_core::message::{Message, Role};
use recall_core::policy::Policy;
use recall_core::select::{select, HistoryMessage, Stats};

use crate::append_plan::Running;
use crate::driver::Row;
use crate::error::StoreError;
use crate::fork_plan::{stored_segments, Segment};
use crate::model::{Conversation, StoredMessage};
use crate::window::{StableKey, Total, Totals, Window};

/// The conversation row as a context read saw it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Snapshot {
    pub totals: Totals,
    pub count: i64,
    pub last_seq: i64,
    /// Whether any system message is stored (most conversations have none: their read is
    /// skipped).
    pub has_system: bool,
}

impl Snapshot {
    /// The snapshot and segments of a context read's header row: the conversation `conv`
    /// read from its columns 0–12, its other totals at 13–16 (cl100k, chars, chars4, cuts),
    /// whether its history holds a system message, and the chain a fork's row stores
    /// (segments `None`: a fork whose row holds none; the caller walks it).
    pub(crate) fn of_header(
        conv: &Conversation,
        r: &dyn Row,
        has_system: bool,
        chain: Option<&str>,
    ) -> Result<(Snapshot, Option<Vec<Segment>>), StoreError> {
        let snap = Snapshot {
            totals: Totals {
                o200k: conv.total_tokens,
                cl100k: r.int(13)?,
                chars: r.int(14)?,
                chars4: r.int(15)?,
                cuts: r.int(16)?,
            },
            count: conv.message_count,
            last_seq: conv.last_seq,
            has_system,
        };
        let fork = conv.forked_from.as_ref();
        let segs = stored_segments(
            &conv.id,
            fork.map(|f| f.conversation_id.as_str()),
            fork.map_or(0, |f| f.seq),
            chain,
        )?;
        Ok((snap, segs))
    }

    /// Whether the conversation's totals, as a writer locked them, are still those this read
    /// saw: only then may a stable state computed by the read be saved (an update or a clear
    /// in between would make it stale).
    pub(crate) fn unchanged(&self, r: &Running) -> bool {
        let t = &self.totals;
        r.last_seq == self.last_seq
            && r.count == self.count
            && (r.o200k, r.cl100k, r.chars, r.chars4, r.cuts)
                == (t.o200k, t.cl100k, t.chars, t.chars4, t.cuts)
    }
}

/// A policy's limits as a one-statement probe takes them: `i64::MAX` for none (the
/// thresholds it computes then go negative: no probe). Budgets are only probed without
/// per-message caps (see `WindowBounds`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProbeLimits {
    pub max_tokens: i64,
    pub max_chars: i64,
    pub max_turns: i64,
    /// The stable window's key; empty (no stored key is) without one.
    pub key: String,
    pub stable: bool,
}

impl ProbeLimits {
    pub(crate) fn of(policy: &Policy, stable_key: Option<&StableKey>) -> ProbeLimits {
        let unbounded = i64::MAX;
        let limit = |v: Option<u64>| v.map_or(unbounded, |m| m.min(i64::MAX as u64) as i64);
        let (max_tokens, max_chars) = if policy.has_caps() {
            (unbounded, unbounded)
        } else {
            (limit(policy.max_tokens), limit(policy.max_chars))
        };
        ProbeLimits {
            max_tokens,
            max_chars,
            max_turns: policy
                .max_turns
                .map_or(unbounded, |n| n.min(i64::MAX as usize) as i64),
            stable: stable_key.is_some(),
            key: stable_key.map(StableKey::key).unwrap_or_default(),
        }
    }
}

/// When `policy`'s selection over `messages` (which start at a cut point) walked back to the
/// first of them with every limit holding, older messages may fit as well: the room each
/// budget has left, as (running total, limit, total kept by the selection). `None` when the
/// read can stop where it started.
pub(crate) fn room_before(
    messages: &[HistoryMessage],
    policy: &Policy,
) -> Option<Vec<(Total, i64, i64)>> {
    // Only tool blocks are ever repaired: without them, stored figures are exact and the
    // budget probe already stops the walk inside the window.
    let repairable = messages
        .iter()
        .any(|h| h.message.has_tool_use() || h.message.has_tool_result());
    if !repairable || messages.is_empty() {
        return None;
    }
    let s = select(messages, policy, &policy.tokenizer, 0);
    let reached = s.stats.dropped == 0 && !s.stats.latest_exceeds;
    reached.then(|| budgets(policy, &s.stats))
}

/// The budgets of a policy as (running total, limit, total kept by a selection).
fn budgets(policy: &Policy, stats: &Stats) -> Vec<(Total, i64, i64)> {
    let mut b = Vec::new();
    if let Some(max) = policy.max_tokens {
        b.push((
            Total::tokens(policy.tokenizer),
            max.min(i64::MAX as u64) as i64,
            stats.tokens as i64,
        ));
    }
    if let Some(max) = policy.max_chars {
        b.push((
            Total::Chars,
            max.min(i64::MAX as u64) as i64,
            stats.chars as i64,
        ));
    }
    b
}

/// A history message of a window, measured under the policy's tokenizer from its stored
/// figures.
pub(crate) fn history_message(m: StoredMessage, policy: &Policy) -> HistoryMessage {
    HistoryMessage {
        index: m.seq.max(0) as usize,
        measure: m.figures.measure(policy.tokenizer),
        message: m.message,
    }
}

/// The system messages of a window, gathered as recall-core gathers them.
#[derive(Debug, Default)]
pub(crate) struct SystemParts {
    parts: Vec<String>,
    count: usize,
}

impl SystemParts {
    /// Adds a system message, oldest first (blank ones count but add no part).
    pub(crate) fn add(&mut self, m: &Message) {
        debug_assert_eq!(m.role, Role::System);
        self.count += 1;
        let text = recall_core::context::system_text(m);
        if !text.trim().is_empty() {
            self.parts.push(text);
        }
    }

    /// The window of a conversation holding `message_count` messages (system ones included)
    /// from the history `messages` read (oldest first) and these system parts.
    pub(crate) fn window(
        self,
        message_count: i64,
        messages: Vec<HistoryMessage>,
        stable_start: Option<i64>,
    ) -> Window {
        let history_count = (message_count.max(0) as usize).saturating_sub(self.count);
        let older = history_count.saturating_sub(messages.len());
        Window {
            system_parts: self.parts,
            messages,
            older,
            stable_start,
        }
    }
}
