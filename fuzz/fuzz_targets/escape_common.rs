//! Shared by the `escape_*` targets (docs/FUZZING.md): arbitrary bytes become a conversation
//! whose every text is fuzzer input; it is selected with the format's default limits,
//! rendered with escaping on, and read back with the readers of
//! `crates/recall-core/tests/support/readers.rs`, the ones property d uses. The turns read
//! back must be exactly the real ones (and, for `xml`, the current message the real one).
//!
//! Input layout: the bytes are decoded lossily as UTF-8 and split at U+0001. The last
//! segment is the `xml` current message (left out of the history in every target, so each
//! target sees the same history for the same input). Every other segment is one item: its
//! first character chooses the kind (its code point modulo 8), the rest is the text; the same
//! character's code point divided by 8, modulo 4, puts the text into a recalled excerpt too
//! (1: a user's, 2: an assistant's) or into the summary (3). The recalled section and the
//! summary, escaped, are read back with `read_section` and must appear verbatim in the prompt
//! wherever the format places them.

use recall_core::context::stable_start_of;
use recall_core::message::{Block, DocumentKind, Message, Role, ToolResultContent};
use recall_core::policy::{Format, RecallScope};
use recall_core::recall::{render_section, RecalledMessage};
use recall_core::summary::{render_summary, Summary};
use recall_core::render::{render, RenderInput};
use recall_core::select::{select, HistoryMessage};
use recall_core::tokens::Tokenizer;
use serde_json::json;

use crate::readers;

struct Case {
    system: Vec<String>,
    history: Vec<Message>,
    current: String,
    recalled: Vec<RecalledMessage>,
    summary: Vec<String>,
}

fn tool_pair(
    i: usize,
    say: &str,
    name: &str,
    result: &str,
    user_text: Option<&str>,
) -> [Message; 2] {
    let id = format!("t{i}");
    let mut results = vec![Block::ToolResult {
        tool_use_id: id.clone(),
        content: ToolResultContent::Text(result.to_string()),
        is_error: None,
    }];
    if let Some(t) = user_text {
        results.push(Block::Text {
            text: t.to_string(),
        });
    }
    [
        Message::blocks(
            Role::Assistant,
            vec![
                Block::Text {
                    text: say.to_string(),
                },
                Block::ToolUse {
                    id,
                    name: name.to_string(),
                    input: json!({}),
                },
            ],
        ),
        Message::blocks(Role::User, results),
    ]
}

fn case(data: &[u8]) -> Case {
    let text = String::from_utf8_lossy(data);
    let mut segs: Vec<&str> = text.split('\u{1}').collect();
    let current = segs.pop().unwrap_or_default().to_string();
    let mut c = Case {
        system: Vec::new(),
        history: Vec::new(),
        current,
        recalled: Vec::new(),
        summary: Vec::new(),
    };
    for (i, seg) in segs.into_iter().enumerate() {
        let mut chars = seg.chars();
        let Some(kind) = chars.next() else {
            continue;
        };
        let t = chars.as_str();
        let quoted = |role| RecalledMessage {
            conversation_id: None,
            seq: i as i64 + 1,
            score: 1.0,
            hit: true,
            message: Message::text(role, t),
            at: None,
            tokens: 0,
        };
        match kind as u32 / 8 % 4 {
            1 => c.recalled.push(quoted(Role::User)),
            2 => c.recalled.push(quoted(Role::Assistant)),
            3 => c.summary.push(t.to_string()),
            _ => {}
        }
        match kind as u32 % 8 {
            0 | 1 => c.history.push(Message::text(Role::User, t)),
            2 | 3 => c.history.push(Message::text(Role::Assistant, t)),
            4 => c.system.push(t.to_string()),
            // The text as the tool's name and its result.
            5 => c.history.extend(tool_pair(i, "calling", t, t, None)),
            // The text as a document's title, next to the same text.
            6 => c.history.push(Message::blocks(
                Role::User,
                vec![
                    Block::Text {
                        text: t.to_string(),
                    },
                    Block::Document {
                        kind: DocumentKind::Document,
                        label: t.to_string(),
                        raw: json!({"type": "document", "title": t, "source": {}}),
                    },
                ],
            )),
            // A result held by a user turn that has text too (xml moves it).
            _ => c.history.extend(tool_pair(i, t, "act", t, Some(t))),
        }
    }
    c
}

