//! MCP over streamable HTTP at `/mcp` on a real `recall serve` (real process, real SQLite
//! file, real HTTP on 127.0.0.1), with API keys made by `recall keys create`.
//!
//! - The official MCP Python SDK (`crates/recall-mcp/tests/client/check_recall_mcp.py
//!   --http`) runs its whole check over HTTP: initialize, tools and their schemas, every tool,
//!   error cases, tenant isolation, and HTTP 401 for a missing or wrong key. The interpreter
//!   is `RECALL_MCP_PYTHON`, else `.tools/venv` from `scripts/setup.sh`; without it that test
//!   is skipped with a notice, except when `CI=true`, where it fails.
//! - Raw JSON-RPC over HTTP (no Python needed): authentication, isolation between tenants,
//!   `--no-auth` acting as the default tenant, the Host check, the stateless transport.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use recall_testkit::process::{python_with, run_ok, workspace_root, Served};
use serde_json::{json, Value};

/// Runs `recall ARGS` on `db` and returns its stdout; panics when it fails.
fn recall(db: &Path, args: &[&str]) -> String {
    run_ok(
        Command::new(env!("CARGO_BIN_EXE_recall"))
            .args(args)
            .env("RECALL_DB", db)
            .env_remove("RECALL_TENANT"),
    )
    .0
}

fn new_key(db: &Path, tenant: &str) -> String {
    let key = recall(db, &["keys", "create", "--tenant", tenant])
        .trim()
        .to_string();
    assert!(key.starts_with("rk_"), "not a key: {key}");
    key
}

fn serve(db: &Path, extra: &[&str]) -> Served {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_recall"));
    cmd.args(["serve", "--addr", "127.0.0.1:0", "--db"])
        .arg(db)
        .args(extra)
        .env_remove("RECALL_DB");
    Served::start(cmd)
}

/// The Python that has `mcp`, `jsonschema` and `httpx2`, or `None` outside CI.
fn python() -> Option<PathBuf> {
    python_with(
        "mcp, jsonschema, httpx2",
        "RECALL_MCP_PYTHON",
        "the MCP Python client test over HTTP",
    )
}

