//! The drop-in gateway's pure parts (issue 17): reading a provider request (Anthropic Messages
//! or OpenAI chat completions) into the history it carries and the rest of its body, matching
//! that history against the stored one (append or mirror), and writing the body recall sends
//! upstream: the client's request with `messages` (and the system prompt) replaced by the
//! context recall built, and, for Anthropic, prompt-cache breakpoints placed.
//!
//! docs/GATEWAY.md describes the behaviour; this module is its definition.

use serde_json::{Map, Value};

use crate::message::{Block, Content, Message, Role};
use crate::policy::Format;

pub mod mirror;

/// The provider API a gateway request speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    /// `POST /anthropic/v1/messages`: the Anthropic Messages API.
    Anthropic,
    /// `POST /openai/v1/chat/completions`: OpenAI chat completions.
    OpenAi,
}

impl Provider {
    /// The name used in metrics and logs: `anthropic` or `openai`.
    pub fn name(self) -> &'static str {
        match self {
            Provider::Anthropic => "anthropic",
            Provider::OpenAi => "openai",
        }
    }

    /// The context format whose rendering is the provider's `messages`.
    pub fn format(self) -> Format {
        match self {
            Provider::Anthropic => Format::Anthropic,
            Provider::OpenAi => Format::Openai,
        }
    }
}

/// The most `cache_control` breakpoints an Anthropic request may carry.
pub const MAX_BREAKPOINTS: usize = 4;

/// A provider request taken apart.
#[derive(Debug, Clone, PartialEq)]
pub struct Incoming {
    /// Everything of the body but the history and the system prompt (model, max_tokens,
    /// tools, stream, …), in the client's order: passed upstream unchanged.
    pub rest: Map<String, Value>,
    /// The client's system prompt as sent: Anthropic's `system` (a string or text blocks)
    /// then the content of any `system` message in its history, or OpenAI's
    /// `system`/`developer` messages, in order. Sent upstream each time, never
    /// stored: clients send it with every request and change it freely.
    pub system: Vec<Value>,
    /// The conversation messages as sent (system messages taken out).
    pub messages: Vec<Value>,
    /// `stream: true`.
    pub stream: bool,
}

/// Why a request body cannot be a gateway request. The text names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadRequest(pub String);

/// Takes a provider request body apart (see [`Incoming`]).
///
/// ```
/// use recall_core::gateway::{split_request, Provider};
/// let body = serde_json::json!({
///     "model": "claude-sonnet-4-6", "max_tokens": 100, "system": "Be brief.",
///     "messages": [{"role": "user", "content": "Hi"}], "stream": true,
/// });
/// let inc = split_request(Provider::Anthropic, body).unwrap();
/// assert_eq!(inc.messages.len(), 1);
/// assert!(inc.stream);
/// assert_eq!(inc.rest.keys().collect::<Vec<_>>(), ["model", "max_tokens", "stream"]);
/// ```
pub fn split_request(provider: Provider, body: Value) -> Result<Incoming, BadRequest> {
    let Value::Object(mut rest) = body else {
        return Err(BadRequest("the request body must be a JSON object".into()));
    };
    let messages = match rest.shift_remove("messages") {
        Some(Value::Array(m)) if !m.is_empty() => m,
        Some(Value::Array(_)) => {
            return Err(BadRequest(
                "messages: at least one message is required".into(),
            ))
        }
        Some(_) => return Err(BadRequest("messages: must be an array".into())),
        None => return Err(BadRequest("messages: field required".into())),
    };
    let stream = match rest.get("stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(BadRequest("stream: must be true or false".into())),
    };
    // System messages in the history (OpenAI's `system`/`developer`; Anthropic's mid-history
    // `system` messages, which the Claude Code CLI sends) join the system prompt.
    let (in_history, messages): (Vec<Value>, Vec<Value>) = messages.into_iter().partition(|m| {
        matches!(
            m.get("role").and_then(Value::as_str),
            Some("system" | "developer")
        )
    });
    if messages.is_empty() {
        return Err(BadRequest(
            "messages: at least one message besides system messages is required".into(),
        ));
    }
    let system = match provider {
        Provider::Anthropic => {
            let mut system = match rest.shift_remove("system") {
                None | Some(Value::Null) => vec![],
                Some(Value::String(s)) if s.is_empty() => vec![],
                Some(s @ Value::String(_)) => vec![s],
                Some(Value::Array(blocks)) => {
                    if blocks
                        .iter()
                        .any(|b| b.get("type").and_then(Value::as_str) != Some("text"))
                    {
                        return Err(BadRequest(
                            "system: every block must be a text block".into(),
                        ));
                    }
                    blocks
                }
                Some(_) => {
                    return Err(BadRequest(
                        "system: must be a string or an array of text blocks".into(),
                    ))
                }
            };
            for m in in_history {
                match m.get("content") {
                    Some(s @ Value::String(_)) => system.push(s.clone()),
                    Some(Value::Array(blocks)) => system.extend(blocks.iter().cloned()),
                    _ => {
                        return Err(BadRequest(
                            "messages: a system message needs text content".into(),
                        ))
                    }
                }
            }
            system
        }
        Provider::OpenAi => in_history,
    };
    Ok(Incoming {
        rest,
        system,
        messages,
        stream,
    })
}

