//! Finding a context window from stored running totals.
//!
//! Every message row carries running totals (`cum_*`) of tokens, characters and cut points
//! since the conversation was last cleared, and the conversation row carries the totals of
//! all its messages. A suffix starting at message `j` costs `total - cum(j-1)`, so the oldest
//! message a budget can reach follows from the totals alone ([`WindowBounds`]); the window is
//! read from the cut point at or before it (a tool pair is never cut), and recall-core's
//! selection does the exact walk over what was read. PostgreSQL finds that cut point with index
//! probes on `cum_*`; SQLite walks the conversation back from its newest message and stops
//! there ([`StartFinder`]), reading the window's messages and no others.

use recall_core::policy::Policy;
use recall_core::select::HistoryMessage;
use recall_core::tokens::Tokenizer;

use crate::model::Figures;

/// A running total the store keeps for every message (`cum_*` columns) and for the
/// conversation (`total_*` columns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Total {
    O200k,
    Cl100k,
    Chars4,
    Chars,
}

impl Total {
    /// The total a token budget under `t` is counted in.
    pub(crate) fn tokens(t: Tokenizer) -> Total {
        match t {
            Tokenizer::O200k => Total::O200k,
            Tokenizer::Cl100k => Total::Cl100k,
            Tokenizer::Chars4 => Total::Chars4,
        }
    }

    /// Its running-total column in `messages`.
    pub(crate) fn column(self) -> &'static str {
        match self {
            Total::O200k => "cum_o200k",
            Total::Cl100k => "cum_cl100k",
            Total::Chars4 => "cum_chars4",
            Total::Chars => "cum_chars",
        }
    }

    /// Its value in `totals`.
    pub(crate) fn of(self, totals: &Totals) -> i64 {
        match self {
            Total::O200k => totals.o200k,
            Total::Cl100k => totals.cl100k,
            Total::Chars4 => totals.chars4,
            Total::Chars => totals.chars,
        }
    }
}

/// Running totals: of a conversation (the bounds are computed from them), of a conversation up
/// to and including a message (its `cum_*` columns), or what one message adds to them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Totals {
    pub o200k: i64,
    pub cl100k: i64,
    pub chars: i64,
    pub chars4: i64,
    pub cuts: i64,
}

/// Where a window can start, from a conversation's totals: for a budget, the running-total
/// threshold below which a cut point is far enough back; for a turn limit, the cut-point
/// number to start at.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct WindowBounds {
    /// (total, threshold): the first message whose running total reaches the threshold is the
    /// newest message that does not fit; the window starts at the cut point at or before it,
    /// which is the newest cut point whose running total *before* it is under the threshold.
    pub budgets: Vec<(Total, i64)>,
    /// Start at the first message whose `cum_cuts` reaches this (the (N+1)-th newest cut point
    /// for a limit of N turns).
    pub min_cut: Option<i64>,
}

impl WindowBounds {
    /// The bounds for `policy` over a conversation with `totals`. Budgets are only used
    /// without per-message caps: caps shrink messages, so stored (uncapped) figures would
    /// stop the read too early.
    pub(crate) fn for_policy(policy: &Policy, totals: &Totals) -> WindowBounds {
        let mut b = WindowBounds::default();
        if !policy.has_caps() {
            if let Some(max) = policy.max_tokens {
                let total = Total::tokens(policy.tokenizer);
                let x = total.of(totals) - max.min(i64::MAX as u64) as i64;
                if x > 0 {
                    b.budgets.push((total, x));
                }
            }
            if let Some(max) = policy.max_chars {
                let x = totals.chars - max.min(i64::MAX as u64) as i64;
                if x > 0 {
                    b.budgets.push((Total::Chars, x));
                }
            }
        }
        if let Some(n) = policy.max_turns {
            // A cut point starts a turn, so a selection of at most n turns never keeps the
            // (n+1)-th newest cut point: its walk stops there at the latest. The window starts
            // at that cut point so that the unit breaking the limit is read as well (its
            // repairs count in the stats); with fewer cut points, at the beginning.
            let c = totals.cuts - (n.min(i64::MAX as usize) as i64);
            if c >= 1 {
                b.min_cut = Some(c);
            }
        }
        b
    }
}

