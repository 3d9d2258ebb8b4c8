//! Unit tests of the selection: caps, tool pairs, the backward walk and its stats.

use super::*;
use crate::tokens::Tokenizer;
use serde_json::json;

fn hist(msgs: Vec<Message>) -> Vec<HistoryMessage> {
    msgs.into_iter()
        .enumerate()
        .map(|(i, m)| HistoryMessage::new(i, m, &Tokenizer::Chars4))
        .collect()
}

fn u(t: &str) -> Message {
    Message::text(Role::User, t)
}
fn a(t: &str) -> Message {
    Message::text(Role::Assistant, t)
}
fn tool_use(id: &str) -> Message {
    Message::blocks(
        Role::Assistant,
        vec![Block::ToolUse {
            id: id.into(),
            name: "search_documents".into(),
            input: json!({"q": "x"}),
        }],
    )
}
fn tool_result(id: &str, text: &str) -> Message {
    Message::blocks(
        Role::User,
        vec![Block::ToolResult {
            tool_use_id: id.into(),
            content: ToolResultContent::Text(text.into()),
            is_error: None,
        }],
    )
}

#[test]
fn cap_never_splits_a_char() {
    assert_eq!(cap_str("héllo", 2, "…").as_deref(), Some("hé…"));
    assert_eq!(cap_str("hé", 2, "…"), None);
}

#[test]
fn tool_pair_is_kept_or_dropped_whole() {
    let h = hist(vec![
        u("find it"),
        tool_use("t1"),
        tool_result("t1", &"r".repeat(400)),
        a("found"),
        u("thanks"),
    ]);
    // Room for the last two messages and not for the 400-char result.
    let p = Policy {
        max_chars: Some(50),
        ..Policy::default()
    };
    let s = select(&h, &p, &Tokenizer::Chars4, 0);
    let idx: Vec<usize> = s.kept.iter().map(|k| k.index).collect();
    assert_eq!(idx, vec![4]); // "found" dropped by step 4: history starts on a user turn
    assert!(s.stats.trimmed);
    let p = Policy {
        max_chars: Some(10_000),
        ..Policy::default()
    };
    let s = select(&h, &p, &Tokenizer::Chars4, 0);
    assert_eq!(s.kept.len(), 5);
    assert!(!s.stats.trimmed);
    assert_eq!(s.stats.turns, 2);
}

#[test]
fn orphan_warnings_follow_block_order() {
    let uses: Vec<Block> = ["t9", "t1", "t5", "t3", "t7"]
        .iter()
        .map(|id| Block::ToolUse {
            id: (*id).into(),
            name: "n".into(),
            input: json!({}),
        })
        .collect();
    let mut blocks = vec![Block::Text {
        text: "calling".into(),
    }];
    blocks.extend(uses);
    let h = hist(vec![
        u("go"),
        Message::blocks(Role::Assistant, blocks),
        tool_result("t5", "ok"),
        u("next"),
    ]);
    let s = select(&h, &Policy::default(), &Tokenizer::Chars4, 0);
    let ids: Vec<String> = s
        .stats
        .warnings
        .iter()
        .filter_map(|w| w.split('\'').nth(1).map(str::to_string))
        .collect();
    assert_eq!(ids, ["t9", "t1", "t3", "t7"], "{:?}", s.stats.warnings);
}

#[test]
fn orphans_are_repaired() {
    let h = hist(vec![
        u("do"),
        tool_use("x"),
        u("thanks"),
        tool_result("y", "r"),
    ]);
    let s = select(&h, &Policy::default(), &Tokenizer::Chars4, 0);
    let idx: Vec<usize> = s.kept.iter().map(|k| k.index).collect();
    assert_eq!(idx, vec![0, 2]);
    assert_eq!(s.stats.skipped, 2);
    assert_eq!(s.stats.dropped, 0);
    assert_eq!(s.stats.warnings.len(), 2, "{:?}", s.stats.warnings);
}

#[test]
fn a_message_answering_none_of_the_ids_ends_the_pair() {
    let mut orphan_and_text = tool_result("t0", "r");
    if let Content::Blocks(b) = &mut orphan_and_text.content {
        b.push(Block::Text {
            text: "and this".into(),
        });
    }
    let h = hist(vec![
        u("go"),
        tool_use("x"),
        orphan_and_text,
        tool_result("x", "late"),
    ]);
    let s = select(&h, &Policy::default(), &Tokenizer::Chars4, 0);
    // The late result would sit after a text message: it and its tool_use go, the text
    // stays.
    let idx: Vec<usize> = s.kept.iter().map(|k| k.index).collect();
    assert_eq!(idx, vec![0, 2]);
    assert!(!s.kept[1].message.has_tool_result());
    assert_eq!(s.stats.skipped, 2);
    assert_eq!(s.stats.warnings.len(), 3, "{:?}", s.stats.warnings);
}

#[test]
fn newest_user_message_is_always_kept() {
    let h = hist(vec![u("hi"), a("hello"), u(&"x".repeat(100))]);
    let p = Policy {
        max_tokens: Some(5),
        ..Policy::default()
    };
    let s = select(&h, &p, &Tokenizer::Chars4, 0);
    assert_eq!(s.kept.len(), 1);
    assert_eq!(s.kept[0].index, 2);
    assert_eq!(s.stats.warnings, vec![LATEST_EXCEEDS]);
    assert_eq!(s.stats.dropped, 2);
}

#[test]
fn caps_mark_and_flag() {
    let h = hist(vec![u(&"u".repeat(200)), a(&"a".repeat(10_000))]);
    let p = crate::policy::Format::Task.default_policy();
    let s = select(&h, &p, &Tokenizer::Chars4, 0);
    let Content::Text(t0) = &s.kept[0].message.content else {
        panic!()
    };
    assert_eq!(t0.chars().count(), 150 + "... [truncated]".len());
    assert!(t0.ends_with("... [truncated]"));
    let Content::Text(t1) = &s.kept[1].message.content else {
        panic!()
    };
    assert!(t1.ends_with("... [truncated at 8192 chars]"));
    assert!(s.kept.iter().all(|k| k.truncated));
}

#[test]
fn alternation() {
    let msgs: Vec<InputMessage> = [
        u("a"),
        u("b"),
        a("c"),
        tool_use("t"),
        tool_result("t", "r"),
        a("d"),
        a("e"),
    ]
    .into_iter()
    .enumerate()
    .map(|(index, message)| InputMessage { index, message })
    .collect();
    assert_eq!(
        alternation_warnings(&msgs),
        vec![
            "consecutive user messages at 0 and 1",
            "consecutive assistant messages at 2 and 3",
            "consecutive assistant messages at 5 and 6",
        ]
    );
}
