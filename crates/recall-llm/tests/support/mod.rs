//! Test support: fake Anthropic and OpenAI servers on real loopback HTTP (axum), speaking
//! the SSE wire formats of PROTOCOLS.md byte for byte, plus helpers shared by the test files.
//!
//! A server answers every request through a handler that sees the request (method, path with
//! query, headers, body) and returns a [`Reply`]: a status, headers and body parts, where a
//! part can be bytes, a pause, or a dropped connection.

#![allow(dead_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use futures::StreamExt;
use recall_llm::{BackendEvent, EventStream};
use serde_json::{json, Value};

/// One request the fake server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    /// Path and query, e.g. `/v1/messages?beta=true`.
    pub path: String,
    /// Header names in lower case.
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
}

impl Recorded {
    /// The body as JSON (`Null` when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

/// One piece of a response body.
#[derive(Debug, Clone)]
pub enum Part {
    Bytes(String),
    Pause(Duration),
    /// Abort the connection here (no terminating chunk): the client sees a dropped stream.
    Drop,
}

/// A scripted response.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub parts: Vec<Part>,
}

impl Reply {
    /// A 200 `text/event-stream` response made of `parts`.
    pub fn sse(parts: Vec<Part>) -> Reply {
        Reply {
            status: 200,
            headers: vec![
                ("content-type".into(), "text/event-stream".into()),
                ("cache-control".into(), "no-cache".into()),
            ],
            parts,
        }
    }

    /// A JSON response.
    pub fn json(status: u16, body: Value) -> Reply {
        Reply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            parts: vec![Part::Bytes(body.to_string())],
        }
    }

    /// An empty response.
    pub fn empty(status: u16) -> Reply {
        Reply {
            status,
            headers: vec![],
            parts: vec![],
        }
    }

    pub fn header(mut self, k: &str, v: &str) -> Reply {
        self.headers.push((k.into(), v.into()));
        self
    }
}

/// Decides the reply to the `n`-th request (0-based).
pub type Handler = Arc<dyn Fn(&Recorded, usize) -> Reply + Send + Sync>;

/// A running fake server; stops when dropped.
pub struct FakeServer {
    pub addr: SocketAddr,
    log: Arc<Mutex<Vec<Recorded>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeServer {
    /// Starts a server on 127.0.0.1 with an ephemeral port.
    pub async fn start(handler: Handler) -> FakeServer {
        let log: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let state = (log.clone(), handler);
        let app = axum::Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let (log, handler) = state.clone();
                async move {
                    let rec = Recorded {
                        method: method.to_string(),
                        path: uri
                            .path_and_query()
                            .map(|p| p.to_string())
                            .unwrap_or_default(),
                        headers: headers
                            .iter()
                            .map(|(k, v)| {
                                (
                                    k.as_str().to_lowercase(),
                                    v.to_str().unwrap_or("").to_string(),
                                )
                            })
                            .collect(),
                        body: body.to_vec(),
                    };
                    let n = {
                        let mut l = log.lock().unwrap();
                        l.push(rec.clone());
                        l.len() - 1
                    };
                    respond(handler(&rec, n))
                }
            },
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeServer { addr, log, task }
    }

    /// A server that gives `replies` in order (a 500 once they run out).
    pub async fn scripted(replies: Vec<Reply>) -> FakeServer {
        let replies = Arc::new(replies);
        FakeServer::start(Arc::new(move |_, n| {
            replies.get(n).cloned().unwrap_or_else(|| {
                Reply::json(
                    500,
                    json!({"error": {"message": "no more scripted replies"}}),
                )
            })
        }))
        .await
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.log.lock().unwrap().clone()
    }
}

