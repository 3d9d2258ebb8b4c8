//! A stable window's persisted state (`stable_windows`), with no I/O: how an append advances
//! it, how a read catches up one left behind, and whether a stored state is current. Each
//! database's engine reads the rows these ask for and writes the state they give.

use recall_core::policy::{Policy, TrimMode};
use recall_core::stable::{StableState, WindowItem};

use crate::model::Figures;
use crate::window::StableKey;

/// A stable window's persisted state (a `stable_windows` row): its first seq, the cost of its
/// messages, and the conversation's last seq when it was computed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct StableRow {
    pub start_seq: i64,
    pub cost: i64,
    pub last_seq: i64,
}

/// The stable window `policy` keeps, if it trims `stable` with a budget.
pub(crate) fn stable_key(policy: &Policy) -> Option<StableKey> {
    if policy.trim == TrimMode::Stable {
        StableKey::of(policy)
    } else {
        None
    }
}

/// What a context read does with the stored state of its stable window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StableStart {
    /// The state is current (appends advance it): the window starts at this seq.
    Current(i64),
    /// Missing or behind the conversation: catch it up from this state (see [`fold_stable`])
    /// over the rows of `statements::stable_rows_sql` from its start to the last seq, then
    /// save it.
    CatchUp(StableRow),
}

impl StableStart {
    /// For the stored state `stored` of a conversation whose last seq is `last_seq`.
    pub(crate) fn of(stored: Option<StableRow>, last_seq: i64) -> StableStart {
        match stored {
            Some(row) if row.last_seq >= last_seq => StableStart::Current(row.start_seq),
            stored => StableStart::CatchUp(stored.unwrap_or_default()),
        }
    }
}

/// A stable window's state advanced over the messages after `row.last_seq`, up to `last_seq`:
/// the fold of `StableState::append` over them. `rows` are the `(seq, cost, flags)` of the
/// non-system messages from `row.start_seq` to `last_seq`, oldest first (a window over budget
/// jumps forward within what it holds, so its messages are needed from its start).
pub(crate) fn fold_stable(
    rows: &[(i64, i64, i64)],
    key: &StableKey,
    row: StableRow,
    last_seq: i64,
) -> StableRow {
    let items: Vec<WindowItem> = rows
        .iter()
        .map(|&(_, c, f)| WindowItem {
            cost: c.max(0) as u64,
            cut_point: f & 2 != 0,
        })
        .collect();
    let mut st = StableState {
        start: 0,
        cost: row.cost.max(0) as u64,
    };
    for (k, &(seq, _, _)) in rows.iter().enumerate() {
        if seq <= row.last_seq {
            continue;
        }
        st.append(items[k].cost, key.budget, key.low_water, |s| {
            items[s..=k].to_vec()
        });
    }
    StableRow {
        start_seq: rows.get(st.start).map_or(row.start_seq, |r| r.0),
        cost: st.cost.min(i64::MAX as u64) as i64,
        last_seq,
    }
}

/// How an append moves a stable window that was current before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Advance {
    /// Still within budget: every step of the fold leaves the start where it is; this is the
    /// new state.
    Grown(StableRow),
    /// Over budget: catch it up (see [`fold_stable`]) from this state.
    CatchUp(StableRow),
}

/// How the append of `added` (the history messages written, oldest first) moves the window
/// `key` that was current at `before` (its start and cost as stored), up to `last_seq`.
pub(crate) fn advance(
    key: &StableKey,
    (start_seq, cost): (i64, i64),
    added: &[Figures],
    before: i64,
    last_seq: i64,
) -> Advance {
    let grown = added
        .iter()
        .fold(cost.max(0), |c, f| c.saturating_add(key.cost(f)));
    if u64::try_from(grown).is_ok_and(|g| g <= key.budget) {
        Advance::Grown(StableRow {
            start_seq,
            cost: grown,
            last_seq,
        })
    } else {
        Advance::CatchUp(StableRow {
            start_seq,
            cost,
            last_seq: before,
        })
    }
}