/// A history message as a backward walk over a conversation sees it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WalkRow {
    pub seq: i64,
    pub cut_point: bool,
    /// The running totals up to and including this message (`cum_*`; `cuts` is `cum_cuts`).
    pub cum: Totals,
    /// What this message added to them.
    pub added: Totals,
}

impl WalkRow {
    /// The running total in `t` before this message.
    pub(crate) fn before(&self, t: Total) -> i64 {
        t.of(&self.cum) - t.of(&self.added)
    }
}

/// Why a walk stops at a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// Not the start: read the next older message.
    No,
    /// The window starts here and can go no further back: the turn limit's cut point or the
    /// stable window's start.
    Floor,
    /// A budget's start: older messages fit only if selection repairs free some room.
    Budget,
}

/// Finds a window's start walking a conversation back from its newest message, one message
/// at a time: the start is the newest message that any bound puts it at, so the first one
/// met. This is the same start as [`WindowBounds`]' index probes give (PostgreSQL), without
/// indexes on the running totals: every message it looks at is one the window holds.
#[derive(Debug, Clone, Default)]
pub(crate) struct StartFinder {
    budgets: Vec<(Total, i64)>,
    min_cut: Option<i64>,
    stable_start: Option<i64>,
}

impl StartFinder {
    pub(crate) fn new(bounds: WindowBounds, stable_start: Option<i64>) -> StartFinder {
        StartFinder {
            budgets: bounds.budgets,
            min_cut: bounds.min_cut,
            stable_start,
        }
    }

    /// Whether the window starts at `row` (a history message, older than every message
    /// shown before it).
    pub(crate) fn at(&self, row: &WalkRow) -> Stop {
        let floor = self.stable_start.is_some_and(|s| row.seq <= s)
            || (row.cut_point && self.min_cut.is_some_and(|c| row.cum.cuts <= c));
        if floor {
            return Stop::Floor;
        }
        let budget = row.cut_point
            && self
                .budgets
                .iter()
                .any(|&(total, threshold)| row.before(total) < threshold);
        if budget {
            Stop::Budget
        } else {
            Stop::No
        }
    }

    /// Replaces the budgets' thresholds, to go on past a budget's start (see
    /// [`StartFinder::extend_past`]).
    pub(crate) fn set_budgets(&mut self, budgets: Vec<(Total, i64)>) {
        self.budgets = budgets;
    }

    /// The thresholds that let a walk stopped at `start` for a budget go further back by the
    /// room a selection left: `room` lists (total, limit, what the selection kept); a
    /// threshold that is not positive is no bound at all.
    pub(crate) fn extend_past(start: &WalkRow, room: &[(Total, i64, i64)]) -> Vec<(Total, i64)> {
        room.iter()
            .map(|&(total, max, kept)| (total, threshold_past(start.before(total), max, kept)))
            .filter(|&(_, threshold)| threshold > 0)
            .collect()
    }
}

/// The messages read for a context, and how many older ones were not read.
#[derive(Debug, Clone, Default)]
pub struct Window {
    /// The text of every system message of the conversation, oldest first.
    pub system_parts: Vec<String>,
    /// Non-system messages, oldest first; `index` is the message's `seq`.
    pub messages: Vec<HistoryMessage>,
    /// Non-system messages older than the first one read (they count as dropped).
    pub older: usize,
    /// The stable window start (a `seq`) when the policy trims `stable`.
    pub stable_start: Option<i64>,
}

/// What a stable window's cost is counted in: the figures the store keeps per message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CostMeasure {
    /// Tokens under a tokenizer (a token budget is set).
    Tokens(Tokenizer),
    /// Characters (only a character budget is set).
    Chars,
}

/// A stable window's identity: what changes the window. Stored as the `policy_key` of
/// `stable_windows` (`measure:budget:low_water:v1`) and parsed back by an append, which has
/// no policy, to advance the window over new messages.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct StableKey {
    pub measure: CostMeasure,
    pub budget: u64,
    pub low_water: f64,
}

/// The version suffix of stored keys: a change to the fold or the cost measure must change it,
/// so that old rows are ignored (and never advanced) instead of being misread.
const KEY_VERSION: &str = "v1";

impl StableKey {
    /// The key of `policy`'s stable window; `None` when it has neither a token nor a character
    /// budget (no window to keep).
    pub(crate) fn of(policy: &Policy) -> Option<StableKey> {
        let (budget, tokens) = recall_core::context::stable_budget(policy)?;
        Some(StableKey {
            measure: if tokens {
                CostMeasure::Tokens(policy.tokenizer)
            } else {
                CostMeasure::Chars
            },
            budget,
            low_water: policy.low_water,
        })
    }

