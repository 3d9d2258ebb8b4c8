//! Context policies: the limits selection applies (docs/FORMATS.md §4.1) and each format's
//! defaults (§5).
//!
//! One policy type for every interface: `PolicyOverrides` is what a caller sets, and its doc
//! comments are the help texts of all of them. `recall context`, `render` and `chat` flatten it
//! (`#[command(flatten)]`, feature `clap`), so `--max-tokens` is its field; the HTTP context body
//! flattens it (`#[serde(flatten)]`, its OpenAPI schema from feature `utoipa`); MCP's
//! `get_context` arguments flatten it (JSON Schema from feature `schemars`); a conversation's
//! stored default is a `ConversationPolicy` (an optional format and the same overrides), kept as
//! JSON in `recall_store::Conversation`.
//!
//! Counts are `Count`: a whole number from 0 to 2^63 − 1, read from an integer or a whole float
//! (`8000.0`) and from the same text on the command line, so no interface truncates. Reading
//! overrides from JSON names the field in every error; `PolicyOverrides::validate` is the one
//! place values are checked (today: `low_water` in (0, 1]), and `apply` checks again for values
//! built in code. A request's format and policy are resolved in one pure function,
//! `ContextRequest::resolve` (`crate::context`): the request's format, else the conversation's,
//! else `transcript`; then that format's defaults, the stored values, the request's values. The
//! engine calls it with the stored policy it read together with the window; no interface reads
//! the conversation to find its format.
//!
//! `max_tokens` from the flag to SQL: clap reads a `Count` into `PolicyOverrides::max_tokens` →
//! `ContextRequest` → `Engine::context` → `ContextRequest::resolve` gives `Policy::max_tokens`
//! (less `recall_tokens` with recall on, less `summary_tokens` with summarize on) →
//! `Store::conversation_window` → the store's pure plan (`window_plan`, `window`) turns the
//! budget into a start on the running token totals → SQLite walks back to it, PostgreSQL probes
//! the totals' index → `select` does the exact walk over what was read.
//!
//! Adding a field touches `PolicyOverrides` (the field, its doc comment, its clap attribute),
//! `Policy` and `PolicyOverrides::apply`, `Format::default_policy` if formats differ, and the
//! code that uses it (selection, or the store's window plan if it bounds the read). No interface
//! changes: the CLI flag, the HTTP field, the MCP argument, both schemas and the stored JSON
//! follow from the type.

use std::fmt;
use std::str::FromStr;

use crate::tokens::Tokenizer;

mod count;
pub use count::{Count, InvalidCount};

/// `summary_tokens` when a policy sets none.
pub const DEFAULT_SUMMARY_TOKENS: u64 = 1_000;
/// The smallest `summary_tokens` a policy may set: room for the summary section's frame and a
/// few sentences.
pub const MIN_SUMMARY_TOKENS: u64 = 128;

/// The share of the token budget, in thousandths, that recall takes when no policy sets
/// `recall_tokens` (docs/FORMAT-DECISIONS.md, "Recall", says how it was chosen): memory is on by
/// default once a conversation outgrows its budget.
pub const DEFAULT_RECALL_PERMILLE: u64 = 500;
/// The most tokens the default share takes: a section holds at most
/// [`crate::recall::HITS_PER_QUERY`] hits, which filled 2,950 tokens on average of the 4,000
/// that half of an 8,000-token budget reserved on LoCoMo (docs/BENCHMARKS.md), so a larger
/// share of a large budget would only be taken from the window.
pub const MAX_DEFAULT_RECALL_TOKENS: u64 = 3_000;
/// The smallest budget (less the summary's share) that gets default recall: below it the whole
/// budget stays the window's, which must carry the current exchange.
pub const MIN_DEFAULT_RECALL_BUDGET: u64 = 1_000;

/// How the window start moves when the history outgrows the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TrimMode {
    /// Keep the newest history that fits; the start moves on every turn once full.
    #[default]
    Sliding,
    /// Move the start only when over budget, then down to `low_water × budget` (docs/FORMATS.md §4.6).
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

/// Where recall looks for earlier messages (docs/FORMAT-DECISIONS.md, "Recall").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RecallScope {
    /// The messages of this conversation older than the window.
    #[default]
    Conversation,
    /// Those, and every message of the tenant's other conversations (never another
    /// tenant's).
    Tenant,
}