/// How a request's history relates to the stored one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryMatch {
    /// The client sent only what is new: store every incoming message.
    Append,
    /// The client sent its history and the stored one continues in it: store the incoming
    /// messages from `from` on.
    Mirror { from: usize },
    /// The stored history ends with the request's last message and holds no reply to it:
    /// the same request again (an SDK retrying after a 429 or a dropped connection). Nothing
    /// is stored.
    Retry,
    /// The incoming history leaves the stored one: it goes on a fork (see
    /// [`common_prefix`]).
    Diverged,
}

/// How many of the stored messages, newest first, must reappear in order in a mirrored
/// history for it to continue the stored one (fewer when fewer are stored).
pub const MIRROR_ANCHOR: usize = 4;

/// A stored message as a mirrored history is matched against it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredTurn {
    pub message: Message,
    /// Redacted: it stands for whatever the client still holds in its place (an SDK keeps
    /// the text it sent; it must neither fork the conversation nor be stored again).
    pub redacted: bool,
}

impl StoredTurn {
    /// Whether the client's `incoming` message is this one: [`same_message`], or anything in
    /// the place of a redacted one.
    pub fn matches(&self, incoming: &Message) -> bool {
        self.redacted || same_message(&self.message, incoming)
    }
}

/// Matches the incoming history against the stored one, of which `stored_len` messages
/// exist and `tail` are the newest (oldest first, up to [`MIRROR_ANCHOR`]).
///
/// - The stored history ends with what the request ends with, and no reply after it:
///   [`HistoryMatch::Retry`].
/// - Nothing stored, or one incoming message: [`HistoryMatch::Append`].
/// - Several incoming messages: a mirrored history. Where it continues the stored one, the
///   newest stored messages (`tail`) appear in it just before what is new: first at the
///   position a complete copy puts them (`stored_len`), else at the latest position that fits
///   (a client that trims its own history). What follows them is new, and something must
///   be: a history that ends with the stored one, or never reaches it, is
///   [`HistoryMatch::Diverged`].
///
/// Messages are compared by [`StoredTurn::matches`]; a placement is only taken on the word
/// of at least one message that is not redacted (a redacted message matches anything, so
/// alone it proves nothing). The messages older than the tail are not looked at here: the
/// caller checks them ([`mirror`]).
pub fn match_history(stored_len: usize, tail: &[StoredTurn], incoming: &[Message]) -> HistoryMatch {
    let Some(newest) = tail.last() else {
        return HistoryMatch::Append;
    };
    if stored_len == 0 {
        return HistoryMatch::Append;
    }
    // The anchor (the stored tail) sits in `incoming` just before `end`.
    let fits = |end: usize| {
        if end > incoming.len() {
            return false;
        }
        let overlap = tail.len().min(end);
        let stored = &tail[tail.len() - overlap..];
        stored
            .iter()
            .zip(&incoming[end - overlap..end])
            .all(|(s, i)| s.matches(i))
            && stored.iter().any(|s| !s.redacted)
            // A shorter overlap than the tail only when the client's history starts there.
            && (overlap == tail.len() || overlap == end)
    };
    if newest.message.role != Role::Assistant && fits(incoming.len()) {
        // The stored history ends with what the client sends last, and no reply followed
        // it: the same request again (an SDK retrying a 429 or a dropped connection).
        return HistoryMatch::Retry;
    }
    if incoming.len() == 1 {
        return HistoryMatch::Append;
    }
    let fits_new = |end: usize| end < incoming.len() && fits(end);
    if fits_new(stored_len) {
        return HistoryMatch::Mirror { from: stored_len };
    }
    match (1..incoming.len()).rev().find(|&end| fits_new(end)) {
        Some(from) => HistoryMatch::Mirror { from },
        None => HistoryMatch::Diverged,
    }
}

