//! Finding a context window from stored running totals.
//!
//! Every message row carries running totals (`cum_*`) of tokens, characters and cut points
//! since the conversation was last cleared, and the conversation row carries the totals of
//! all its messages. A suffix starting at message `j` costs `total - cum(j-1)`, so the oldest
//! message a budget can reach is found by one index probe on `cum_*`; the window is then read
//! from the cut point at or before it (a tool pair is never cut), and recall-core's selection
//! does the exact walk over what was read.

use recall_core::policy::Policy;
use recall_core::select::HistoryMessage;
use recall_core::tokens::Tokenizer;

use crate::model::Figures;

/// The column of running totals for a token budget under a tokenizer.
pub(crate) fn cum_column(t: Tokenizer) -> &'static str {
    match t {
        Tokenizer::O200k => "cum_o200k",
        Tokenizer::Cl100k => "cum_cl100k",
        Tokenizer::Chars4 => "cum_chars4",
    }
}

/// Conversation totals the bounds are computed from.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Totals {
    pub o200k: i64,
    pub cl100k: i64,
    pub chars: i64,
    pub chars4: i64,
    pub cuts: i64,
}

impl Totals {
    pub(crate) fn tokens(&self, t: Tokenizer) -> i64 {
        match t {
            Tokenizer::O200k => self.o200k,
            Tokenizer::Cl100k => self.cl100k,
            Tokenizer::Chars4 => self.chars4,
        }
    }
}

/// The probes a policy needs: for a budget, the running-total threshold whose first message is
/// the oldest one the budget could reach; for a turn limit, the cut-point number to start at.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WindowBounds {
    /// (`cum_*` column, threshold): the first message with `cum >= threshold` is the newest
    /// message that does not fit; the window starts at the cut point at or before it.
    pub budgets: Vec<(&'static str, i64)>,
    /// Start at the first message whose `cum_cuts` reaches this (the (N+1)-th newest cut point
    /// for a limit of N turns).
    pub min_cut: Option<i64>,
}

impl WindowBounds {
    /// The probes for `policy` over a conversation with `totals`. Budgets are only used
    /// without per-message caps: caps shrink messages, so stored (uncapped) figures would
    /// stop the read too early.
    pub(crate) fn for_policy(policy: &Policy, totals: &Totals) -> WindowBounds {
        let mut b = WindowBounds::default();
        if !policy.has_caps() {
            if let Some(max) = policy.max_tokens {
                let x = totals.tokens(policy.tokenizer) - max.min(i64::MAX as u64) as i64;
                if x > 0 {
                    b.budgets.push((cum_column(policy.tokenizer), x));
                }
            }
            if let Some(max) = policy.max_chars {
                let x = totals.chars - max.min(i64::MAX as u64) as i64;
                if x > 0 {
                    b.budgets.push(("cum_chars", x));
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

#[cfg(test)]
mod tests {
    use super::*;
    use recall_core::policy::TrimMode;

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
