//! The whole pipeline for one conversation held in memory: system prompt gathering, the
//! current message, selection, rendering (docs/FORMATS.md §4–§5). `recall render` is this function
//! plus I/O.
//!
//! It runs in two steps that a store's context shares: `prepare` (the current message,
//! selection, the recall query) and `Prepared::finish` (rendering, with the recalled section and
//! the summary; `Prepared::summary_before` is the seq the summary must end before).
//!
//! ```
//! use recall_core::context::{build_context, ContextRequest};
//! use recall_core::parse::{parse_conversation, ParseOptions};
//! use recall_core::policy::Format;
//! let conv = parse_conversation(
//!     r#"[{"role":"user","content":"Hello"},{"role":"assistant","content":"Hi there"},
//!         {"role":"user","content":"How are you?"}]"#,
//!     &ParseOptions::default(),
//! ).unwrap();
//! let out = build_context(&conv, &ContextRequest::new(Format::Transcript)).unwrap();
//! assert_eq!(
//!     out.prompt.to_text(),
//!     "Human: Hello\n\n---\n\nAssistant: Hi there\n\n---\n\nHuman: How are you?"
//! );
//! ```

use std::borrow::Cow;

use crate::message::{Block, Content, Message, Role};
use crate::parse::Conversation;
use crate::policy::{
    ConversationPolicy, Format, InvalidPolicy, Policy, PolicyOverrides, RecallScope, TrimMode,
};
use crate::recall::{choose, LexicalIndex, RecallCandidate, RecallQuery, RecallSection};
use crate::render::{render, with_sections, Prompt, RenderInput};
use crate::select::{alternation_warnings, select, HistoryMessage, Kept, Stats};
use crate::stable::{stable_window_start, WindowItem};
use crate::summary::{render_summary, Summary, SummarySection};
use crate::tokens::TokenCounter;

/// What to build.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextRequest {
    /// The output format; `None`: the conversation's own (its stored policy's), else
    /// `transcript`. See [`ContextRequest::resolve`].
    pub format: Option<Format>,
    /// Limits set by the caller over the format's defaults.
    pub overrides: PolicyOverrides,
    /// The current message (`xml`); for other formats it is appended as a user message.
    pub current: Option<String>,
    /// Turn-label escaping in text formats (on unless `--no-escape`).
    pub escape: bool,
    /// What recall looks for (with `recall_tokens > 0`); `None`: the newest user message's
    /// text. Not stored.
    pub query: Option<String>,
    /// A summary of the messages before the window, for a conversation held in memory
    /// (`recall render --summary`); it turns `summarize` on. A stored conversation's context
    /// uses its committed summary instead.
    pub summary: Option<String>,
}

impl ContextRequest {
    /// A request for `format` with its default limits, escaping on.
    pub fn new(format: Format) -> Self {
        ContextRequest {
            format: Some(format),
            overrides: PolicyOverrides::default(),
            current: None,
            escape: true,
            query: None,
            summary: None,
        }
    }

    /// The format and policy this request asks for over a conversation's stored policy: the
    /// request's format, else the stored one, else `transcript`; then that format's
    /// defaults, the stored values, and the request's values, each over the one before.
    ///
    /// ```
    /// use recall_core::context::ContextRequest;
    /// use recall_core::policy::{ConversationPolicy, Format};
    /// let stored: ConversationPolicy = serde_json::from_str(r#"{"format":"xml","max_turns":4}"#).unwrap();
    /// let r = ContextRequest { format: None, ..ContextRequest::new(Format::Transcript) }
    ///     .resolve(Some(&stored))
    ///     .unwrap();
    /// assert_eq!(r.format, Format::Xml);
    /// assert_eq!(r.policy.max_turns, Some(4));
    /// assert_eq!(r.policy.max_chars, Some(100_000)); // xml's default
    /// ```
    ///
    /// A stored conversation's memory is on by default: with no `recall_tokens` set by the
    /// request or the stored policy, it is [`Policy::default_recall_tokens`]. (A conversation
    /// held in memory, [`build_context`], recalls only when asked.)
    pub fn resolve(&self, stored: Option<&ConversationPolicy>) -> Result<Resolved, InvalidPolicy> {
        self.resolve_with(stored, true)
    }

