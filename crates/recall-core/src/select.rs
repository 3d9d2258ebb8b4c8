//! Context selection (docs/FORMATS.md §4): per-message caps, tool pairs kept whole, a walk back from
//! the newest message while every limit holds, history starting on a user turn.
//!
//! The walk reads only the messages it keeps plus one: with pre-computed [`Measure`]s the
//! cost does not grow with the length of the conversation.
//!
//! ```
//! use recall_core::message::{Message, Role};
//! use recall_core::policy::Policy;
//! use recall_core::select::{select, HistoryMessage};
//! use recall_core::tokens::Tokenizer;
//!
//! let history: Vec<HistoryMessage> = ["one", "two", "three"]
//!     .iter()
//!     .enumerate()
//!     .map(|(i, t)| HistoryMessage::new(i, Message::text(Role::User, *t), &Tokenizer::Chars4))
//!     .collect();
//! let policy = Policy { max_turns: Some(2), ..Policy::default() };
//! let s = select(&history, &policy, &Tokenizer::Chars4, 0);
//! assert_eq!(s.kept.len(), 2);
//! assert_eq!(s.stats.notice.as_deref(), Some("Trimmed old messages to fit context window"));
//! ```

use std::collections::HashSet;

use crate::extract::{measure, own_text_chars, Measure};
use crate::message::{Block, Content, Message, Role, ToolResultContent};
use crate::parse::InputMessage;
use crate::policy::Policy;
use crate::tokens::TokenCounter;

/// The notice reported whenever a limit left messages out.
pub const TRIM_NOTICE: &str = "Trimmed old messages to fit context window";

/// Warning given when the newest user message is kept although it alone breaks a limit.
pub const LATEST_EXCEEDS: &str = "latest message alone exceeds the budget";

/// One history message (system messages excluded) with its input index and its measure,
/// computed once (a store keeps it with the message).
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryMessage {
    pub index: usize,
    pub message: Message,
    pub measure: Measure,
}

impl HistoryMessage {
    /// Measures `message` with `counter`.
    pub fn new(index: usize, message: Message, counter: &dyn TokenCounter) -> Self {
        let measure = measure(&message, counter);
        HistoryMessage {
            index,
            message,
            measure,
        }
    }
}

/// A message selection kept, after caps and tool-pair repair.
#[derive(Debug, Clone, PartialEq)]
pub struct Kept {
    pub index: usize,
    pub message: Message,
    /// A per-message cap shortened it.
    pub truncated: bool,
    pub measure: Measure,
}

/// What a selection reports (docs/FORMATS.md §4.5). Field order is the JSON order.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct Stats {
    pub included: usize,
    pub dropped: usize,
    pub skipped: usize,
    pub trimmed: bool,
    pub notice: Option<String>,
    pub turns: usize,
    pub tokens: u64,
    pub chars: u64,
    pub warnings: Vec<String>,
    /// Recall's report, when the policy recalls (`recall_tokens > 0`): what was recalled and
    /// whether the index was complete.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recalled: Option<crate::recall::RecallStats>,
    /// The summary the context carries, when the policy summarises and one is committed: the
    /// range it stands for and its tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<crate::summary::SummaryStats>,
    /// The newest user message alone exceeds the budget and was kept anyway: the typed form of
    /// the [`LATEST_EXCEEDS`] warning, for callers that act on it (not serialised).
    #[serde(skip)]
    pub latest_exceeds: bool,
}

/// The kept history, oldest first, and the stats.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection {
    pub kept: Vec<Kept>,
    pub stats: Stats,
}

