//! Sub-agent tasks: a task's description and context, its `conversation_history` validated
//! and capped, and the brief a sub-agent receives, whose history section is the `task` format
//! (docs/FORMATS.md §5.4; the brief the MCP `create_task` tool returns).
//!
//! Validation reuses [`crate::parse`] (the same warning texts, labelled
//! `conversation_history[i]`), caps reuse [`crate::select::cap_message`] with the `task`
//! format's default caps, and the history section is [`crate::render::render_task`].
//!
//! ```
//! use recall_core::task::{build_task, TaskInput};
//! let input = TaskInput {
//!     description: "Fix the JWT refresh bug".into(),
//!     conversation_history: Some(serde_json::json!([
//!         {"role": "user", "content": "Can you help me fix the authentication bug?"},
//!         {"role": "robot", "content": "beep"}
//!     ])),
//!     ..TaskInput::default()
//! };
//! let task = build_task(input).unwrap();
//! assert_eq!(task.conversation_history.len(), 1);
//! assert_eq!(
//!     task.validation_warnings,
//!     vec!["conversation_history[1] has invalid role 'robot', skipping"]
//! );
//! assert!(task.brief().contains(
//!     "💬 CONVERSATION HISTORY (Context leading to this task):\n\
//!      1. 👤 USER:\n   Can you help me fix the authentication bug?\n\n"
//! ));
//! ```

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use crate::context::system_text;
use crate::extract::{measure, task_text};
use crate::message::{Message, Role};
use crate::parse::{conversation_from_value, ParseOptions};
use crate::policy::Format;
use crate::render::{render_task, RenderInput};
use crate::select::{cap_message, Kept};
use crate::tokens::Tokenizer;

/// The label of `conversation_history` warnings.
pub const HISTORY_LABEL: &str = "conversation_history";

/// A task's priority, `P0` (most urgent) to `P4`; `P2` by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize)]
pub enum Priority {
    P0,
    P1,
    #[default]
    P2,
    P3,
    P4,
}

impl Priority {
    pub const ALL: [Priority; 5] = [
        Priority::P0,
        Priority::P1,
        Priority::P2,
        Priority::P3,
        Priority::P4,
    ];

    /// `P0` … `P4`.
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::P0 => "P0",
            Priority::P1 => "P1",
            Priority::P2 => "P2",
            Priority::P3 => "P3",
            Priority::P4 => "P4",
        }
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Priority {
    type Err = TaskError;
    fn from_str(s: &str) -> Result<Self, TaskError> {
        Priority::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| TaskError::Priority(s.to_string()))
    }
}

impl<'de> serde::Deserialize<'de> for Priority {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Why a task cannot be created.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TaskError {
    #[error("description is empty: say what the sub-agent must do")]
    EmptyDescription,
    #[error("invalid priority '{0}' (expected P0, P1, P2, P3 or P4)")]
    Priority(String),
}

/// A task as a caller gives it. `conversation_history` is any JSON value: whatever it holds
/// is validated leniently (invalid entries are skipped with a warning, never rejected).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskInput {
    pub description: String,
    pub priority: Priority,
    pub background_context: Option<String>,
    pub expected_deliverables: Option<Vec<String>>,
    pub success_criteria: Option<Vec<String>>,
    pub constraints: Option<Vec<String>>,
    pub relevant_files: Option<Vec<String>>,
    pub conversation_history: Option<Value>,
}

/// One message of a task's history, as stored: content stripped and capped (user 150
/// characters, assistant 8192, system never), `truncated` when a cap cut it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TaskMessage {
    #[serde(with = "role_name")]
    pub role: Role,
    pub content: String,
    pub truncated: bool,
}

mod role_name {
    use crate::message::Role;

    pub fn serialize<S: serde::Serializer>(r: &Role, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(r.as_str())
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Role, D::Error> {
        let s = <String as serde::Deserialize>::deserialize(d)?;
        Role::parse(&s).ok_or_else(|| serde::de::Error::custom(format!("unknown role '{s}'")))
    }
}

/// A validated task: what is stored and what the brief is rendered from.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Task {
    pub description: String,
    pub priority: Priority,
    pub background_context: Option<String>,
    pub expected_deliverables: Vec<String>,
    pub success_criteria: Vec<String>,
    pub constraints: Vec<String>,
    pub relevant_files: Vec<String>,
    pub conversation_history: Vec<TaskMessage>,
    /// Everything validation skipped or ignored, one line each.
    pub validation_warnings: Vec<String>,
}

impl Task {
    /// True when the task carries context beyond its description: background, deliverables,
    /// criteria, constraints, files or at least one valid history message.
    pub fn has_enhanced_context(&self) -> bool {
        self.background_context.is_some()
            || !self.expected_deliverables.is_empty()
            || !self.success_criteria.is_empty()
            || !self.constraints.is_empty()
            || !self.relevant_files.is_empty()
            || !self.conversation_history.is_empty()
    }

