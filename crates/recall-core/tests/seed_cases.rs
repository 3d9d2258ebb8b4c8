//! Test cases carried over from the "seed" documents recall was designed from: the code and
//! tests of earlier conversation-memory implementations (not part of this repository; the
//! modules keep their numbers). Each runs against the format its seed describes.
//! docs/FORMATS.md is the reference: where a seed case disagrees with it, the test follows
//! FORMATS.md and a comment says what the seed expected instead.
//!
//! - `seed_000`: the Claude CLI adapter's `_convert_messages_to_prompt()` → `transcript`.
//! - `seed_004`: the chatbot ConversationManager (turn trimming, validation, counts) →
//!   the native formats `anthropic` and `openai`.
//! - `seed_003`: the MCP task orchestrator's `conversation_history` (validation, truncation,
//!   the agent-prompt section) → `task`.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use recall_core::policy::Count;
use recall_core::{
    build_context, parse_conversation, ContextOutput, ContextRequest, Conversation, Format,
    ParseError, ParseOptions, PolicyOverrides, Prompt,
};
use serde_json::{json, Value};

const TRIM_NOTICE: &str = "Trimmed old messages to fit context window";

fn parse(input: &str) -> Conversation {
    parse_conversation(input, &ParseOptions::default()).expect("input parses")
}

fn build(conv: &Conversation, format: Format, overrides: PolicyOverrides) -> ContextOutput {
    let mut req = ContextRequest::new(format);
    req.overrides = overrides;
    build_context(conv, &req).expect("context builds")
}

/// The text prompt of `input` in a text format with its default limits.
fn text(input: &str, format: Format) -> (String, ContextOutput) {
    text_with(input, format, PolicyOverrides::default())
}

fn text_with(input: &str, format: Format, overrides: PolicyOverrides) -> (String, ContextOutput) {
    let out = build(&parse(input), format, overrides);
    match &out.prompt {
        Prompt::Text(s) => (s.clone(), out),
        Prompt::Json(v) => panic!("{format} gave JSON: {v}"),
    }
}

/// The request body of `input` in a native format.
fn native(input: &str, format: Format, overrides: PolicyOverrides) -> (Value, ContextOutput) {
    let out = build(&parse(input), format, overrides);
    match &out.prompt {
        Prompt::Json(v) => (v.clone(), out),
        Prompt::Text(s) => panic!("{format} gave text: {s}"),
    }
}

fn max_turns(n: usize) -> PolicyOverrides {
    PolicyOverrides {
        max_turns: Some(Count::new(n as u64).unwrap()),
        ..PolicyOverrides::default()
    }
}

/// `n` user/assistant pairs `User message i` / `Assistant message i`, optionally followed by
/// a final user message, as a JSON array.
fn pairs(n: usize, final_user: Option<&str>) -> String {
    let mut msgs: Vec<Value> = Vec::new();
    for i in 0..n {
        msgs.push(json!({"role": "user", "content": format!("User message {i}")}));
        msgs.push(json!({"role": "assistant", "content": format!("Assistant message {i}")}));
    }
    if let Some(u) = final_user {
        msgs.push(json!({"role": "user", "content": u}));
    }
    Value::Array(msgs).to_string()
}

// ---------------------------------------------------------------------------------------
// seed 000: Claude CLI adapter → `transcript`
// ---------------------------------------------------------------------------------------
mod seed_000_transcript {
    use super::*;

    #[test]
    fn converts_string_content() {
        let (p, out) = text(
            r#"[{"role": "user", "content": "Hello, how are you?"}]"#,
            Format::Transcript,
        );
        assert_eq!(p, "Human: Hello, how are you?");
        assert_eq!(out.stats.included, 1);
        assert_eq!(out.stats.turns, 1);
    }

