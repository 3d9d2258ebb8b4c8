//! Context policies: the limits selection applies (FORMATS.md §3) and each format's defaults
//! (§4).

use std::fmt;
use std::str::FromStr;

use crate::tokens::Tokenizer;

/// How the window start moves when the history outgrows the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TrimMode {
    /// Keep the newest history that fits; the start moves on every turn once full.
    #[default]
    Sliding,
    /// Move the start only when over budget, then down to `low_water × budget` (§3.3).
    Stable,
}

impl FromStr for TrimMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "sliding" => Ok(TrimMode::Sliding),
            "stable" => Ok(TrimMode::Stable),
            other => Err(format!(
                "unknown trim mode '{other}' (expected sliding or stable)"
            )),
        }
    }
}

/// The limits and caps of one selection. `None` means no limit.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Policy {
    pub max_turns: Option<usize>,
    pub max_chars: Option<u64>,
    pub max_tokens: Option<u64>,
    pub tokenizer: Tokenizer,
    pub user_max_chars: Option<usize>,
    pub assistant_max_chars: Option<usize>,
    pub tool_result_max_chars: Option<usize>,
    pub trim: TrimMode,
    pub low_water: f64,
    /// Strip surrounding whitespace from text before capping (the `task` format does).
    pub strip_before_cap: bool,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            max_turns: None,
            max_chars: None,
            max_tokens: None,
            tokenizer: Tokenizer::O200k,
            user_max_chars: None,
            assistant_max_chars: None,
            tool_result_max_chars: None,
            trim: TrimMode::Sliding,
            low_water: 0.6,
            strip_before_cap: false,
        }
    }
}

impl Policy {
    /// True when some per-message cap is set.
    pub fn has_caps(&self) -> bool {
        self.user_max_chars.is_some()
            || self.assistant_max_chars.is_some()
            || self.tool_result_max_chars.is_some()
    }
}

/// Values given by the caller (flags, API fields); each one set replaces the format default.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyOverrides {
    pub max_turns: Option<usize>,
    pub max_chars: Option<u64>,
    pub max_tokens: Option<u64>,
    pub tokenizer: Option<Tokenizer>,
    pub user_max_chars: Option<usize>,
    pub assistant_max_chars: Option<usize>,
    pub tool_result_max_chars: Option<usize>,
    pub trim: Option<TrimMode>,
    pub low_water: Option<f64>,
}

impl<'de> serde::Deserialize<'de> for Tokenizer {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl<'de> serde::Deserialize<'de> for TrimMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// A policy value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidPolicy(pub String);

impl PolicyOverrides {
    /// Applies these values over `base`.
    pub fn apply(&self, mut base: Policy) -> Result<Policy, InvalidPolicy> {
        if let Some(v) = self.max_turns {
            base.max_turns = Some(v);
        }
        if let Some(v) = self.max_chars {
            base.max_chars = Some(v);
        }
        if let Some(v) = self.max_tokens {
            base.max_tokens = Some(v);
        }
        if let Some(v) = self.tokenizer {
            base.tokenizer = v;
        }
        if let Some(v) = self.user_max_chars {
            base.user_max_chars = Some(v);
        }
        if let Some(v) = self.assistant_max_chars {
            base.assistant_max_chars = Some(v);
        }
        if let Some(v) = self.tool_result_max_chars {
            base.tool_result_max_chars = Some(v);
        }
        if let Some(v) = self.trim {
            base.trim = v;
        }
        if let Some(v) = self.low_water {
            if !(v > 0.0 && v <= 1.0) {
                return Err(InvalidPolicy(format!(
                    "low_water must be a fraction in (0, 1], got {v}"
                )));
            }
            base.low_water = v;
        }
        Ok(base)
    }
}

/// An output format (FORMATS.md §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// `Human:` / `Assistant:` turns separated by `---` (Claude CLI single prompt).
    #[default]
    Transcript,
    /// `[ROLE]: text` parts.
    Bracket,
    /// `<conversation_history>` then the current message.
    Xml,
    /// A sub-agent brief's conversation history section.
    Task,
    /// Anthropic Messages API request body.
    Anthropic,
    /// OpenAI chat completions request body.
    Openai,
}

impl Format {
    pub const ALL: [Format; 6] = [
        Format::Transcript,
        Format::Bracket,
        Format::Xml,
        Format::Task,
        Format::Anthropic,
        Format::Openai,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Format::Transcript => "transcript",
            Format::Bracket => "bracket",
            Format::Xml => "xml",
            Format::Task => "task",
            Format::Anthropic => "anthropic",
            Format::Openai => "openai",
        }
    }

    /// True for the formats that render one text prompt.
    pub fn is_text(self) -> bool {
        !matches!(self, Format::Anthropic | Format::Openai)
    }

    /// The format's default policy (FORMATS.md §4 headings).
    pub fn default_policy(self) -> Policy {
        let mut p = Policy::default();
        match self {
            Format::Transcript => p.max_tokens = Some(150_000),
            Format::Bracket | Format::Anthropic | Format::Openai => {}
            Format::Xml => {
                p.max_turns = Some(20);
                p.max_chars = Some(100_000);
                p.tool_result_max_chars = Some(500);
            }
            Format::Task => {
                p.user_max_chars = Some(150);
                p.assistant_max_chars = Some(8192);
                p.strip_before_cap = true;
            }
        }
        p
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown format '{s}' (expected transcript, bracket, xml, task, anthropic or openai)"
                )
            })
    }
}

impl<'de> serde::Deserialize<'de> for Format {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}