#[test]
fn official_python_sdk_drives_mcp_over_http() {
    let Some(python) = python() else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("mcp.db");
    let key_a = new_key(&db, "team-a");
    let key_b = new_key(&db, "team-b");
    let server = serve(&db, &[]);
    let script = workspace_root().join("crates/recall-mcp/tests/client/check_recall_mcp.py");
    let mut child = Command::new(&python)
        .arg(&script)
        .arg("--http")
        .arg(format!("{}/mcp", server.base))
        // Keys in the environment, not the argument list.
        .env("RECALL_KEY_TEAM_A", &key_a)
        .env("RECALL_KEY_TEAM_B", &key_b)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the Python client");
    // Drained on threads so a full pipe never blocks the client.
    let drain = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            buf
        })
    };
    let out_thread = drain(Box::new(child.stdout.take().expect("stdout piped")));
    let err_thread = drain(Box::new(child.stderr.take().expect("stderr piped")));
    // Bounded: a hung request must fail the test, not the whole run.
    let deadline = Instant::now() + Duration::from_secs(180);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for the client") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the MCP Python client did not finish within 180 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out_bytes = out_thread.join().unwrap_or_default();
    let err_bytes = err_thread.join().unwrap_or_default();
    let stdout = String::from_utf8_lossy(&out_bytes);
    let stderr = String::from_utf8_lossy(&err_bytes);
    println!("{stdout}");
    assert!(
        status.success(),
        "MCP client checks over HTTP failed:\n{stdout}\nstderr:\n{stderr}"
    );
    let last = stdout.lines().last().unwrap_or_default();
    assert!(
        last.ends_with(" passed, 0 failed") && !last.starts_with("0 passed"),
        "unexpected summary: {last}"
    );
    for needed in [
        "ok   no API key: the server answered HTTP 401",
        "ok   a wrong API key: the server answered HTTP 401",
        "ok   tenant team-b cannot read team-a's conversation",
    ] {
        assert!(
            stdout.contains(needed),
            "missing check `{needed}`:\n{stdout}"
        );
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// One JSON-RPC request to `/mcp`: the HTTP status, the response headers and the JSON body
/// (`Null` when it is not JSON).
async fn rpc(
    client: &reqwest::Client,
    base: &str,
    key: Option<&str>,
    method: &str,
    params: Value,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let mut req = client
        .post(format!("{base}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}));
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let res = req.send().await.expect("request");
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    (status, headers, res.json().await.unwrap_or(Value::Null))
}

async fn call_tool(
    client: &reqwest::Client,
    base: &str,
    key: Option<&str>,
    tool: &str,
    arguments: Value,
) -> Value {
    let (status, _, body) = rpc(
        client,
        base,
        key,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
    .await;
    assert_eq!(status, 200, "{tool}: {body}");
    body["result"].clone()
}

#[test]
fn mcp_over_http_authenticates_and_isolates_tenants() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("mcp.db");
    let key_a = new_key(&db, "team-a");
    let key_b = new_key(&db, "team-b");
    let server = serve(&db, &[]);
    let base = server.base.as_str();
    let rt = runtime();
    let client = reqwest::Client::new();
    rt.block_on(async {
        // No key, a wrong key, a key that is not a bearer token: 401 in the server's error
        // shape, before any MCP processing.
        for key in [None, Some("rk_not_a_key")] {
            let (status, _, body) = rpc(&client, base, key, "tools/list", json!({})).await;
            assert_eq!(status, 401, "{key:?}: {body}");
            assert_eq!(body["error"]["type"], "authentication_error", "{body}");
        }

        // initialize: stateless, so no session id comes back.
        let (status, headers, body) = rpc(
            &client,
            base,
            Some(key_a.as_str()),
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "0"}}),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["result"]["serverInfo"]["name"], "recall", "{body}");
        assert!(headers.get("mcp-session-id").is_none(), "{headers:?}");
        let (status, _, body) = rpc(&client, base, Some(key_a.as_str()), "tools/list", json!({})).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["result"]["tools"].as_array().map(Vec::len), Some(11));

        // team-a stores a conversation through REST; MCP sees it for team-a only.
        let res = client
            .post(format!("{base}/v1/conversations"))
            .bearer_auth(&key_a)
            .json(&json!({"title": "private"}))
            .send()
            .await
            .expect("create");
        assert_eq!(res.status().as_u16(), 201);
        let conv: Value = res.json().await.expect("json");
        let cid = conv["id"].as_str().expect("id").to_string();
        let r = call_tool(
            &client,
            base,
            Some(key_a.as_str()),
            "append_message",
            json!({"conversation_id": cid, "role": "user", "content": "codename bluebird"}),
        )
        .await;
        assert_eq!(r["structuredContent"]["seq"], 1, "{r}");
        let r = call_tool(
            &client,
            base,
            Some(key_a.as_str()),
            "get_context",
            json!({"conversation_id": cid}),
        )
        .await;
        assert_eq!(
            r["structuredContent"]["prompt"], "Human: codename bluebird",
            "{r}"
        );

        let not_found = format!("conversation '{cid}' not found");
        for (tool, args) in [
            ("get_context", json!({"conversation_id": cid})),
            ("clear_conversation", json!({"conversation_id": cid})),
            (
                "append_message",
                json!({"conversation_id": cid, "role": "user", "content": "intrusion"}),
            ),
        ] {
            let r = call_tool(&client, base, Some(key_b.as_str()), tool, args).await;
            assert_eq!(r["isError"], true, "{tool}: {r}");
            assert_eq!(r["content"][0]["text"], not_found.as_str(), "{tool}: {r}");
        }
        let r = call_tool(
            &client,
            base,
            Some(key_b.as_str()),
            "search_history",
            json!({"query": "bluebird"}),
        )
        .await;
        assert_eq!(r["structuredContent"], json!({"hits": []}), "{r}");
        let r = call_tool(&client, base, Some(key_b.as_str()), "list_conversations", json!({})).await;
        assert_eq!(r["structuredContent"]["conversations"], json!([]), "{r}");

        // Nothing team-b tried changed team-a's conversation.
        let res = client
            .get(format!("{base}/v1/conversations/{cid}/messages"))
            .bearer_auth(&key_a)
            .send()
            .await
            .expect("messages");
        let text = res.text().await.expect("body");
        assert!(text.contains("bluebird") && !text.contains("intrusion"), "{text}");

        // A request from another session's client cannot borrow a tenant through a session
        // header: there are no sessions, the key decides.
        let res = client
            .post(format!("{base}/mcp"))
            .bearer_auth(&key_b)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", "some-session-of-team-a")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": "get_context", "arguments": {"conversation_id": cid}}}))
            .send()
            .await
            .expect("request");
        let body: Value = res.json().await.unwrap_or(Value::Null);
        assert_ne!(
            body["result"]["isError"], false,
            "a session header must not grant access: {body}"
        );
        assert!(!body.to_string().contains("bluebird"), "{body}");

        // The stateless transport has no GET stream.
        let res = client
            .get(format!("{base}/mcp"))
            .bearer_auth(&key_a)
            .header("accept", "text/event-stream")
            .send()
            .await
            .expect("get");
        assert_eq!(res.status().as_u16(), 405);

        // With keys on, any Host name the server is reached by is served.
        let res = client
            .post(format!("{base}/mcp"))
            .bearer_auth(&key_a)
            .header("host", "recall.example.com")
            .header("accept", "application/json, text/event-stream")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
            .send()
            .await
            .expect("request");
        let status = res.status().as_u16();
        let body: Value = res.json().await.unwrap_or(Value::Null);
        assert_eq!(status, 200, "{body}");
    });
}

