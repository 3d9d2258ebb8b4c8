//! The server under hostile clients, over real sockets on 127.0.0.1: other sites reaching a
//! `--no-auth` server through a browser (Host, Origin, Content-Type), made-up methods and
//! paths against `/metrics`, slow and idle connections, clients that read nothing, too many
//! connections, oversized WebSocket frames, idle WebSockets, and malformed cursors and MCP
//! bodies.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::{server_with, Backend, TENANT_A};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A `--no-auth` server on 127.0.0.1 over a temporary SQLite file.
struct NoAuth {
    addr: SocketAddr,
    base: String,
    engine: recall_engine::Engine,
    running: Option<recall_server::RunningServer>,
    _dir: tempfile::TempDir,
}

async fn no_auth_server() -> NoAuth {
    let dir = tempfile::tempdir().unwrap();
    let url = dir.path().join("r.db").display().to_string();
    let engine = recall_engine::Engine::open(&url, Default::default())
        .await
        .unwrap();
    let config = recall_server::ServerConfig {
        no_auth: true,
        ..Default::default()
    };
    let running = recall_server::start(
        engine.clone(),
        config,
        Default::default(),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap();
    NoAuth {
        addr: running.addr,
        base: format!("http://{}", running.addr),
        engine,
        running: Some(running),
        _dir: dir,
    }
}

/// Sends `request` on a new connection and reads until the server closes it (requests here
/// say `connection: close`) or 10 s pass.
async fn raw(addr: SocketAddr, request: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    // A server that refuses the connection may have closed it already.
    let _ = s.write_all(request).await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).to_string()
}

/// Sends `request` on a new connection and reads the response head only (an accepted
/// WebSocket upgrade stays open).
async fn head_of(addr: SocketAddr, request: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(request).await.unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 1024];
    while !out.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(10), s.read(&mut buf))
            .await
            .expect("a response head within 10 s")
            .unwrap();
        assert!(n > 0, "closed before a response head");
        out.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&out).to_string()
}

/// The status code of a raw response.
fn status_of(response: &str) -> u16 {
    response
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {response:?}"))
}

/// The JSON body of a raw response (`Null` if none).
fn body_of(response: &str) -> Value {
    response
        .split_once("\r\n\r\n")
        .and_then(|(_, b)| serde_json::from_str(b).ok())
        .unwrap_or(Value::Null)
}

/// A WebSocket client on conversation `id`'s chat socket, with key A.
async fn ws_connect(
    s: &common::Server,
    id: &str,
) -> tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>> {
    tokio_tungstenite::connect_async(ws_request(s, id))
        .await
        .unwrap()
        .0
}

/// The upgrade request of conversation `id`'s WebSocket, with tenant A's key.
fn ws_request(
    s: &common::Server,
    id: &str,
) -> tokio_tungstenite::tungstenite::handshake::client::Request {
    let url = format!(
        "{}/v1/conversations/{id}/ws",
        s.base.replace("http://", "ws://")
    );
    let mut req =
        tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(url)
            .unwrap();
    req.headers_mut().insert(
        "authorization",
        format!("Bearer {}", s.key_a).parse().unwrap(),
    );
    req
}

/// A WebSocket upgrade request with `extra` header lines.
fn upgrade(path: &str, extra: &str) -> Vec<u8> {
    format!(
        "GET {path} HTTP/1.1\r\nconnection: Upgrade\r\nupgrade: websocket\r\n\
         sec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n{extra}\r\n"
    )
    .into_bytes()
}