impl FromStr for RecallScope {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "conversation" => Ok(RecallScope::Conversation),
            "tenant" => Ok(RecallScope::Tenant),
            other => Err(format!(
                "unknown recall scope '{other}' (expected conversation or tenant)"
            )),
        }
    }
}

impl<'de> serde::Deserialize<'de> for RecallScope {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// The limits and caps of one selection. `None` means no limit.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "utoipa", schema(as = AppliedPolicy))]
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
    /// Tokens reserved for recalled earlier messages (0: recall off). After
    /// `ContextRequest::resolve`, `max_tokens` is the window's share: the budget less this.
    pub recall_tokens: u64,
    /// Where recall looks.
    pub recall_scope: RecallScope,
    /// Carry the conversation's committed summary of what the window left behind.
    pub summarize: bool,
    /// Tokens reserved for the summary when `summarize` is on. After
    /// `ContextRequest::resolve`, `max_tokens` is the window's share: the budget less this (and
    /// less `recall_tokens`).
    pub summary_tokens: u64,
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
            recall_tokens: 0,
            recall_scope: RecallScope::Conversation,
            summarize: false,
            summary_tokens: DEFAULT_SUMMARY_TOKENS,
        }
    }
}

impl Policy {
    /// Takes the recall share out of the token budget: `max_tokens` becomes the window's
    /// share. Unused recall tokens are not given back to the window, so the window does not
    /// move with what recall happened to find. A recall share that leaves the window nothing
    /// is refused.
    pub fn reserve_recall(mut self) -> Result<Policy, InvalidPolicy> {
        if self.recall_tokens == 0 {
            return Ok(self);
        }
        if let Some(total) = self.max_tokens {
            if self.recall_tokens >= total {
                return Err(InvalidPolicy(format!(
                    "recall_tokens ({}) must be less than max_tokens ({total}): the window \
                     gets max_tokens less recall_tokens",
                    self.recall_tokens
                )));
            }
            self.max_tokens = Some(total - self.recall_tokens);
        }
        Ok(self)
    }

    /// Takes the summary's share out of the token budget when `summarize` is on, as
    /// [`Policy::reserve_recall`] takes recall's: used or not, so that the window does not
    /// move when a summary is written. A share that leaves the window nothing is refused.
    pub fn reserve_summary(mut self) -> Result<Policy, InvalidPolicy> {
        if !self.summarize {
            return Ok(self);
        }
        if let Some(total) = self.max_tokens {
            if self.summary_tokens >= total {
                return Err(InvalidPolicy(format!(
                    "summary_tokens ({}) must be less than the window's share of max_tokens \
                     ({total}): the window gets max_tokens less summary_tokens and recall_tokens",
                    self.summary_tokens
                )));
            }
            self.max_tokens = Some(total - self.summary_tokens);
        }
        Ok(self)
    }

    /// The `recall_tokens` of a policy that sets none: [`DEFAULT_RECALL_PERMILLE`] of the
    /// token budget less the summary's share, at most [`MAX_DEFAULT_RECALL_TOKENS`], when
    /// that budget is at least [`MIN_DEFAULT_RECALL_BUDGET`]; 0 (recall off) without a token
    /// budget.
    ///
    /// ```
    /// use recall_core::policy::Policy;
    /// let p = Policy { max_tokens: Some(4_000), ..Policy::default() };
    /// assert_eq!(p.default_recall_tokens(), 2_000);
    /// let small = Policy { max_tokens: Some(900), ..Policy::default() };
    /// assert_eq!(small.default_recall_tokens(), 0);
    /// assert_eq!(Policy::default().default_recall_tokens(), 0);
    /// let large = Policy { max_tokens: Some(150_000), ..Policy::default() };
    /// assert_eq!(large.default_recall_tokens(), 3_000);
    /// ```
    pub fn default_recall_tokens(&self) -> u64 {
        let Some(total) = self.max_tokens else {
            return 0;
        };
        let summary = if self.summarize {
            self.summary_tokens
        } else {
            0
        };
        let room = total.saturating_sub(summary);
        if room < MIN_DEFAULT_RECALL_BUDGET {
            return 0;
        }
        // Below 2^63 / 1000 the product is exact; above it no budget is meant literally.
        (room.saturating_mul(DEFAULT_RECALL_PERMILLE) / 1_000).min(MAX_DEFAULT_RECALL_TOKENS)
    }