    /// [`ContextRequest::resolve`], with the default recall share or without it.
    fn resolve_with(
        &self,
        stored: Option<&ConversationPolicy>,
        default_recall: bool,
    ) -> Result<Resolved, InvalidPolicy> {
        let format = self
            .format
            .or(stored.and_then(|p| p.format))
            .unwrap_or_default();
        let mut policy = format.default_policy();
        if let Some(p) = stored {
            policy = p.limits.apply(policy)?;
        }
        let mut policy = self.overrides.apply(policy)?;
        if self.summary.is_some() {
            policy.summarize = true;
        }
        // Memory is on by default: a share of the budget, unless a value is set somewhere.
        let recall_set = self.overrides.recall_tokens.is_some()
            || stored.is_some_and(|p| p.limits.recall_tokens.is_some());
        if default_recall && !recall_set {
            policy.recall_tokens = policy.default_recall_tokens();
        }
        Ok(Resolved {
            format,
            policy: policy.reserve_recall()?.reserve_summary()?,
        })
    }
}

/// The format and policy a context is built with (see [`ContextRequest::resolve`]): with
/// recall on, `policy.max_tokens` is the window's share (the budget less `recall_tokens`).
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub format: Format,
    pub policy: Policy,
}

/// A built context.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextOutput {
    /// The format `prompt` is in.
    pub format: Format,
    pub prompt: Prompt,
    pub stats: Stats,
    /// The policy that was applied (format defaults plus overrides).
    pub policy: Policy,
    /// The system prompt's parts, as rendered.
    pub system_parts: Vec<String>,
    /// The selected history, oldest first, after caps: what `prompt` was rendered from. A
    /// backend that renders its own wire format (the LLM adapters) takes these.
    pub kept: Vec<Kept>,
    /// The `xml` current message, rendered after the history (`None` for other formats,
    /// where a current message is the last of `kept`).
    pub current: Option<String>,
    /// The recalled messages and their section (with `recall_tokens > 0`).
    pub recalled: Option<RecallSection>,
    /// The summary the context carries (with `summarize` on and one committed).
    pub summary: Option<SummarySection>,
}

impl ContextOutput {
    /// The selected messages as one list: `kept`, then the `xml` current message as a user
    /// text message. This is what a chat backend is sent.
    ///
    /// The sections are placed as in `anthropic`/`openai` ([`with_sections`]): the recalled
    /// section, if any, leads the newest user message (the `xml` current message, else the
    /// last cut point of `kept`), and the summary leads the first user message (or is one).
    pub fn messages(&self) -> Vec<Message> {
        let mut out: Vec<Cow<'_, Message>> = self
            .kept
            .iter()
            .map(|k| Cow::Borrowed(&k.message))
            .collect();
        if let Some(c) = &self.current {
            out.push(Cow::Owned(Message::text(Role::User, c.clone())));
        }
        let at = if self.current.is_some() {
            out.len().checked_sub(1)
        } else {
            self.kept.iter().rposition(|k| k.message.is_cut_point())
        };
        let recalled = self
            .recalled
            .as_ref()
            .and_then(|r| Some((at?, r.text.as_str())));
        let summary = self.summary.as_ref().map(|s| s.text.as_str());
        with_sections(out, summary, recalled)
            .into_iter()
            .map(Cow::into_owned)
            .collect()
    }

    /// The sections recall wrote into this context, as data beside the prompt: what a client
    /// shows or maps without parsing the prompt.
    pub fn sections(&self) -> Sections {
        Sections {
            summary: self.summary.as_ref().map(|s| SummarySectionView {
                from_seq: s.from_seq,
                to_seq: s.to_seq,
                text: s.text.clone(),
            }),
            recalled: self
                .recalled
                .as_ref()
                .filter(|r| !r.text.is_empty())
                .map(|r| RecalledSectionView {
                    text: r.text.clone(),
                    messages: r.stats.messages.clone(),
                }),
        }
    }