/// Caps one message's text with the policy's per-role and tool-result caps. Returns `None`
/// when nothing was cut.
pub fn cap_message(m: &Message, policy: &Policy) -> Option<Message> {
    let own_cap = match m.role {
        Role::User => policy
            .user_max_chars
            .map(|n| (n, "... [truncated]".to_string())),
        Role::Assistant => policy
            .assistant_max_chars
            .map(|n| (n, format!("... [truncated at {n} chars]"))),
        Role::System => None,
    };
    let tool_cap = policy
        .tool_result_max_chars
        .map(|n| (n, "... [truncated]".to_string()));
    if own_cap.is_none() && tool_cap.is_none() {
        return None;
    }
    let mut changed = false;
    let content = match &m.content {
        Content::Text(s) => {
            let s = if policy.strip_before_cap {
                s.trim()
            } else {
                s.as_str()
            };
            match &own_cap {
                Some((n, marker)) => match cap_str(s, *n, marker) {
                    Some(c) => {
                        changed = true;
                        Content::Text(c)
                    }
                    None => Content::Text(s.to_string()),
                },
                None => Content::Text(s.to_string()),
            }
        }
        Content::Blocks(blocks) => {
            let mut out = blocks.clone();
            if let Some((n, marker)) = &own_cap {
                changed |= cap_text_blocks(&mut out, *n, marker, policy.strip_before_cap);
            }
            if let Some((n, marker)) = &tool_cap {
                for b in out.iter_mut() {
                    if let Block::ToolResult { content, .. } = b {
                        match content {
                            ToolResultContent::Text(s) => {
                                if let Some(c) = cap_str(s, *n, marker) {
                                    *s = c;
                                    changed = true;
                                }
                            }
                            ToolResultContent::Blocks(inner) => {
                                changed |= cap_text_blocks(inner, *n, marker, false);
                            }
                        }
                    }
                }
            }
            Content::Blocks(out)
        }
    };
    changed.then(|| Message {
        role: m.role,
        content,
        id: m.id.clone(),
        metadata: m.metadata.clone(),
        created_at: m.created_at,
    })
}

/// First `n` chars plus `marker` when `s` is longer than `n` chars.
pub fn cap_str(s: &str, n: usize, marker: &str) -> Option<String> {
    let (cut, _) = s.char_indices().nth(n)?;
    let mut out = String::with_capacity(cut + marker.len());
    out.push_str(&s[..cut]);
    out.push_str(marker);
    Some(out)
}

/// Caps the text blocks of a list together: blocks are kept whole while they fit, the one
/// that crosses the cap is cut and marked, later text blocks are dropped. Other blocks stay.
fn cap_text_blocks(blocks: &mut Vec<Block>, n: usize, marker: &str, strip: bool) -> bool {
    if strip {
        let text_idx: Vec<usize> = blocks
            .iter()
            .enumerate()
            .filter(|(_, b)| matches!(b, Block::Text { .. }))
            .map(|(i, _)| i)
            .collect();
        if let (Some(&first), Some(&last)) = (text_idx.first(), text_idx.last()) {
            if let Block::Text { text } = &mut blocks[first] {
                *text = text.trim_start().to_string();
            }
            if let Block::Text { text } = &mut blocks[last] {
                *text = text.trim_end().to_string();
            }
        }
    }
    let total: usize = blocks
        .iter()
        .map(|b| match b {
            Block::Text { text } => text.chars().count(),
            _ => 0,
        })
        .sum();
    if total <= n {
        return false;
    }
    let mut remaining = n;
    let mut cut_done = false;
    blocks.retain_mut(|b| {
        let Block::Text { text } = b else {
            return true;
        };
        if cut_done {
            return false;
        }
        let len = text.chars().count();
        if len <= remaining {
            remaining -= len;
            return true;
        }
        if let Some(c) = cap_str(text, remaining, marker) {
            *text = c;
        }
        cut_done = true;
        true
    });
    true
}

/// Accumulated size of a kept history.
#[derive(Debug, Clone, Copy, Default)]
struct Totals {
    tokens: u64,
    chars: u64,
    turns: usize,
}

impl Totals {
    fn fits(&self, p: &Policy) -> bool {
        p.max_tokens.is_none_or(|m| self.tokens <= m)
            && p.max_chars.is_none_or(|m| self.chars <= m)
            && p.max_turns.is_none_or(|m| self.turns <= m)
    }
}

