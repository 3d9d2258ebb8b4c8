//! Memory on by default (issue 52): a stored conversation's context recalls with a share of
//! its budget when nothing is set, and recall reserves that share only once the history
//! outgrows the whole budget (`ContextRequest::resolve`, `prepare`, `Policy::window_read`).
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use recall_core::context::{build_context, prepare, ContextRequest, Gathered};
use recall_core::message::{Message, Role};
use recall_core::parse::{parse_conversation, ParseOptions};
use recall_core::policy::{
    ConversationPolicy, Count, Format, PolicyOverrides, RecallScope, TrimMode,
    MAX_DEFAULT_RECALL_TOKENS,
};
use recall_core::select::HistoryMessage;
use recall_core::tokens::Tokenizer;

fn conv() -> recall_core::parse::Conversation {
    let text = r#"[{"role":"user","content":"one two three four five six seven"},
        {"role":"assistant","content":"eight nine ten eleven twelve"},
        {"role":"user","content":"next"},{"role":"assistant","content":"ok"},
        {"role":"user","content":"last"}]"#;
    parse_conversation(text, &ParseOptions::default()).expect("parses")
}

fn gathered(texts: &[&str]) -> Gathered {
    let counter = Tokenizer::O200k;
    Gathered {
        history: texts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let role = if i % 2 == 0 {
                    Role::User
                } else {
                    Role::Assistant
                };
                HistoryMessage::new(i + 1, Message::text(role, *t), &counter)
            })
            .collect(),
        ..Gathered::default()
    }
}

fn budget(max_tokens: u32, recall_tokens: Option<u32>) -> ContextRequest {
    let mut req = ContextRequest::new(Format::Transcript);
    req.overrides = PolicyOverrides {
        max_tokens: Some(Count::from(max_tokens)),
        recall_tokens: recall_tokens.map(Count::from),
        ..Default::default()
    };
    req
}

#[test]
fn memory_is_on_by_default_for_a_stored_conversation() {
    let r = budget(4_000, None).resolve(None).expect("resolves");
    assert_eq!(r.policy.recall_tokens, 2_000);
    assert_eq!(r.policy.max_tokens, Some(2_000), "the window's share");
    // Off when asked, by the request or by the stored policy; an explicit share wins.
    let off = budget(4_000, Some(0)).resolve(None).expect("resolves");
    assert_eq!(
        (off.policy.recall_tokens, off.policy.max_tokens),
        (0, Some(4_000))
    );
    let stored: ConversationPolicy =
        serde_json::from_str(r#"{"recall_tokens": 0}"#).expect("policy");
    let r = budget(4_000, None)
        .resolve(Some(&stored))
        .expect("resolves");
    assert_eq!(r.policy.recall_tokens, 0);
    let r = budget(4_000, Some(1_000)).resolve(None).expect("resolves");
    assert_eq!(
        (r.policy.recall_tokens, r.policy.max_tokens),
        (1_000, Some(3_000))
    );
    // No token budget, or one too small for a window and a section: no recall. A large
    // one (transcript's own default) gives at most what a section can fill.
    let r = ContextRequest::new(Format::Anthropic)
        .resolve(None)
        .expect("resolves");
    assert_eq!(r.policy.recall_tokens, 0);
    let r = ContextRequest::new(Format::Transcript)
        .resolve(None)
        .expect("resolves");
    assert_eq!(r.policy.recall_tokens, MAX_DEFAULT_RECALL_TOKENS);
    let r = budget(999, None).resolve(None).expect("resolves");
    assert_eq!(r.policy.recall_tokens, 0);
    // With a summary's share taken out first: half of what is left.
    let mut req = budget(4_000, None);
    req.overrides.summarize = Some(true);
    let r = req.resolve(None).expect("resolves");
    assert_eq!(r.policy.recall_tokens, 1_500);
    assert_eq!(r.policy.max_tokens, Some(1_500));
    // A conversation held in memory recalls only when asked.
    let out = build_context(&conv(), &budget(4_000, None)).expect("builds");
    assert_eq!(out.policy.recall_tokens, 0);
}

#[test]
fn recall_waits_until_the_history_outgrows_the_whole_budget() {
    let req = budget(60, Some(30));
    // The whole history fits 60 tokens: the window holds all of it, nothing to recall.
    let texts = ["one two three", "four five", "six seven eight", "nine"];
    let resolved = req.resolve(None).expect("resolves");
    assert_eq!(
        resolved.policy.max_tokens,
        Some(30),
        "resolved: the window's share"
    );
    let p = prepare(gathered(&texts), &req, resolved.clone()).expect("prepares");
    assert_eq!(p.kept.len(), texts.len());
    assert!(p.recall.is_none(), "nothing older: no recall work");
    assert_eq!(
        p.policy.max_tokens,
        Some(60),
        "the whole budget was applied"
    );
    assert_eq!(p.stats.dropped, 0);
    // Outgrown: the window gets the budget less the share, and recall looks older.
    let long: Vec<String> = (0..40)
        .map(|i| format!("message number {i} of many"))
        .collect();
    let long: Vec<&str> = long.iter().map(String::as_str).collect();
    let p = prepare(gathered(&long), &req, resolved.clone()).expect("prepares");
    assert_eq!(p.policy.max_tokens, Some(30));
    assert!(p.stats.dropped > 0);
    let q = p.recall.as_ref().expect("a recall query");
    assert_eq!(q.before, p.kept[0].index as i64);
    // A store that read only part of the history (older messages left unread) recalls.
    let mut part = gathered(&texts);
    part.older = 3;
    let p = prepare(part, &req, resolved).expect("prepares");
    assert!(p.recall.is_some());
    assert_eq!(p.policy.max_tokens, Some(30));
    // In tenant scope the share stays reserved: other conversations may be recalled.
    let mut tenant = budget(60, Some(30));
    tenant.overrides.recall_scope = Some(RecallScope::Tenant);
    let resolved = tenant.resolve(None).expect("resolves");
    let p = prepare(gathered(&texts), &tenant, resolved).expect("prepares");
    assert_eq!(p.policy.max_tokens, Some(30));
    assert!(p.recall.is_some());
    // A stable window reserves from the start; with nothing older it recalls nothing.
    let mut stable = budget(60, Some(30));
    stable.overrides.trim = Some(TrimMode::Stable);
    let resolved = stable.resolve(None).expect("resolves");
    assert_eq!(resolved.policy.window_read(), resolved.policy);
    let p = prepare(gathered(&texts[..1]), &stable, resolved).expect("prepares");
    assert!(p.recall.is_none());
    assert_eq!(p.policy.max_tokens, Some(30));
}