    /// The sub-agent's brief (see [`render_brief`]).
    pub fn brief(&self) -> String {
        render_brief(self)
    }
}

/// Validates a task: the description must have text; optional fields that are blank are
/// ignored with a warning; `conversation_history` is validated entry by entry (docs/FORMAT-DECISIONS.md, `create_task`).
pub fn build_task(input: TaskInput) -> Result<Task, TaskError> {
    let description = input.description.trim().to_string();
    if description.is_empty() {
        return Err(TaskError::EmptyDescription);
    }
    let mut warnings = Vec::new();
    let background_context = match input.background_context {
        Some(s) if s.trim().is_empty() => {
            warnings.push("background_context is empty, ignoring".to_string());
            None
        }
        Some(s) => Some(s.trim().to_string()),
        None => None,
    };
    let mut list = |name: &str, items: Option<Vec<String>>| -> Vec<String> {
        let Some(items) = items else {
            return Vec::new();
        };
        if items.is_empty() {
            warnings.push(format!("{name} is empty, ignoring"));
            return Vec::new();
        }
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.into_iter().enumerate() {
            let t = item.trim();
            if t.is_empty() {
                warnings.push(format!("{name}[{i}] is empty, skipping"));
            } else {
                out.push(t.to_string());
            }
        }
        out
    };
    let expected_deliverables = list("expected_deliverables", input.expected_deliverables);
    let success_criteria = list("success_criteria", input.success_criteria);
    let constraints = list("constraints", input.constraints);
    let relevant_files = list("relevant_files", input.relevant_files);
    let (conversation_history, mut history_warnings) = match input.conversation_history {
        // Absent and null are the same: no history.
        None | Some(Value::Null) => (Vec::new(), Vec::new()),
        Some(v) => validate_history(v),
    };
    warnings.append(&mut history_warnings);
    Ok(Task {
        description,
        priority: input.priority,
        background_context,
        expected_deliverables,
        success_criteria,
        constraints,
        relevant_files,
        conversation_history,
        validation_warnings: warnings,
    })
}

/// Validates and caps a `conversation_history` value (docs/FORMAT-DECISIONS.md,
/// `create_task`): not a list →
/// `conversation_history must be a list, ignoring invalid value`; an empty list →
/// `conversation_history is empty, ignoring`; each invalid entry is skipped with the
/// warning [`crate::parse`] gives it (`conversation_history[i] is not a dict, skipping`, …).
/// Every valid message is kept, in order: a brief has no reason to start on a user turn.
pub fn validate_history(value: Value) -> (Vec<TaskMessage>, Vec<String>) {
    let entries = match value {
        Value::Array(a) if a.is_empty() => {
            return (
                Vec::new(),
                vec![format!("{HISTORY_LABEL} is empty, ignoring")],
            );
        }
        Value::Array(a) => a,
        _ => {
            return (
                Vec::new(),
                vec![format!(
                    "{HISTORY_LABEL} must be a list, ignoring invalid value"
                )],
            );
        }
    };
    let opts = ParseOptions {
        strict: false,
        label: HISTORY_LABEL.to_string(),
    };
    // An array never fails to parse leniently; the error arm is unreachable in practice but
    // is reported rather than unwrapped.
    let conv = match conversation_from_value(Value::Array(entries), &opts) {
        Ok(c) => c,
        Err(e) => return (Vec::new(), vec![format!("{HISTORY_LABEL}: {e}")]),
    };
    let policy = Format::Task.default_policy();
    let mut warnings = conv.warnings;
    let mut out = Vec::with_capacity(conv.messages.len());
    for im in conv.messages {
        let m = im.message;
        let text = match m.role {
            // System text is the text blocks, as the system prompt is gathered elsewhere.
            Role::System => system_text(&m).trim().to_string(),
            _ => task_text(&m),
        };
        if text.is_empty() {
            // Valid input, but nothing a brief can show (tool results alone).
            warnings.push(format!(
                "{HISTORY_LABEL}[{}] has no text to show (tool results only), skipping",
                im.index
            ));
            continue;
        }
        let plain = Message::text(m.role, text);
        let (content, truncated) = match cap_message(&plain, &policy) {
            Some(capped) => (system_text(&capped), true),
            None => (system_text(&plain), false),
        };
        out.push(TaskMessage {
            role: m.role,
            content,
            truncated,
        });
    }
    (out, warnings)
}

