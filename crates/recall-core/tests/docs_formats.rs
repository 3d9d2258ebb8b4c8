//! docs/FORMATS.md shows each output format on one example conversation. This test renders
//! that conversation (the code block after `<!-- example: input -->`) in every format and
//! checks each block after `<!-- example: FORMAT -->` byte for byte, so the page cannot drift
//! from the code. A block holds what `recall render` prints: the prompt, then a newline when
//! the prompt does not end with one (JSON formats are printed with a final newline; a code
//! block always ends with one).
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use recall_core::{
    build_context, parse_conversation, ContextRequest, Format, ParseOptions, PolicyOverrides,
};

const DOC: &str = include_str!("../../../docs/FORMATS.md");

/// The content of the fenced code block that follows `<!-- example: NAME -->`.
fn example(name: &str) -> String {
    let marker = format!("<!-- example: {name} -->\n");
    let mut found = DOC.match_indices(&marker);
    let (at, _) = found
        .next()
        .unwrap_or_else(|| panic!("docs/FORMATS.md has no `{}`", marker.trim_end()));
    assert!(
        found.next().is_none(),
        "docs/FORMATS.md has `{}` twice",
        marker.trim_end()
    );
    let rest = &DOC[at + marker.len()..];
    assert!(
        rest.starts_with("```"),
        "`{}` must be followed directly by a code block",
        marker.trim_end()
    );
    let body_start = rest.find('\n').expect("fence line ends") + 1;
    let body = &rest[body_start..];
    let end = body
        .find("\n```\n")
        .unwrap_or_else(|| panic!("the code block after `{}` is not closed", marker.trim_end()));
    body[..=end].to_string()
}

/// What `recall render --format FORMAT` prints for the example, with `overrides`.
fn printed(format: Format, overrides: PolicyOverrides) -> (String, String) {
    let conv = parse_conversation(&example("input"), &ParseOptions::strict())
        .expect("the example input parses strictly");
    let req = ContextRequest {
        overrides,
        ..ContextRequest::new(format)
    };
    let out = build_context(&conv, &req).expect("the example renders");
    let mut text = out.prompt.to_text();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let stats = serde_json::to_string(&out.stats).expect("stats serialise");
    (text, stats)
}

#[test]
fn every_format_example_is_what_recall_prints() {
    for format in Format::ALL {
        let (text, _) = printed(format, PolicyOverrides::default());
        assert_eq!(
            example(format.name()),
            text,
            "docs/FORMATS.md, `{format}` example"
        );
    }
}

#[test]
fn the_stats_example_is_the_max_turns_1_selection() {
    let (_, stats) = printed(
        Format::Transcript,
        PolicyOverrides {
            max_turns: Some(1.into()),
            ..PolicyOverrides::default()
        },
    );
    assert_eq!(example("stats"), format!("{stats}\n"));
}

/// The stable-window example of docs/FORMATS.md §4.6: 7-token messages (`chars4`), a budget of 60
/// tokens, low water 0.6.
#[test]
fn the_stable_window_example_holds() {
    let first_kept = |n: usize, trim: &str| -> String {
        let lines: Vec<String> = (1..=n)
            .map(|i| {
                let (role, text) = if i % 2 == 1 {
                    ("user", format!("Question {}?", i.div_ceil(2)))
                } else {
                    ("assistant", format!("Answer {}.", i / 2))
                };
                serde_json::json!({"role": role, "content": text}).to_string()
            })
            .collect();
        let conv = parse_conversation(&lines.join("\n"), &ParseOptions::strict())
            .expect("JSON Lines parse");
        let req = ContextRequest {
            overrides: PolicyOverrides {
                max_tokens: Some(60.into()),
                tokenizer: Some(recall_core::Tokenizer::Chars4),
                trim: Some(trim.parse().expect("trim mode")),
                ..PolicyOverrides::default()
            },
            ..ContextRequest::new(Format::Transcript)
        };
        let out = build_context(&conv, &req).expect("renders");
        assert!(out.kept.iter().all(|k| k.measure.tokens == 7));
        let first = out.kept.first().expect("something is kept");
        recall_core::extract::transcript_text(&first.message).expect("has text")
    };
    for (n, stable, sliding) in [
        (8, "Question 1?", "Question 1?"),
        (9, "Question 3?", "Question 2?"),
        (11, "Question 3?", "Question 3?"),
        (12, "Question 3?", "Question 3?"),
        (13, "Question 5?", "Question 4?"),
    ] {
        assert_eq!(first_kept(n, "stable"), stable, "stable, {n} messages");
        assert_eq!(first_kept(n, "sliding"), sliding, "sliding, {n} messages");
    }
}