    #[test]
    fn three_turn_conversation_has_all_messages_and_two_separators() {
        let (p, out) = text(
            r#"[{"role": "user", "content": "Hello"},
                {"role": "assistant", "content": "Hi there"},
                {"role": "user", "content": "How are you?"}]"#,
            Format::Transcript,
        );
        // docs/FORMATS.md §5.1's example, byte for byte.
        assert_eq!(
            p,
            "Human: Hello\n\n---\n\nAssistant: Hi there\n\n---\n\nHuman: How are you?"
        );
        // Two separators for three messages, and `---` appears nowhere else.
        assert_eq!(p.matches("\n\n---\n\n").count(), 2);
        assert_eq!(p.matches("---").count(), 2);
        assert!(!p.ends_with('\n'), "no trailing newline");
        assert_eq!(out.stats.included, 3);
        assert_eq!(out.stats.turns, 2);
        assert!(!out.stats.trimmed);
        assert_eq!(out.stats.notice, None);
    }

    #[test]
    fn ten_message_conversation_preserves_all() {
        let (p, out) = text(&pairs(5, None), Format::Transcript);
        let expected: Vec<String> = (0..5)
            .flat_map(|i| {
                [
                    format!("Human: User message {i}"),
                    format!("Assistant: Assistant message {i}"),
                ]
            })
            .collect();
        assert_eq!(p, expected.join("\n\n---\n\n"));
        assert_eq!(p.matches("\n\n---\n\n").count(), 9);
        assert_eq!(out.stats.included, 10);
        assert_eq!(out.stats.turns, 5);
        assert_eq!(out.stats.dropped, 0);
    }

    #[test]
    fn uses_human_assistant_labels_not_brackets() {
        let (p, _) = text(
            r#"[{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi"}]"#,
            Format::Transcript,
        );
        assert_eq!(p, "Human: Hello\n\n---\n\nAssistant: Hi");
        assert!(!p.contains("[USER]:"));
        assert!(!p.contains("[ASSISTANT]:"));
    }

    #[test]
    fn uses_triple_dash_separator_line() {
        let (p, _) = text(
            r#"[{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi"}]"#,
            Format::Transcript,
        );
        let lines: Vec<&str> = p.lines().collect();
        assert_eq!(lines, vec!["Human: Hello", "", "---", "", "Assistant: Hi"]);
    }

    #[test]
    fn tool_use_blocks_replaced_with_annotation() {
        // The seed's fixture ends on the assistant's tool_use with no tool_result after it.
        // docs/FORMATS.md §4.4 never keeps one side of a tool pair without the other, so here the
        // matching result is supplied; the seed's exact input is the next test.
        let (p, out) = text(
            r#"[{"role": "user", "content": "Search for docs"},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Let me search."},
                    {"type": "tool_use", "id": "t1", "name": "search_documents", "input": {"query": "test"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "Result: 2 documents"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Now an action."},
                    {"type": "tool_use", "id": "t2", "name": "save_artifact", "input": {"title": "Doc"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t2", "content": "saved"}]},
                {"role": "user", "content": "Thanks"}]"#,
            Format::Transcript,
        );
        assert_eq!(
            p,
            "Human: Search for docs\n\n---\n\n\
             Assistant: Let me search.\n[searched documents]\n\n---\n\n\
             Assistant: Now an action.\n[performed an action]\n\n---\n\n\
             Human: Thanks"
        );
        assert!(!p.contains("Result: 2 documents"));
        assert_eq!(out.stats.included, 6);
        assert!(out.stats.warnings.is_empty(), "{:?}", out.stats.warnings);
    }

    #[test]
    fn unanswered_tool_use_is_dropped_with_a_warning() {
        // The seed's exact fixture. The seed expected `[searched documents]` in the prompt;
        // docs/FORMATS.md §4.4 (tool pairs are kept whole) removes the unanswered tool_use instead,
        // so only the text of the message remains.
        let (p, out) = text(
            r#"[{"role": "user", "content": "Search for docs"},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Let me search."},
                    {"type": "tool_use", "id": "t1", "name": "search_documents", "input": {"query": "test"}}]}]"#,
            Format::Transcript,
        );
        assert_eq!(
            p,
            "Human: Search for docs\n\n---\n\nAssistant: Let me search."
        );
        assert_eq!(
            out.stats.warnings,
            vec!["messages[1]: tool_use 't1' has no matching tool_result, dropping it"]
        );
        assert_eq!(out.stats.included, 2);
    }

    #[test]
    fn tool_use_only_assistant_messages_skipped() {
        // The seed's fixture: the tool_use has no result, so selection also removes it
        // (warning) and the emptied message is left out.
        let (p, out) = text(
            r#"[{"role": "user", "content": "Do something"},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "t1", "name": "save_artifact", "input": {"title": "Doc"}}]},
                {"role": "user", "content": "Thanks"}]"#,
            Format::Transcript,
        );
        assert_eq!(p, "Human: Do something\n\n---\n\nHuman: Thanks");
        assert!(!p.contains("Assistant:"));
        assert_eq!(
            out.stats.warnings,
            vec!["messages[1]: tool_use 't1' has no matching tool_result, dropping it"]
        );
    }

    #[test]
    fn tool_use_only_assistant_message_in_a_complete_pair_is_kept_but_not_rendered() {
        // With its result present the pair is kept (`included` counts it) but transcript
        // skips the tool-only assistant message and the tool_result-only user message (docs/FORMATS.md §5.1).
        let (p, out) = text(
            r#"[{"role": "user", "content": "Do something"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "Plan: save.", "signature": "s"},
                    {"type": "tool_use", "id": "t1", "name": "save_artifact", "input": {"title": "Doc"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "saved"}]},
                {"role": "assistant", "content": "Saved."},
                {"role": "user", "content": "Thanks"}]"#,
            Format::Transcript,
        );
        assert_eq!(
            p,
            "Human: Do something\n\n---\n\nAssistant: Saved.\n\n---\n\nHuman: Thanks"
        );
        assert!(!p.contains("[performed an action]"));
        assert!(!p.contains("Plan: save."));
        assert_eq!(out.stats.included, 5);
        assert!(out.stats.warnings.is_empty(), "{:?}", out.stats.warnings);
    }

    #[test]
    fn thinking_blocks_excluded() {
        let (p, _) = text(
            r#"[{"role": "user", "content": "What is 2+2?"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "Let me reason..."},
                    {"type": "redacted_thinking", "data": "abc"},
                    {"type": "text", "text": "The answer is 4."}]}]"#,
            Format::Transcript,
        );
        assert_eq!(
            p,
            "Human: What is 2+2?\n\n---\n\nAssistant: The answer is 4."
        );
        assert!(!p.contains("Let me reason..."));
    }

    #[test]
    fn tool_result_user_messages_skipped() {
        let (p, out) = text(
            r#"[{"role": "user", "content": "Search"},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Searching."},
                    {"type": "tool_use", "id": "t1", "name": "search_documents", "input": {"query": "test"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "Result: found 3 documents"}]},
                {"role": "user", "content": "What did you find?"}]"#,
            Format::Transcript,
        );
        assert_eq!(
            p,
            "Human: Search\n\n---\n\n\
             Assistant: Searching.\n[searched documents]\n\n---\n\n\
             Human: What did you find?"
        );
        assert!(!p.contains("Result: found 3 documents"));
        // The tool_result-only user message is kept by selection (its pair is whole), and
        // it is not a turn of its own.
        assert_eq!(out.stats.included, 4);
        assert_eq!(out.stats.turns, 2);
        // A tool_result-only user message between two user turns is not a role conflict.
        assert!(out.stats.warnings.is_empty(), "{:?}", out.stats.warnings);
    }

    #[test]
    fn system_messages_excluded() {
        let (p, out) = text(
            r#"[{"role": "system", "content": "You are helpful."},
                {"role": "user", "content": "Hello"}]"#,
            Format::Transcript,
        );
        assert_eq!(p, "Human: Hello");
        assert!(!p.contains("You are helpful."));
        // The system message joined the system prompt, not the history.
        assert_eq!(out.stats.included, 1);

        let (p, _) = text(
            r#"{"system": "Top-level system.", "messages": [
                {"role": "developer", "content": "Developer note."},
                {"role": "user", "content": "Hello"}]}"#,
            Format::Transcript,
        );
        assert_eq!(p, "Human: Hello");
    }

    #[test]
    fn history_is_trimmed_to_150k_tokens_by_default() {
        // The seed's `build_conversation_context()` truncates to 150k tokens: the transcript
        // default (docs/FORMATS.md §5.1). With `chars4`, each 200,000-char message costs
        // 50,000 + 4 tokens, so four of them (200,016) exceed the budget and three
        // (150,012) still do: only the newest two fit.
        let big = |c: char| c.to_string().repeat(200_000);
        let input = json!([
            {"role": "user", "content": big('a')},
            {"role": "assistant", "content": big('b')},
            {"role": "user", "content": big('c')},
            {"role": "assistant", "content": big('d')},
        ])
        .to_string();
        let (p, out) = text_with(
            &input,
            Format::Transcript,
            PolicyOverrides {
                tokenizer: Some("chars4".parse().unwrap()),
                ..PolicyOverrides::default()
            },
        );
        assert_eq!(out.policy.max_tokens, Some(150_000));
        assert_eq!(
            p,
            format!("Human: {}\n\n---\n\nAssistant: {}", big('c'), big('d'))
        );
        assert_eq!(out.stats.included, 2);
        assert_eq!(out.stats.dropped, 2);
        assert_eq!(out.stats.tokens, 100_008);
        assert!(out.stats.trimmed);
        assert_eq!(out.stats.notice.as_deref(), Some(TRIM_NOTICE));
    }

    #[test]
    fn document_references_are_annotated() {
        // Locked decision of the seed: document search results become `[referenced: …]`.
        let (p, _) = text(
            r#"[{"role": "user", "content": [
                    {"type": "search_result", "title": "filename.txt", "source": "https://x.test/f", "content": [{"type": "text", "text": "long body"}]},
                    {"type": "text", "text": "Is this the one?"}]},
                {"role": "assistant", "content": "Yes."}]"#,
            Format::Transcript,
        );
        assert_eq!(
            p,
            "Human: [referenced: filename.txt]\nIs this the one?\n\n---\n\nAssistant: Yes."
        );
        assert!(!p.contains("long body"));
    }
}

