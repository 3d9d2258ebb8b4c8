//! Recall (issue 21) on conversations held in memory: the placement bytes of every format
//! (insta snapshots, documented in docs/FORMAT-DECISIONS.md "Recall") and the invariants
//! (proptest): no byte before the newest user message changes, a recalled message is never
//! in the window, the budget holds.
//!
//! Regenerate with `INSTA_UPDATE=always cargo test -p recall-core --test recall`.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use serde_json::{json, Value};

use recall_core::message::{Block, Message, Role, ToolResultContent};
use recall_core::parse::{Conversation, InputMessage};
use recall_core::policy::{Count, RecallScope};
use recall_core::recall::RECALL_OPEN;
use recall_core::tokens::{TokenCounter, Tokenizer};
use recall_core::{
    build_context, parse_conversation, ContextOutput, ContextRequest, Format, ParseOptions,
    PolicyOverrides, Prompt,
};

/// A conversation whose early part holds the answer to its last question.
const LONG: &str = r#"[
  {"role": "user", "content": "My sister Ana moved to Lisbon last spring."},
  {"role": "assistant", "content": "Lisbon is lovely in spring. Is she enjoying it?"},
  {"role": "user", "content": "Yes. Can you help me plan a garden?"},
  {"role": "assistant", "content": "Sure: start with tomatoes, basil and some marigolds."},
  {"role": "user", "content": "What should I water first?"},
  {"role": "assistant", "content": "Water the tomatoes first, at the roots, in the morning."},
  {"role": "user", "content": "And a recipe for dinner tonight?"},
  {"role": "assistant", "content": "A tomato and basil pasta from the garden would fit."},
  {"role": "user", "content": "Where does my sister Ana live now?"}
]"#;

fn conv(input: &str) -> Conversation {
    parse_conversation(input, &ParseOptions::strict()).expect("parses")
}

fn recall_overrides(max: u32, recall: u32) -> PolicyOverrides {
    PolicyOverrides {
        max_tokens: Some(Count::from(max)),
        recall_tokens: Some(Count::from(recall)),
        tokenizer: Some(Tokenizer::O200k),
        ..PolicyOverrides::default()
    }
}

fn snapshot_text(out: &ContextOutput) -> String {
    let prompt = match &out.prompt {
        Prompt::Text(s) => s.clone(),
        Prompt::Json(v) => serde_json::to_string_pretty(v).expect("serialises"),
    };
    let stats = serde_json::to_string(&out.stats).expect("stats serialise");
    format!(
        "format: {}\n==== prompt ====\n{prompt}«EOF»\n==== stats ====\n{stats}\n",
        out.format
    )
}

#[test]
fn placement_in_every_format() {
    let c = conv(LONG);
    for format in Format::ALL {
        let mut req = ContextRequest::new(format);
        // A window of the last question and the exchange before it (60 tokens), in a budget
        // the whole conversation (113 tokens in xml, 125 in the others) no longer fits.
        req.overrides = recall_overrides(112, 52);
        let out = build_context(&c, &req).expect("builds");
        let r = out.stats.recalled.as_ref().expect("recall stats");
        assert!(
            r.messages.iter().any(|m| m.seq == 1 && m.hit),
            "{format}: {r:?}"
        );
        insta::assert_snapshot!(format!("placement__{}", format.name()), snapshot_text(&out));
    }
}

#[test]
fn tenant_scope_in_memory_and_explicit_query() {
    let c = conv(LONG);
    let mut req = ContextRequest::new(Format::Transcript);
    req.overrides = recall_overrides(80, 60);
    req.overrides.recall_scope = Some(RecallScope::Tenant);
    req.query = Some("tomatoes roots morning".into());
    let out = build_context(&c, &req).expect("builds");
    let r = out.stats.recalled.as_ref().expect("recall stats");
    assert_eq!(r.terms, ["tomatoes", "roots", "morning"]);
    assert!(r.messages.iter().any(|m| m.seq == 6 && m.hit), "{r:?}");
    insta::assert_snapshot!("tenant_query__transcript", snapshot_text(&out));
}

