//! A fake model provider for the gateway's tests: answers `POST /v1/messages` (Anthropic)
//! and `POST /v1/chat/completions` (OpenAI) in the real wire formats, streamed or whole,
//! with a reply that shows what the model was sent, and an Anthropic prompt cache computed
//! as Anthropic documents it.
//!
//! The reply to a request is decided by the newest user text:
//! - `fail 429` / `fail 500`: that status with the provider's error JSON;
//! - `drop`: a streamed reply cut off after its first words (the connection is dropped);
//! - `fail once` in it: the first time that exact text is the newest, a stream cut off before
//!   any text (Anthropic; OpenAI: a 400), which no client retries by itself; an answer as
//!   below afterwards (a backend that recovers when the user retries);
//! - `slow` in it (Anthropic, streamed): 100 words, one every 100 ms, before the answer
//!   below (a reply long enough to stop half way);
//! - `use the tool`: a tool call (`get_weather`, `{"city": "Oslo"}`); a request that ends with
//!   tool results gets words;
//! - a question (a `?` in it): `I was sent N messages. You said: A | B | C` (the user texts,
//!   oldest first), so a test sees whether the history reached the model;
//! - `[long]` in it: `I was sent N messages.` and filler to 1,500 characters (a model's usual
//!   answer, for benchmarks);
//! - anything else: `I was sent N messages.`
//!
//! Cache (Anthropic): the prompt is the sequence of blocks (tools, system blocks, then each
//! message's content blocks; a string content is one text block; `cache_control` is not part
//! of a block's identity). At each block marked `cache_control`, the prefix up to it is
//! written to the cache; a request reads the longest cached prefix that ends at one of its
//! breakpoints or at most 20 blocks before one. `cache_read_input_tokens` counts the read
//! prefix, `cache_creation_input_tokens` the rest up to the last breakpoint, `input_tokens`
//! what follows it (tokens: bytes / 4, rounded up).

use std::collections::hash_map::DefaultHasher;
use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::{anthropic, openai, FakeServer, Part, Recorded, Reply};

/// How far before a breakpoint a cache hit is looked for (Anthropic: 20 blocks).
const LOOKBACK: usize = 20;

/// Token usage the fake reported, summed over every Anthropic request it answered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheTotals {
    pub input: u64,
    pub cache_read: u64,
    pub cache_creation: u64,
}

impl CacheTotals {
    /// The share of input tokens read from the cache.
    pub fn read_share(&self) -> f64 {
        let all = self.input + self.cache_read + self.cache_creation;
        if all == 0 {
            0.0
        } else {
            self.cache_read as f64 / all as f64
        }
    }
}

/// The fake provider and its cache.
pub struct FakeProvider {
    pub server: FakeServer,
    totals: Arc<Mutex<CacheTotals>>,
}

impl FakeProvider {
    /// Starts it on 127.0.0.1.
    pub async fn start() -> FakeProvider {
        let cache: Arc<Mutex<HashSet<u64>>> = Arc::default();
        let totals: Arc<Mutex<CacheTotals>> = Arc::default();
        let t = totals.clone();
        let failed_once: Mutex<HashSet<String>> = Mutex::default();
        let server = FakeServer::start(Arc::new(move |req: &Recorded, n| {
            let body = req.json();
            let openai = req.path.ends_with("/chat/completions");
            let last = last_user(&body);
            if last.contains("fail once")
                && failed_once
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(last)
            {
                // Cut off after the stream started: not a status a client retries on its own,
                // so the failure reaches the user, who retries.
                return if openai {
                    openai_error(400, "invalid_request_error", "the fake broke once")
                } else {
                    Reply::sse(vec![
                        anthropic::event(json!({"type": "message_start", "message": {
                            "id": format!("msg_fake_{n}"), "type": "message", "role": "assistant",
                            "content": [], "model": body["model"], "stop_reason": null,
                            "stop_sequence": null, "usage": {"input_tokens": 1, "output_tokens": 0}}})),
                        Part::Pause(std::time::Duration::from_millis(20)),
                        Part::Drop,
                    ])
                };
            }
            if openai {
                openai_reply(&body, n)
            } else {
                let usage =
                    cache_usage(&body, &mut cache.lock().unwrap_or_else(|e| e.into_inner()));
                let mut tot = t.lock().unwrap_or_else(|e| e.into_inner());
                tot.input += usage.input;
                tot.cache_read += usage.cache_read;
                tot.cache_creation += usage.cache_creation;
                anthropic_reply(&body, usage, n)
            }
        }))
        .await;
        FakeProvider { server, totals }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.server.requests()
    }

    /// The newest request received.
    pub fn last_request(&self) -> Option<Recorded> {
        self.server.last_request()
    }