// ---------------------------------------------------------------------------------------
// seed 004: ConversationManager → `anthropic` and `openai`
// ---------------------------------------------------------------------------------------
mod seed_004_native {
    use super::*;

    fn messages_of(v: &Value) -> &Vec<Value> {
        v["messages"].as_array().expect("messages array")
    }

    #[test]
    fn adding_user_and_assistant_messages_counts_messages_and_turns() {
        let input = pairs(3, None);
        for format in [Format::Anthropic, Format::Openai] {
            let (v, out) = native(&input, format, PolicyOverrides::default());
            assert_eq!(messages_of(&v).len(), 6, "{format}");
            assert_eq!(out.stats.included, 6);
            // One turn = one user message with text and what follows it.
            assert_eq!(out.stats.turns, 3);
            assert!(!out.stats.trimmed);
            assert_eq!(out.stats.notice, None);
        }
    }

    #[test]
    fn trims_oldest_turn_beyond_max_turns_with_the_notice() {
        // Ten complete turns and a new user message: eleven turns, max_turns 10. The oldest
        // user+assistant pair goes.
        let input = pairs(10, Some("User message 10"));
        let mut expected: Vec<Value> = Vec::new();
        for i in 1..10 {
            expected.push(json!({"role": "user", "content": format!("User message {i}")}));
            expected
                .push(json!({"role": "assistant", "content": format!("Assistant message {i}")}));
        }
        expected.push(json!({"role": "user", "content": "User message 10"}));
        for format in [Format::Anthropic, Format::Openai] {
            let (v, out) = native(&input, format, max_turns(10));
            assert_eq!(v, json!({"messages": expected}), "{format}");
            assert!(out.stats.trimmed);
            assert_eq!(out.stats.notice.as_deref(), Some(TRIM_NOTICE));
            assert_eq!(out.stats.dropped, 2);
            assert_eq!(out.stats.included, 19);
            assert_eq!(out.stats.turns, 10);
            assert_eq!(out.stats.skipped, 0);
        }
    }