/// How many leading messages two histories share ([`StoredTurn::matches`]): where a
/// diverging history forks from the stored one.
pub fn common_prefix(stored: &[StoredTurn], incoming: &[Message]) -> usize {
    stored
        .iter()
        .zip(incoming)
        .take_while(|(s, i)| s.matches(i))
        .count()
}

/// Whether two messages are the same turn as a client sends it back: the same role and the
/// same content, where a string equals one text block of it, and thinking blocks (which
/// clients drop or keep as they like), empty text blocks, metadata and client ids are not
/// compared. Block fields a client adds that recall does not keep (`cache_control`) are
/// already gone after parsing.
pub fn same_message(a: &Message, b: &Message) -> bool {
    a.role == b.role && compared_blocks(&a.content).eq(compared_blocks(&b.content))
}

/// The blocks [`same_message`] compares, with a string as one text block.
pub(crate) fn compared_blocks(c: &Content) -> impl Iterator<Item = ComparedBlock<'_>> {
    let (text, blocks) = match c {
        Content::Text(s) => (Some(s.as_str()), &[][..]),
        Content::Blocks(b) => (None, b.as_slice()),
    };
    text.map(ComparedBlock::Text)
        .into_iter()
        .chain(blocks.iter().map(|b| match b {
            Block::Text { text } => ComparedBlock::Text(text),
            other => ComparedBlock::Other(other),
        }))
        .filter(|b| match b {
            ComparedBlock::Text(t) => !t.is_empty(),
            ComparedBlock::Other(b) => {
                !matches!(b, Block::Thinking { .. } | Block::RedactedThinking { .. })
            }
        })
}

