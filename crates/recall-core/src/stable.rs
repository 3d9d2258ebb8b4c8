//! Stable windows (docs/FORMATS.md §4.6): the window start moves only when the history no longer
//! fits the budget, then jumps forward to a turn start so that the rest fits in
//! `low_water × budget`. Between jumps the prompt prefix stays byte-identical, so provider
//! prompt caches keep hitting.
//!
//! ```
//! use recall_core::stable::{stable_window_start, WindowItem};
//! // Ten 100-token turns (user + assistant) against a 1000-token budget.
//! let items: Vec<WindowItem> = (0..20)
//!     .map(|i| WindowItem { cost: 50, cut_point: i % 2 == 0 })
//!     .collect();
//! assert_eq!(stable_window_start(&items[..20], 1000, 0.6), 0); // exactly full: no move
//! let mut more = items.clone();
//! more.push(WindowItem { cost: 50, cut_point: true });
//! // Over budget: jump to the earliest turn start leaving at most 600 tokens.
//! assert_eq!(stable_window_start(&more, 1000, 0.6), 10);
//! ```

/// The two facts the stable window needs about one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowItem {
    /// Its cost against the budget (tokens, or characters when only a character budget is set).
    pub cost: u64,
    /// A user message with text and no tool_result: a turn start outside any tool pair.
    pub cut_point: bool,
}

/// The persistable state of a stable window over messages `0..n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StableState {
    /// Index of the first message of the window.
    pub start: usize,
    /// Total cost of the window's messages.
    pub cost: u64,
}

/// What happened to the window on an append.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The window still fits; nothing else needs to be read.
    Unchanged,
    /// The window moved to a new start.
    Moved,
}

impl StableState {
    /// Accounts for a newly appended message of `cost`. When the window goes over `budget`,
    /// `window` is called for the items from `self.start` to the new message inclusive (the
    /// only time anything beyond the state is read) and the start jumps forward.
    pub fn append(
        &mut self,
        cost: u64,
        budget: u64,
        low_water: f64,
        window: impl FnOnce(usize) -> Vec<WindowItem>,
    ) -> Step {
        self.cost += cost;
        if self.cost <= budget {
            return Step::Unchanged;
        }
        let items = window(self.start);
        let (offset, rest) = advance(&items, self.cost, budget, low_water);
        if offset == 0 {
            return Step::Unchanged;
        }
        self.start += offset;
        self.cost = rest;
        Step::Moved
    }
}

/// The low-water target for a budget.
pub fn low_water_target(budget: u64, low_water: f64) -> u64 {
    (budget as f64 * low_water).floor() as u64
}

/// Given the over-budget window `items` (total `cost`), the offset of the new start within
/// it and the cost that remains: the earliest cut point after the current start whose suffix
/// fits the low-water target, else the newest cut point (the newest turn is always kept), else
/// no move when the window holds no later turn start.
fn advance(items: &[WindowItem], cost: u64, budget: u64, low_water: f64) -> (usize, u64) {
    let target = low_water_target(budget, low_water);
    let mut remaining = cost;
    let mut last_cut: Option<(usize, u64)> = None;
    for (p, item) in items.iter().enumerate() {
        if p > 0 && item.cut_point {
            if remaining <= target {
                return (p, remaining);
            }
            last_cut = Some((p, remaining));
        }
        remaining -= item.cost;
    }
    last_cut.unwrap_or((0, cost))
}

/// The stable window start for messages `items` (the fold of [`StableState::append`] over
/// them, from start 0).
pub fn stable_window_start(items: &[WindowItem], budget: u64, low_water: f64) -> usize {
    let mut state = StableState::default();
    for (k, item) in items.iter().enumerate() {
        state.append(item.cost, budget, low_water, |start| {
            items[start..=k].to_vec()
        });
    }
    state.start
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turns(costs: &[u64]) -> Vec<WindowItem> {
        costs
            .iter()
            .map(|&c| WindowItem {
                cost: c,
                cut_point: true,
            })
            .collect()
    }

    #[test]
    fn does_not_move_until_over_budget_then_jumps_to_low_water() {
        let items = turns(&[30; 10]); // 300 total
        assert_eq!(stable_window_start(&items[..3], 100, 0.6), 0); // 90 ≤ 100
        assert_eq!(stable_window_start(&items[..4], 100, 0.6), 2); // 120 > 100 → keep ≤ 60
        assert_eq!(stable_window_start(&items[..5], 100, 0.6), 2); // 90
        assert_eq!(stable_window_start(&items[..6], 100, 0.6), 4); // 120 → 60
    }

    #[test]
    fn newest_turn_is_kept_even_over_low_water() {
        let items = turns(&[10, 10, 500]);
        assert_eq!(stable_window_start(&items, 100, 0.6), 2);
    }

    #[test]
    fn never_cuts_where_there_is_no_turn_start() {
        let mut items = turns(&[10]);
        items.extend((0..5).map(|_| WindowItem {
            cost: 50,
            cut_point: false,
        }));
        assert_eq!(stable_window_start(&items, 100, 0.6), 0);
    }

    #[test]
    fn incremental_matches_fold() {
        let items = turns(&[7, 40, 3, 90, 12, 12, 60, 5, 33, 80, 1]);
        let mut state = StableState::default();
        for k in 0..items.len() {
            state.append(items[k].cost, 100, 0.5, |s| items[s..=k].to_vec());
            assert_eq!(state.start, stable_window_start(&items[..=k], 100, 0.5));
            let sum: u64 = items[state.start..=k].iter().map(|i| i.cost).sum();
            assert_eq!(state.cost, sum);
        }
    }
}