    #[test]
    fn exactly_max_turns_is_not_trimmed() {
        // Seed edge case 4: no trimming until max_turns + 1.
        let input = pairs(10, None);
        for format in [Format::Anthropic, Format::Openai] {
            let (v, out) = native(&input, format, max_turns(10));
            assert_eq!(messages_of(&v).len(), 20);
            assert_eq!(
                messages_of(&v)[0],
                json!({"role": "user", "content": "User message 0"})
            );
            assert!(!out.stats.trimmed, "{format}");
            assert_eq!(out.stats.notice, None);
            assert_eq!(out.stats.dropped, 0);
            assert_eq!(out.stats.turns, 10);
        }
    }

    #[test]
    fn trimming_flag_follows_each_build() {
        // `was_trimmed()`: set when this selection left something out, clear otherwise.
        let conv = parse(&pairs(3, Some("next")));
        let trimmed = build(&conv, Format::Anthropic, max_turns(2));
        assert!(trimmed.stats.trimmed);
        assert_eq!(trimmed.stats.notice.as_deref(), Some(TRIM_NOTICE));
        assert_eq!(trimmed.stats.dropped, 4);
        let untrimmed = build(&conv, Format::Anthropic, max_turns(4));
        assert!(!untrimmed.stats.trimmed);
        assert_eq!(untrimmed.stats.notice, None);
        assert_eq!(untrimmed.stats.dropped, 0);
    }

    #[test]
    fn system_prompt_is_kept_out_of_history_and_survives_trimming() {
        let input = json!({
            "system": "You are a helpful AI assistant powered by Claude.",
            "messages": [
                {"role": "user", "content": "My name is Alice"},
                {"role": "assistant", "content": "Nice to meet you, Alice."},
                {"role": "user", "content": "I'm learning Python"},
                {"role": "assistant", "content": "Great choice."},
                {"role": "user", "content": "What's my name?"}
            ]
        })
        .to_string();
        let (v, out) = native(&input, Format::Anthropic, max_turns(2));
        assert_eq!(
            v,
            json!({
                "system": "You are a helpful AI assistant powered by Claude.",
                "messages": [
                    {"role": "user", "content": "I'm learning Python"},
                    {"role": "assistant", "content": "Great choice."},
                    {"role": "user", "content": "What's my name?"}
                ]
            })
        );
        assert_eq!(out.stats.included, 3);
        assert_eq!(out.stats.dropped, 2);
        assert_eq!(out.stats.notice.as_deref(), Some(TRIM_NOTICE));

        let (v, _) = native(&input, Format::Openai, max_turns(2));
        assert_eq!(
            v,
            json!({
                "messages": [
                    {"role": "system", "content": "You are a helpful AI assistant powered by Claude."},
                    {"role": "user", "content": "I'm learning Python"},
                    {"role": "assistant", "content": "Great choice."},
                    {"role": "user", "content": "What's my name?"}
                ]
            })
        );
    }

