//! Properties of the gateway's pure parts: how a request's history is matched against the
//! stored one, and the breakpoints placed on the body sent upstream.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use recall_core::gateway::{
    forward_body, match_history, split_request, HistoryMatch, Provider, StoredTurn,
    MAX_BREAKPOINTS, MIRROR_ANCHOR,
};
use recall_core::{Message, Role};
use serde_json::{json, Value};

/// A history of alternating turns drawn from a few short texts (so repeats happen).
fn history(max: usize) -> impl Strategy<Value = Vec<Message>> {
    prop::collection::vec(0u8..4, 1..max).prop_map(|picks| {
        picks
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let role = if i % 2 == 0 {
                    Role::User
                } else {
                    Role::Assistant
                };
                Message::text(role, ["ok", "yes", "tell me more", "thanks"][*p as usize])
            })
            .collect()
    })
}

fn tail(stored: &[Message]) -> Vec<StoredTurn> {
    stored[stored.len().saturating_sub(MIRROR_ANCHOR)..]
        .iter()
        .map(|m| StoredTurn {
            message: m.clone(),
            redacted: false,
        })
        .collect()
}

proptest! {
    /// A client that sends the stored history and then something new continues at the end
    /// of the stored history, however often its messages repeat.
    #[test]
    fn a_full_copy_continues_after_the_stored_history(
        stored in history(30),
        new in history(4),
    ) {
        prop_assume!(stored.last().map(|m| m.role) == Some(Role::Assistant));
        let mut incoming = stored.clone();
        incoming.extend(new);
        prop_assert_eq!(
            match_history(stored.len(), &tail(&stored), &incoming),
            HistoryMatch::Mirror { from: stored.len() }
        );
    }

    /// One message after a reply is always appended; the stored history is never re-read.
    #[test]
    fn one_message_after_a_reply_is_appended(stored in history(30), text in "[a-z ]{1,20}") {
        prop_assume!(stored.last().map(|m| m.role) == Some(Role::Assistant));
        let incoming = [Message::text(Role::User, text)];
        prop_assert_eq!(
            match_history(stored.len(), &tail(&stored), &incoming),
            HistoryMatch::Append
        );
    }

    /// Whatever the match, what it says is new is a suffix of the request that follows a
    /// copy of the stored tail (or the whole request, for append).
    #[test]
    fn what_is_stored_continues_the_tail(stored in history(20), incoming in history(20)) {
        if let HistoryMatch::Mirror { from } = match_history(stored.len(), &tail(&stored), &incoming) {
            prop_assert!(from < incoming.len());
            let t = tail(&stored);
            let overlap = t.len().min(from);
            for (s, i) in t[t.len() - overlap..].iter().zip(&incoming[from - overlap..from]) {
                prop_assert!(recall_core::gateway::same_message(&s.message, i));
            }
        }
    }

    /// The mirror sum of a history copied in full equals the stored one; an edit to any one
    /// message, at any position, changes it, unless that message is redacted.
    #[test]
    fn the_mirror_sum_sees_an_edit_anywhere(
        stored in history(40),
        at in any::<prop::sample::Index>(),
        first in 1i64..1000,
    ) {
        use recall_core::gateway::mirror::sum_of;
        let total = sum_of(first, &stored, &[]);
        prop_assert_eq!(sum_of(first, &stored.clone(), &[]), total);
        let i = at.index(stored.len());
        let mut edited = stored.clone();
        edited[i] = Message::text(edited[i].role, "an edit");
        if !recall_core::gateway::same_message(&edited[i], &stored[i]) {
            prop_assert_ne!(sum_of(first, &edited, &[]), total);
        }
        let seq = first + i as i64;
        prop_assert_eq!(sum_of(first, &edited, &[seq]), sum_of(first, &stored, &[seq]));
    }

    /// recall never puts more than four breakpoints on an Anthropic request, and never
    /// removes one of the client's from its system prompt or tools.
    #[test]
    fn never_more_than_four_breakpoints(
        marked_system in prop::collection::vec(any::<bool>(), 0..4),
        marked_tools in prop::collection::vec(any::<bool>(), 0..4),
        turns in 1usize..6,
    ) {
        let mark = |m: bool, v: Value| {
            let mut v = v;
            if m { v["cache_control"] = json!({"type": "ephemeral"}); }
            v
        };
        let system: Vec<Value> = marked_system.iter().enumerate()
            .map(|(i, m)| mark(*m, json!({"type": "text", "text": format!("s{i}")}))).collect();
        let tools: Vec<Value> = marked_tools.iter().enumerate()
            .map(|(i, m)| mark(*m, json!({"name": format!("t{i}"), "input_schema": {}}))).collect();
        let client_marks = marked_system.iter().chain(&marked_tools).filter(|m| **m).count();
        prop_assume!(client_marks <= MAX_BREAKPOINTS);
        let mut body = json!({"model": "m", "max_tokens": 5, "tools": tools,
            "messages": [{"role": "user", "content": "new"}]});
        if !system.is_empty() { body["system"] = json!(system); }
        let inc = split_request(Provider::Anthropic, body).unwrap();
        let mut messages = vec![];
        for i in 0..turns {
            messages.push(json!({"role": "user", "content": format!("q{i}")}));
            messages.push(json!({"role": "assistant", "content": format!("a{i}")}));
        }
        messages.push(json!({"role": "user", "content": "new"}));
        let out = forward_body(Provider::Anthropic, inc.clone(), json!({"messages": messages}));
        let count = out.to_string().matches("cache_control").count();
        prop_assert!(count <= MAX_BREAKPOINTS, "{count}: {out}");
        prop_assert!(count >= client_marks);
        for (i, m) in marked_system.iter().enumerate() {
            if *m { prop_assert!(out["system"][i].get("cache_control").is_some()); }
        }
    }
}