/// With `--no-auth`, every route refuses a foreign Host (DNS rebinding) and a foreign or null
/// Origin (cross-site requests), the WebSocket upgrade included, and nothing changes; the
/// server's own origin and clients that send no Origin are served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_auth_refuses_other_hosts_and_origins_on_every_route() {
    let mut s = no_auth_server().await;
    let port = s.addr.port();
    let own = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let res = client
        .post(format!("{}/v1/conversations", s.base))
        .header("origin", &own)
        .json(&json!({"title": "mine"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
    let id = res.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let res = client
        .post(format!("{}/v1/conversations/{id}/messages", s.base))
        .json(&json!({"role": "user", "content": "kept"}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.status(),
        StatusCode::CREATED,
        "no Origin: not a browser"
    );

    let routes: Vec<(Method, String, Option<Value>)> = vec![
        (Method::GET, "/v1/conversations".into(), None),
        (
            Method::POST,
            "/v1/conversations".into(),
            Some(json!({"title": "x"})),
        ),
        (Method::GET, format!("/v1/conversations/{id}"), None),
        (Method::DELETE, format!("/v1/conversations/{id}"), None),
        (Method::POST, format!("/v1/conversations/{id}/clear"), None),
        (
            Method::POST,
            format!("/v1/conversations/{id}/messages"),
            Some(json!({"role": "user", "content": "intruder"})),
        ),
        (
            Method::GET,
            format!("/v1/conversations/{id}/messages"),
            None,
        ),
        (
            Method::POST,
            format!("/v1/conversations/{id}/context"),
            Some(json!({})),
        ),
        (
            Method::POST,
            format!("/v1/conversations/{id}/chat"),
            Some(json!({"content": "x"})),
        ),
        (
            Method::POST,
            "/mcp".into(),
            Some(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})),
        ),
        (
            Method::POST,
            "/anthropic/v1/messages".into(),
            Some(
                json!({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}),
            ),
        ),
        (
            Method::POST,
            "/openai/v1/chat/completions".into(),
            Some(json!({"model": "m", "messages": [{"role": "user", "content": "x"}]})),
        ),
        (Method::GET, "/healthz".into(), None),
        (Method::GET, "/metrics".into(), None),
        (Method::GET, "/openapi.json".into(), None),
        (Method::GET, "/no-such-route".into(), None),
    ];
    let hostile: Vec<(&str, String)> = vec![
        ("host", "attacker.example".into()),
        ("host", format!("attacker.example:{port}")),
        ("host", format!("127.0.0.1.attacker.example:{port}")),
        ("origin", "http://evil.example".into()),
        ("origin", format!("http://evil.example:{port}")),
        ("origin", "null".into()),
        ("origin", format!("https://127.0.0.1:{port}")),
        ("origin", "http://localhost:1".into()),
    ];
    for (m, path, body) in &routes {
        for (name, value) in &hostile {
            let mut req = client
                .request(m.clone(), format!("{}{path}", s.base))
                .header(*name, value)
                .header("accept", "application/json, text/event-stream");
            if let Some(b) = body {
                req = req.json(b);
            }
            let res = req.send().await.unwrap();
            let status = res.status();
            let text = res.text().await.unwrap();
            assert_eq!(
                status,
                StatusCode::FORBIDDEN,
                "{m} {path} {name}: {value}: {text}"
            );
            let v: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(v["error"]["type"], "forbidden", "{text}");
            let says = if *name == "host" { "Host" } else { "Origin" };
            assert!(
                v["error"]["message"].as_str().unwrap().contains(says),
                "{text}"
            );
        }
    }
    // The cross-site POST of the report: a form-like body from another site.
    let res = client
        .post(format!("{}/v1/conversations", s.base))
        .header("origin", "http://evil.example")
        .header("content-type", "text/plain")
        .body("{\"title\": \"planted\"}")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::FORBIDDEN);

    // The WebSocket upgrade: refused before the 101.
    let ws = format!("/v1/conversations/{id}/ws");
    for extra in [
        "host: attacker.example\r\n".to_string(),
        format!("host: 127.0.0.1:{port}\r\norigin: http://evil.example\r\n"),
        format!("host: 127.0.0.1:{port}\r\norigin: null\r\n"),
    ] {
        let r = raw(s.addr, &upgrade(&ws, &extra)).await;
        assert_eq!(status_of(&r), 403, "{extra}: {r}");
        assert_eq!(body_of(&r)["error"]["type"], "forbidden", "{r}");
    }
    // ... and accepted from the server's own page.
    let r = head_of(
        s.addr,
        &upgrade(&ws, &format!("host: localhost:{port}\r\norigin: {own}\r\n")),
    )
    .await;
    assert_eq!(status_of(&r), 101, "{r}");

    // Nothing changed: one conversation, one message.
    let list = s
        .engine
        .list_conversations(recall_engine::DEFAULT_TENANT, None, 100)
        .await
        .unwrap();
    assert_eq!(list.len(), 1, "{list:?}");
    let stored = s
        .engine
        .store()
        .messages(recall_engine::DEFAULT_TENANT, &id, 0, 100)
        .await
        .unwrap();
    assert_eq!(stored.len(), 1);

    // The loopback names all work, with the matching Origin.
    for host in ["localhost", "127.0.0.1", "[::1]"] {
        let res = client
            .get(format!("{}/v1/conversations", s.base))
            .header("host", format!("{host}:{port}"))
            .header("origin", format!("http://{host}:{port}"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{host}");
    }
    s.running.take().unwrap().shutdown().await.unwrap();
}

/// Every POST with a body must be declared JSON (415 otherwise, in the error shape), with or
/// without keys, so that no form or `text/plain` request from a browser reaches the engine;
/// a charset parameter is fine, and a POST without a body needs no Content-Type.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posts_with_a_body_must_be_json() {
    let Some(s) = server_with(Backend::Sqlite, |_| {}).await else {
        return;
    };
    let k = &s.key_a;
    let id = s.new_conversation(k, json!({"title": "t"})).await;
    let r = s
        .post(
            &format!("/v1/conversations/{id}/messages"),
            k,
            json!({"role": "user", "content": "kept"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);

    let send = |path: String, ct: Option<&'static str>, body: Option<&'static str>, key: bool| {
        let mut req = s.client.post(format!("{}{path}", s.base));
        if key {
            req = req.bearer_auth(k);
        }
        if let Some(ct) = ct {
            req = req.header("content-type", ct);
        }
        if let Some(b) = body {
            req = req.body(b);
        }
        async move {
            let res = req
                .header("accept", "application/json, text/event-stream")
                .send()
                .await
                .unwrap();
            let status = res.status();
            let text = res.text().await.unwrap();
            (status, text)
        }
    };
    let refused = |status: StatusCode, text: &str| {
        assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{text}");
        let v: Value = serde_json::from_str(text).unwrap();
        assert_eq!(v["error"]["type"], "unsupported_media_type", "{text}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("application/json"),
            "{text}"
        );
    };
    let body_routes = [
        ("/v1/conversations".to_string(), r#"{"title": "x"}"#),
        (
            format!("/v1/conversations/{id}/messages"),
            r#"{"role": "user", "content": "intruder"}"#,
        ),
        (format!("/v1/conversations/{id}/context"), "{}"),
        (
            format!("/v1/conversations/{id}/chat"),
            r#"{"content": "x"}"#,
        ),
        (
            "/mcp".to_string(),
            r#"{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}"#,
        ),
    ];
    for (path, body) in &body_routes {
        for ct in [
            Some("text/plain"),
            Some("text/plain;charset=UTF-8"),
            Some("application/x-www-form-urlencoded"),
            Some("multipart/form-data; boundary=x"),
            Some("application/json; charset=latin1"),
            None,
        ] {
            let (status, text) = send(path.clone(), ct, Some(body), true).await;
            refused(status, &text);
        }
        // Without a key it is the 401 first.
        let (status, _) = send(path.clone(), Some("text/plain"), Some(body), false).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}");
    }
    // A POST without a body needs no type, but may not declare another one.
    let clear = format!("/v1/conversations/{id}/clear");
    let (status, text) = send(clear.clone(), Some("text/plain"), None, true).await;
    refused(status, &text);
    let (status, text) = send(
        clear.clone(),
        Some("application/x-www-form-urlencoded"),
        None,
        true,
    )
    .await;
    refused(status, &text);
    assert_eq!(
        s.stored(TENANT_A, &id).await.len(),
        1,
        "nothing was cleared"
    );
    let r = s.get("/v1/conversations", k).await;
    assert_eq!(
        r.json["data"].as_array().unwrap().len(),
        1,
        "nothing created"
    );

    // The accepted forms.
    let (status, text) = send(
        "/v1/conversations".into(),
        Some("application/json; charset=utf-8"),
        Some(r#"{"title": "y"}"#),
        true,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{text}");
    let (status, text) = send("/v1/conversations".into(), None, None, true).await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "an empty body needs no type: {text}"
    );
    let (status, text) = send(clear, None, None, true).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(s.stored(TENANT_A, &id).await.is_empty());
}

/// Label values come from a fixed set: 5,000 requests with made-up methods and paths leave
/// `/metrics` small.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn made_up_methods_and_paths_do_not_grow_metrics() {
    let Some(s) = server_with(Backend::Sqlite, |_| {}).await else {
        return;
    };
    let before = s.raw(Method::GET, "/metrics", None, None).await.text.len();
    let mut tasks = Vec::new();
    for t in 0..8 {
        let client = s.client.clone();
        let base = s.base.clone();
        tasks.push(tokio::spawn(async move {
            for i in (t..5000).step_by(8) {
                let method = Method::from_bytes(format!("MADEUP{i}").as_bytes()).unwrap();
                let path = match i % 4 {
                    0 => format!("/made/up/{i}"),
                    1 => format!("/v1/conversations/{i}"),
                    2 => "/v1/conversations".to_string(),
                    _ => format!("/healthz?x={i}"),
                };
                let res = client
                    .request(method, format!("{base}{path}"))
                    .send()
                    .await
                    .unwrap();
                assert!(res.status().is_client_error(), "{path}: {}", res.status());
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let m = s.raw(Method::GET, "/metrics", None, None).await.text;
    assert!(!m.contains("MADEUP"), "a made-up method became a label");
    assert!(!m.contains("/made/up"), "a raw path became a label");
    assert!(m.contains("method=\"OTHER\""), "{m}");
    assert!(
        m.contains(
            "recall_http_requests_total{route=\"unmatched\",method=\"OTHER\",status=\"404\"} 1250"
        ),
        "{m}"
    );
    assert!(
        m.len() < before + 16 * 1024,
        "/metrics grew from {before} to {} bytes",
        m.len()
    );
}

/// A raw connection and when it closed, from its reader's view.
struct Watched {
    closed_after: tokio::task::JoinHandle<(Duration, Vec<u8>)>,
    writer: tokio::net::tcp::OwnedWriteHalf,
}

/// Connects, writes `head`, and watches for the close (EOF or a reset), timed from now.
async fn watch(addr: SocketAddr, head: &[u8]) -> Watched {
    let s = TcpStream::connect(addr).await.unwrap();
    let (mut r, mut w) = s.into_split();
    w.write_all(head).await.unwrap();
    let started = Instant::now();
    let closed_after = tokio::spawn(async move {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match tokio::time::timeout(Duration::from_secs(30), r.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return (started.elapsed(), got),
                Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
                Err(_) => panic!("still open after 30 s"),
            }
        }
    });
    Watched {
        closed_after,
        writer: w,
    }
}

/// Writes one byte every 200 ms until the connection is closed (at most 30 s).
fn trickle(mut w: tokio::net::tcp::OwnedWriteHalf, byte: u8) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        for _ in 0..150 {
            tokio::time::sleep(Duration::from_millis(200)).await;
            if w.write_all(&[byte]).await.is_err() {
                return;
            }
        }
    })
}

/// `/healthz` on a fresh connection: its latency.
async fn healthz_latency(addr: SocketAddr) -> Duration {
    let started = Instant::now();
    let r = raw(
        addr,
        b"GET /healthz HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status_of(&r), 200, "{r}");
    started.elapsed()
}

/// An idle connection, one sending its headers a byte at a time and one sending its body a
/// byte at a time are all closed after their timeouts (the body one answered 408), a
/// kept-alive connection is closed once idle, a request whose body takes longer than the
/// header and idle timeouts (but less than the body one) is served, and `/healthz` answers
/// fresh connections quickly all along.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_idle_connections_are_shed() {
    let Some(s) = server_with(Backend::Sqlite, |c| {
        c.limits.header_timeout_secs = 1;
        c.limits.idle_timeout_secs = 3;
        c.limits.body_timeout_secs = 3;
    })
    .await
    else {
        return;
    };
    let addr: SocketAddr = s.base.trim_start_matches("http://").parse().unwrap();
    let id = s.new_conversation(&s.key_a, json!({})).await;

    let idle = watch(addr, b"").await;
    let header = watch(
        addr,
        b"GET /healthz HTTP/1.1\r\nhost: localhost\r\nx-slow: ",
    )
    .await;
    let header_trickle = trickle(header.writer, b'a');
    let body_head = format!(
        "POST /v1/conversations/{id}/messages HTTP/1.1\r\nhost: localhost\r\n\
         authorization: Bearer {}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{{",
        s.key_a
    );
    let body = watch(addr, body_head.as_bytes()).await;
    let body_trickle = trickle(body.writer, b' ');
    let kept = watch(addr, b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n").await;
    // Slower than the header and idle timeouts, within the body one.
    let patient = {
        let (base, key, path) = (
            s.base.clone(),
            s.key_a.clone(),
            format!("/v1/conversations/{id}/messages"),
        );
        tokio::spawn(async move {
            let chunks: Vec<&'static [u8]> = vec![
                b"{\"role\": ",
                b"\"user\", ",
                b"\"content\": ",
                b"\"slow ",
                b"but ",
                b"in time\"",
                b"}",
            ];
            let stream = futures::stream::unfold(chunks.into_iter(), |mut it| async move {
                let c = it.next()?;
                tokio::time::sleep(Duration::from_millis(250)).await;
                Some((Ok::<_, std::io::Error>(c.to_vec()), it))
            });
            reqwest::Client::new()
                .post(format!("{base}{path}"))
                .bearer_auth(key)
                .header("content-type", "application/json")
                .body(reqwest::Body::wrap_stream(stream))
                .send()
                .await
                .unwrap()
                .status()
        })
    };

    let mut worst = Duration::ZERO;
    let probe_until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < probe_until {
        worst = worst.max(healthz_latency(addr).await);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let (took, _) = header.closed_after.await.unwrap();
    assert!(
        (Duration::from_millis(800)..Duration::from_millis(2800)).contains(&took),
        "a header trickle closed after {took:?} (header timeout 1 s)"
    );
    header_trickle.abort();
    let (took, got) = body.closed_after.await.unwrap();
    let answer = String::from_utf8_lossy(&got).to_string();
    assert!(
        (Duration::from_millis(2500)..Duration::from_secs(8)).contains(&took),
        "a body trickle closed after {took:?} (body timeout 3 s): {answer}"
    );
    assert_eq!(status_of(&answer), 408, "{answer}");
    assert_eq!(body_of(&answer)["error"]["type"], "timeout", "{answer}");
    body_trickle.abort();
    let (took, _) = idle.closed_after.await.unwrap();
    assert!(
        (Duration::from_millis(2500)..Duration::from_secs(8)).contains(&took),
        "an idle connection closed after {took:?} (idle timeout 3 s, header 1 s)"
    );
    let (took, got) = kept.closed_after.await.unwrap();
    let answer = String::from_utf8_lossy(&got).to_string();
    assert_eq!(status_of(&answer), 200, "{answer}");
    assert!(
        (Duration::from_millis(2500)..Duration::from_secs(8)).contains(&took),
        "a kept-alive connection closed after {took:?} (idle timeout 3 s)"
    );
    assert_eq!(patient.await.unwrap(), StatusCode::CREATED);
    assert_eq!(
        s.stored(TENANT_A, &id).await.len(),
        1,
        "only the patient one"
    );
    assert!(
        worst < Duration::from_millis(1500),
        "/healthz took {worst:?} with slow clients connected"
    );
}

/// Clients that never read their answer (an 8 MB page, over sockets whose receive buffer is
/// 4 KB) hold their places for the write timeout at most: the server then resets them (a
/// FIN would queue behind megabytes the kernel still offers them a few KB at a time), and
/// new connections are served again (issue 33, item 3).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_read_nothing_are_dropped_after_the_write_timeout() {
    let Some(s) = server_with(Backend::Sqlite, |c| {
        c.limits.max_connections = 3;
        c.limits.write_timeout_secs = 1;
    })
    .await
    else {
        return;
    };
    let addr: SocketAddr = s.base.trim_start_matches("http://").parse().unwrap();
    // The setup's requests go over connections closed once answered (a pooled one would hold
    // a place): then every place is the sleepers'.
    let once = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let post = |path: String, body: Value| {
        let req = once
            .post(format!("{}{path}", s.base))
            .bearer_auth(&s.key_a)
            .header("content-type", "application/json")
            .body(body.to_string());
        async move {
            let r = req.send().await.unwrap();
            let status = r.status();
            let text = r.text().await.unwrap();
            assert!(status.is_success(), "{status} {text}");
            serde_json::from_str::<Value>(&text).unwrap()
        }
    };
    let id = post("/v1/conversations".into(), json!({})).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let big = "x".repeat(900 * 1024);
    for _ in 0..3 {
        let msgs: Vec<Value> = (0..3)
            .map(|_| json!({"role": "user", "content": big}))
            .collect();
        post(
            format!("/v1/conversations/{id}/messages"),
            json!({ "messages": msgs }),
        )
        .await;
    }
    let settled = Instant::now();
    while !places_free(addr, 3).await {
        assert!(
            settled.elapsed() < Duration::from_secs(10),
            "the setup's connections stay"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let head = format!(
        "GET /v1/conversations/{id}/messages?limit=1000 HTTP/1.1\r\nhost: localhost\r\n\
         authorization: Bearer {}\r\n\r\n",
        s.key_a
    );
    let mut sleepers = Vec::new();
    for _ in 0..3 {
        let sock = tokio::net::TcpSocket::new_v4().unwrap();
        sock.set_recv_buffer_size(4096).unwrap();
        let mut stream = sock.connect(addr).await.unwrap();
        stream.write_all(head.as_bytes()).await.unwrap();
        sleepers.push(stream);
    }
    tokio::time::sleep(Duration::from_millis(400)).await;
    let healthz = b"GET /healthz HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n";
    let r = raw(addr, healthz).await;
    assert_eq!(status_of(&r), 503, "every place is taken: {r}");
    // Each sleeper stalls when its own answer fills the buffers, so under load their write
    // timeouts fall due one after another: wait until all three places are free at once.
    let stalled = Instant::now();
    while !places_free(addr, 3).await {
        assert!(
            stalled.elapsed() < Duration::from_secs(10),
            "places still taken {:?} after the stall (write timeout 1 s)",
            stalled.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for mut c in sleepers {
        let mut got = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), c.read_to_end(&mut got))
            .await
            .expect("its place is free, so the server dropped the connection");
        assert!(
            read.as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset),
            "reset, not closed behind the rest of the page: {read:?}"
        );
        assert!(
            got.len() < 8 << 20,
            "the whole page was sent: {}",
            got.len()
        );
    }
}

/// Whether `n` connections at once are each answered `/healthz` 200 (over the cap, one is
/// answered 503 at once): they stay open until all are answered, and are closed on both
/// sides when this returns.
async fn places_free(addr: SocketAddr, n: usize) -> bool {
    let mut conns = Vec::new();
    for _ in 0..n {
        let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
        c.write_all(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n")
            .await
            .unwrap();
        conns.push(c);
    }
    let mut free = true;
    for c in &mut conns {
        let mut head = [0u8; 12];
        let ok = tokio::time::timeout(Duration::from_secs(5), c.read_exact(&mut head))
            .await
            .is_ok_and(|r| r.is_ok());
        free &= ok && &head == b"HTTP/1.1 200";
    }
    // Gone on the server's side too before this returns: the client ends, the server closes.
    for mut c in conns {
        let _ = c.shutdown().await;
        let mut rest = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), c.read_to_end(&mut rest)).await;
    }
    free
}

/// A WebSocket whose client sends no request is closed after the idle timeout with 1001,
/// whether it sends nothing or keeps the socket alive with pings (issue 49 item 6: 24
/// ping-only sockets held their places for good); a request in time is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_websockets_are_closed_pings_or_not() {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;

    let Some(s) = server_with(Backend::Sqlite, |c| c.limits.idle_timeout_secs = 2).await else {
        return;
    };
    let addr: SocketAddr = s.base.trim_start_matches("http://").parse().unwrap();
    let id = s.new_conversation(&s.key_a, json!({})).await;
    let head = upgrade(
        &format!("/v1/conversations/{id}/ws"),
        &format!("host: localhost\r\nauthorization: Bearer {}\r\n", s.key_a),
    );
    let silent = watch(addr, &head).await;
    let (took, got) = silent.closed_after.await.unwrap();
    assert!(
        (Duration::from_millis(1500)..Duration::from_secs(8)).contains(&took),
        "a silent WebSocket closed after {took:?} (idle timeout 2 s)"
    );
    assert!(String::from_utf8_lossy(&got).starts_with("HTTP/1.1 101"));
    // A close frame with 1001 (0x03 0xE9).
    assert!(
        got.windows(4)
            .any(|w| w[0] == 0x88 && w[2..] == [0x03, 0xe9]),
        "closed with 1001: {got:?}"
    );

    // Pings every 300 ms, and pongs to whatever comes: closed all the same.
    let mut ws = ws_connect(&s, &id).await;
    let started = Instant::now();
    let closed = loop {
        assert!(
            started.elapsed() < Duration::from_secs(8),
            "a ping-only WebSocket is still open after 8 s (idle timeout 2 s)"
        );
        if ws.send(Message::Ping(vec![1].into())).await.is_err() {
            break started.elapsed();
        }
        match tokio::time::timeout(Duration::from_millis(300), ws.next()).await {
            Err(_) | Ok(Some(Ok(Message::Pong(_) | Message::Ping(_)))) => {}
            Ok(Some(Ok(Message::Close(frame)))) => {
                let code = frame.map(|f| u16::from(f.code));
                assert_eq!(code, Some(1001));
                break started.elapsed();
            }
            Ok(None) | Ok(Some(Err(_))) => break started.elapsed(),
            Ok(other) => panic!("unexpected: {other:?}"),
        }
    };
    assert!(
        closed >= Duration::from_millis(1500),
        "closed after {closed:?}"
    );

    // A request within the timeout is served.
    let mut ws = ws_connect(&s, &id).await;
    ws.send(Message::Text("{\"type\": \"nope\"}".into()))
        .await
        .unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(5), ws.next())
        .await
        .unwrap();
    assert!(
        matches!(&answer, Some(Ok(Message::Text(t))) if t.contains("\"type\":\"error\"")),
        "{answer:?}"
    );
}

/// WebSockets hold at most half of `max_connections`: one more upgrade is a 503 before it
/// is upgraded, and plain requests (`/healthz`) are still served while they are all open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websockets_take_at_most_half_of_the_places() {
    let Some(s) = server_with(Backend::Sqlite, |c| c.limits.max_connections = 10).await else {
        return;
    };
    let id = s.new_conversation(&s.key_a, json!({})).await;
    let mut open = Vec::new();
    for _ in 0..5 {
        open.push(ws_connect(&s, &id).await);
    }
    match tokio_tungstenite::connect_async(ws_request(&s, &id)).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(r)) => {
            assert_eq!(r.status().as_u16(), 503);
            assert!(r.headers().contains_key("retry-after"));
        }
        other => panic!("a sixth WebSocket under max_connections 10: {other:?}"),
    }
    for _ in 0..3 {
        let h = s.get("/healthz", "").await;
        assert_eq!(h.status.as_u16(), 200, "{}", h.text);
    }
    // A place frees when a socket closes.
    drop(open.pop());
    let started = Instant::now();
    loop {
        if tokio_tungstenite::connect_async(ws_request(&s, &id))
            .await
            .is_ok()
        {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the place was not freed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Over `max_connections`, a new connection is answered 503 (or closed) without being
/// served; once a place is free, new connections are served again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_cap_are_refused() {
    let Some(s) = server_with(Backend::Sqlite, |c| c.limits.max_connections = 3).await else {
        return;
    };
    let addr: SocketAddr = s.base.trim_start_matches("http://").parse().unwrap();
    // Three kept-alive connections, each served once (so each surely holds a place).
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut c = TcpStream::connect(addr).await.unwrap();
        c.write_all(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n")
            .await
            .unwrap();
        let mut buf = [0u8; 1024];
        let n = c.read(&mut buf).await.unwrap();
        assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
        held.push(c);
    }
    for _ in 0..5 {
        let r = raw(
            addr,
            b"GET /healthz HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n",
        )
        .await;
        assert!(
            r.is_empty() || status_of(&r) == 503,
            "a connection over the cap was served: {r}"
        );
        if !r.is_empty() {
            assert_eq!(body_of(&r)["error"]["type"], "unavailable", "{r}");
        }
    }
    // The held ones still work.
    let c = &mut held[0];
    c.write_all(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 1024];
    let n = c.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    // Freeing a place lets a new connection in.
    held.pop();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let r = raw(
            addr,
            b"GET /healthz HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n",
        )
        .await;
        if !r.is_empty() && status_of(&r) == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "no place freed: {r}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A WebSocket frame over the body limit is refused from its header, with close code 1009,
/// without the server waiting for (or buffering) its payload.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_websocket_frames_are_refused_unread() {
    use futures::StreamExt;
    use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
    use tokio_tungstenite::tungstenite::Message;

    let Some(s) = server_with(Backend::Sqlite, |c| c.limits.max_body_bytes = 64 * 1024).await
    else {
        return;
    };
    let id = s.new_conversation(&s.key_a, json!({})).await;
    let mut ws = ws_connect(&s, &id).await;
    // A masked text frame announcing 10 MB, of which 1 KB is sent.
    let mut frame = vec![0x81u8, 0xFF];
    frame.extend_from_slice(&(10u64 << 20).to_be_bytes());
    frame.extend_from_slice(&[1, 2, 3, 4]);
    frame.extend_from_slice(&[b'x'; 1024]);
    match ws.get_mut() {
        tokio_tungstenite::MaybeTlsStream::Plain(tcp) => tcp.write_all(&frame).await.unwrap(),
        _ => unreachable!("plain ws://"),
    }
    let next = tokio::time::timeout(Duration::from_secs(10), ws.next())
        .await
        .expect("the server waited for the frame's payload instead of refusing it");
    match next {
        Some(Ok(Message::Close(Some(f)))) => {
            assert_eq!(f.code, CloseCode::Size, "{f:?}");
            assert!(f.reason.contains("65536"), "{f:?}");
        }
        other => panic!("expected a close frame with 1009, got {other:?}"),
    }
}

/// The conversation list's cursor is a conversation id; anything else is a 422 naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conversation_cursors_must_be_ids() {
    let Some(s) = server_with(Backend::Sqlite, |_| {}).await else {
        return;
    };
    let k = &s.key_a;
    let a = s.new_conversation(k, json!({})).await;
    let b = s.new_conversation(k, json!({})).await;
    let upper = a.to_uppercase();
    for bad in ["abc", "", "0", "zzzz", upper.as_str()] {
        let r = s.get(&format!("/v1/conversations?after={bad}"), k).await;
        assert_eq!(
            r.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{bad}: {}",
            r.text
        );
        assert_eq!(r.error_type(), "invalid_request");
        assert!(r.message().contains("`after`"), "{}", r.text);
    }
    let r = s.get(&format!("/v1/conversations?after={a}"), k).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.json["data"][0]["id"], b.as_str());
}