    #[test]
    fn system_prompt_is_not_part_of_the_budget() {
        // A huge system prompt and a one-token budget per turn: history is measured alone.
        let input = json!({
            "system": "s".repeat(10_000),
            "messages": [{"role": "user", "content": "hi"}]
        })
        .to_string();
        let (v, out) = native(
            &input,
            Format::Anthropic,
            PolicyOverrides {
                max_chars: Some(2.into()),
                ..PolicyOverrides::default()
            },
        );
        assert_eq!(messages_of(&v).len(), 1);
        assert_eq!(out.stats.chars, 2);
        assert!(!out.stats.trimmed);
        assert!(out.stats.warnings.is_empty(), "{:?}", out.stats.warnings);
    }

    #[test]
    fn empty_message_is_skipped_with_a_warning_when_lenient() {
        let input = r#"[{"role": "user", "content": "Hello"},
                        {"role": "assistant", "content": "Hi"},
                        {"role": "user", "content": ""},
                        {"role": "user", "content": "   \n\t "},
                        {"role": "user", "content": "Still there?"}]"#;
        for format in [Format::Anthropic, Format::Openai] {
            let (v, out) = native(input, format, PolicyOverrides::default());
            assert_eq!(
                v,
                json!({"messages": [
                    {"role": "user", "content": "Hello"},
                    {"role": "assistant", "content": "Hi"},
                    {"role": "user", "content": "Still there?"}
                ]}),
                "{format}"
            );
            assert_eq!(out.stats.skipped, 2);
            assert_eq!(out.stats.included, 3);
            assert_eq!(out.stats.dropped, 0);
            assert!(!out.stats.trimmed, "skipping is not trimming");
            assert_eq!(
                out.stats.warnings,
                vec![
                    "messages[2] has empty/invalid content, skipping",
                    "messages[3] has empty/invalid content, skipping",
                ]
            );
        }
    }

    #[test]
    fn empty_message_is_an_error_in_strict_mode() {
        for (input, reason) in [
            (
                r#"[{"role": "user", "content": "Hello"}, {"role": "user", "content": ""}]"#,
                "messages[1] has empty/invalid content",
            ),
            (
                r#"[{"role": "user", "content": "   "}, {"role": "assistant", "content": "Hi"}]"#,
                "messages[0] has empty/invalid content",
            ),
            (
                r#"[{"role": "user", "content": [{"type": "text", "text": " \n "}]}]"#,
                "messages[0] has empty/invalid content",
            ),
        ] {
            let err = parse_conversation(input, &ParseOptions::strict()).unwrap_err();
            assert_eq!(err, ParseError::Strict(reason.to_string()));
            assert_eq!(
                err.to_string(),
                format!("{reason} (strict mode: the whole input is rejected)")
            );
        }
    }

    #[test]
    fn leading_and_trailing_whitespace_is_preserved() {
        let input = r#"[{"role": "user", "content": "  indented question\n"},
                        {"role": "assistant", "content": "\tanswer  "}]"#;
        for format in [Format::Anthropic, Format::Openai] {
            let (v, _) = native(input, format, PolicyOverrides::default());
            assert_eq!(
                v,
                json!({"messages": [
                    {"role": "user", "content": "  indented question\n"},
                    {"role": "assistant", "content": "\tanswer  "}
                ]}),
                "{format}"
            );
        }
    }

    #[test]
    fn long_monologue_keeps_every_user_message() {
        // Edge case 1 of the original cases; docs/FORMATS.md §3 warns about each consecutive pair.
        let input = r#"[{"role": "user", "content": "one"},
                        {"role": "user", "content": "two"},
                        {"role": "user", "content": "three"},
                        {"role": "assistant", "content": "Got all three."}]"#;
        let (v, out) = native(input, Format::Anthropic, PolicyOverrides::default());
        assert_eq!(
            v,
            json!({"messages": [
                {"role": "user", "content": "one"},
                {"role": "user", "content": "two"},
                {"role": "user", "content": "three"},
                {"role": "assistant", "content": "Got all three."}
            ]})
        );
        assert_eq!(
            out.stats.warnings,
            vec![
                "consecutive user messages at 0 and 1",
                "consecutive user messages at 1 and 2",
            ]
        );
        assert_eq!(out.stats.turns, 3);
    }

    #[test]
    fn consecutive_assistant_messages_are_both_kept() {
        // Seed edge case 5.
        let input = r#"[{"role": "user", "content": "Hi"},
                        {"role": "assistant", "content": "Hello!"},
                        {"role": "assistant", "content": "Anything else?"},
                        {"role": "user", "content": "No"}]"#;
        let (v, out) = native(input, Format::Openai, PolicyOverrides::default());
        assert_eq!(
            v,
            json!({"messages": [
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello!"},
                {"role": "assistant", "content": "Anything else?"},
                {"role": "user", "content": "No"}
            ]})
        );
        assert_eq!(
            out.stats.warnings,
            vec!["consecutive assistant messages at 1 and 2"]
        );
    }

    #[test]
    fn very_long_first_message_is_accepted() {
        // Seed edge case 2: native formats have no default limits.
        let long = "word ".repeat(20_000);
        let input = json!([{"role": "user", "content": long}]).to_string();
        let (v, out) = native(&input, Format::Anthropic, PolicyOverrides::default());
        assert_eq!(v, json!({"messages": [{"role": "user", "content": long}]}));
        assert_eq!(out.stats.included, 1);
        assert_eq!(out.stats.chars, 100_000);
        assert!(!out.stats.trimmed);
    }

    #[test]
    fn newest_user_message_is_kept_even_alone_over_budget() {
        let input = json!([
            {"role": "user", "content": "short"},
            {"role": "assistant", "content": "reply"},
            {"role": "user", "content": "x".repeat(500)}
        ])
        .to_string();
        let (v, out) = native(
            &input,
            Format::Openai,
            PolicyOverrides {
                max_chars: Some(100.into()),
                ..PolicyOverrides::default()
            },
        );
        assert_eq!(
            v,
            json!({"messages": [{"role": "user", "content": "x".repeat(500)}]})
        );
        assert_eq!(out.stats.dropped, 2);
        assert!(out.stats.trimmed);
        assert_eq!(out.stats.notice.as_deref(), Some(TRIM_NOTICE));
        assert_eq!(
            out.stats.warnings,
            vec!["latest message alone exceeds the budget"]
        );
    }

    #[test]
    fn cleared_conversation_renders_no_messages() {
        // Seed: "clear on empty conversation: no error".
        for format in [Format::Anthropic, Format::Openai] {
            let (v, out) = native("[]", format, PolicyOverrides::default());
            assert_eq!(v, json!({"messages": []}), "{format}");
            assert_eq!(out.stats.included, 0);
            assert_eq!(out.stats.turns, 0);
            assert!(!out.stats.trimmed);
        }
    }

    #[test]
    fn trimming_keeps_tool_pairs_whole() {
        // A turn limit that would cut between a tool_use and its result cuts at the turn
        // start instead, in both native shapes.
        let input = r#"[{"role": "user", "content": "old"},
            {"role": "assistant", "content": "old reply"},
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "w", "name": "get_weather", "input": {"city": "Oslo"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "w", "content": "cold"}]},
            {"role": "assistant", "content": "It is cold."},
            {"role": "user", "content": "thanks"}]"#;
        let (v, out) = native(input, Format::Anthropic, max_turns(2));
        assert_eq!(
            v,
            json!({"messages": [
                {"role": "user", "content": "weather?"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "w", "name": "get_weather", "input": {"city": "Oslo"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "w", "content": "cold"}]},
                {"role": "assistant", "content": "It is cold."},
                {"role": "user", "content": "thanks"}
            ]})
        );
        assert_eq!(out.stats.dropped, 2);
        assert_eq!(out.stats.turns, 2);
        let (v, _) = native(input, Format::Openai, max_turns(2));
        assert_eq!(
            v,
            json!({"messages": [
                {"role": "user", "content": "weather?"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "w", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "w", "content": "cold"},
                {"role": "assistant", "content": "It is cold."},
                {"role": "user", "content": "thanks"}
            ]})
        );
    }
}