    /// The first and last index of the history messages the window holds (a stored
    /// conversation's indexes are its seqs; in memory, positions from 0), `None` when it holds
    /// none. A current message
    /// given with the request (`current_given`) is not history: in formats other than `xml` it
    /// is the last of `kept` and is left out here; `xml` keeps it apart in `current`.
    ///
    /// ```
    /// use recall_core::context::{build_context, ContextRequest};
    /// use recall_core::parse::{parse_conversation, ParseOptions};
    /// use recall_core::policy::{Count, Format, PolicyOverrides};
    /// let conv = parse_conversation(
    ///     r#"[{"role":"user","content":"one two three four five six"},
    ///         {"role":"assistant","content":"ok"},{"role":"user","content":"and?"}]"#,
    ///     &ParseOptions::default(),
    /// ).unwrap();
    /// let mut req = ContextRequest::new(Format::Transcript);
    /// assert_eq!(build_context(&conv, &req).unwrap().window_range(false), Some((0, 2)));
    /// // A budget of 8 tokens keeps the newest turn only.
    /// req.overrides = PolicyOverrides { max_tokens: Some(Count::from(8u32)), ..Default::default() };
    /// assert_eq!(build_context(&conv, &req).unwrap().window_range(false), Some((2, 2)));
    /// ```
    pub fn window_range(&self, current_given: bool) -> Option<(usize, usize)> {
        let history = if current_given && self.current.is_none() {
            self.kept.split_last().map_or(&[][..], |(_, h)| h)
        } else {
            &self.kept[..]
        };
        Some((history.first()?.index, history.last()?.index))
    }

    /// The system prompt a backend is sent: the system parts joined with `"\n"`; `None` when
    /// there are none. Never the summary or recalled text ([`ContextOutput::messages`]).
    pub fn system(&self) -> Option<String> {
        (!self.system_parts.is_empty()).then(|| self.system_parts.join("\n"))
    }
}

/// The sections recall wrote into a context (`sections` of a context answer), exactly as
/// the prompt holds them; each `null` when the context has none.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct Sections {
    /// The summary of the messages before the window.
    pub summary: Option<SummarySectionView>,
    /// The older messages recall brought back.
    pub recalled: Option<RecalledSectionView>,
}

/// The summary section of a context.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct SummarySectionView {
    /// The first and last seq of the messages it stands for.
    pub from_seq: i64,
    pub to_seq: i64,
    /// The section as placed (`<conversation_summary>` … `</conversation_summary>`).
    pub text: String,
}

/// The recalled section of a context.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct RecalledSectionView {
    /// The section as placed (`<recalled_messages>` … `</recalled_messages>`).
    pub text: String,
    /// The messages it holds, oldest first (as `stats.recalled.messages` lists them).
    pub messages: Vec<crate::recall::RecalledRef>,
}

/// Why a context could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContextError {
    /// Interfaces name their own way of giving one (`--current`, the `current` field).
    #[error("xml needs a current message: end the history with a user message or give `current`")]
    NoCurrentMessage,
    #[error("the current message is empty")]
    EmptyCurrent,
    /// An explicit recall query must hold something to look for.
    #[error("the recall query is empty")]
    EmptyQuery,
    #[error(transparent)]
    Policy(#[from] InvalidPolicy),
}

/// The text of a system message (its string, or its text blocks joined with `"\n"`).
pub fn system_text(m: &Message) -> String {
    m.joined_text()
}

/// The system prompt's parts: the top-level system, then each system message in order.
pub fn system_parts(conv: &Conversation) -> Vec<String> {
    let mut parts: Vec<String> = conv.system.iter().cloned().collect();
    parts.extend(
        conv.messages
            .iter()
            .filter(|m| m.message.role == Role::System)
            .map(|m| system_text(&m.message)),
    );
    parts.retain(|p| !p.trim().is_empty());
    parts
}

/// The cost the stable window budgets against: tokens when a token budget is set, else
/// characters; `None` when neither is.
pub fn stable_budget(policy: &Policy) -> Option<(u64, bool)> {
    match (policy.max_tokens, policy.max_chars) {
        (Some(t), _) => Some((t, true)),
        (None, Some(c)) => Some((c, false)),
        (None, None) => None,
    }
}

/// The stable-window item of a history message: its stored measure (before caps, so that a
/// store can keep the window with the figures it already has) and whether it is a cut point.
pub fn window_item(h: &HistoryMessage, tokens: bool) -> WindowItem {
    WindowItem {
        cost: if tokens {
            h.measure.tokens
        } else {
            h.measure.chars
        },
        cut_point: h.message.is_cut_point(),
    }
}

/// History gathered from wherever it lives (an input file, a store), ready for selection.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Gathered {
    /// The system prompt's parts, in order.
    pub system_parts: Vec<String>,
    /// Non-system messages, oldest first.
    pub history: Vec<HistoryMessage>,
    /// Older messages that were not read because no limit could reach them (they count as
    /// dropped).
    pub older: usize,
    /// The stable window's start as an index into `history` (0 for sliding windows).
    pub window_start: usize,
    /// Invalid entries already skipped, and the warnings gathered so far.
    pub skipped: usize,
    pub warnings: Vec<String>,
}