/// `/mcp` answers a body that is not JSON with 400 and a JSON-RPC parse error (-32700), and
/// JSON that is not a JSON-RPC message with 400 and -32600.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_answers_malformed_json_with_a_parse_error() {
    let Some(s) = server_with(Backend::Sqlite, |_| {}).await else {
        return;
    };
    let rpc = |body: &'static str| {
        let req = s
            .client
            .post(format!("{}/mcp", s.base))
            .bearer_auth(&s.key_a)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body);
        async move {
            let res = req.send().await.unwrap();
            let status = res.status();
            let text = res.text().await.unwrap();
            (status, text)
        }
    };
    for (body, code) in [
        (r#"{"jsonrpc": "2.0", "id": 1,"#, -32700),
        ("not json", -32700),
        ("", -32700),
        (r#"{"hello": "world"}"#, -32600),
        ("42", -32600),
    ] {
        let (status, text) = rpc(body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {text}");
        let v: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("{body}: {text}"));
        assert_eq!(v["jsonrpc"], "2.0", "{text}");
        assert_eq!(v["id"], Value::Null, "{text}");
        assert_eq!(v["error"]["code"], code, "{body}: {text}");
    }
    // A real request still works.
    let (status, text) = rpc(r#"{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}"#).await;
    assert_eq!(status, StatusCode::OK, "{text}");
}

/// Settings a server cannot run with are refused at start, naming the setting.
#[tokio::test]
async fn zero_limits_are_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let url = dir.path().join("r.db").display().to_string();
    let engine = recall_engine::Engine::open(&url, Default::default())
        .await
        .unwrap();
    let mut config = recall_server::ServerConfig::default();
    config.limits.max_connections = 0;
    let err = recall_server::start(
        engine,
        config,
        Default::default(),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .err()
    .expect("refused");
    assert!(err.to_string().contains("max_connections"), "{err}");
}

/// The bytes the kernel holds for clients on the server's side of `port` (the `tx_queue` of
/// every socket bound to it in /proc/net/tcp and tcp6, orphaned ones included).
fn queued_on(port: u16) -> u64 {
    let mut total = 0;
    for file in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(table) = std::fs::read_to_string(file) else {
            continue;
        };
        for line in table.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(queues)) = (cols.get(1), cols.get(4)) else {
                continue;
            };
            let local_port = local
                .rsplit(':')
                .next()
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            if local_port == Some(port) {
                let tx = queues.split(':').next().unwrap_or("0");
                total += u64::from_str_radix(tx, 16).unwrap_or(0);
            }
        }
    }
    total
}