    /// The policy whose window holds the whole budget again: with recall on in conversation
    /// scope under a token budget and a sliding window, `max_tokens` plus `recall_tokens`,
    /// else `None`. Recall reserves its share only once the history outgrows the whole
    /// budget (`prepare`), so a store reads the window under this policy
    /// ([`Policy::window_read`]) for the selection to tell. (In tenant scope other
    /// conversations can be recalled whatever this one's length: the share stays reserved.)
    pub fn unreserved(&self) -> Option<Policy> {
        if self.recall_tokens == 0
            || self.trim != TrimMode::Sliding
            || self.recall_scope != RecallScope::Conversation
        {
            return None;
        }
        let window = self.max_tokens?;
        Some(Policy {
            max_tokens: Some(window.saturating_add(self.recall_tokens)),
            ..self.clone()
        })
    }

    /// The policy a store reads a context's window under: [`Policy::unreserved`] when there
    /// is one, else this policy.
    pub fn window_read(&self) -> Policy {
        self.unreserved().unwrap_or_else(|| self.clone())
    }

    /// True when some per-message cap is set.
    pub fn has_caps(&self) -> bool {
        self.user_max_chars.is_some()
            || self.assistant_max_chars.is_some()
            || self.tool_result_max_chars.is_some()
    }
}

/// Values given by the caller (flags, API fields, a conversation's stored policy); each one
/// set replaces the format default. This one type is the policy of every interface: clap
/// flags (feature `clap`), request bodies (serde), the MCP tools' JSON Schema (feature
/// `schemars`) and the OpenAPI document (feature `utoipa`) all derive from it, and the doc
/// comments below are their help texts. [`PolicyOverrides::apply`] is the one place its values
/// are checked.
///
/// Adding a field: add it here (with its doc comment and clap attribute), to [`Policy`] and to
/// `apply`; every interface picks it up.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
// The derived deserializer becomes an inherent function, wrapped by the trait impl below so
// that every error names its field, however deeply the policy is nested or flattened.
#[serde(remote = "Self", deny_unknown_fields)]
pub struct PolicyOverrides {
    /// Keep at most N most recent turns.
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<Count>,
    /// Keep at most N characters of history.
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<Count>,
    /// Keep at most N tokens of history.
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<Count>,
    /// Token counter: o200k (default), cl100k or chars4.
    #[cfg_attr(feature = "clap", arg(long, value_name = "T"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<Tokenizer>,
    /// Cap each user message at N characters (`... [truncated]`).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_max_chars: Option<Count>,
    /// Cap each assistant message at N characters (`... [truncated at N chars]`).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assistant_max_chars: Option<Count>,
    /// Cap each tool result at N characters (`... [truncated]`).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_result_max_chars: Option<Count>,
    /// Trim mode: sliding (default) or stable (prompt-cache friendly: the window start moves
    /// only when over budget).
    #[cfg_attr(feature = "clap", arg(long, value_name = "T"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trim: Option<TrimMode>,
    /// For stable trimming: the fraction of the budget to trim down to, in (0, 1] (default
    /// 0.6).
    #[cfg_attr(feature = "clap", arg(long, value_name = "F"))]
    #[cfg_attr(feature = "schemars", schemars(range(max = 1.0)))]
    #[cfg_attr(feature = "utoipa", schema(exclusive_minimum = 0.0, maximum = 1.0))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low_water: Option<f64>,
    /// Recall: reserve N of the max_tokens budget for earlier messages (older than the
    /// window) relevant to the newest user message (or to `query`), once the conversation no
    /// longer fits max_tokens whole; the window gets the rest. Unset: half of max_tokens, at
    /// most 3000 (none below 1000 tokens or without max_tokens). 0: no recall.
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recall_tokens: Option<Count>,
    /// Recall scope: conversation (default: this conversation's earlier messages) or tenant
    /// (also every other conversation of the same tenant).
    #[cfg_attr(feature = "clap", arg(long, value_name = "S"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recall_scope: Option<RecallScope>,
    /// Summaries: carry the conversation's committed summary of the messages older than the
    /// window (written by `recall compact`, or after chat turns), placed before the history;
    /// summary_tokens of max_tokens are reserved for it. `--summarize` alone means true.
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")
    )]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summarize: Option<bool>,
    /// Summaries: the most tokens a summary may take, its frame included (default 1000, at
    /// least 128); reserved out of max_tokens when summarize is on.
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_tokens: Option<Count>,
}

