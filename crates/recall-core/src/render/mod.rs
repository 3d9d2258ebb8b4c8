//! Renderers: the kept history in the exact shape each backend takes (docs/FORMATS.md §5).

pub mod escape;
mod native;
pub mod reading;
mod text;

use serde_json::Value;

use crate::policy::Format;
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
    /// the history holds: leading the system prompt in `anthropic`/`openai`, a section before
    /// the history in the text formats (after `bracket`'s and `task`'s system parts).
    pub summary: Option<&'a str>,
}

impl RenderInput<'_> {
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

    /// The system prompt of the native formats: the summary section, a blank line, then
    /// [`RenderInput::system`]; either alone when the other is missing.
    pub fn system_with_summary(&self) -> Option<String> {
        join_summary(self.summary(), self.system())
    }
}

/// `summary`, a blank line and `system`; either alone when the other is `None`: the system
/// prompt a context carries with its summary.
pub fn join_summary(summary: Option<&str>, system: Option<String>) -> Option<String> {
    match (summary.filter(|s| !s.is_empty()), system) {
        (Some(s), Some(sys)) => Some(format!("{s}\n\n{sys}")),
        (Some(s), None) => Some(s.to_string()),
        (None, sys) => sys,
    }
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