#[test]
fn recall_share_must_leave_the_window_something() {
    let c = conv(LONG);
    let mut req = ContextRequest::new(Format::Transcript);
    req.overrides = recall_overrides(100, 100);
    let e = build_context(&c, &req).expect_err("refused");
    assert!(e
        .to_string()
        .contains("recall_tokens (100) must be less than max_tokens (100)"));
}

#[test]
fn the_window_is_the_budget_less_the_recall_share_even_when_nothing_is_recalled() {
    let c = conv(LONG);
    let mut with = ContextRequest::new(Format::Transcript);
    with.overrides = recall_overrides(80, 60);
    with.query = Some("zzz".into());
    let mut without = ContextRequest::new(Format::Transcript);
    without.overrides = PolicyOverrides {
        max_tokens: Some(Count::from(20)),
        ..PolicyOverrides::default()
    };
    let a = build_context(&c, &with).expect("builds");
    let b = build_context(&c, &without).expect("builds");
    assert_eq!(a.prompt, b.prompt);
    assert_eq!(a.stats.recalled.as_ref().map(|r| r.messages.len()), Some(0));
}

#[test]
fn messages_for_a_backend_carry_the_section_in_the_newest_user_message() {
    let c = conv(LONG);
    for format in [Format::Anthropic, Format::Xml, Format::Transcript] {
        let mut req = ContextRequest::new(format);
        req.overrides = recall_overrides(80, 60);
        let out = build_context(&c, &req).expect("builds");
        let msgs = out.messages();
        let last = msgs.last().expect("messages");
        let first_block = last.block_slice().first().cloned();
        match first_block {
            Some(Block::Text { text }) => assert!(text.starts_with(RECALL_OPEN), "{format}"),
            other => panic!("{format}: {other:?}"),
        }
        // Every other message is as selected.
        for (m, k) in msgs.iter().zip(&out.kept).take(msgs.len() - 1) {
            assert_eq!(m, &k.message);
        }
    }
}

// ---- properties ----

const WORDS: [&str; 12] = [
    "apple", "banana", "cherry", "delta", "echo", "falcon", "garden", "harbor", "island", "jungle",
    "kettle", "lemon",
];

fn sentence() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(&WORDS[..]), 1..8).prop_map(|w| w.join(" "))
}

/// A turn: a user message and a reply, sometimes through a tool pair.
fn turn() -> impl Strategy<Value = Vec<Message>> {
    (sentence(), sentence(), any::<bool>(), sentence()).prop_map(|(q, a, tool, result)| {
        let mut v = vec![Message::text(Role::User, q)];
        if tool {
            v.push(Message::blocks(
                Role::Assistant,
                vec![Block::ToolUse {
                    id: "t1".into(),
                    name: "lookup".into(),
                    input: json!({}),
                }],
            ));
            v.push(Message::blocks(
                Role::User,
                vec![Block::ToolResult {
                    tool_use_id: "t1".into(),
                    content: ToolResultContent::Text(result),
                    is_error: None,
                }],
            ));
        }
        v.push(Message::text(Role::Assistant, a));
        v
    })
}

fn conversation() -> impl Strategy<Value = Conversation> {
    (prop::collection::vec(turn(), 1..14), sentence()).prop_map(|(turns, last)| {
        let mut msgs: Vec<Message> = turns.into_iter().flatten().collect();
        msgs.push(Message::text(Role::User, last));
        Conversation {
            system: None,
            messages: msgs
                .into_iter()
                .enumerate()
                .map(|(index, message)| InputMessage { index, message })
                .collect(),
            skipped: 0,
            warnings: Vec::new(),
        }
    })
}