/// The `task` history section of stored task messages (docs/FORMATS.md §5.4): system messages
/// first as one `SYSTEM` item, then every other message in order, as stored (caps were
/// applied when the task was created).
pub fn history_section(history: &[TaskMessage]) -> String {
    let system_parts: Vec<String> = history
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.content.clone())
        .collect();
    let kept: Vec<Kept> = history
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role != Role::System)
        .map(|(index, m)| {
            let message = Message::text(m.role, m.content.clone());
            Kept {
                index,
                measure: measure(&message, &Tokenizer::Chars4),
                message,
                truncated: m.truncated,
            }
        })
        .collect();
    render_task(&RenderInput {
        system_parts: &system_parts,
        kept: &kept,
        current: None,
        escape: false,
        recalled: None,
        summary: None,
    })
}

const RULE: &str =
    "================================================================================";

/// The sub-agent's brief: the mission (description) and priority, then, when the task has
/// context, a `TASK CONTEXT` block with background, deliverables, success criteria,
/// constraints, relevant files and the conversation history section (exactly
/// [`history_section`]). Ends with a newline.
///
/// ```text
/// 📝 YOUR MISSION:
/// Fix the JWT refresh bug
///
/// ⚡ PRIORITY: P1
///
/// ================================================================================
/// 🎯 TASK CONTEXT (Provided by task creator)
/// ================================================================================
///
/// 📋 BACKGROUND CONTEXT:
/// Recent deployment broke token refresh.
///
/// 💬 CONVERSATION HISTORY (Context leading to this task):
/// 1. 👤 USER:
///    It's in the token refresh endpoint.
///
/// ================================================================================
/// ```
pub fn render_brief(task: &Task) -> String {
    let mut out = format!(
        "📝 YOUR MISSION:\n{}\n\n⚡ PRIORITY: {}\n",
        task.description, task.priority
    );
    if !task.has_enhanced_context() {
        return out;
    }
    out.push('\n');
    out.push_str(RULE);
    out.push_str("\n🎯 TASK CONTEXT (Provided by task creator)\n");
    out.push_str(RULE);
    out.push_str("\n\n");
    if let Some(bg) = &task.background_context {
        out.push_str("📋 BACKGROUND CONTEXT:\n");
        out.push_str(bg);
        out.push_str("\n\n");
    }
    let lists: [(&str, &[String]); 4] = [
        ("📦 EXPECTED DELIVERABLES:", &task.expected_deliverables),
        ("✅ SUCCESS CRITERIA:", &task.success_criteria),
        ("🚧 CONSTRAINTS:", &task.constraints),
        ("📁 RELEVANT FILES:", &task.relevant_files),
    ];
    for (title, items) in lists {
        if items.is_empty() {
            continue;
        }
        out.push_str(title);
        out.push('\n');
        for item in items {
            out.push_str("- ");
            out.push_str(item);
            out.push('\n');
        }
        out.push('\n');
    }
    if !task.conversation_history.is_empty() {
        // Ends with an empty line already (each item does).
        out.push_str(&history_section(&task.conversation_history));
    }
    out.push_str(RULE);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn history(v: Value) -> (Vec<TaskMessage>, Vec<String>) {
        validate_history(v)
    }

    #[test]
    fn non_list_and_empty_list_are_ignored_with_the_seed_texts() {
        assert_eq!(
            history(json!("not a list")),
            (
                vec![],
                vec!["conversation_history must be a list, ignoring invalid value".to_string()]
            )
        );
        assert_eq!(
            history(json!({"role": "user", "content": "hi"})).1,
            vec!["conversation_history must be a list, ignoring invalid value"]
        );
        assert_eq!(
            history(json!([])),
            (
                vec![],
                vec!["conversation_history is empty, ignoring".to_string()]
            )
        );
    }

    #[test]
    fn null_history_is_no_history_without_warning() {
        let t = build_task(TaskInput {
            description: "d".into(),
            conversation_history: Some(Value::Null),
            ..TaskInput::default()
        })
        .expect("valid");
        assert!(t.validation_warnings.is_empty());
        assert!(!t.has_enhanced_context());
    }

    #[test]
    fn lone_assistant_message_is_kept_and_capped() {
        let (h, w) = history(json!([{"role": "assistant", "content": "x".repeat(10_000)}]));
        assert!(w.is_empty());
        assert_eq!(h.len(), 1);
        assert!(h[0].truncated);
        assert_eq!(
            h[0].content,
            format!("{}... [truncated at 8192 chars]", "x".repeat(8192))
        );
    }

    #[test]
    fn system_is_stripped_never_capped_and_rendered_first() {
        let long = "S".repeat(9000);
        let (h, _) = history(json!([
            {"role": "user", "content": "hi"},
            {"role": "system", "content": format!("  {long}  ")}
        ]));
        assert_eq!(h[1].content, long);
        assert!(!h[1].truncated);
        let s = history_section(&h);
        assert!(s.starts_with(&format!(
            "💬 CONVERSATION HISTORY (Context leading to this task):\n1. ⚙️ SYSTEM:\n   {long}\n\n2. 👤 USER:\n   hi\n\n"
        )));
    }

    #[test]
    fn tool_result_only_entries_are_skipped_with_a_reason() {
        let (h, w) = history(json!([
            {"role": "user", "content": "run it"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "run", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"}
        ]));
        assert_eq!(h.len(), 2);
        assert_eq!(h[1].content, "[used tool: run]");
        assert_eq!(
            w,
            vec!["conversation_history[2] has no text to show (tool results only), skipping"]
        );
    }

    #[test]
    fn blank_optional_fields_warn_and_count_for_nothing() {
        let t = build_task(TaskInput {
            description: "  Do it  ".into(),
            background_context: Some("   ".into()),
            expected_deliverables: Some(vec![]),
            constraints: Some(vec!["keep API".into(), " ".into()]),
            ..TaskInput::default()
        })
        .expect("valid");
        assert_eq!(t.description, "Do it");
        assert_eq!(
            t.validation_warnings,
            vec![
                "background_context is empty, ignoring",
                "expected_deliverables is empty, ignoring",
                "constraints[1] is empty, skipping",
            ]
        );
        assert_eq!(t.constraints, vec!["keep API"]);
        assert!(t.has_enhanced_context());
    }

    #[test]
    fn empty_description_is_an_error() {
        let e = build_task(TaskInput {
            description: " \n ".into(),
            ..TaskInput::default()
        })
        .unwrap_err();
        assert_eq!(e, TaskError::EmptyDescription);
    }

    #[test]
    fn priority_parses_and_rejects() {
        assert_eq!("P0".parse::<Priority>(), Ok(Priority::P0));
        assert_eq!(Priority::default(), Priority::P2);
        assert_eq!(
            "P5".parse::<Priority>().unwrap_err().to_string(),
            "invalid priority 'P5' (expected P0, P1, P2, P3 or P4)"
        );
    }

    #[test]
    fn brief_without_context_is_mission_and_priority() {
        let t = build_task(TaskInput {
            description: "Write docs".into(),
            priority: Priority::P3,
            ..TaskInput::default()
        })
        .expect("valid");
        assert_eq!(
            t.brief(),
            "📝 YOUR MISSION:\nWrite docs\n\n⚡ PRIORITY: P3\n"
        );
    }

    #[test]
    fn brief_with_every_section() {
        let t = build_task(TaskInput {
            description: "Fix the JWT refresh bug".into(),
            priority: Priority::P1,
            background_context: Some("Recent deployment broke token refresh.".into()),
            expected_deliverables: Some(vec!["Root cause".into(), "Fix".into()]),
            success_criteria: Some(vec!["No 401 on refresh".into()]),
            constraints: Some(vec!["No schema change".into()]),
            relevant_files: Some(vec!["src/auth/jwt.rs".into()]),
            conversation_history: Some(json!([
                {"role": "user", "content": "It's in the token refresh endpoint."}
            ])),
        })
        .expect("valid");
        let rule = "=".repeat(80);
        assert_eq!(
            t.brief(),
            format!(
                "📝 YOUR MISSION:\nFix the JWT refresh bug\n\n⚡ PRIORITY: P1\n\n\
                 {rule}\n🎯 TASK CONTEXT (Provided by task creator)\n{rule}\n\n\
                 📋 BACKGROUND CONTEXT:\nRecent deployment broke token refresh.\n\n\
                 📦 EXPECTED DELIVERABLES:\n- Root cause\n- Fix\n\n\
                 ✅ SUCCESS CRITERIA:\n- No 401 on refresh\n\n\
                 🚧 CONSTRAINTS:\n- No schema change\n\n\
                 📁 RELEVANT FILES:\n- src/auth/jwt.rs\n\n\
                 💬 CONVERSATION HISTORY (Context leading to this task):\n\
                 1. 👤 USER:\n   It's in the token refresh endpoint.\n\n\
                 {rule}\n"
            )
        );
    }

    #[test]
    fn task_round_trips_through_json() {
        let t = build_task(TaskInput {
            description: "d".into(),
            conversation_history: Some(json!([
                {"role": "user", "content": "u".repeat(151)},
                {"role": "system", "content": "s"}
            ])),
            ..TaskInput::default()
        })
        .expect("valid");
        let v = serde_json::to_value(&t).expect("serialise");
        assert_eq!(v["priority"], "P2");
        assert_eq!(v["conversation_history"][0]["role"], "user");
        assert_eq!(v["conversation_history"][0]["truncated"], true);
        let back: Task = serde_json::from_value(v).expect("deserialise");
        assert_eq!(back, t);
    }
}