fn respond(reply: Reply) -> Response {
    let parts = reply.parts;
    let body = futures::stream::unfold(parts.into_iter(), |mut it| async move {
        loop {
            match it.next()? {
                Part::Bytes(s) => return Some((Ok::<_, std::io::Error>(Bytes::from(s)), it)),
                Part::Pause(d) => tokio::time::sleep(d).await,
                Part::Drop => {
                    return Some((
                        Err(std::io::Error::new(
                            std::io::ErrorKind::ConnectionAborted,
                            "fake server drops the connection",
                        )),
                        it,
                    ))
                }
            }
        }
    });
    let mut resp = Response::new(Body::from_stream(body));
    *resp.status_mut() = StatusCode::from_u16(reply.status).unwrap();
    for (k, v) in reply.headers {
        resp.headers_mut().insert(
            axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    resp
}

/// Anthropic Messages API SSE, exactly as PROTOCOLS.md §2 frames it.
pub mod anthropic {
    use super::Part;
    use serde_json::{json, Value};

    /// `event: NAME\ndata: JSON\n\n`.
    pub fn event(data: Value) -> Part {
        let name = data["type"].as_str().unwrap_or("message").to_string();
        Part::Bytes(format!("event: {name}\ndata: {data}\n\n"))
    }

    pub fn message_start(id: &str, input_tokens: u64) -> Part {
        event(
            json!({"type":"message_start","message":{"id":id,"type":"message","role":"assistant","content":[],"model":"claude-fake","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":input_tokens,"cache_creation_input_tokens":0,"cache_read_input_tokens":2,"output_tokens":1}}}),
        )
    }

    pub fn ping() -> Part {
        event(json!({"type":"ping"}))
    }

    pub fn block_start(index: u64, block: Value) -> Part {
        event(json!({"type":"content_block_start","index":index,"content_block":block}))
    }

    pub fn delta(index: u64, delta: Value) -> Part {
        event(json!({"type":"content_block_delta","index":index,"delta":delta}))
    }

    pub fn block_stop(index: u64) -> Part {
        event(json!({"type":"content_block_stop","index":index}))
    }

    pub fn text_delta(index: u64, text: &str) -> Part {
        delta(index, json!({"type":"text_delta","text":text}))
    }

    pub fn message_delta(stop_reason: &str, output_tokens: u64) -> Part {
        event(
            json!({"type":"message_delta","delta":{"stop_reason":stop_reason,"stop_sequence":null},"usage":{"output_tokens":output_tokens}}),
        )
    }

    pub fn message_stop() -> Part {
        event(json!({"type":"message_stop"}))
    }

    /// A whole text reply streamed in `chunks`.
    pub fn text_reply(chunks: &[&str]) -> Vec<Part> {
        let mut parts = vec![
            message_start("msg_fake_1", 25),
            block_start(0, json!({"type":"text","text":""})),
            ping(),
        ];
        for c in chunks {
            parts.push(text_delta(0, c));
        }
        parts.extend([block_stop(0), message_delta("end_turn", 15), message_stop()]);
        parts
    }

    /// A non-streaming Message JSON (for the CLI's background calls).
    pub fn message_json(text: &str) -> Value {
        json!({"id":"msg_fake_json","type":"message","role":"assistant","model":"claude-fake","content":[{"type":"text","text":text}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":2}})
    }
}

/// OpenAI chat completions SSE, as PROTOCOLS.md §3 frames it.
pub mod openai {
    use super::Part;
    use serde_json::{json, Value};

    /// `data: JSON\n\n`.
    pub fn data(v: Value) -> Part {
        Part::Bytes(format!("data: {v}\n\n"))
    }

    pub fn chunk(delta: Value, finish_reason: Value) -> Part {
        data(
            json!({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":delta,"finish_reason":finish_reason}]}),
        )
    }

    pub fn usage(prompt: u64, completion: u64) -> Part {
        data(
            json!({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":prompt,"completion_tokens":completion,"total_tokens":prompt+completion}}),
        )
    }

    pub fn done() -> Part {
        Part::Bytes("data: [DONE]\n\n".into())
    }
}

/// Reads a stream to its end, with a limit so a hung stream fails the test.
pub async fn drain(mut s: EventStream) -> Vec<BackendEvent> {
    let mut out = Vec::new();
    let read = async {
        while let Some(ev) = s.next().await {
            out.push(ev);
        }
    };
    tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .expect("the stream did not end within 60 s");
    out
}

/// The text deltas of `events`, concatenated.
pub fn text_of(events: &[BackendEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            BackendEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// Folds events with the public assembler.
pub fn assemble(events: &[BackendEvent]) -> recall_llm::AssembledReply {
    let mut a = recall_llm::Assembler::new();
    for e in events {
        a.push(e);
    }
    a.finish()
}

/// True when process `pid` no longer exists (killed and reaped).
pub fn pid_gone(pid: u32) -> bool {
    !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// True when `pid` is gone or a zombie (dead but not yet reaped by its new parent: a
/// grandchild reparented to init is reaped by init, not by us).
pub fn pid_dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| {
                rest.trim_start().starts_with('Z') || rest.trim_start().starts_with('X')
            })
            .unwrap_or(false),
    }
}

/// Polls `cond` for up to `limit`.
pub async fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cond()
}

/// The error of a call that must fail before streaming.
pub fn expect_err(r: Result<EventStream, recall_llm::BackendError>) -> recall_llm::BackendError {
    match r {
        Ok(_) => panic!("expected the call to fail before streaming"),
        Err(e) => e,
    }
}

/// The recorded real CLI stdout (PROTOCOLS.md; copied from shared/recorded).
pub fn recording_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/claude-cli-2.1.197-stream-json-partial.jsonl")
}

const FAKE_CLAUDE: &str = r#"#!/bin/sh
# Fake `claude` for recall-llm tests. FAKE_CLAUDE_DIR receives what it was given;
# FAKE_CLAUDE_MODE picks the behaviour.
out="${FAKE_CLAUDE_DIR:?FAKE_CLAUDE_DIR is not set}"
printf '%s\n' "$$" > "$out/pid"
for a in "$@"; do printf '[%s]\n' "$a"; done > "$out/argv"
env > "$out/env"
case "${FAKE_CLAUDE_MODE:-replay}" in
  replay)
    cat > "$out/stdin"
    cat "$FAKE_CLAUDE_RECORDING"
    ;;
  hang)
    cat > "$out/stdin"
    sleep 1000 &
    printf '%s\n' "$!" > "$out/grandchild"
    echo '{"type":"system","subtype":"init"}'
    wait
    ;;
  auth)
    cat > /dev/null
    echo '{"type":"result","subtype":"success","is_error":true,"result":"Not logged in · Please run /login"}'
    ;;
  error)
    cat > /dev/null
    echo '{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["No conversation found with session ID: 42"]}'
    ;;
  crash)
    cat > /dev/null
    echo 'fatal: something went wrong' >&2
    exit 3
    ;;
  partial)
    cat > /dev/null
    head -n 5 "$FAKE_CLAUDE_RECORDING"
    exit 1
    ;;