/// The ids of a message's tool_use blocks, in block order (warnings list them in this
/// order, so the output is the same on every run).
fn tool_use_ids(m: &Message) -> impl Iterator<Item = &str> {
    m.block_slice().iter().filter_map(|b| match b {
        Block::ToolUse { id, .. } => Some(id.as_str()),
        _ => None,
    })
}

fn tool_result_ids(m: &Message) -> impl Iterator<Item = &str> {
    m.block_slice().iter().filter_map(|b| match b {
        Block::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
        _ => None,
    })
}

/// Removes the tool blocks `keep` rejects. `None` when nothing was removed; `Some(None)` when
/// nothing is left of the message.
fn strip_blocks(m: &Message, keep: impl Fn(&Block) -> bool) -> Option<Option<Message>> {
    let blocks = m.block_slice();
    if blocks.iter().all(&keep) {
        return None;
    }
    let rest: Vec<Block> = blocks.iter().filter(|b| keep(b)).cloned().collect();
    let substantive = rest.iter().any(|b| match b {
        Block::Text { text } => !text.trim().is_empty(),
        Block::Thinking { .. } | Block::RedactedThinking { .. } => false,
        _ => true,
    });
    if !substantive {
        return Some(None);
    }
    Some(Some(Message {
        role: m.role,
        content: Content::Blocks(rest),
        id: m.id.clone(),
        metadata: m.metadata.clone(),
        created_at: m.created_at,
    }))
}

/// Selects the history to send from `history[window_start..]` (0 for the sliding mode; the
/// stable window start otherwise, see [`crate::stable`]).
///
/// Tool pairing: a `tool_result` belongs to the assistant message right before the run of
/// result-holding user messages it sits in, as long as every message of the run up to it
/// answers at least one of that assistant's ids; a `tool_use` whose result is not in that
/// run, and any other result, are removed with a warning (a message left with nothing is
/// skipped). This is local, so it is decided lazily during the
/// walk and agrees with a pass over the whole conversation.
pub fn select(
    history: &[HistoryMessage],
    policy: &Policy,
    counter: &dyn TokenCounter,
    window_start: usize,
) -> Selection {
    let window_start = window_start.min(history.len());
    let items = &history[window_start..];
    let mut warnings: Vec<String> = Vec::new();
    let mut skipped = 0usize;
    let mut totals = Totals::default();
    let mut kept_rev: Vec<Kept> = Vec::new();
    // Parallel to `kept_rev`: whether the message is the first member of its unit.
    let mut unit_start_rev: Vec<bool> = Vec::new();
    // Filled when the walk stops before the start: the newest message, repaired, so that
    // step 5 can keep it.
    let mut newest: Option<Kept> = None;

    let mut i = items.len();
    let mut first_unit = true;
    while i > 0 {
        let (unit_start, unit, unit_skipped) = next_unit(items, i, &mut warnings);
        skipped += unit_skipped;
        let unit: Vec<Kept> = unit
            .into_iter()
            .map(|(idx, m)| finish(idx, m, items, policy, counter))
            .collect();
        let mut t = totals;
        for k in &unit {
            t.tokens += k.measure.tokens;
            t.chars += k.measure.chars;
            if k.message.starts_turn() {
                t.turns += 1;
            }
        }
        if !t.fits(policy) {
            if first_unit && unit.len() == 1 {
                newest = unit.into_iter().next();
            }
            break;
        }
        first_unit = first_unit && unit.is_empty();
        totals = t;
        // Only a unit's first member may start the history: a message inside a unit (a
        // results message repaired down to its text) sits between a tool_use and its result.
        unit_start_rev.extend((0..unit.len()).map(|n| n + 1 == unit.len()));
        kept_rev.extend(unit.into_iter().rev());
        i = unit_start;
    }

    kept_rev.reverse();
    unit_start_rev.reverse();
    let mut kept = kept_rev;
    // Step 4: start on a user message with text that is not inside a tool pair.
    let lead = kept
        .iter()
        .zip(&unit_start_rev)
        .position(|(k, &starts_unit)| starts_unit && k.message.is_cut_point())
        .unwrap_or(kept.len());
    kept.drain(..lead);

    // Step 5: the newest user message is always kept.
    let mut latest_exceeds = false;
    if kept.is_empty() {
        if let Some(k) = newest.filter(|k| k.message.is_cut_point()) {
            latest_exceeds = true;
            warnings.push(LATEST_EXCEEDS.to_string());
            kept.push(k);
        }
    }

    let included = kept.len();
    let dropped = history.len() - included - skipped;
    let mut stats = Stats {
        included,
        dropped,
        skipped,
        trimmed: dropped > 0,
        notice: (dropped > 0).then(|| TRIM_NOTICE.to_string()),
        warnings,
        latest_exceeds,
        ..Stats::default()
    };
    for k in &kept {
        stats.tokens += k.measure.tokens;
        stats.chars += k.measure.chars;
        if k.message.starts_turn() {
            stats.turns += 1;
        }
    }
    Selection { kept, stats }
}