    /// The stored form. `f64`'s `Display` is the shortest text that parses back to the same
    /// value, so [`StableKey::parse`] restores `low_water` exactly.
    pub(crate) fn key(&self) -> String {
        let measure = match self.measure {
            CostMeasure::Tokens(t) => t.name(),
            CostMeasure::Chars => "chars",
        };
        format!("{measure}:{}:{}:{KEY_VERSION}", self.budget, self.low_water)
    }

    /// Reads a stored key back; `None` for a key this version did not write.
    pub(crate) fn parse(key: &str) -> Option<StableKey> {
        let mut parts = key.split(':');
        let measure = match parts.next()? {
            "chars" => CostMeasure::Chars,
            t => CostMeasure::Tokens(t.parse().ok()?),
        };
        let budget = parts.next()?.parse().ok()?;
        let low_water: f64 = parts.next()?.parse().ok()?;
        if parts.next()? != KEY_VERSION || parts.next().is_some() || !low_water.is_finite() {
            return None;
        }
        Some(StableKey {
            measure,
            budget,
            low_water,
        })
    }

    /// The SQL expression of a message's cost over the `messages` columns; equal to
    /// [`StableKey::cost`].
    pub(crate) fn cost_sql(&self) -> &'static str {
        match self.measure {
            CostMeasure::Tokens(Tokenizer::O200k) => "tokens_o200k",
            CostMeasure::Tokens(Tokenizer::Cl100k) => "tokens_cl100k",
            CostMeasure::Tokens(Tokenizer::Chars4) => "(chars + 3) / 4 + 4",
            CostMeasure::Chars => "chars",
        }
    }

    /// A message's cost from its figures (negative figures, which no count produces, as 0
    /// like the catch-up does).
    pub(crate) fn cost(&self, f: &Figures) -> i64 {
        match self.measure {
            CostMeasure::Tokens(t) => f.tokens(t),
            CostMeasure::Chars => f.chars,
        }
        .max(0)
    }
}