esac
"#;

/// The fake `claude` script, written once per test process before any test spawns a child
/// (writing an executable while another thread forks can make its exec fail with ETXTBSY, so
/// every CLI test calls this first).
pub fn fake_claude() -> std::path::PathBuf {
    static PATH: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("fake-claude-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("claude");
        std::fs::write(&path, FAKE_CLAUDE).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    })
    .clone()
}

/// A CLI backend config running the fake script in `mode`, writing into `dir`.
pub fn fake_cli_config(mode: &str, dir: &std::path::Path) -> recall_llm::ClaudeCliConfig {
    recall_llm::ClaudeCliConfig {
        claude_path: fake_claude(),
        env: vec![
            ("FAKE_CLAUDE_MODE".into(), mode.into()),
            ("FAKE_CLAUDE_DIR".into(), dir.display().to_string()),
            (
                "FAKE_CLAUDE_RECORDING".into(),
                recording_path().display().to_string(),
            ),
        ],
        ..recall_llm::ClaudeCliConfig::default()
    }
}

/// A three-message history ending with the new user message.
pub fn three_turns() -> recall_llm::ChatRequest {
    use recall_core::{Message, Role};
    recall_llm::ChatRequest::new(vec![
        Message::text(Role::User, "My name is Zorblax and I collect teapots."),
        Message::text(
            Role::Assistant,
            "Nice to meet you, Zorblax! Teapots are lovely.",
        ),
        Message::text(Role::User, "What do I collect?"),
    ])
}

/// Reads a pid the fake script wrote.
pub fn read_pid(path: &std::path::Path) -> u32 {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .trim()
        .parse()
        .unwrap()
}
