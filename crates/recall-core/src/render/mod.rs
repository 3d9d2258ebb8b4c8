//! Renderers: the kept history in the exact shape each backend takes (docs/FORMATS.md §5).

pub mod escape;
mod native;
pub mod reading;
mod text;

use std::borrow::Cow;

use serde_json::Value;

use crate::message::{Message, Role};
use crate::policy::Format;
use crate::recall::with_leading_text;
use crate::select::Kept;

pub use native::{render_anthropic, render_openai};
pub use text::{render_bracket, render_task, render_transcript, render_xml, TASK_HEADER};

/// What a renderer needs.
#[derive(Debug, Clone, Copy)]
pub struct RenderInput<'a> {
    /// The system prompt's parts: the top-level `system`, then each system message.
    pub system_parts: &'a [String],
    /// The kept history, oldest first.
    pub kept: &'a [Kept],
    /// The current message (`xml` only).
    pub current: Option<&'a str>,
    /// Apply turn-label escaping (docs/FORMATS.md §6) in text formats.
    pub escape: bool,
    /// The recalled section (`crate::recall::render_section`), placed just before the newest
    /// user message: a leading text block of it in `anthropic`/`openai`, a section before its
    /// turn in the text formats (`xml`: before the current message). `None` or empty: none.
    pub recalled: Option<&'a str>,
    /// The summary section (`crate::summary::render_summary`), placed before everything else
    /// the history holds and never in the system prompt: leading the first user message in
    /// `anthropic`/`openai` ([`with_sections`]), a section before the history in the text
    /// formats (after `bracket`'s and `task`'s system parts).
    pub summary: Option<&'a str>,
}

impl<'a> RenderInput<'a> {
    /// The recalled section, when there is one to place.
    pub fn recalled(&self) -> Option<&str> {
        self.recalled.filter(|s| !s.is_empty())
    }

    /// The index in `kept` of the newest user message (the last cut point), where the
    /// recalled section goes in every format but `xml`.
    pub fn newest_user(&self) -> Option<usize> {
        self.kept.iter().rposition(|k| k.message.is_cut_point())
    }

    /// The summary section, when there is one to place.
    pub fn summary(&self) -> Option<&str> {
        self.summary.filter(|s| !s.is_empty())
    }

    /// The system prompt: its parts joined with `"\n"`, or `None` when there are none.
    pub fn system(&self) -> Option<String> {
        (!self.system_parts.is_empty()).then(|| self.system_parts.join("\n"))
    }

    /// The kept messages with the summary and recalled sections placed ([`with_sections`]),
    /// what `anthropic` and `openai` render.
    pub fn placed(&self) -> Vec<Cow<'a, Message>> {
        let kept = self
            .kept
            .iter()
            .map(|k| Cow::Borrowed(&k.message))
            .collect();
        let recalled = self.recalled().and_then(|t| Some((self.newest_user()?, t)));
        with_sections(kept, self.summary(), recalled)
    }
}

/// `messages` with recall's sections placed as data on the user side, never in the system
/// prompt (docs/FORMAT-DECISIONS.md, "Where the summary and recalled messages go"): the
/// recalled section leads the message at `recalled.0` (the newest user message), and the
/// summary section leads the first message that is not a system message when that one is a
/// cut point (a user message of the user's own words), else it is a user message of its own
/// put before it. So the summary comes before everything the history holds, as in the text
/// formats, and the system prompt a client sends stays the same bytes when the summary
/// changes.
///
/// ```
/// use std::borrow::Cow;
/// use recall_core::message::{Message, Role};
/// use recall_core::render::with_sections;
/// let history = vec![
///     Cow::Owned(Message::text(Role::User, "hi")),
///     Cow::Owned(Message::text(Role::Assistant, "hello")),
///     Cow::Owned(Message::text(Role::User, "and?")),
/// ];
/// let placed = with_sections(history, Some("<conversation_summary>…</conversation_summary>"), Some((2, "<recalled_messages>…</recalled_messages>")));
/// assert_eq!(placed.len(), 3);
/// assert!(placed[0].joined_text().starts_with("<conversation_summary>"));
/// assert!(placed[2].joined_text().starts_with("<recalled_messages>"));
/// ```
pub fn with_sections<'a>(
    mut messages: Vec<Cow<'a, Message>>,
    summary: Option<&str>,
    recalled: Option<(usize, &str)>,
) -> Vec<Cow<'a, Message>> {
    if let Some((at, text)) = recalled.filter(|(_, t)| !t.is_empty()) {
        if let Some(m) = messages.get_mut(at) {
            *m = Cow::Owned(with_leading_text(m, text));
        }
    }
    if let Some(text) = summary.filter(|s| !s.is_empty()) {
        let first = messages
            .iter()
            .position(|m| m.role != Role::System)
            .unwrap_or(messages.len());
        match messages.get_mut(first) {
            Some(m) if m.is_cut_point() => *m = Cow::Owned(with_leading_text(m, text)),
            _ => messages.insert(first, Cow::Owned(Message::text(Role::User, text))),
        }
    }
    messages
}

/// A rendered prompt: one string for text formats, a request body for native ones.
#[derive(Debug, Clone, PartialEq)]
pub enum Prompt {
    Text(String),
    Json(Value),
}

impl Prompt {
    /// The text of a text prompt, or the JSON of a native one (two-space indented).
    pub fn to_text(&self) -> String {
        match self {
            Prompt::Text(s) => s.clone(),
            Prompt::Json(v) => serde_json::to_string_pretty(v).unwrap_or_default(),
        }
    }
}

/// Renders `input` in `format`. `xml` without a current message renders the history alone;
/// callers that require one check before (see [`crate::context`]).
pub fn render(format: Format, input: &RenderInput<'_>) -> Prompt {
    match format {
        Format::Transcript => Prompt::Text(render_transcript(input)),
        Format::Bracket => Prompt::Text(render_bracket(input)),
        Format::Xml => Prompt::Text(render_xml(input)),
        Format::Task => Prompt::Text(render_task(input)),
        Format::Anthropic => Prompt::Json(render_anthropic(input)),
        Format::Openai => Prompt::Json(render_openai(input)),
    }
}