/// The stable window start over `history` under `policy` (0 unless the policy trims `stable`
/// with a token or character budget).
pub fn stable_start_of(history: &[HistoryMessage], policy: &Policy) -> usize {
    match (policy.trim, stable_budget(policy)) {
        (TrimMode::Stable, Some((budget, tokens))) => {
            let w: Vec<WindowItem> = history.iter().map(|h| window_item(h, tokens)).collect();
            stable_window_start(&w, budget, policy.low_water)
        }
        _ => 0,
    }
}

/// A context selected and not yet rendered: what [`prepare`] hands to recall (a store's or
/// [`Prepared::recall_in_memory`]) and then to [`Prepared::finish`].
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    pub format: Format,
    pub policy: Policy,
    pub system_parts: Vec<String>,
    pub kept: Vec<Kept>,
    pub current: Option<String>,
    pub stats: Stats,
    pub escape: bool,
    /// What recall looks for, when the policy recalls and there is a newest user message.
    pub recall: Option<RecallQuery>,
    /// One past the newest gathered message's index: where a summary may end before when
    /// nothing is kept.
    pub history_end: i64,
}

/// Selects gathered history: the current message (`xml` takes the final user message when
/// none is given; other formats append it), selection, stats, and the recall query (see
/// [`crate::recall`]: only messages before the first kept one may be recalled; with nothing
/// kept, every gathered one).
pub fn prepare(
    mut g: Gathered,
    req: &ContextRequest,
    resolved: Resolved,
) -> Result<Prepared, ContextError> {
    let Resolved { format, policy } = resolved;
    let counter = policy.tokenizer;
    let mut current: Option<String> = None;
    if req.query.as_deref().is_some_and(|q| q.trim().is_empty()) {
        return Err(ContextError::EmptyQuery);
    }
    if let Some(c) = &req.current {
        if c.trim().is_empty() {
            return Err(ContextError::EmptyCurrent);
        }
        if format == Format::Xml {
            current = Some(c.clone());
        } else {
            let index = g.history.last().map_or(0, |m| m.index + 1);
            g.history.push(HistoryMessage::new(
                index,
                Message::text(Role::User, c.clone()),
                &counter,
            ));
        }
    } else if format == Format::Xml {
        match g.history.last() {
            Some(last) if last.message.is_cut_point() => {
                current = Some(user_text(&last.message));
                g.history.pop();
            }
            _ => return Err(ContextError::NoCurrentMessage),
        }
    }

    // Recall reserves its share only once the history outgrows the whole budget: while all
    // of it fits, the window holds it and recall has nothing to do (no index, no model).
    let mut policy = policy;
    let whole = policy
        .unreserved()
        .filter(|_| g.older == 0)
        .map(|full| (select(&g.history, &full, &counter, g.window_start), full))
        .filter(|(s, _)| s.stats.dropped == 0);
    let selection = match whole {
        Some((selection, full)) => {
            policy = full;
            selection
        }
        None => select(&g.history, &policy, &counter, g.window_start),
    };
    let mut stats = selection.stats;
    stats.skipped += g.skipped;
    stats.dropped += g.older;
    stats.trimmed = stats.dropped > 0;
    stats.notice = stats
        .trimmed
        .then(|| crate::select::TRIM_NOTICE.to_string());
    g.warnings.append(&mut stats.warnings);
    stats.warnings = g.warnings;

    let history_end = g.history.last().map_or(0, |h| h.index as i64 + 1);
    // Nothing older than the window in the conversation: nothing to recall from it.
    let nothing_older = stats.dropped == 0 && policy.recall_scope == RecallScope::Conversation;
    let recall = (policy.recall_tokens > 0 && !nothing_older)
        .then(|| {
            // The newest user message: the current one, else the last cut point kept.
            let newest = match &current {
                Some(c) => Some(c.clone()),
                None => selection
                    .kept
                    .iter()
                    .rposition(|k| k.message.is_cut_point())
                    .map(|i| user_text(&selection.kept[i].message)),
            }?;
            let before = match selection.kept.first() {
                Some(k) => k.index as i64,
                None => g.history.last().map_or(0, |h| h.index as i64 + 1),
            };
            let text = req.query.clone().unwrap_or(newest);
            Some(RecallQuery::new(
                &text,
                before,
                policy.recall_tokens,
                policy.recall_scope,
            ))
        })
        .flatten();

    Ok(Prepared {
        format,
        policy,
        system_parts: g.system_parts,
        kept: selection.kept,
        current,
        stats,
        escape: req.escape,
        recall,
        history_end,
    })
}

