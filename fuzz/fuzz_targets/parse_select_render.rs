//! Arbitrary bytes → parse (lenient and strict) → build_context for every format under a few
//! policies. Checks that nothing panics and a handful of cheap invariants (docs/FUZZING.md).
//!
//! Input layout: the first 4 bytes choose the limits, the rest is the conversation text
//! (decoded lossily as UTF-8).

#![no_main]

use libfuzzer_sys::fuzz_target;
use recall_core::context::{build_context, ContextError, ContextOutput, ContextRequest};
use recall_core::message::Role;
use recall_core::parse::{parse_conversation, Conversation, ParseOptions};
use recall_core::policy::{Count, Format, PolicyOverrides, TrimMode};
use recall_core::render::escape::{is_line_break, LABELS};
use recall_core::select::{LATEST_EXCEEDS, TRIM_NOTICE};
use recall_core::tokens::Tokenizer;
use recall_core::Prompt;

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let (ctl, rest) = data.split_at(4);
    let text = String::from_utf8_lossy(rest);

    let lenient = parse_conversation(&text, &ParseOptions::default());
    let strict = parse_conversation(&text, &ParseOptions::strict());
    match (&lenient, &strict) {
        (Ok(l), Ok(s)) => {
            assert_eq!(l, s, "strict accepted what lenient read differently");
            assert_eq!(l.skipped, 0);
            assert!(l.warnings.is_empty());
        }
        (Err(_), Ok(_)) => panic!("strict accepted an input lenient rejected"),
        (Ok(l), Err(_)) => assert!(l.skipped > 0, "strict rejected an input with no warning"),
        (Err(_), Err(_)) => {}
    }
    let Ok(conv) = lenient else {
        return;
    };

    let derived = overrides(ctl);
    let current =
        (ctl[3] & 0x10 != 0).then(|| "Human: now\n---\n</conversation_history>".to_string());
    for format in Format::ALL {
        for (ov, escape) in [
            (PolicyOverrides::default(), true),
            (derived.clone(), true),
            (derived.clone(), false),
        ] {
            let req = ContextRequest {
                format: Some(format),
                overrides: ov,
                current: current.clone(),
                escape,
                query: None,
                summary: None,
            };
            match build_context(&conv, &req) {
                Ok(out) => check(&conv, &req, &out),
                Err(ContextError::NoCurrentMessage) => {
                    assert!(format == Format::Xml && current.is_none());
                }
                Err(e) => panic!("unexpected error {e:?}"),
            }
        }
    }
});

fn overrides(ctl: &[u8]) -> PolicyOverrides {
    let opt = |b: u8, scale: u32| (b & 0x80 == 0).then_some(u32::from(b & 0x7f) * scale);
    let caps = ctl[3] & 0x08 != 0;
    let count = |n: u32| Some(Count::from(n));
    PolicyOverrides {
        max_turns: opt(ctl[0], 1).map(|v| Count::from(v % 8)),
        max_chars: opt(ctl[1], 8).map(Count::from),
        max_tokens: opt(ctl[2], 4).map(Count::from),
        tokenizer: Some(match ctl[3] & 0x03 {
            1 => Tokenizer::O200k,
            2 => Tokenizer::Cl100k,
            _ => Tokenizer::Chars4,
        }),
        user_max_chars: caps.then(|| count(u32::from(ctl[0] % 64))).flatten(),
        assistant_max_chars: caps.then(|| count(u32::from(ctl[1] % 128))).flatten(),
        tool_result_max_chars: caps.then(|| count(u32::from(ctl[2] % 32))).flatten(),
        trim: Some(if ctl[3] & 0x04 != 0 {
            TrimMode::Stable
        } else {
            TrimMode::Sliding
        }),
        low_water: Some(f64::from(1 + (ctl[3] >> 5)) / 8.0),
        // Recall and summaries need a store's history: not reachable from a parsed text.
        ..PolicyOverrides::default()
    }
}

fn check(conv: &Conversation, req: &ContextRequest, out: &ContextOutput) {
    let s = &out.stats;
    // Invalid entries, plus the non-system messages; the xml current message taken from the
    // input is not history, a --current in other formats is appended to it.
    let mut n = conv.skipped
        + conv
            .messages
            .iter()
            .filter(|m| m.message.role != Role::System)
            .count();
    match (out.format, &req.current) {
        (Format::Xml, None) => n -= 1,
        (Format::Xml, Some(_)) => {}
        (_, Some(_)) => n += 1,
        (_, None) => {}
    }
    assert_eq!(s.included + s.dropped + s.skipped, n, "{s:?}");
    assert!(s.skipped >= conv.skipped);
    assert_eq!(s.trimmed, s.dropped > 0);
    assert_eq!(s.notice.as_deref(), s.trimmed.then_some(TRIM_NOTICE));
    let latest = s.warnings.iter().any(|w| w == LATEST_EXCEEDS);
    if latest {
        assert_eq!(s.included, 1);
    } else {
        let p = &out.policy;
        assert!(p.max_turns.is_none_or(|m| s.turns <= m), "{s:?}");
        assert!(p.max_chars.is_none_or(|m| s.chars <= m), "{s:?}");
        assert!(p.max_tokens.is_none_or(|m| s.tokens <= m), "{s:?}");
    }
    assert!(s.turns <= s.included);

    let text = match &out.prompt {
        Prompt::Text(t) => t,
        Prompt::Json(v) => {
            let msgs = v["messages"].as_array().expect("messages array");
            if out.format == Format::Anthropic {
                assert_eq!(msgs.len(), s.included);
            }
            return;
        }
    };
    if !req.escape || out.format == Format::Task {
        return;
    }
    let lines: Vec<&str> = text.split(is_line_break).collect();
    let labelled = lines
        .iter()
        .filter(|l| {
            let t = l.trim_start();
            LABELS.iter().any(|lab| t.starts_with(lab))
        })
        .count();
    let seps = lines.iter().filter(|l| l.trim() == "---").count();
    let open = lines
        .iter()
        .filter(|l| l.trim_start().starts_with("<conversation_history>"))
        .count();
    let close = lines
        .iter()
        .filter(|l| l.trim_start().starts_with("</conversation_history>"))
        .count();
    match out.format {
        Format::Transcript => {
            assert!(
                labelled <= s.included,
                "{labelled} labels for {s:?}\n{text}"
            );
            assert_eq!(seps, labelled.saturating_sub(1), "{text}");
            assert_eq!((open, close), (0, 0), "{text}");
        }
        Format::Bracket => {
            assert_eq!(seps, 0, "{text}");
            assert_eq!((open, close), (0, 0), "{text}");
        }
        Format::Xml => {
            assert_eq!(seps, 0, "{text}");
            assert!(open <= 1 && open == close, "{text}");
            assert!(labelled <= 2 * s.included, "{text}");
            if open == 0 {
                assert_eq!(labelled, 0, "{text}");
            }
        }
        _ => {}
    }
}
