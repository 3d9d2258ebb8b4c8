//! recall-testkit: fake LLM servers and temporary PostgreSQL databases ([`pg`]) for recall's
//! tests (never a dependency of shipped code).
//!
//! [`FakeServer`] listens on real loopback HTTP (axum) and answers every request through a
//! handler that sees the request (method, path with query, headers, body) and returns a
//! [`Reply`]: a status, headers and body parts, where a part can be bytes, a pause, or a
//! dropped connection. [`anthropic`] and [`openai`] build the providers' SSE wire formats
//! byte for byte as the providers send them (`event:`/`data:` frames, blank-line separated,
//! the real event order), so the real adapters (and the real `claude` binary) can be driven
//! offline.
// Test support: a panic here is a failing test, which is what it should be.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod pg;
pub mod process;
pub mod provider;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
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

    /// The newest request received (without copying the others).
    pub fn last_request(&self) -> Option<Recorded> {
        self.log.lock().unwrap().last().cloned()
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

/// Anthropic Messages API SSE, framed as the API sends it: `event: NAME` and `data: JSON`
/// lines, a blank line after each event; `message_start`, content blocks, `message_delta`,
/// `message_stop`.
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

/// OpenAI chat completions SSE, framed as the API sends it: `data: JSON` chunks, a blank line
/// after each, `data: [DONE]` at the end.
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

/// The real `claude` binary to test with: `RECALL_CLAUDE_PATH` (scripts/test.sh sets it), the
/// project-local install `.tools/node_modules/.bin/claude` (scripts/setup.sh), or `claude`
/// on `PATH`; `None` when there is none.
pub fn real_claude() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("RECALL_CLAUDE_PATH").filter(|p| !p.is_empty()) {
        // Set explicitly: use it even if it is broken, so the test says so.
        return Some(std::path::PathBuf::from(p));
    }
    let local = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../.tools/node_modules/.bin/claude");
    if local.exists() {
        return Some(local);
    }
    let on_path = std::process::Command::new("claude")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    on_path.then(|| std::path::PathBuf::from("claude"))
}

/// Says that the running test skips (part of) its work and why: on stderr, which the test
/// harness shows only for failures, and as a line `TEST: REASON` appended to the file
/// `RECALL_SKIP_LOG` names, which `scripts/test.sh` prints in a summary at the end, where a
/// reader sees it. Outside CI a missing model, `claude` or PostgreSQL is a skip, not a failure.
pub fn skipped(reason: &str) {
    eprintln!("skipped: {reason}");
    let Some(path) = std::env::var_os("RECALL_SKIP_LOG") else {
        return;
    };
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    // One write per line (O_APPEND): test binaries running at once do not interleave lines.
    let line = format!("{test}: {reason}\n");
    let _ = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
}

/// [`real_claude`], or: a panic when `CI=true` (CI must run the real-`claude` tests), else a
/// notice and `None` so the caller skips.
pub fn require_claude() -> Option<std::path::PathBuf> {
    match real_claude() {
        Some(p) => Some(p),
        None if std::env::var("CI").as_deref() == Ok("true") => panic!(
            "the real `claude` binary is required when CI=true: run scripts/setup.sh \
             (installs @anthropic-ai/claude-code into .tools/) or set RECALL_CLAUDE_PATH"
        ),
        None => {
            skipped(
                "no `claude` binary for a real-claude test (run scripts/setup.sh or set \
                 RECALL_CLAUDE_PATH)",
            );
            None
        }
    }
}

/// Environment that keeps the real `claude` offline and out of the user's own settings:
/// a throwaway `HOME`/config directory, the fake server as the API, no telemetry, updater
/// or other background traffic.
pub fn claude_offline_env(base_url: &str, home: &std::path::Path) -> Vec<(String, String)> {
    let home = home.display().to_string();
    [
        ("ANTHROPIC_BASE_URL", base_url.to_string()),
        ("CLAUDE_CONFIG_DIR", home.clone()),
        ("HOME", home),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
        ("DISABLE_TELEMETRY", "1".into()),
        ("DISABLE_ERROR_REPORTING", "1".into()),
        ("DISABLE_AUTOUPDATER", "1".into()),
        ("CLAUDE_CODE_DISABLE_TERMINAL_TITLE", "1".into()),
        ("CLAUDE_CODE_ATTRIBUTION_HEADER", "0".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}