#[derive(PartialEq)]
pub(crate) enum ComparedBlock<'a> {
    Text(&'a str),
    Other(&'a Block),
}

/// Writes the body sent upstream: the client's `rest` (unchanged, in its order), the system
/// prompt and the context's `messages`.
///
/// `context` is the rendered prompt of the conversation's context in the provider's format
/// (`{"system"?, "messages"}` for Anthropic, `{"messages"}` with a leading system message
/// for OpenAI): the conversation's stored system messages there follow the client's system
/// prompt (a summary is in `messages`, never there). For Anthropic, [`place_breakpoints`] marks the cache
/// breakpoints.
pub fn forward_body(provider: Provider, incoming: Incoming, context: Value) -> Value {
    // Taken apart, not copied: the history is most of a request's bytes.
    let mut context = match context {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let rendered = match context.remove("messages") {
        Some(Value::Array(m)) => m,
        _ => Vec::new(),
    };
    let Incoming {
        system: incoming_system,
        mut rest,
        ..
    } = incoming;
    let mut body = Map::new();
    match provider {
        Provider::Anthropic => {
            let mut system: Vec<Value> = Vec::new();
            for s in incoming_system {
                match s {
                    Value::String(text) => system.push(text_block(&text)),
                    other => system.push(other),
                }
            }
            if let Some(own) = context.get("system").and_then(Value::as_str) {
                if !own.is_empty() {
                    system.push(text_block(own));
                }
            }
            let mut messages = rendered;
            place_breakpoints(&mut system, &mut messages, rest.get_mut("tools"));
            body = rest;
            if !system.is_empty() {
                body.insert("system".into(), Value::Array(system));
            }
            body.insert("messages".into(), Value::Array(messages));
        }
        Provider::OpenAi => {
            body.append(&mut rest);
            let mut messages = incoming_system;
            messages.extend(rendered);
            body.insert("messages".into(), Value::Array(messages));
        }
    }
    Value::Object(body)
}

fn text_block(text: &str) -> Value {
    let mut b = Map::new();
    b.insert("type".into(), "text".into());
    b.insert("text".into(), text.into());
    Value::Object(b)
}

fn ephemeral() -> Value {
    let mut c = Map::new();
    c.insert("type".into(), "ephemeral".into());
    Value::Object(c)
}

/// Counts the `cache_control` markers in blocks (and in tool definitions).
fn count_breakpoints(values: &[Value]) -> usize {
    values
        .iter()
        .filter(|v| v.get("cache_control").is_some_and(|c| !c.is_null()))
        .count()
}

/// Places Anthropic prompt-cache breakpoints (`cache_control: {"type": "ephemeral"}`):
///
/// 1. at the end of the system prompt (its last block), unless it has one there;
/// 2. at the end of the stable part of the history: the last block of the message just
///    before the newest user message (a question, or a tool loop's results). Everything up
///    to it is sent the same way next turn (stable windows keep it so, and recall's section
///    only ever goes in the newest question, which stays the same through its tool loop), so
///    the next request reads it from the cache; the newest message is after it.
///
/// The client's own markers on the system prompt and the tools are kept and counted: recall
/// adds only while the request has fewer than [`MAX_BREAKPOINTS`]. The messages are recall's
/// rendering, so they carry no marker of the client's.
pub fn place_breakpoints(system: &mut [Value], messages: &mut [Value], tools: Option<&mut Value>) {
    let mut used = count_breakpoints(system)
        + tools
            .as_ref()
            .and_then(|t| t.as_array())
            .map_or(0, |t| count_breakpoints(t));
    if let Some(last) = system.last_mut() {
        if used < MAX_BREAKPOINTS && last.get("cache_control").is_none() {
            if let Value::Object(b) = last {
                b.insert("cache_control".into(), ephemeral());
                used += 1;
            }
        }
    }
    let newest_user = messages
        .iter()
        .rposition(|m| m.get("role").and_then(Value::as_str) == Some("user"));
    let stable_end = newest_user.and_then(|i| i.checked_sub(1));
    if let (Some(i), true) = (stable_end, used < MAX_BREAKPOINTS) {
        if let Some(Value::Object(m)) = messages.get_mut(i) {
            mark_last_block(m);
        }
    }
}

/// Marks a message's last block, turning string content into one text block.
fn mark_last_block(m: &mut Map<String, Value>) {
    let content = m.get_mut("content");
    match content {
        Some(Value::String(s)) => {
            let mut block = match text_block(s) {
                Value::Object(b) => b,
                _ => return,
            };
            block.insert("cache_control".into(), ephemeral());
            m.insert("content".into(), Value::Array(vec![Value::Object(block)]));
        }
        Some(Value::Array(blocks)) => {
            if let Some(Value::Object(b)) = blocks.last_mut() {
                b.insert("cache_control".into(), ephemeral());
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn u(t: &str) -> Message {
        Message::text(Role::User, t)
    }
    fn a(t: &str) -> Message {
        Message::text(Role::Assistant, t)
    }
    /// Stored messages, none redacted.
    fn st(m: &[Message]) -> Vec<StoredTurn> {
        m.iter()
            .map(|m| StoredTurn {
                message: m.clone(),
                redacted: false,
            })
            .collect()
    }

    #[test]
    fn a_redacted_message_matches_what_the_client_still_holds() {
        let mut stored = st(&[u("hi"), a("my key is sk-1"), u("more"), a("sure")]);
        stored[1] = StoredTurn {
            message: a("[redacted]"),
            redacted: true,
        };
        // The SDK still sends the text it had: a continuation, not an edit.
        let inc = [
            u("hi"),
            a("my key is sk-1"),
            u("more"),
            a("sure"),
            u("next"),
        ];
        assert_eq!(
            match_history(4, &stored, &inc),
            HistoryMatch::Mirror { from: 4 }
        );
        assert_eq!(common_prefix(&stored, &inc), 4);
        // A redacted message alone proves nothing: one message after a redacted question is
        // a new question, not a retry.
        let only = [StoredTurn {
            message: u("[redacted]"),
            redacted: true,
        }];
        assert_eq!(match_history(1, &only, &[u("x")]), HistoryMatch::Append);
    }

    #[test]
    fn one_message_or_nothing_stored_is_append() {
        assert_eq!(
            match_history(0, &st(&[]), &[u("a"), a("b"), u("c")]),
            HistoryMatch::Append
        );
        assert_eq!(
            match_history(4, &st(&[a("x")]), &[u("c")]),
            HistoryMatch::Append
        );
    }

    #[test]
    fn the_same_request_again_is_a_retry() {
        // The reply to "c" never came (a 429): the SDK sends the request again.
        assert_eq!(
            match_history(3, &st(&[u("a"), a("b"), u("c")]), &[u("c")]),
            HistoryMatch::Retry
        );
        assert_eq!(
            match_history(3, &st(&[u("a"), a("b"), u("c")]), &[u("a"), a("b"), u("c")]),
            HistoryMatch::Retry
        );
        // After a reply, the same text is a new message.
        assert_eq!(
            match_history(4, &st(&[u("c"), a("d")]), &[u("c")]),
            HistoryMatch::Append
        );
    }

    #[test]
    fn a_full_copy_continues_at_the_stored_length() {
        let stored = [u("hi"), a("hello"), u("more"), a("sure")];
        let mut inc = stored.to_vec();
        inc.push(u("next"));
        assert_eq!(
            match_history(4, &st(&stored), &inc),
            HistoryMatch::Mirror { from: 4 }
        );
    }

    #[test]
    fn a_client_trimmed_history_continues_where_the_tail_is() {
        let tail = [u("q2"), a("a2"), u("q3"), a("a3")];
        // The client kept only its last three messages.
        let inc = [u("q3"), a("a3"), u("q4")];
        assert_eq!(
            match_history(40, &st(&tail), &inc),
            HistoryMatch::Mirror { from: 2 }
        );
    }

    #[test]
    fn repeated_messages_prefer_the_full_copy_position() {
        let stored = [u("ok"), a("ok"), u("ok"), a("ok")];
        let inc = [
            u("ok"),
            a("ok"),
            u("ok"),
            a("ok"),
            u("ok"),
            a("ok"),
            u("go"),
        ];
        // Stored length 4: a full copy would put the new part at 4, but the copy goes on
        // after it, so the latest fitting position wins.
        assert_eq!(
            match_history(4, &st(&stored), &inc),
            HistoryMatch::Mirror { from: 4 }
        );
        assert_eq!(
            match_history(6, &st(&stored), &inc),
            HistoryMatch::Mirror { from: 6 }
        );
    }

    #[test]
    fn an_edited_or_retried_history_diverges() {
        let stored = [u("hi"), a("hello"), u("more"), a("sure")];
        // The last user message was edited: the stored reply is not in the history.
        let inc = [u("hi"), a("hello"), u("edited")];
        assert_eq!(match_history(4, &st(&stored), &inc), HistoryMatch::Diverged);
        assert_eq!(common_prefix(&st(&stored), &inc), 2);
        // Nothing new after the stored history: a repeat, not a continuation.
        assert_eq!(
            match_history(4, &st(&stored), &stored),
            HistoryMatch::Diverged
        );
    }

    #[test]
    fn strings_equal_one_text_block_and_thinking_is_ignored() {
        let s = a("hello");
        let b = Message::blocks(
            Role::Assistant,
            vec![
                Block::Thinking {
                    thinking: "hmm".into(),
                    signature: Some("sig".into()),
                },
                Block::Text {
                    text: "hello".into(),
                },
            ],
        );
        assert!(same_message(&s, &b));
        assert!(!same_message(&s, &u("hello")));
        assert!(!same_message(&s, &a("hello!")));
    }

    #[test]
    fn openai_system_messages_are_taken_out() {
        let inc = split_request(
            Provider::OpenAi,
            json!({"model": "m", "messages": [
                {"role": "system", "content": "S"},
                {"role": "user", "content": "hi"}
            ]}),
        )
        .unwrap();
        assert_eq!(inc.system, vec![json!({"role": "system", "content": "S"})]);
        assert_eq!(inc.messages, vec![json!({"role": "user", "content": "hi"})]);
        assert!(!inc.stream);
    }

    #[test]
    fn anthropic_system_messages_join_the_system_prompt() {
        let inc = split_request(
            Provider::Anthropic,
            json!({"system": "S", "messages": [
                {"role": "user", "content": "hi"},
                {"role": "system", "content": "Agents: a, b."},
                {"role": "system", "content": [{"type": "text", "text": "More."}]}
            ]}),
        )
        .unwrap();
        assert_eq!(
            inc.system,
            vec![
                json!("S"),
                json!("Agents: a, b."),
                json!({"type": "text", "text": "More."})
            ]
        );
        assert_eq!(inc.messages, vec![json!({"role": "user", "content": "hi"})]);
    }

    #[test]
    fn bad_bodies_name_the_field() {
        let e = |b: Value| split_request(Provider::Anthropic, b).unwrap_err().0;
        assert_eq!(e(json!([])), "the request body must be a JSON object");
        assert_eq!(e(json!({"model": "m"})), "messages: field required");
        assert_eq!(
            e(json!({"messages": []})),
            "messages: at least one message is required"
        );
        assert_eq!(
            e(json!({"messages": [{"role":"user","content":"x"}], "stream": "yes"})),
            "stream: must be true or false"
        );
        assert_eq!(
            e(json!({"messages": [{"role":"user","content":"x"}], "system": 3})),
            "system: must be a string or an array of text blocks"
        );
    }

    #[test]
    fn anthropic_body_keeps_the_clients_fields_and_places_two_breakpoints() {
        let inc = split_request(
            Provider::Anthropic,
            json!({"model": "m", "max_tokens": 9, "system": "S", "messages": [
                {"role": "user", "content": "new"}
            ], "stream": true, "temperature": 0}),
        )
        .unwrap();
        let context = json!({"system": "Stored system message.", "messages": [
            {"role": "user", "content": "q1"},
            {"role": "assistant", "content": "a1"},
            {"role": "user", "content": "new"}
        ]});
        let body = forward_body(Provider::Anthropic, inc.clone(), context.clone());
        assert_eq!(
            body,
            json!({
                "model": "m", "max_tokens": 9, "stream": true, "temperature": 0,
                "system": [
                    {"type": "text", "text": "S"},
                    {"type": "text", "text": "Stored system message.",
                     "cache_control": {"type": "ephemeral"}}
                ],
                "messages": [
                    {"role": "user", "content": "q1"},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "a1", "cache_control": {"type": "ephemeral"}}
                    ]},
                    {"role": "user", "content": "new"}
                ]
            })
        );
    }

    #[test]
    fn breakpoints_never_exceed_four() {
        let mut system = vec![
            json!({"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}),
            json!({"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}}),
        ];
        let mut tools = json!([
            {"name": "t1", "cache_control": {"type": "ephemeral"}},
            {"name": "t2", "cache_control": {"type": "ephemeral"}}
        ]);
        let mut messages = vec![
            json!({"role": "user", "content": "q"}),
            json!({"role": "assistant", "content": "a"}),
            json!({"role": "user", "content": "n"}),
        ];
        place_breakpoints(&mut system, &mut messages, Some(&mut tools));
        assert_eq!(messages[1], json!({"role": "assistant", "content": "a"}));
        // Three of the client's: recall adds one, at the stable end.
        let mut system = vec![json!({"type": "text", "text": "a"})];
        let mut tools = json!([
            {"name": "t1", "cache_control": {"type": "ephemeral"}},
            {"name": "t2", "cache_control": {"type": "ephemeral"}},
            {"name": "t3", "cache_control": {"type": "ephemeral"}}
        ]);
        place_breakpoints(&mut system, &mut messages, Some(&mut tools));
        assert!(system[0].get("cache_control").is_some());
        assert_eq!(messages[1], json!({"role": "assistant", "content": "a"}));
    }

    #[test]
    fn a_tool_loop_marks_the_call_before_its_results() {
        let mut messages = vec![
            json!({"role": "user", "content": "q"}),
            json!({"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]}),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "r"}]}),
        ];
        place_breakpoints(&mut [], &mut messages, None);
        assert!(messages[1].to_string().contains("cache_control"));
        assert!(!messages[2].to_string().contains("cache_control"));
    }
}