/// A message of a unit: its index in `items` and, when repaired, the new message.
type UnitMember = (usize, Option<Message>);

/// The unit that ends just before `end`: a single message, or an assistant message with
/// tool_use and the run of user messages after it that hold the results. Returns the unit's
/// start, its surviving members in order, and how many of its messages were skipped.
fn next_unit(
    items: &[HistoryMessage],
    end: usize,
    warnings: &mut Vec<String>,
) -> (usize, Vec<UnitMember>, usize) {
    let mut j = end;
    while j > 0 {
        let m = &items[j - 1].message;
        if m.role == Role::User && m.has_tool_result() {
            j -= 1;
        } else {
            break;
        }
    }
    let results_run = j..end;
    let assistant = (j > 0
        && items[j - 1].message.role == Role::Assistant
        && items[j - 1].message.has_tool_use())
    .then(|| j - 1);

    if results_run.is_empty() {
        // A lone message; an assistant's tool_use here has no result after it.
        let idx = end - 1;
        let m = &items[idx].message;
        if m.role == Role::Assistant && m.has_tool_use() {
            return match strip_blocks(m, |b| !matches!(b, Block::ToolUse { .. })) {
                Some(repaired) => {
                    for id in tool_use_ids(m) {
                        warnings.push(format!(
                            "messages[{}]: tool_use '{id}' has no matching tool_result, dropping it",
                            items[idx].index
                        ));
                    }
                    match repaired {
                        Some(r) => (idx, vec![(idx, Some(r))], 0),
                        None => (idx, Vec::new(), 1),
                    }
                }
                None => (idx, vec![(idx, None)], 0),
            };
        }
        return (idx, vec![(idx, None)], 0);
    }

    let uses: HashSet<&str> = assistant
        .map(|a| tool_use_ids(&items[a].message).collect())
        .unwrap_or_default();
    // The pair's results are the unbroken prefix of the run that answers the assistant: a
    // message answering none of its ids ends the pair, so that no text message is ever left
    // between a tool_use and its result (which no provider accepts).
    let answered_to = results_run
        .clone()
        .find(|&r| !tool_result_ids(&items[r].message).any(|id| uses.contains(id)))
        .unwrap_or(end);
    if answered_to < end {
        // `end - 1` lies past the pair: every result in it is an orphan.
        let idx = end - 1;
        let m = &items[idx].message;
        for id in tool_result_ids(m) {
            warnings.push(format!(
                "messages[{}]: tool_result for '{id}' has no matching tool_use, dropping it",
                items[idx].index
            ));
        }
        return match strip_blocks(m, |b| !matches!(b, Block::ToolResult { .. })) {
            Some(Some(r)) => (idx, vec![(idx, Some(r))], 0),
            Some(None) => (idx, Vec::new(), 1),
            None => (idx, vec![(idx, None)], 0),
        };
    }
    let results_run = j..answered_to;
    let start = assistant.unwrap_or(j);
    let results: HashSet<&str> = results_run
        .clone()
        .flat_map(|r| tool_result_ids(&items[r].message))
        .collect();
    let mut members: Vec<UnitMember> = Vec::new();
    let mut skipped = 0;
    if let Some(a) = assistant {
        let m = &items[a].message;
        let keep = |b: &Block| match b {
            Block::ToolUse { id, .. } => results.contains(id.as_str()),
            _ => true,
        };
        match strip_blocks(m, keep) {
            None => members.push((a, None)),
            Some(repaired) => {
                for id in tool_use_ids(m).filter(|id| !results.contains(id)) {
                    warnings.push(format!(
                        "messages[{}]: tool_use '{id}' has no matching tool_result, dropping it",
                        items[a].index
                    ));
                }
                match repaired {
                    Some(r) => members.push((a, Some(r))),
                    None => skipped += 1,
                }
            }
        }
    }
    for r in results_run {
        let m = &items[r].message;
        let keep = |b: &Block| match b {
            Block::ToolResult { tool_use_id, .. } => uses.contains(tool_use_id.as_str()),
            _ => true,
        };
        match strip_blocks(m, keep) {
            None => members.push((r, None)),
            Some(repaired) => {
                for id in tool_result_ids(m).filter(|id| !uses.contains(id)) {
                    warnings.push(format!(
                        "messages[{}]: tool_result for '{id}' has no matching tool_use, dropping it",
                        items[r].index
                    ));
                }
                match repaired {
                    Some(r2) => members.push((r, Some(r2))),
                    None => skipped += 1,
                }
            }
        }
    }
    (start, members, skipped)
}