/// Renders the input in `format` and checks the reader finds exactly the real turns.
pub fn check(format: Format, data: &[u8]) {
    let mut c = case(data);
    let mut policy = format.default_policy();
    policy.tokenizer = Tokenizer::Chars4;
    let h: Vec<HistoryMessage> = std::mem::take(&mut c.history)
        .into_iter()
        .enumerate()
        .map(|(i, m)| HistoryMessage::new(i, m, &policy.tokenizer))
        .collect();
    let ws = stable_start_of(&h, &policy);
    let s = select(&h, &policy, &policy.tokenizer, ws);
    let input = RenderInput {
        system_parts: &c.system,
        kept: &s.kept,
        current: Some(&c.current),
        escape: true,
        recalled: None,
        summary: None,
    };
    let out = render(format, &input).to_text();
    check_sections(format, &c, &input);
    match format {
        Format::Transcript => {
            let read = readers::read_transcript(&out).unwrap_or_else(|e| fail(&e, &out));
            assert_eq!(read, readers::transcript_turns(&s.kept), "{out:?}");
        }
        Format::Bracket => {
            let read = readers::read_bracket(&out).unwrap_or_else(|e| fail(&e, &out));
            assert_eq!(read, readers::bracket_parts(&c.system, &s.kept), "{out:?}");
        }
        Format::Xml => {
            let read = readers::read_xml(&out).unwrap_or_else(|e| fail(&e, &out));
            assert_eq!(read.turns, readers::xml_turns(&s.kept), "{out:?}");
            assert!(
                readers::same_but_backslashes(read.current, &c.current),
                "current {:?} is not {:?}",
                read.current,
                c.current
            );
        }
        Format::Task => {
            let read = readers::read_task(&out).unwrap_or_else(|e| fail(&e, &out));
            assert_eq!(read, readers::task_items(&c.system, &s.kept), "{out:?}");
        }
        Format::Anthropic | Format::Openai => unreachable!("not a text format"),
    }
}

/// The recalled section and the summary: each read back as a section holding what was put
/// in it, and placed verbatim (a text renderer inserts them as they are).
fn check_sections(format: Format, c: &Case, input: &RenderInput<'_>) {
    let recalled = render_section(&c.recalled, RecallScope::Conversation, true);
    let summary = (!c.summary.is_empty()).then(|| {
        render_summary(
            &Summary {
                from_seq: 1,
                to_seq: 1,
                text: c.summary.join("\n"),
            },
            true,
        )
    });
    if !recalled.is_empty() {
        let read = readers::read_section(&recalled).unwrap_or_else(|e| fail(&e, &recalled));
        let excerpts = c.recalled.len();
        assert_eq!(read, readers::SectionRead::Recalled { excerpts }, "{recalled:?}");
    }
    if let Some(s) = &summary {
        let read = readers::read_section(s).unwrap_or_else(|e| fail(&e, s));
        assert_eq!(read, readers::SectionRead::Summary, "{s:?}");
    }
    let with = RenderInput {
        recalled: Some(&recalled),
        summary: summary.as_deref(),
        ..*input
    };
    let out = render(format, &with).to_text();
    if let Some(s) = &summary {
        assert!(out.contains(s.as_str()), "summary not placed verbatim: {out:?}");
    }
    // The recalled section goes before the newest user message, when there is one (always in
    // `xml`, before the current message).
    if !recalled.is_empty() && (format == Format::Xml || input.newest_user().is_some()) {
        assert!(out.contains(&recalled), "recalled section not placed: {out:?}");
    }
}

fn fail(e: &str, out: &str) -> ! {
    panic!("{e}\n---- prompt ----\n{out:?}")
}