    /// Usage summed over the Anthropic requests so far.
    pub fn totals(&self) -> CacheTotals {
        *self.totals.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The text of a content value (a string, or its text blocks joined).
fn content_text(c: &Value) -> String {
    match c {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The user texts of a request, oldest first (recalled sections included as sent).
fn user_texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .map(|m| content_text(&m["content"]))
        .filter(|t| !t.is_empty())
        .collect()
}

fn reply_text(body: &Value) -> String {
    let n = body["messages"].as_array().map_or(0, Vec::len);
    let texts = user_texts(body);
    let last = texts.last().map_or("", String::as_str);
    if last.contains('?') {
        format!("I was sent {n} messages. You said: {}", texts.join(" | "))
    } else if last.contains("[long]") {
        // A reply the size of a model's usual answer (1,500 characters).
        let mut r = format!("I was sent {n} messages. ");
        while r.len() < 1500 {
            r.push_str("Here is a longer answer about the plan. ");
        }
        r.truncate(1500);
        r
    } else {
        format!("I was sent {n} messages.")
    }
}

/// The newest user text, or empty when the request ends with tool results (the model
/// answers them in words).
fn last_user(body: &Value) -> String {
    let last = body["messages"].as_array().and_then(|m| m.last());
    let tool_results = last.is_some_and(|m| {
        m["role"] == "tool"
            || m["content"]
                .as_array()
                .is_some_and(|b| b.iter().any(|b| b["type"] == "tool_result"))
    });
    if tool_results {
        return String::new();
    }
    user_texts(body).pop().unwrap_or_default()
}

/// The blocks of an Anthropic request, each as its identity (without `cache_control`), and
/// whether it is a breakpoint.
fn prompt_blocks(body: &Value) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut push = |b: &Value| {
        let mut id = b.clone();
        let marked = b.get("cache_control").is_some_and(|c| !c.is_null());
        if let Value::Object(o) = &mut id {
            o.remove("cache_control");
        }
        out.push((id.to_string(), marked));
    };
    for t in body["tools"].as_array().into_iter().flatten() {
        push(t);
    }
    match &body["system"] {
        Value::String(s) => push(&json!({"type": "text", "text": s})),
        Value::Array(blocks) => blocks.iter().for_each(&mut push),
        _ => {}
    }
    for m in body["messages"].as_array().into_iter().flatten() {
        // The role starts a message: the same text as user or assistant is another block.
        push(&json!({"role": m["role"]}));
        match &m["content"] {
            Value::String(s) => push(&json!({"type": "text", "text": s})),
            Value::Array(blocks) => blocks.iter().for_each(&mut push),
            _ => {}
        }
    }
    out
}

fn tokens(blocks: &[(String, bool)]) -> u64 {
    blocks
        .iter()
        .map(|(b, _)| (b.len() as u64).div_ceil(4))
        .sum()
}

fn prefix_hashes(blocks: &[(String, bool)]) -> Vec<u64> {
    let mut h = DefaultHasher::new();
    blocks
        .iter()
        .map(|(b, _)| {
            b.hash(&mut h);
            h.finish()
        })
        .collect()
}

fn cache_usage(body: &Value, cache: &mut HashSet<u64>) -> CacheTotals {
    let blocks = prompt_blocks(body);
    let hashes = prefix_hashes(&blocks);
    let breakpoints: Vec<usize> = blocks
        .iter()
        .enumerate()
        .filter(|(_, (_, m))| *m)
        .map(|(i, _)| i)
        .collect();
    // The longest cached prefix ending at a breakpoint or within the lookback before one.
    let mut read_end = 0;
    for &b in &breakpoints {
        for p in (b.saturating_sub(LOOKBACK)..=b).rev() {
            if cache.contains(&hashes[p]) {
                read_end = read_end.max(p + 1);
                break;
            }
        }
    }
    let last = breakpoints.last().map_or(0, |b| b + 1);
    for &b in &breakpoints {
        cache.insert(hashes[b]);
    }
    CacheTotals {
        cache_read: tokens(&blocks[..read_end]),
        cache_creation: tokens(&blocks[read_end..last.max(read_end)]),
        input: tokens(&blocks[last.max(read_end)..]),
    }
}

fn anthropic_error(status: u16, kind: &str, message: &str) -> Reply {
    Reply::json(
        status,
        json!({"type": "error", "error": {"type": kind, "message": message}}),
    )
    .header("request-id", "req_fake")
}

fn anthropic_reply(body: &Value, usage: CacheTotals, n: usize) -> Reply {
    let last = last_user(body);
    match last.as_str() {
        "fail 429" => {
            return anthropic_error(429, "rate_limit_error", "slow down").header("retry-after", "0")
        }
        "fail 500" => return anthropic_error(500, "api_error", "the fake broke"),
        _ => {}
    }
    let id = format!("msg_fake_{n}");
    let usage_json = json!({"input_tokens": usage.input,
        "cache_read_input_tokens": usage.cache_read,
        "cache_creation_input_tokens": usage.cache_creation, "output_tokens": 1});
    let tool = last.contains("use the tool");
    // "cut off": a reply that stopped at its output limit.
    let end = if last.contains("cut off") {
        "max_tokens"
    } else {
        "end_turn"
    };
    let text = reply_text(body);
    if body["stream"] != true {
        let content = if tool {
            json!([{"type": "tool_use", "id": format!("toolu_{n}"), "name": "get_weather", "input": {"city": "Oslo"}}])
        } else {
            json!([{"type": "text", "text": text}])
        };
        let mut u = usage_json.clone();
        u["output_tokens"] = json!(7);
        return Reply::json(
            200,
            json!({"id": id, "type": "message", "role": "assistant", "model": body["model"],
                "content": content, "stop_reason": if tool {"tool_use"} else {end},
                "stop_sequence": null, "usage": u}),
        )
        .header("request-id", "req_fake");
    }
    let mut parts = vec![anthropic::event(
        json!({"type": "message_start", "message": {
        "id": id, "type": "message", "role": "assistant", "content": [], "model": body["model"],
        "stop_reason": null, "stop_sequence": null, "usage": usage_json}}),
    )];
    if tool {
        parts.push(anthropic::block_start(
            0,
            json!({"type": "tool_use", "id": format!("toolu_{n}"), "name": "get_weather", "input": {}}),
        ));
        parts.push(anthropic::delta(
            0,
            json!({"type": "input_json_delta", "partial_json": "{\"city\": \"Oslo\"}"}),
        ));
        parts.push(anthropic::block_stop(0));
        parts.push(anthropic::message_delta("tool_use", 7));
        parts.push(anthropic::message_stop());
        return Reply::sse(parts).header("request-id", "req_fake");
    }
    parts.push(anthropic::block_start(
        0,
        json!({"type": "text", "text": ""}),
    ));
    let words: Vec<&str> = text.split_inclusive(' ').collect();
    if last == "drop" {
        parts.push(anthropic::text_delta(0, "Half a reply"));
        parts.push(Part::Pause(std::time::Duration::from_millis(50)));
        parts.push(Part::Drop);
        return Reply::sse(parts);
    }
    if last.contains("slow") {
        for i in 1..=100 {
            parts.push(anthropic::text_delta(0, &format!("word{i} ")));
            parts.push(Part::Pause(std::time::Duration::from_millis(100)));
        }
    }
    for w in words {
        parts.push(anthropic::text_delta(0, w));
    }
    parts.extend([
        anthropic::block_stop(0),
        anthropic::message_delta(end, 7),
        anthropic::message_stop(),
    ]);
    Reply::sse(parts).header("request-id", "req_fake")
}

fn openai_error(status: u16, kind: &str, message: &str) -> Reply {
    Reply::json(
        status,
        json!({"error": {"message": message, "type": kind, "param": null, "code": null}}),
    )
}

fn openai_reply(body: &Value, n: usize) -> Reply {
    let last = last_user(body);
    match last.as_str() {
        "fail 429" => {
            return openai_error(429, "rate_limit_exceeded", "slow down").header("retry-after", "0")
        }
        "fail 500" => return openai_error(500, "server_error", "the fake broke"),
        _ => {}
    }
    let tool = last.contains("use the tool");
    let end = if last.contains("cut off") {
        "length"
    } else {
        "stop"
    };
    let text = reply_text(body);
    let prompt = (body.to_string().len() as u64).div_ceil(4);
    let usage =
        json!({"prompt_tokens": prompt, "completion_tokens": 7, "total_tokens": prompt + 7});
    let call = json!({"id": format!("call_{n}"), "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}});
    if body["stream"] != true {
        let message = if tool {
            json!({"role": "assistant", "content": null, "tool_calls": [call]})
        } else {
            json!({"role": "assistant", "content": text})
        };
        return Reply::json(
            200,
            json!({"id": format!("chatcmpl-{n}"), "object": "chat.completion", "created": 1,
                "model": body["model"], "choices": [{"index": 0, "message": message,
                "finish_reason": if tool {"tool_calls"} else {end}}], "usage": usage}),
        );
    }
    let mut parts = vec![openai::chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    if tool {
        let mut c = call.clone();
        c["index"] = json!(0);
        parts.push(openai::chunk(json!({"tool_calls": [c]}), Value::Null));
        parts.push(openai::chunk(json!({}), json!("tool_calls")));
    } else if last == "drop" {
        parts.push(openai::chunk(
            json!({"content": "Half a reply"}),
            Value::Null,
        ));
        parts.push(Part::Pause(std::time::Duration::from_millis(50)));
        parts.push(Part::Drop);
        return Reply::sse(parts);
    } else {
        for w in text.split_inclusive(' ') {
            parts.push(openai::chunk(json!({"content": w}), Value::Null));
        }
        parts.push(openai::chunk(json!({}), json!(end)));
    }
    if body["stream_options"]["include_usage"] == true {
        parts.push(openai::usage(prompt, 7));
    }
    parts.push(openai::done());
    Reply::sse(parts)
}