impl Prepared {
    /// The seq a summary must end before to go with this context — the first kept message's
    /// (with nothing kept, one past the newest gathered) — when the policy summarises.
    pub fn summary_before(&self) -> Option<i64> {
        if !self.policy.summarize {
            return None;
        }
        Some(match self.kept.first() {
            Some(k) => k.index as i64,
            None => self.history_end,
        })
    }

    /// The section for `summary` under this context's escaping, its tokens counted with the
    /// policy's counter unless the caller knows them (`known_tokens`, a store's stored count).
    /// `None`, with a warning in the stats, when it is over this policy's `summary_tokens`
    /// (written under a larger bound): the window was sized for the smaller one.
    pub fn summary_section(
        &mut self,
        summary: &Summary,
        known_tokens: Option<u64>,
    ) -> Option<SummarySection> {
        let text = render_summary(summary, self.escape);
        let tokens = known_tokens.unwrap_or_else(|| self.policy.tokenizer.count(&text) as u64);
        if tokens > self.policy.summary_tokens {
            self.stats.warnings.push(format!(
                "the summary of messages {} to {} takes {tokens} tokens, over summary_tokens \
                 ({}): not carried (compact again with this summary_tokens)",
                summary.from_seq, summary.to_seq, self.policy.summary_tokens
            ));
            return None;
        }
        Some(SummarySection {
            from_seq: summary.from_seq,
            to_seq: summary.to_seq,
            text,
            tokens,
        })
    }

    /// Recall over history held in memory (`history`: what was gathered, oldest first, keyed
    /// by index): the lexical ranking over the messages older than the window, then [`choose`].
    pub fn recall_in_memory(&self, history: &[HistoryMessage]) -> Option<RecallSection> {
        let q = self.recall.as_ref()?;
        let candidates: Vec<RecallCandidate> = history
            .iter()
            .filter(|h| (h.index as i64) < q.before)
            .map(|h| RecallCandidate {
                conversation_id: None,
                // The input's position counted from 1, as a stored conversation's seqs are.
                seq: h.index as i64 + 1,
                message: h.message.clone(),
                // The input's time, when it gave one (`created_at`).
                at: h.message.created_at,
            })
            .collect();
        let hits = LexicalIndex::over(&candidates).rank(&q.terms, q.limit);
        Some(choose(
            q,
            &hits,
            &candidates,
            &self.policy.tokenizer,
            self.escape,
            true,
        ))
    }

    /// Renders the context, with the recalled section and the summary when given.
    pub fn finish(
        self,
        recalled: Option<RecallSection>,
        summary: Option<SummarySection>,
    ) -> ContextOutput {
        let mut stats = self.stats;
        stats.recalled = recalled.as_ref().map(|r| r.stats.clone());
        stats.summary = summary.as_ref().map(SummarySection::stats);
        let input = RenderInput {
            system_parts: &self.system_parts,
            kept: &self.kept,
            current: self.current.as_deref(),
            escape: self.escape,
            recalled: recalled.as_ref().map(|r| r.text.as_str()),
            summary: summary.as_ref().map(|s| s.text.as_str()),
        };
        let prompt = render(self.format, &input);
        ContextOutput {
            format: self.format,
            prompt,
            stats,
            policy: self.policy,
            system_parts: self.system_parts,
            kept: self.kept,
            current: self.current,
            recalled,
            summary,
        }
    }
}

/// Selects and renders gathered history ([`prepare`], then [`Prepared::finish`]), recalling
/// from the gathered history itself when the policy recalls.
pub fn assemble(
    g: Gathered,
    req: &ContextRequest,
    resolved: Resolved,
) -> Result<ContextOutput, ContextError> {
    let history = (resolved.policy.recall_tokens > 0).then(|| g.history.clone());
    let prepared = prepare(g, req, resolved)?;
    let recalled = history.and_then(|h| prepared.recall_in_memory(&h));
    let mut prepared = prepared;
    let summary = match (&req.summary, prepared.summary_before()) {
        (Some(_), Some(_)) if prepared.stats.dropped == 0 => {
            prepared
                .stats
                .warnings
                .push("the summary was not used: no message is older than the window".to_string());
            None
        }
        (Some(text), Some(before)) => {
            // Positions counted from 1 (recall's in-memory seqs): the messages before input
            // index `before` are 1 to `before`.
            let s = Summary {
                from_seq: 1,
                to_seq: before,
                text: text.clone(),
            };
            prepared.summary_section(&s, None)
        }
        _ => None,
    };
    Ok(prepared.finish(recalled, summary))
}