#[test]
fn mcp_over_http_without_auth_is_the_default_tenant() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("mcp.db");
    let server = serve(&db, &["--no-auth"]);
    let base = server.base.as_str();
    let rt = runtime();
    let client = reqwest::Client::new();
    let cid = rt.block_on(async {
        let r = call_tool(
            &client,
            base,
            None,
            "create_conversation",
            json!({"title": "made over MCP"}),
        )
        .await;
        let cid = r["structuredContent"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("no id: {r}"))
            .to_string();
        // REST sees it: the same default tenant.
        let res = client
            .get(format!("{base}/v1/conversations/{cid}"))
            .send()
            .await
            .expect("get");
        assert_eq!(res.status().as_u16(), 200);

        // Without keys, only loopback Host names (DNS rebinding). The refusal logs a warning
        // to a stderr nobody reads any more (`serve` stops reading after the address line):
        // the server must answer anyway, on the same connection, every time.
        for attempt in 0..5 {
            let res = client
                .post(format!("{base}/mcp"))
                .header("host", "attacker.example.com")
                .header("accept", "application/json, text/event-stream")
                .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
                .send()
                .await
                .unwrap_or_else(|e| panic!("attempt {attempt}: {e:?}"));
            assert_eq!(res.status().as_u16(), 403);
            let _ = res.text().await;
        }
        cid
    });
    drop(server);
    // And so does the CLI, whose tenant is the default one too.
    let listed = recall(&db, &["conversations", "list"]);
    assert!(listed.contains(&cid), "{listed}");
}

/// Runs `cmd` to completion within `limit`, its output captured; panics when it takes longer.
fn output_within(cmd: &mut Command, limit: Duration) -> std::process::Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let deadline = Instant::now() + limit;
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