// ---------------------------------------------------------------------------------------
// seed 003: task orchestrator conversation_history → `task`
// ---------------------------------------------------------------------------------------
mod seed_003_task {
    use super::*;

    const HEADER: &str = "💬 CONVERSATION HISTORY (Context leading to this task):\n";

    #[test]
    fn valid_history_is_kept_and_counted() {
        let (p, out) = text(
            r#"[{"role": "user", "content": "Help me"},
                {"role": "assistant", "content": "Sure, I'll help"}]"#,
            Format::Task,
        );
        assert_eq!(
            p,
            format!("{HEADER}1. 👤 USER:\n   Help me\n\n2. 🤖 ASSISTANT:\n   Sure, I'll help\n\n")
        );
        // `conversation_messages_count == 2`.
        assert_eq!(out.stats.included, 2);
        assert_eq!(out.stats.skipped, 0);
        assert!(out.stats.warnings.is_empty());
    }

    #[test]
    fn invalid_entries_are_skipped_with_indexed_warnings() {
        let (p, out) = text(
            r#"[{"role": "user", "content": "Valid message"},
                {"invalid": "structure"},
                {"role": "user", "content": ""},
                {"role": "invalid_role", "content": "test"},
                "not an object"]"#,
            Format::Task,
        );
        assert_eq!(
            out.stats.warnings,
            vec![
                "messages[1] missing 'role' or 'content', skipping",
                "messages[2] has empty/invalid content, skipping",
                "messages[3] has invalid role 'invalid_role', skipping",
                "messages[4] is not a dict, skipping",
            ]
        );
        assert_eq!(out.stats.skipped, 4);
        // Only the one valid message is stored.
        assert_eq!(out.stats.included, 1);
        assert_eq!(p, format!("{HEADER}1. 👤 USER:\n   Valid message\n\n"));
    }

    #[test]
    fn more_invalid_shapes() {
        let (p, out) = text(
            r#"[{"role": "user"},
                {"content": "no role"},
                {"role": "assistant", "content": 42},
                {"role": "user", "content": "   "},
                {"role": 7, "content": "numeric role"},
                {"role": "user", "content": "ok"}]"#,
            Format::Task,
        );
        assert_eq!(
            out.stats.warnings,
            vec![
                "messages[0] missing 'role' or 'content', skipping",
                "messages[1] missing 'role' or 'content', skipping",
                "messages[2] has empty/invalid content, skipping",
                "messages[3] has empty/invalid content, skipping",
                "messages[4] has invalid role '7', skipping",
            ]
        );
        assert_eq!(out.stats.skipped, 5);
        assert_eq!(p, format!("{HEADER}1. 👤 USER:\n   ok\n\n"));
    }

    #[test]
    fn null_entries_are_skipped() {
        // Seed edge case: `[None, {...}, None]`.
        let (p, out) = text(
            r#"[null, {"role": "user", "content": "Between nulls"}, null]"#,
            Format::Task,
        );
        assert_eq!(
            out.stats.warnings,
            vec![
                "messages[0] is not a dict, skipping",
                "messages[2] is not a dict, skipping",
            ]
        );
        assert_eq!(out.stats.skipped, 2);
        assert_eq!(p, format!("{HEADER}1. 👤 USER:\n   Between nulls\n\n"));
    }

    #[test]
    fn strict_mode_rejects_the_first_invalid_entry() {
        let input = r#"[{"role": "user", "content": "Valid message"},
                        {"invalid": "structure"},
                        {"role": "user", "content": ""}]"#;
        let err = parse_conversation(input, &ParseOptions::strict()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "messages[1] missing 'role' or 'content' (strict mode: the whole input is rejected)"
        );
        let err = parse_conversation(
            r#"[{"role": "invalid_role", "content": "test"}]"#,
            &ParseOptions::strict(),
        )
        .unwrap_err();
        assert_eq!(
            err,
            ParseError::Strict("messages[0] has invalid role 'invalid_role'".to_string())
        );
        let err = parse_conversation("[null]", &ParseOptions::strict()).unwrap_err();
        assert_eq!(
            err,
            ParseError::Strict("messages[0] is not a dict".to_string())
        );
    }

    #[test]
    fn all_invalid_gives_only_the_header() {
        // Seed: no valid message → nothing stored. `task` then renders its header alone.
        let (p, out) = text(r#"[null, {"role": "user", "content": " "}]"#, Format::Task);
        assert_eq!(p, HEADER);
        assert_eq!(out.stats.included, 0);
        assert_eq!(out.stats.skipped, 2);
    }

    #[test]
    fn user_message_truncated_at_150_chars() {
        let long = "x".repeat(200);
        let input = json!([{"role": "user", "content": long}]).to_string();
        let (p, out) = text(&input, Format::Task);
        let content = format!("{}... [truncated]", "x".repeat(150));
        // The original case asserted `len <= 154`, but 150 + len("... [truncated]") is 165;
        // its own truncation function produces 165 characters, as docs/FORMATS.md §4.7 does.
        assert_eq!(content.chars().count(), 165);
        assert_eq!(
            p,
            format!("{HEADER}1. 👤 USER [TRUNCATED]:\n   {content}\n\n")
        );
        assert_eq!(out.stats.chars, 165);
        assert_eq!(out.stats.included, 1);
        assert!(!out.stats.trimmed, "a cap is not trimming");
    }

    #[test]
    fn user_message_of_exactly_150_chars_is_not_truncated() {
        let exact = "y".repeat(150);
        let input = json!([{"role": "user", "content": exact}]).to_string();
        let (p, _) = text(&input, Format::Task);
        assert_eq!(p, format!("{HEADER}1. 👤 USER:\n   {exact}\n\n"));
    }

    #[test]
    fn content_is_stripped_before_capping() {
        // 150 chars of text inside whitespace: not over the cap once stripped.
        let padded = format!("  \n{}\t  ", "z".repeat(150));
        let input = json!([{"role": "user", "content": padded}]).to_string();
        let (p, _) = text(&input, Format::Task);
        assert_eq!(
            p,
            format!("{HEADER}1. 👤 USER:\n   {}\n\n", "z".repeat(150))
        );
    }

    #[test]
    fn assistant_message_truncated_at_8192_chars() {
        // The original fixture is a lone assistant message. docs/FORMATS.md §4.4 step 3 starts the
        // history on a user message, so a user message comes first here.
        let input = json!([
            {"role": "user", "content": "Investigate"},
            {"role": "assistant", "content": "x".repeat(10_000)}
        ])
        .to_string();
        let (p, out) = text(&input, Format::Task);
        let content = format!("{}... [truncated at 8192 chars]", "x".repeat(8192));
        // The seed asserted `len <= 8220`; 8192 + len("... [truncated at 8192 chars]") is 8221.
        assert_eq!(content.chars().count(), 8221);
        assert_eq!(
            p,
            format!(
                "{HEADER}1. 👤 USER:\n   Investigate\n\n2. 🤖 ASSISTANT [TRUNCATED]:\n   {content}\n\n"
            )
        );
        assert_eq!(out.stats.included, 2);
    }

    #[test]
    fn lone_assistant_message_is_dropped_by_selection() {
        // What the seed's exact fixture gives under FORMATS.md: the history may not start
        // on an assistant message, so nothing is kept (and that counts as dropped).
        let input = json!([{"role": "assistant", "content": "x".repeat(10_000)}]).to_string();
        let (p, out) = text(&input, Format::Task);
        assert_eq!(p, HEADER);
        assert_eq!(out.stats.included, 0);
        assert_eq!(out.stats.dropped, 1);
    }

    #[test]
    fn unicode_content_is_preserved_and_capped_by_characters() {
        let cjk = "修".repeat(151); // 151 chars, 453 bytes
        let input = json!([
            {"role": "user", "content": "修复认证错误 🐛🔐 — naïve café"},
            {"role": "assistant", "content": "好的 ✅"},
            {"role": "user", "content": cjk}
        ])
        .to_string();
        let (p, out) = text(&input, Format::Task);
        assert_eq!(
            p,
            format!(
                "{HEADER}1. 👤 USER:\n   修复认证错误 🐛🔐 — naïve café\n\n\
                 2. 🤖 ASSISTANT:\n   好的 ✅\n\n\
                 3. 👤 USER [TRUNCATED]:\n   {}... [truncated]\n\n",
                "修".repeat(150)
            )
        );
        assert_eq!(out.stats.included, 3);
    }

    #[test]
    fn appears_in_agent_prompt_section() {
        // The seed's `test_conversation_history_in_agent_prompt`, exact.
        let (p, _) = text(
            r#"[{"role": "user", "content": "Help me fix bug"},
                {"role": "assistant", "content": "I'll investigate"}]"#,
            Format::Task,
        );
        assert_eq!(
            p,
            "💬 CONVERSATION HISTORY (Context leading to this task):\n\
             1. 👤 USER:\n   Help me fix bug\n\n\
             2. 🤖 ASSISTANT:\n   I'll investigate\n\n"
        );
    }

    #[test]
    fn multi_line_content_is_indented_on_every_line() {
        // The original case indented only the first line; docs/FORMATS.md §5.4 indents every line.
        let (p, _) = text(
            r#"[{"role": "user", "content": "line one\nline two"},
                {"role": "assistant", "content": "a\n\nb"}]"#,
            Format::Task,
        );
        assert_eq!(
            p,
            format!("{HEADER}1. 👤 USER:\n   line one\n   line two\n\n2. 🤖 ASSISTANT:\n   a\n   \n   b\n\n")
        );
    }

    #[test]
    fn system_messages_come_first_and_are_never_capped() {
        let system = "S".repeat(300);
        let input = json!({
            "system": system,
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "system", "content": "late rule"},
                {"role": "assistant", "content": "hello"}
            ]
        })
        .to_string();
        let (p, out) = text(&input, Format::Task);
        assert_eq!(
            p,
            format!(
                "{HEADER}1. ⚙️ SYSTEM:\n   {system}\n   late rule\n\n\
                 2. 👤 USER:\n   hi\n\n3. 🤖 ASSISTANT:\n   hello\n\n"
            )
        );
        assert_eq!(out.stats.included, 2);
    }

    #[test]
    fn caps_are_overridable() {
        let (p, _) = text_with(
            r#"[{"role": "user", "content": "abcdefgh"}, {"role": "assistant", "content": "ijklmnop"}]"#,
            Format::Task,
            PolicyOverrides {
                user_max_chars: Some(3.into()),
                assistant_max_chars: Some(4.into()),
                ..PolicyOverrides::default()
            },
        );
        assert_eq!(
            p,
            format!(
                "{HEADER}1. 👤 USER [TRUNCATED]:\n   abc... [truncated]\n\n\
                 2. 🤖 ASSISTANT [TRUNCATED]:\n   ijkl... [truncated at 4 chars]\n\n"
            )
        );
    }
}
