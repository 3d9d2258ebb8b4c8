//! Parsing the CLI's `--output-format stream-json --verbose --include-partial-messages` stdout
//! (recorded in `tests/data/`), one JSON object per line.
//!
//! - `stream_event` lines carry raw Anthropic events: the main source of content.
//! - `assistant` lines carry whole messages, possibly several per `message.id`. They are used
//!   only for what the stream did not deliver: tool calls not seen in the stream, and the
//!   whole content of messages that were not streamed (deduplicated block by block).
//! - `user` lines carry results of the CLI's own tools.
//! - The `result` line ends the turn; `is_error` is always checked.
//! - Unknown types, sub-agent lines and non-JSON lines are skipped.

use std::collections::HashSet;
use std::process::ExitStatus;

use serde::Deserialize;
use serde_json::Value;

use crate::anthropic::{MessageStream, Step, StreamEvent, WireUsage};
use crate::error::{redact, BackendError, BackendErrorKind};
use crate::event::{BackendEvent, Usage};

/// Parser state for one CLI run.
pub(crate) struct CliParser {
    stream: MessageStream,
    /// Message ids that had a `message_start` stream event.
    streamed_ids: HashSet<String>,
    /// Blocks already taken from `assistant` lines (message id + block JSON).
    seen_blocks: HashSet<String>,
    /// Some content event has been produced.
    output_delivered: bool,
    /// The `error` of an `assistant` line (for example `authentication_failed`), and that
    /// message's text.
    assistant_error: Option<(String, String)>,
    secret: Option<String>,
}

impl CliParser {
    /// A parser; `secret` is redacted from error messages.
    pub(crate) fn new(secret: Option<String>) -> Self {
        CliParser {
            stream: MessageStream::new(secret.clone(), "ANTHROPIC_API_KEY"),
            streamed_ids: HashSet::new(),
            seen_blocks: HashSet::new(),
            output_delivered: false,
            assistant_error: None,
            secret,
        }
    }

    /// Handles one stdout line, pushing its events to `out`. Returns the terminal event when
    /// the line was the `result` line.
    /// Bytes held for tool calls whose input is still streaming.
    pub(crate) fn pending_bytes(&self) -> usize {
        self.stream.pending_bytes()
    }

    pub(crate) fn line(
        &mut self,
        line: &[u8],
        out: &mut Vec<BackendEvent>,
    ) -> Option<BackendEvent> {
        let text = line.trim_ascii();
        if text.is_empty() {
            return None;
        }
        let v: Value = match serde_json::from_slice(text) {
            Ok(v) => v,
            Err(_) => {
                tracing::debug!("skipping a non-JSON line from the Claude Code CLI");
                return None;
            }
        };
        let sub_agent = v.get("parent_tool_use_id").is_some_and(|p| !p.is_null());
        let start = out.len();
        let terminal = match v.get("type").and_then(Value::as_str).unwrap_or("") {
            "stream_event" if !sub_agent => {
                self.stream_event(&v, out);
                None
            }
            "assistant" if !sub_agent => {
                self.assistant(&v, out);
                None
            }
            "user" if !sub_agent => {
                self.user(&v, out);
                None
            }
            "result" => Some(self.result(&v, out)),
            "system" => {
                if v.get("subtype").and_then(Value::as_str) == Some("api_retry") {
                    let attempt = v.get("attempt").and_then(Value::as_u64);
                    let error = v.get("error").and_then(Value::as_str).unwrap_or("");
                    tracing::info!(
                        ?attempt,
                        error,
                        "the Claude Code CLI is retrying an API call"
                    );
                }
                None
            }
            _ => None,
        };
        if out[start..].iter().any(BackendEvent::is_output) {
            self.output_delivered = true;
        }
        terminal
    }

