//! Test support: a real server on 127.0.0.1 (port 0) over a real database — a temporary
//! SQLite file or a fresh PostgreSQL database — and an HTTP client with two tenants' keys.

#![allow(dead_code)]

use std::time::Duration;

use recall_engine::Engine;
use recall_server::{start, ConfigKey, RunningServer, ServerConfig, Upstreams};
use reqwest::{Method, StatusCode};
use serde_json::Value;

/// Which database a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Pg,
}

/// The tenant of [`Server::key_a`] (from the config file) and of [`Server::key_b`] (created
/// in the database with `create_key`).
pub const TENANT_A: &str = "tenant-a";
pub const TENANT_B: &str = "tenant-b";
const KEY_A: &str = "rk_test_key_of_tenant_a_0123456789";

/// A running server and what it runs on.
pub struct Server {
    pub base: String,
    pub engine: Engine,
    pub key_a: String,
    pub key_b: String,
    pub client: reqwest::Client,
    pub running: Option<RunningServer>,
    /// The database URL (a second server can share it).
    pub url: String,
    _db: Db,
}

enum Db {
    Sqlite(tempfile::TempDir),
    Pg(PgDatabase),
}

/// A server on `backend` with the default limits. `None` when PostgreSQL is unreachable
/// outside CI (in CI that fails the test).
pub async fn server(backend: Backend) -> Option<Server> {
    server_with(backend, |_| {}).await
}

/// A server with a config adjusted by `adjust` (key A is always in its config keys).
pub async fn server_with(
    backend: Backend,
    adjust: impl FnOnce(&mut ServerConfig),
) -> Option<Server> {
    server_upstreams(backend, Upstreams::default(), adjust).await
}

/// [`server_with`] talking to `upstreams` (chat backends, gateway providers).
pub async fn server_upstreams(
    backend: Backend,
    upstreams: Upstreams,
    adjust: impl FnOnce(&mut ServerConfig),
) -> Option<Server> {
    let (url, db) = match backend {
        Backend::Sqlite => {
            let dir = tempfile::tempdir().expect("temp dir");
            let url = dir.path().join("recall.db").display().to_string();
            (url, Db::Sqlite(dir))
        }
        Backend::Pg => {
            let pg = pg_database().await?;
            (pg.url.clone(), Db::Pg(pg))
        }
    };
    let mut config = ServerConfig {
        keys: vec![ConfigKey {
            tenant: TENANT_A.into(),
            key: Some(KEY_A.into()),
            sha256: None,
        }],
        ..ServerConfig::default()
    };
    adjust(&mut config);
    let engine = Engine::open(&url, config.limits.engine_limits())
        .await
        .expect("open engine");
    let (key_b, _) = recall_server::create_key(engine.store().as_ref(), TENANT_B, None)
        .await
        .expect("create key");
    let running = start(
        engine.clone(),
        config,
        upstreams,
        "127.0.0.1:0".parse().expect("addr"),
    )
    .await
    .expect("start server");
    Some(Server {
        base: format!("http://{}", running.addr),
        engine,
        key_a: KEY_A.into(),
        key_b,
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .expect("client"),
        running: Some(running),
        url,
        _db: db,
    })
}

/// A response: status, headers and the body as JSON (`Null` when empty or not JSON).
#[derive(Debug)]
pub struct Res {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
    pub json: Value,
}

impl Res {
    /// The error type of an error answer, after checking the error shape.
    pub fn error_type(&self) -> &str {
        let e = &self.json["error"];
        assert!(
            e["message"].as_str().is_some_and(|m| !m.is_empty()),
            "error without a message: {}",
            self.text
        );
        assert_eq!(
            self.json.as_object().map(|o| o.len()),
            Some(1),
            "error body has more than `error`: {}",
            self.text
        );
        e["type"]
            .as_str()
            .unwrap_or_else(|| panic!("no error type: {}", self.text))
    }

    pub fn message(&self) -> &str {
        self.json["error"]["message"].as_str().unwrap_or("")
    }
}

impl Server {
    /// A request with `key` (none when `None`) and a raw body.
    pub async fn raw(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        body: Option<Vec<u8>>,
    ) -> Res {
        let mut req = self.client.request(method, format!("{}{path}", self.base));
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        if let Some(b) = body {
            req = req.header("content-type", "application/json").body(b);
        }
        let res = req.send().await.expect("request");
        let status = res.status();
        let headers = res.headers().clone();
        let text = res.text().await.expect("body");
        let json = serde_json::from_str(&text).unwrap_or(Value::Null);
        Res {
            status,
            headers,
            text,
            json,
        }
    }

    /// A JSON request with `key`.
    pub async fn call(&self, method: Method, path: &str, key: &str, body: Option<Value>) -> Res {
        self.raw(
            method,
            path,
            Some(key),
            body.map(|b| b.to_string().into_bytes()),
        )
        .await
    }

    pub async fn get(&self, path: &str, key: &str) -> Res {
        self.call(Method::GET, path, key, None).await
    }

    pub async fn post(&self, path: &str, key: &str, body: Value) -> Res {
        self.call(Method::POST, path, key, Some(body)).await
    }

    /// Creates a conversation for `key`'s tenant; returns its id.
    pub async fn new_conversation(&self, key: &str, body: Value) -> String {
        let r = self.post("/v1/conversations", key, body).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        r.json["id"].as_str().expect("id").to_string()
    }

    /// Every stored message of a conversation as JSON, read through the engine.
    pub async fn stored(&self, tenant: &str, id: &str) -> Vec<Value> {
        self.engine
            .store()
            .messages(tenant, id, 0, u32::MAX)
            .await
            .expect("messages")
            .iter()
            .map(|m| {
                serde_json::json!({"seq": m.seq, "status": m.status.as_str(), "message": m.message.to_json()})
            })
            .collect()
    }

    /// Stops the server gracefully.
    pub async fn stop(&mut self) {
        if let Some(r) = self.running.take() {
            r.shutdown().await.expect("shutdown");
        }
    }
}

// PostgreSQL: a fresh database per test, from recall-testkit (shared with recall-store's tests).
pub use recall_testkit::pg::{pg_database, PgDatabase};

/// Runs each named test function (`async fn name(backend: Backend)`) on SQLite and on
/// PostgreSQL, as `sqlite::name` and `pg::name`.
#[allow(unused_macros)]
macro_rules! on_both {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(crate::common::Backend::Sqlite).await;
                }
            )*
        }
        mod pg {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(crate::common::Backend::Pg).await;
                }
            )*
        }
    };
}