/// The separator a format puts after the recalled section.
fn after_section(format: Format) -> &'static str {
    match format {
        Format::Transcript => "\n\n---\n\n",
        _ => "\n\n",
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn recall_changes_no_byte_before_the_newest_user_message(
        c in conversation(),
        window in 10u32..120,
        share in 1u32..200,
        tok in prop::sample::select(vec![Tokenizer::Chars4, Tokenizer::O200k]),
        format in prop::sample::select(Format::ALL.to_vec()),
        query in proptest::option::of(sentence()),
    ) {
        let mut with = ContextRequest::new(format);
        with.overrides = PolicyOverrides {
            max_tokens: Some(Count::from(window + share)),
            recall_tokens: Some(Count::from(share)),
            tokenizer: Some(tok),
            ..PolicyOverrides::default()
        };
        with.query = query;
        let mut without = ContextRequest::new(format);
        without.overrides = PolicyOverrides {
            max_tokens: Some(Count::from(window)),
            tokenizer: Some(tok),
            ..PolicyOverrides::default()
        };
        let a = build_context(&c, &with).expect("builds");
        let b = build_context(&c, &without).expect("builds");
        if a.stats.dropped == 0 {
            // The whole history fits the whole budget: the window holds it, nothing recalled.
            prop_assert!(a.stats.recalled.is_none() && a.recalled.is_none());
            prop_assert_eq!(a.policy.max_tokens, Some(u64::from(window + share)));
            return Ok(());
        }
        // Outgrown: the same window as without recall.
        prop_assert_eq!(&a.kept, &b.kept);
        let r = a.stats.recalled.clone().expect("recall stats");
        let section = a.recalled.as_ref().map(|s| s.text.clone()).unwrap_or_default();

        // Never inside the window: every recalled message is older than the first kept one
        // (xml: than the current message too).
        let first_kept = a.kept.first().map_or(i64::MAX, |k| k.index as i64);
        let newest = (c.messages.len() - 1) as i64;
        for m in &r.messages {
            prop_assert!(m.seq < first_kept, "seq {} in the window from {}", m.seq, first_kept);
            prop_assert!(m.seq < newest, "seq {} is the newest message", m.seq);
            prop_assert!(m.conversation_id.is_none());
        }
        // The budget holds: the accounting, and (chars4 is additive up to rounding up) the
        // section's own count.
        prop_assert!(r.tokens <= u64::from(share));
        if tok == Tokenizer::Chars4 {
            prop_assert!(tok.count(&section) as u64 <= r.tokens);
        }
        // Chronological, each once.
        let seqs: Vec<i64> = r.messages.iter().map(|m| m.seq).collect();
        let mut sorted = seqs.clone();
        sorted.sort_unstable();
        sorted.dedup();
        prop_assert_eq!(&seqs, &sorted);

        match (&a.prompt, &b.prompt) {
            (Prompt::Text(x), Prompt::Text(y)) => {
                if section.is_empty() {
                    prop_assert_eq!(x, y);
                } else {
                    let i = x.find(RECALL_OPEN).expect("section placed");
                    let end = i + section.len() + after_section(format).len();
                    prop_assert_eq!(&x[..i], &y[..i]);
                    prop_assert_eq!(&x[i..i + section.len()], section.as_str());
                    prop_assert_eq!(&x[end..], &y[i..]);
                }
            }
            (Prompt::Json(x), Prompt::Json(y)) => {
                let xm = x["messages"].as_array().expect("messages").clone();
                let ym = y["messages"].as_array().expect("messages").clone();
                prop_assert_eq!(xm.len(), ym.len());
                prop_assert_eq!(x.get("system"), y.get("system"));
                let target = ym.iter().rposition(|m| m["role"] == "user" && !is_tool_only(m));
                for (n, (p, q)) in xm.iter().zip(&ym).enumerate() {
                    if Some(n) == target && !section.is_empty() {
                        let parts = p["content"].as_array().expect("blocks");
                        prop_assert_eq!(&parts[0]["text"], &Value::String(section.clone()));
                        let rest: Vec<Value> = parts[1..].to_vec();
                        let q_parts = match &q["content"] {
                            Value::String(s) => vec![json!({"type": "text", "text": s})],
                            Value::Array(a) => a.clone(),
                            other => vec![other.clone()],
                        };
                        prop_assert_eq!(rest, q_parts);
                    } else {
                        prop_assert_eq!(p, q);
                    }
                }
            }
            _ => prop_assert!(false, "prompt kinds differ"),
        }
    }
}

/// An `openai` `tool` message or an `anthropic` user message of tool results only.
fn is_tool_only(m: &Value) -> bool {
    m["content"]
        .as_array()
        .is_some_and(|a| a.iter().all(|b| b["type"] == "tool_result"))
}