/// Builds the context of a parsed conversation.
pub fn build_context(
    conv: &Conversation,
    req: &ContextRequest,
) -> Result<ContextOutput, ContextError> {
    let resolved = req.resolve_with(None, false)?;
    let (format, policy) = (resolved.format, &resolved.policy);
    let counter = policy.tokenizer;
    let history: Vec<HistoryMessage> = conv
        .messages
        .iter()
        .filter(|m| m.message.role != Role::System)
        .map(|m| HistoryMessage::new(m.index, m.message.clone(), &counter))
        .collect();
    let mut warnings = conv.warnings.clone();
    warnings.extend(alternation_warnings(&conv.messages));
    // The stable window covers the history `assemble` selects from: without the final user
    // message `xml` takes as the current one (docs/FORMATS.md §5.3: limits apply to the history only), with
    // the `--current` message other formats append (docs/FORMATS.md §4.6).
    let window_start = match (policy.trim, stable_budget(policy)) {
        (TrimMode::Stable, Some((budget, tokens))) => {
            let mut w: Vec<WindowItem> = history.iter().map(|h| window_item(h, tokens)).collect();
            match &req.current {
                None if format == Format::Xml => {
                    w.pop();
                }
                Some(c) if format != Format::Xml => {
                    let m = Message::text(Role::User, c.clone());
                    w.push(window_item(&HistoryMessage::new(0, m, &counter), tokens));
                }
                _ => {}
            }
            stable_window_start(&w, budget, policy.low_water)
        }
        _ => 0,
    };
    let gathered = Gathered {
        system_parts: system_parts(conv),
        window_start,
        history,
        older: 0,
        skipped: conv.skipped,
        warnings,
    };
    assemble(gathered, req, resolved)
}

/// A user message's own text: its string, or its text blocks joined with `"\n"`.
fn user_text(m: &Message) -> String {
    match &m.content {
        Content::Text(s) => s.clone(),
        Content::Blocks(b) => b
            .iter()
            .filter_map(|b| match b {
                Block::Text { text } => Some(text.clone()),
                Block::Document { label, .. } => Some(format!("[referenced: {label}]")),
                Block::Image { .. } => Some("[image]".to_string()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{parse_conversation, ParseOptions};
    use crate::policy::{Count, PolicyOverrides};

    fn conv() -> Conversation {
        let text = r#"[{"role":"user","content":"one two three four five six seven"},
            {"role":"assistant","content":"eight nine ten eleven twelve"},
            {"role":"user","content":"next"},{"role":"assistant","content":"ok"},
            {"role":"user","content":"last"}]"#;
        parse_conversation(text, &ParseOptions::default()).expect("parses")
    }

    fn window(
        format: Format,
        current: Option<&str>,
        max_tokens: Option<u32>,
    ) -> Option<(usize, usize)> {
        let mut req = ContextRequest::new(format);
        req.current = current.map(str::to_string);
        req.overrides = PolicyOverrides {
            max_tokens: max_tokens.map(Count::from),
            ..Default::default()
        };
        let out = build_context(&conv(), &req).expect("builds");
        let range = out.window_range(current.is_some());
        // The range spans exactly the history messages kept.
        let history = out.kept.len() - usize::from(current.is_some() && out.current.is_none());
        assert_eq!(range.map_or(0, |(a, b)| b - a + 1), history, "{format:?}");
        range
    }

    #[test]
    fn the_window_range_names_history_messages_only() {
        let all = window(Format::Transcript, None, None).expect("some");
        let (first, last) = all;
        assert_eq!(last - first + 1, 5);
        // A budget keeps the newest: the range ends where the unlimited one does.
        let some = window(Format::Transcript, None, Some(6)).expect("some");
        assert!(some.0 > first && some.1 == last, "{some:?} vs {all:?}");
        // A current message is not history: the range is the same with one given.
        assert_eq!(
            window(Format::Transcript, Some("and now?"), None),
            Some(all)
        );
        assert_eq!(window(Format::Anthropic, Some("and now?"), None), Some(all));
        // xml takes the final user message as its current one, apart from the history.
        assert_eq!(window(Format::Xml, None, None), Some((first, last - 1)));
        assert_eq!(window(Format::Xml, Some("and now?"), None), Some(all));
    }
}
