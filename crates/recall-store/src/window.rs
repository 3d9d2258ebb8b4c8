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

/// The key a stable window is stored under: what changes the window.
pub(crate) fn stable_key(policy: &Policy) -> Option<(String, u64, bool)> {
    let (budget, tokens) = recall_core::context::stable_budget(policy)?;
    let key = format!(
        "{}:{}:{}:{}",
        if tokens {
            policy.tokenizer.name()
        } else {
            "chars"
        },
        budget,
        policy.low_water,
        "v1"
    );
    Some((key, budget, tokens))
}