/// Issue 49 item 5: an answer that fits the socket's buffers, to a client that reads
/// nothing, then closed as idle, was closed with a FIN behind it: the place was freed and the
/// kernel went on holding the answer for minutes (49 sockets held 95 MB). Now the connection
/// keeps its place while the kernel holds bytes for it, and is reset `write_timeout` after it
/// ended: nothing stays queued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_connection_leaves_nothing_queued_for_a_client_that_reads_nothing() {
    if !std::path::Path::new("/proc/net/tcp").exists() {
        eprintln!("skipped: no /proc/net/tcp to read the send queues from");
        return;
    }
    let Some(s) = server_with(Backend::Sqlite, |c| {
        c.limits.idle_timeout_secs = 1;
        c.limits.write_timeout_secs = 2;
        c.limits.max_connections = 2;
    })
    .await
    else {
        return;
    };
    let addr: SocketAddr = s.base.trim_start_matches("http://").parse().unwrap();
    let id = s.new_conversation(&s.key_a, json!({})).await;
    let r = s
        .post(
            &format!("/v1/conversations/{id}/messages"),
            &s.key_a,
            json!({"role": "user", "content": "x".repeat(30_000)}),
        )
        .await;
    assert!(r.status.is_success(), "{}", r.text);
    // A client with a small receive window that sends one request and reads nothing.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut c = socket.connect(addr).await.unwrap();
    c.write_all(
        format!(
            "GET /v1/conversations/{id}/messages HTTP/1.1\r\nhost: localhost\r\n\
             authorization: Bearer {}\r\n\r\n",
            s.key_a
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    // Answered into the kernel's buffers, then closed as idle after 1 s: bytes still queued.
    tokio::time::sleep(Duration::from_millis(1600)).await;
    let held = queued_on(addr.port());
    assert!(
        held > 0,
        "the answer should be queued for the client by now"
    );
    // Its place is still held: a second connection still fits (cap 2), a third does not.
    let probe = |want: u16| async move {
        let mut p = TcpStream::connect(addr).await.unwrap();
        p.write_all(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut got = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), p.read_to_end(&mut got)).await;
        let text = String::from_utf8_lossy(&got).to_string();
        assert!(text.starts_with(&format!("HTTP/1.1 {want}")), "{text}");
    };
    let _other = TcpStream::connect(addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    probe(503).await;
    drop(_other);
    // Within write_timeout (2 s) of the close, and a margin: reset, nothing queued.
    let started = Instant::now();
    while queued_on(addr.port()) > 0 {
        assert!(
            started.elapsed() < Duration::from_secs(6),
            "{} bytes still queued for a client that reads nothing",
            queued_on(addr.port())
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    probe(200).await;
    drop(c);
}