/// The README's Claude Code form, with the real `claude` in a throwaway HOME: `claude mcp add
/// --transport http` registers `/mcp` with the key as `${RECALL_KEY}` (expanded by Claude
/// Code from its environment, so the key is neither in an argument list nor in its config
/// file), and `claude mcp list`, which connects to every server, reports it connected; with
/// a wrong key it does not.
#[test]
fn claude_code_connects_to_mcp_over_http() {
    let Some(claude) = recall_testkit::require_claude() else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("mcp.db");
    let key = new_key(&db, "team-a");
    let server = serve(&db, &[]);
    let home = dir.path().join("home");
    let project = dir.path().join("project");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::create_dir_all(&project).expect("project");
    let url = format!("{}/mcp", server.base);
    // `mcp add` and `mcp list` never call the model API; point it at a closed port anyway.
    let env = recall_testkit::claude_offline_env("http://127.0.0.1:9", &home);
    let claude_cmd = |args: &[&str], recall_key: &str| {
        let mut c = Command::new(&claude);
        c.args(args)
            .current_dir(&project)
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("RECALL_KEY", recall_key);
        let out = output_within(&mut c, Duration::from_secs(120));
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    };

    let (ok, text) = claude_cmd(
        &[
            "mcp",
            "add",
            "--transport",
            "http",
            "recall-http",
            &url,
            "--header",
            "Authorization: Bearer ${RECALL_KEY}",
        ],
        &key,
    );
    assert!(ok, "claude mcp add failed:\n{text}");
    let config = std::fs::read_to_string(home.join(".claude.json")).expect("claude config");
    assert!(config.contains(&url), "{config}");
    assert!(
        !config.contains(&key),
        "the key must not be stored in the config"
    );

    let (ok, text) = claude_cmd(&["mcp", "list"], &key);
    assert!(ok, "claude mcp list failed:\n{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("recall-http:"))
        .unwrap_or_else(|| panic!("recall-http is not listed:\n{text}"));
    assert_eq!(
        line,
        format!("recall-http: {url} (HTTP) - ✔ Connected"),
        "{text}"
    );

    let (_, text) = claude_cmd(&["mcp", "list"], "rk_wrong");
    let line = text
        .lines()
        .find(|l| l.starts_with("recall-http:"))
        .unwrap_or_else(|| panic!("recall-http is not listed:\n{text}"));
    assert!(
        !line.contains("Connected"),
        "connected with a wrong key: {text}"
    );
}

/// Issue 34: one conversation reads the same through every interface. A conversation with a
/// title, a policy, metadata and messages, and a fork of it (so `forked_from` is set), listed
/// by `recall conversations list --json`, `GET /v1/conversations` and MCP's
/// `list_conversations`: the same field names and the same values, field for field. And one
/// conversation as `recall conversations show --json` prints it (less its messages) is
/// `GET /v1/conversations/{id}`.
#[test]
fn a_conversation_reads_the_same_through_the_cli_http_and_mcp() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("views.db");
    let tenant = "views";
    let key = new_key(&db, tenant);
    let id = recall(
        &db,
        &[
            "conversations",
            "new",
            "--tenant",
            tenant,
            "--title",
            "Trip",
            "--system",
            "Be brief.",
            "--policy",
            r#"{"format":"xml","max_turns":6}"#,
        ],
    )
    .trim()
    .to_string();
    for (role, text) in [("user", "We fly to Lisbon."), ("assistant", "Noted.")] {
        recall(
            &db,
            &[
                "append",
                &id,
                "--tenant",
                tenant,
                "--role",
                role,
                "--content",
                text,
            ],
        );
    }
    let fork: Value = serde_json::from_str(&recall(
        &db,
        &["fork", &id, "--at", "1", "--tenant", tenant, "--json"],
    ))
    .expect("fork json");
    assert_eq!(
        fork["forked_from"],
        json!({"conversation_id": id, "seq": 1})
    );

    let by_id = |list: Vec<Value>| {
        let mut list = list;
        list.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
        list
    };
    let cli: Vec<Value> = recall(
        &db,
        &["conversations", "list", "--tenant", tenant, "--json"],
    )
    .lines()
    .map(|l| serde_json::from_str(l).expect("json line"))
    .collect();
    let cli_shown: Value = serde_json::from_str(&recall(
        &db,
        &["conversations", "show", &id, "--tenant", tenant, "--json"],
    ))
    .expect("show json");

    let server = serve(&db, &[]);
    let base = server.base.as_str();
    let client = reqwest::Client::new();
    let (http, http_one, mcp) = runtime().block_on(async {
        let get = |path: String| {
            let req = client.get(format!("{base}{path}")).bearer_auth(&key);
            async move {
                let res = req.send().await.expect("GET");
                assert_eq!(res.status().as_u16(), 200);
                res.json::<Value>().await.expect("json")
            }
        };
        let http = get("/v1/conversations".to_string()).await;
        let http_one = get(format!("/v1/conversations/{id}")).await;
        let mcp = call_tool(
            &client,
            base,
            Some(key.as_str()),
            "list_conversations",
            json!({}),
        )
        .await;
        (http, http_one, mcp)
    });
    let http = by_id(http["data"].as_array().expect("data").clone());
    let mcp = by_id(
        mcp["structuredContent"]["conversations"]
            .as_array()
            .expect("conversations")
            .clone(),
    );
    let cli = by_id(cli);
    assert_eq!(cli.len(), 2, "{cli:?}");
    let fields = |v: &Value| {
        v.as_object()
            .expect("object")
            .keys()
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(fields(&cli[0]), fields(&http[0]));
    assert_eq!(fields(&cli[0]), fields(&mcp[0]));
    assert_eq!(cli, http, "CLI and HTTP differ");
    assert_eq!(cli, mcp, "CLI and MCP differ");
    // Times are RFC 3339 everywhere.
    assert!(
        cli[0]["created_at"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z') && t.contains('T')),
        "{}",
        cli[0]
    );

    let mut shown = cli_shown;
    let messages = shown
        .as_object_mut()
        .expect("object")
        .remove("messages")
        .expect("messages");
    assert_eq!(messages.as_array().map(Vec::len), Some(2), "{messages}");
    assert_eq!(
        shown, http_one,
        "`conversations show --json` and GET differ"
    );
}