    fn stream_event(&mut self, v: &Value, out: &mut Vec<BackendEvent>) {
        let Some(ev) = v.get("event") else { return };
        let ev = match StreamEvent::deserialize(ev) {
            Ok(ev) => ev,
            Err(e) => {
                tracing::debug!(error = %e, "skipping a malformed stream_event");
                return;
            }
        };
        if let StreamEvent::MessageStart { message } = &ev {
            if let Some(id) = &message.id {
                self.streamed_ids.insert(id.clone());
            }
        }
        if let Step::Error(e) = self.stream.handle(ev, out) {
            // The CLI retries API errors itself; its `result` line tells the outcome.
            tracing::info!(error = %e, "the Claude Code CLI reported a stream error");
        }
    }

    fn assistant(&mut self, v: &Value, out: &mut Vec<BackendEvent>) {
        let Some(msg) = v.get("message") else { return };
        let error = v.get("error").and_then(Value::as_str);
        let synthetic = msg.get("model").and_then(Value::as_str) == Some("<synthetic>");
        if error.is_some() || synthetic {
            // An error the CLI shows as a message ("Invalid API key · Please run /login"):
            // not reply content. Keep it to explain the `result` line.
            let text = block_texts(msg.get("content"));
            self.assistant_error = Some((error.unwrap_or("synthetic").to_string(), text));
            return;
        }
        let msg_id = msg.get("id").and_then(Value::as_str).unwrap_or("");
        let streamed = self.streamed_ids.contains(msg_id);
        let Some(content) = msg.get("content").and_then(Value::as_array) else {
            return;
        };
        for block in content {
            let ty = block.get("type").and_then(Value::as_str).unwrap_or("");
            let s = |k: &str| {
                block
                    .get(k)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            if ty == "tool_use" {
                let id = s("id");
                if !id.is_empty() && !self.stream.knows_tool(&id) {
                    self.stream.emitted_tools.insert(id.clone());
                    out.push(BackendEvent::ToolUse {
                        id,
                        name: s("name"),
                        input: block.get("input").cloned().unwrap_or(Value::Null),
                    });
                }
                continue;
            }
            if streamed || !matches!(ty, "text" | "thinking" | "redacted_thinking") {
                continue;
            }
            if !self.seen_blocks.insert(format!("{msg_id}\u{0}{block}")) {
                continue;
            }
            match ty {
                "text" => {
                    let t = s("text");
                    if !t.is_empty() {
                        out.push(BackendEvent::TextDelta(t));
                    }
                }
                "thinking" => {
                    let t = s("thinking");
                    if !t.is_empty() {
                        out.push(BackendEvent::ThinkingDelta(t));
                    }
                    let sig = s("signature");
                    if !sig.is_empty() {
                        out.push(BackendEvent::ThinkingSignature(sig));
                    }
                }
                _ => out.push(BackendEvent::RedactedThinking(s("data"))),
            }
        }
        if !streamed {
            if let Some(u) = msg
                .get("usage")
                .and_then(|u| WireUsage::deserialize(u).ok())
            {
                let u = Usage::from(u);
                if !u.is_empty() {
                    out.push(BackendEvent::Usage(u));
                }
            }
        }
    }

    fn user(&mut self, v: &Value, out: &mut Vec<BackendEvent>) {
        let Some(content) = v
            .get("message")
            .and_then(|m| m.get("content"))
            .and_then(Value::as_array)
        else {
            return;
        };
        for block in content {
            if block.get("type").and_then(Value::as_str) != Some("tool_result") {
                continue;
            }
            let content = match block.get("content") {
                Some(Value::String(s)) => s.clone(),
                other => block_texts(other),
            };
            out.push(BackendEvent::ToolResult {
                tool_use_id: block
                    .get("tool_use_id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                content,
                is_error: block
                    .get("is_error")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            });
        }
    }

    fn result(&mut self, v: &Value, out: &mut Vec<BackendEvent>) -> BackendEvent {
        let subtype = v.get("subtype").and_then(Value::as_str).unwrap_or("");
        let is_error = v.get("is_error").and_then(Value::as_bool).unwrap_or(false)
            || subtype.starts_with("error");
        let result_text = v.get("result").and_then(Value::as_str).unwrap_or("");
        if is_error {
            let mut text = result_text.trim().to_string();
            if text.is_empty() {
                text = match v.get("errors").and_then(Value::as_array) {
                    Some(errs) => errs
                        .iter()
                        .map(|e| match e {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        })
                        .collect::<Vec<_>>()
                        .join("; "),
                    None => String::new(),
                };
            }
            if text.is_empty() {
                text = self
                    .assistant_error
                    .as_ref()
                    .map(|(_, t)| t.clone())
                    .filter(|t| !t.is_empty())
                    .unwrap_or_else(|| {
                        if subtype.is_empty() {
                            "unknown error".into()
                        } else {
                            subtype.to_string()
                        }
                    });
            }
            let text = redact(&text, self.secret.as_deref());
            let status = v.get("api_error_status").and_then(Value::as_u64);
            let auth = status == Some(401)
                || self.assistant_error.as_ref().map(|(e, _)| e.as_str())
                    == Some("authentication_failed")
                || looks_like_auth(&text);
            let kind = if auth {
                BackendErrorKind::CliAuth { detail: text }
            } else {
                BackendErrorKind::Cli { message: text }
            };
            return BackendEvent::Error(BackendError::new(kind));
        }
        if !self.output_delivered && !result_text.is_empty() {
            out.push(BackendEvent::TextDelta(result_text.to_string()));
        }
        if let Some(u) = v.get("usage").and_then(|u| WireUsage::deserialize(u).ok()) {
            let u = Usage::from(u);
            if !u.is_empty() {
                out.push(BackendEvent::Usage(u));
            }
        }
        let stop_reason = v
            .get("stop_reason")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| self.stream.stop_reason.clone());
        BackendEvent::Done { stop_reason }
    }

    /// The error for a CLI whose stdout ended without a `result` line.
    pub(crate) fn eof_error(&self, status: Option<ExitStatus>, stderr: &str) -> BackendError {
        let auth_hint = self
            .assistant_error
            .as_ref()
            .is_some_and(|(e, _)| e == "authentication_failed");
        if auth_hint || looks_like_auth(stderr) {
            let detail = if stderr.is_empty() {
                self.assistant_error
                    .as_ref()
                    .map(|(_, t)| redact(t, self.secret.as_deref()))
                    .unwrap_or_default()
            } else {
                stderr.to_string()
            };
            return BackendError::new(BackendErrorKind::CliAuth { detail });
        }
        let how = match status {
            Some(s) if s.success() => "exited without a result".to_string(),
            Some(s) => match s.code() {
                Some(code) => format!("exited with status {code}"),
                None => signal_text(&s),
            },
            None => "did not exit after closing its output and was killed".to_string(),
        };
        let message = if stderr.is_empty() {
            how
        } else {
            format!("{how}: {stderr}")
        };
        BackendError::new(BackendErrorKind::Cli { message })
    }
}

#[cfg(unix)]
fn signal_text(s: &ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match s.signal() {
        Some(sig) => format!("was killed by signal {sig}"),
        None => format!("exited ({s})"),
    }
}

#[cfg(not(unix))]
fn signal_text(s: &ExitStatus) -> String {
    format!("exited ({s})")
}

/// The texts of a content array (`text` blocks), joined with `"\n"`.
fn block_texts(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// True when a CLI message reads like missing or rejected credentials.
pub(crate) fn looks_like_auth(text: &str) -> bool {
    let t = text.to_lowercase();
    [
        "not logged in",
        "invalid api key",
        "/login",
        "authentication_error",
        "authentication failed",
        "authentication_failed",
        "oauth token",
        "unauthorized",
    ]
    .iter()
    .any(|m| t.contains(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECORDED: &str =
        include_str!("../../tests/data/claude-cli-2.1.197-stream-json-partial.jsonl");

    fn run(text: &str) -> (Vec<BackendEvent>, Option<BackendEvent>) {
        let mut p = CliParser::new(Some("sk-secret".into()));
        let mut out = Vec::new();
        let mut terminal = None;
        for line in text.lines() {
            if let Some(t) = p.line(line.as_bytes(), &mut out) {
                terminal = Some(t);
            }
        }
        (out, terminal)
    }

    #[test]
    fn recorded_stream_gives_the_text_once() {
        let (out, terminal) = run(RECORDED);
        let text: String = out
            .iter()
            .filter_map(|e| match e {
                BackendEvent::TextDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, "Hello from fake");
        assert_eq!(
            terminal,
            Some(BackendEvent::Done {
                stop_reason: Some("end_turn".into())
            })
        );
    }

    #[test]
    fn unstreamed_assistant_lines_are_used_and_deduplicated() {
        let line = r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"Hi"}]},"parent_tool_use_id":null}"#;
        let again = r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Hi"},{"type":"tool_use","id":"t1","name":"f","input":{"a":1}}]},"parent_tool_use_id":null}"#;
        let result = r#"{"type":"result","subtype":"success","is_error":false,"result":"Hi","stop_reason":"tool_use"}"#;
        let (out, terminal) = run(&[line, again, "not json", result].join("\n"));
        assert_eq!(
            out,
            vec![
                BackendEvent::ThinkingDelta("hm".into()),
                BackendEvent::ThinkingSignature("s".into()),
                BackendEvent::TextDelta("Hi".into()),
                BackendEvent::ToolUse {
                    id: "t1".into(),
                    name: "f".into(),
                    input: serde_json::json!({"a": 1})
                },
            ]
        );
        assert_eq!(
            terminal,
            Some(BackendEvent::Done {
                stop_reason: Some("tool_use".into())
            })
        );
    }

    #[test]
    fn streamed_tool_use_is_not_repeated_by_the_assistant_line() {
        let lines = [
            r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"m2","usage":{"input_tokens":3}}}}"#,
            r#"{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t9","name":"g","input":{}}}}"#,
            r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"q\":2}"}}}"#,
            r#"{"type":"assistant","message":{"id":"m2","content":[{"type":"tool_use","id":"t9","name":"g","input":{"q":2}}]}}"#,
            r#"{"type":"stream_event","event":{"type":"content_block_stop","index":0}}"#,
        ];
        let (out, _) = run(&lines.join("\n"));
        let tools = out
            .iter()
            .filter(|e| matches!(e, BackendEvent::ToolUse { .. }))
            .count();
        assert_eq!(tools, 1, "{out:?}");
    }

    #[test]
    fn error_results_are_classified_and_redacted() {
        let (_, t) = run(
            r#"{"type":"result","subtype":"success","is_error":true,"result":"Not logged in · Please run /login"}"#,
        );
        assert!(matches!(
            t,
            Some(BackendEvent::Error(BackendError {
                kind: BackendErrorKind::CliAuth { .. },
                ..
            }))
        ));
        let (_, t) = run(
            r#"{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["boom sk-secret"]}"#,
        );
        match t {
            Some(BackendEvent::Error(e)) => {
                assert_eq!(e.to_string(), "Claude Code CLI failed: boom [redacted]")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn synthetic_error_message_is_not_content() {
        let (out, t) = run(&[
            r#"{"type":"assistant","message":{"id":"x","model":"<synthetic>","content":[{"type":"text","text":"Invalid API key · Please run /login"}]},"error":"authentication_failed"}"#,
            r#"{"type":"result","subtype":"success","is_error":true,"result":"Invalid API key · Please run /login"}"#,
        ]
        .join("\n"));
        assert!(out.is_empty(), "{out:?}");
        assert!(matches!(
            t,
            Some(BackendEvent::Error(BackendError {
                kind: BackendErrorKind::CliAuth { .. },
                ..
            }))
        ));
    }
}