/// Applies caps and measures a unit member.
fn finish(
    idx: usize,
    repaired: Option<Message>,
    items: &[HistoryMessage],
    policy: &Policy,
    counter: &dyn TokenCounter,
) -> Kept {
    let item = &items[idx];
    let base = repaired.as_ref().unwrap_or(&item.message);
    let capped = if policy.has_caps() && may_need_cap(base, policy) {
        cap_message(base, policy)
    } else {
        None
    };
    let truncated = capped.is_some();
    let message = capped.or(repaired);
    match message {
        Some(m) => {
            let measure = measure(&m, counter);
            Kept {
                index: item.index,
                message: m,
                truncated,
                measure,
            }
        }
        None => Kept {
            index: item.index,
            message: item.message.clone(),
            truncated: false,
            measure: item.measure,
        },
    }
}

fn may_need_cap(m: &Message, p: &Policy) -> bool {
    let own = match m.role {
        Role::User => p.user_max_chars,
        Role::Assistant => p.assistant_max_chars,
        Role::System => None,
    };
    if p.strip_before_cap && own.is_some() {
        // Stripping alone changes the text: let cap_message decide.
        return true;
    }
    own.is_some_and(|n| own_text_chars(m) > n)
        || (p.tool_result_max_chars.is_some() && m.has_tool_result())
}

/// Role-alternation warnings over validated input (docs/FORMATS.md §3); system messages are
/// ignored. Indices are input indices.
pub fn alternation_warnings(messages: &[InputMessage]) -> Vec<String> {
    let mut out = Vec::new();
    let mut last_user_text: Option<usize> = None;
    let mut last_assistant: Option<usize> = None;
    for im in messages {
        let m = &im.message;
        match m.role {
            Role::User => {
                if m.starts_turn() {
                    if let Some(prev) = last_user_text {
                        out.push(format!(
                            "consecutive user messages at {prev} and {}",
                            im.index
                        ));
                    }
                    last_user_text = Some(im.index);
                }
                last_assistant = None;
            }
            Role::Assistant => {
                if let Some(prev) = last_assistant {
                    out.push(format!(
                        "consecutive assistant messages at {prev} and {}",
                        im.index
                    ));
                }
                last_assistant = Some(im.index);
                last_user_text = None;
            }
            Role::System => {}
        }
    }
    out
}

#[cfg(test)]
mod tests;