impl serde::Serialize for PolicyOverrides {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        PolicyOverrides::serialize(self, s)
    }
}

impl<'de> serde::Deserialize<'de> for PolicyOverrides {
    /// The derived reading, with each error prefixed by the field it is about (serde's own
    /// messages say what was wrong but not where, once the policy sits inside another
    /// object), and the values checked ([`PolicyOverrides::validate`]).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        use serde_json::{Map, Value};
        let map = Map::<String, Value>::deserialize(d)?;
        let whole = PolicyOverrides::deserialize(Value::Object(map.clone()));
        let p = match whole {
            Ok(p) => p,
            Err(e) => {
                // Find the field at fault: each one alone.
                for (k, v) in map {
                    let one = Map::from_iter([(k.clone(), v)]);
                    if let Err(e) = PolicyOverrides::deserialize(Value::Object(one)) {
                        let e = e.to_string();
                        return Err(if e.starts_with("unknown field") {
                            D::Error::custom(e)
                        } else {
                            D::Error::custom(format!("{k}: {e}"))
                        });
                    }
                }
                return Err(D::Error::custom(e));
            }
        };
        p.validate().map_err(D::Error::custom)?;
        Ok(p)
    }
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

/// A policy value that cannot be used. The message names the field (`low_water`), never a
/// flag, so every interface can show it as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidPolicy(pub String);

impl PolicyOverrides {
    /// Checks the values that their types alone do not bound.
    pub fn validate(&self) -> Result<(), InvalidPolicy> {
        if let Some(v) = self.low_water {
            if !(v > 0.0 && v <= 1.0) {
                return Err(InvalidPolicy(format!(
                    "low_water must be a fraction in (0, 1], got {v}"
                )));
            }
        }
        if let Some(v) = self.summary_tokens {
            if v.get() < MIN_SUMMARY_TOKENS {
                return Err(InvalidPolicy(format!(
                    "summary_tokens must be at least {}, got {v}",
                    MIN_SUMMARY_TOKENS
                )));
            }
        }
        Ok(())
    }

    /// True when no value is set.
    pub fn is_empty(&self) -> bool {
        *self == PolicyOverrides::default()
    }

    /// Applies these values over `base`.
    pub fn apply(&self, mut base: Policy) -> Result<Policy, InvalidPolicy> {
        self.validate()?;
        if let Some(v) = self.max_turns {
            base.max_turns = Some(v.as_usize());
        }
        if let Some(v) = self.max_chars {
            base.max_chars = Some(v.get());
        }
        if let Some(v) = self.max_tokens {
            base.max_tokens = Some(v.get());
        }
        if let Some(v) = self.tokenizer {
            base.tokenizer = v;
        }
        if let Some(v) = self.user_max_chars {
            base.user_max_chars = Some(v.as_usize());
        }
        if let Some(v) = self.assistant_max_chars {
            base.assistant_max_chars = Some(v.as_usize());
        }
        if let Some(v) = self.tool_result_max_chars {
            base.tool_result_max_chars = Some(v.as_usize());
        }
        if let Some(v) = self.trim {
            base.trim = v;
        }
        if let Some(v) = self.low_water {
            base.low_water = v;
        }
        if let Some(v) = self.recall_tokens {
            base.recall_tokens = v.get();
        }
        if let Some(v) = self.recall_scope {
            base.recall_scope = v;
        }
        if let Some(v) = self.summarize {
            base.summarize = v;
        }
        if let Some(v) = self.summary_tokens {
            base.summary_tokens = v.get();
        }
        Ok(base)
    }
}