/// The threshold a budget's start moves to, to read further back by the room a selection
/// left: the running total before the current start (`before`) less that room. Not positive:
/// no bound (read from the beginning).
pub(crate) fn threshold_past(before: i64, max: i64, kept: i64) -> i64 {
    before - (max - kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use recall_core::policy::TrimMode;

    /// The probes' definition, read literally (what PostgreSQL's SQL computes): for a budget,
    /// the first message reaching the threshold, then the first cut point with its cut count
    /// (0 when that count is 0); for a turn limit, the first message reaching the cut count;
    /// the stable start; the largest of them. 0 reads everything.
    fn probed_start(rows: &[WalkRow], bounds: &WindowBounds, stable: Option<i64>) -> i64 {
        let first_seq =
            |pred: &dyn Fn(&WalkRow) -> bool| rows.iter().find(|r| pred(r)).map_or(0, |r| r.seq);
        let mut start = stable.unwrap_or(0);
        if let Some(c) = bounds.min_cut {
            start = start.max(first_seq(&|r| r.cum.cuts >= c));
        }
        for &(total, threshold) in &bounds.budgets {
            let cuts = rows
                .iter()
                .find(|r| total.of(&r.cum) >= threshold)
                .map_or(0, |r| r.cum.cuts);
            if cuts > 0 {
                start = start.max(first_seq(&|r| r.cum.cuts >= cuts));
            }
        }
        start
    }

    /// Where the walk stops, newest first; 0 when it reads everything.
    fn walked_start(rows: &[WalkRow], finder: &StartFinder) -> i64 {
        rows.iter()
            .rev()
            .find(|r| finder.at(r) != Stop::No)
            .map_or(0, |r| r.seq)
    }

    #[test]
    fn walk_stops_where_the_probes_start() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        for case in 0..3000 {
            let len = 1 + next(40) as usize;
            let mut rows = Vec::with_capacity(len);
            let mut cum = Totals::default();
            for i in 0..len {
                let cut_point = next(10) < 4;
                let added = Totals {
                    o200k: next(60) as i64,
                    cl100k: next(60) as i64,
                    chars: next(300) as i64,
                    chars4: next(80) as i64,
                    cuts: cut_point as i64,
                };
                cum = Totals {
                    o200k: cum.o200k + added.o200k,
                    cl100k: cum.cl100k + added.cl100k,
                    chars: cum.chars + added.chars,
                    chars4: cum.chars4 + added.chars4,
                    cuts: cum.cuts + added.cuts,
                };
                rows.push(WalkRow {
                    seq: 10 + i as i64,
                    cut_point,
                    cum,
                    added,
                });
            }
            let policy = Policy {
                max_tokens: (next(3) > 0).then(|| next(cum.o200k as u64 + 20)),
                max_chars: (next(3) == 0).then(|| next(cum.chars as u64 + 50)),
                max_turns: (next(3) == 0).then(|| next(12) as usize),
                tokenizer: [Tokenizer::O200k, Tokenizer::Cl100k, Tokenizer::Chars4]
                    [next(3) as usize],
                ..Policy::default()
            };
            // A stable start is always one of the history messages.
            let stable = (next(4) == 0).then(|| rows[next(len as u64) as usize].seq);
            let bounds = WindowBounds::for_policy(&policy, &cum);
            let finder = StartFinder::new(bounds.clone(), stable);
            let probed = probed_start(&rows, &bounds, stable);
            let walked = walked_start(&rows, &finder);
            // Starting at 0 and at the oldest message read the same rows.
            let norm = |s: i64| if s <= rows[0].seq { 0 } else { s };
            assert_eq!(
                norm(walked),
                norm(probed),
                "case {case}: {policy:?} stable {stable:?} over {rows:?}"
            );
        }
    }

    #[test]
    fn key_round_trips() {
        for t in Tokenizer::ALL {
            for (tokens, chars) in [
                (Some(8000), None),
                (None, Some(123_456)),
                (Some(5), Some(9)),
            ] {
                for low_water in [0.0, 0.3, 0.6, 1.0 / 3.0, 1.0] {
                    let p = Policy {
                        max_tokens: tokens,
                        max_chars: chars,
                        tokenizer: t,
                        trim: TrimMode::Stable,
                        low_water,
                        ..Policy::default()
                    };
                    let k = StableKey::of(&p).expect("a budget is set");
                    assert_eq!(StableKey::parse(&k.key()), Some(k), "{}", k.key());
                }
            }
        }
        assert_eq!(StableKey::of(&Policy::default()), None);
    }

    #[test]
    fn key_format_is_stable() {
        // Stored keys outlive the code that wrote them: the format must not drift.
        let p = Policy {
            max_tokens: Some(8000),
            trim: TrimMode::Stable,
            ..Policy::default()
        };
        let k = StableKey::of(&p).expect("budget");
        assert_eq!(k.key(), "o200k:8000:0.6:v1");
        let p = Policy {
            max_chars: Some(500),
            tokenizer: Tokenizer::Cl100k,
            low_water: 0.5,
            ..Policy::default()
        };
        assert_eq!(StableKey::of(&p).expect("budget").key(), "chars:500:0.5:v1");
    }

    #[test]
    fn foreign_keys_are_refused() {
        for k in [
            "",
            "o200k",
            "o200k:8000:0.6",
            "o200k:8000:0.6:v2",
            "o200k:8000:0.6:v1:x",
            "gpt2:8000:0.6:v1",
            "o200k:-1:0.6:v1",
            "o200k:8000:NaN:v1",
            "o200k:8000:inf:v1",
        ] {
            assert_eq!(StableKey::parse(k), None, "{k}");
        }
    }

    #[test]
    fn cost_matches_sql_measure() {
        let f = Figures {
            tokens_o200k: 11,
            tokens_cl100k: 13,
            chars: 17,
            ..Figures::default()
        };
        let key = |measure| StableKey {
            measure,
            budget: 1,
            low_water: 0.5,
        };
        assert_eq!(key(CostMeasure::Tokens(Tokenizer::O200k)).cost(&f), 11);
        assert_eq!(key(CostMeasure::Tokens(Tokenizer::Cl100k)).cost(&f), 13);
        // (17 + 3) / 4 + 4, as the SQL expression computes it.
        assert_eq!(key(CostMeasure::Tokens(Tokenizer::Chars4)).cost(&f), 9);
        assert_eq!(key(CostMeasure::Chars).cost(&f), 17);
    }
}