/// A conversation's default policy, as stored with it: an optional format (used when a
/// request names none) and policy values over that format's defaults.
///
/// ```
/// use recall_core::policy::{ConversationPolicy, Format};
/// let p: ConversationPolicy = serde_json::from_str(r#"{"format":"xml","max_turns":10}"#).unwrap();
/// assert_eq!(p.format, Some(Format::Xml));
/// assert_eq!(serde_json::to_string(&p).unwrap(), r#"{"format":"xml","max_turns":10}"#);
/// ```
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "utoipa", schema(as = Policy))]
// No `deny_unknown_fields` here: the flattened `PolicyOverrides` is given every field this
// struct does not claim, and refuses the ones that are not policy fields.
pub struct ConversationPolicy {
    /// The format used when a request names none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<Format>,
    #[serde(flatten)]
    pub limits: PolicyOverrides,
}

impl ConversationPolicy {
    /// Checks the values as a context request's are, so that a bad policy is refused when it
    /// is set, not at every context built from the conversation later.
    pub fn validate(&self) -> Result<(), InvalidPolicy> {
        self.limits.validate()
    }
}

/// An output format (docs/FORMATS.md §5).
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

    /// The format's default policy (the table of docs/FORMATS.md §5).
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

/// JSON Schema and OpenAPI descriptions of the string enums, written by hand because their
/// serde forms are hand-written too (aliases like `o200k_base` are accepted on input).
#[cfg(any(feature = "schemars", feature = "utoipa"))]
mod schemas {
    use super::{Count, Format, RecallScope, Tokenizer, TrimMode};

    #[cfg(feature = "schemars")]
    mod json_schema {
        use super::*;
        use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
        use std::borrow::Cow;

        fn names(v: &[&str]) -> Schema {
            json_schema!({ "type": "string", "enum": v })
        }

        impl JsonSchema for Count {
            fn inline_schema() -> bool {
                true
            }
            fn schema_name() -> Cow<'static, str> {
                "Count".into()
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!({ "type": "integer", "minimum": 0, "maximum": Count::MAX })
            }
        }

        impl JsonSchema for Tokenizer {
            fn inline_schema() -> bool {
                true
            }
            fn schema_name() -> Cow<'static, str> {
                "Tokenizer".into()
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                names(&Tokenizer::ALL.map(Tokenizer::name))
            }
        }

        impl JsonSchema for TrimMode {
            fn inline_schema() -> bool {
                true
            }
            fn schema_name() -> Cow<'static, str> {
                "TrimMode".into()
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                names(&["sliding", "stable"])
            }
        }

        impl JsonSchema for RecallScope {
            fn inline_schema() -> bool {
                true
            }
            fn schema_name() -> Cow<'static, str> {
                "RecallScope".into()
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                names(&["conversation", "tenant"])
            }
        }

        impl JsonSchema for Format {
            fn inline_schema() -> bool {
                true
            }
            fn schema_name() -> Cow<'static, str> {
                "Format".into()
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                names(&Format::ALL.map(Format::name))
            }
        }
    }

    #[cfg(feature = "utoipa")]
    mod openapi {
        use super::*;
        use utoipa::openapi::schema::{
            KnownFormat, ObjectBuilder, Schema, SchemaFormat, SchemaType, Type,
        };
        use utoipa::openapi::RefOr;
        use utoipa::{PartialSchema, ToSchema};

        fn names(v: &[&str]) -> RefOr<Schema> {
            ObjectBuilder::new()
                .schema_type(SchemaType::new(Type::String))
                .enum_values(Some(v.iter().copied()))
                .into()
        }

        impl PartialSchema for Count {
            fn schema() -> RefOr<Schema> {
                ObjectBuilder::new()
                    .schema_type(SchemaType::new(Type::Integer))
                    .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
                    .minimum(Some(0))
                    .into()
            }
        }
        impl ToSchema for Count {}

        impl PartialSchema for Tokenizer {
            fn schema() -> RefOr<Schema> {
                names(&Tokenizer::ALL.map(Tokenizer::name))
            }
        }
        impl ToSchema for Tokenizer {}

        impl PartialSchema for TrimMode {
            fn schema() -> RefOr<Schema> {
                names(&["sliding", "stable"])
            }
        }
        impl ToSchema for TrimMode {}

        impl PartialSchema for RecallScope {
            fn schema() -> RefOr<Schema> {
                names(&["conversation", "tenant"])
            }
        }
        impl ToSchema for RecallScope {}

        impl PartialSchema for Format {
            fn schema() -> RefOr<Schema> {
                names(&Format::ALL.map(Format::name))
            }
        }
        impl ToSchema for Format {}
    }
}
