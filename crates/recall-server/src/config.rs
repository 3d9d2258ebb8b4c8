//! Server settings: limits, API keys from the config file, rate limits. The CLI reads them
//! from a TOML file and its flags; tests build them directly.
//!
//! ```toml
//! addr = "127.0.0.1:8080"
//! db = "postgres://recall@db/recall"
//!
//! durability = "normal"  # or "full": fsync every SQLite commit (ignored by PostgreSQL)
//!
//! [limits]
//! max_body_bytes = 4194304
//! max_message_bytes = 1048576
//! max_messages_per_request = 1000
//! header_timeout_secs = 10   # to send a request's headers, from its first byte
//! body_timeout_secs = 30     # to send a request's body, from the end of its headers
//! idle_timeout_secs = 60     # a connection with no request under way; a WebSocket with no request
//! write_timeout_secs = 30    # a client that reads nothing of an answer this long
//! max_connections = 1024     # open at once (WebSockets included, at most half); more are refused
//! max_page_bytes = 8388608       # a page of messages stops before this many bytes
//! max_context_bytes = 33554432   # a larger context prompt is a 413
//!
//! [rate_limit]          # per tenant; absent: no limit
//! requests_per_second = 50.0
//! burst = 100
//!
//! [[keys]]
//! tenant = "acme"
//! sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
//!
//! [[keys]]
//! tenant = "dev"
//! key = "rk_dev_only_plain_text_key"
//! ```

use std::path::Path;

use serde::Deserialize;

/// Limits of requests and connections: sizes, the time a client may take, how many
/// connections are served at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpLimits {
    /// Largest request body in bytes (also the largest WebSocket frame and message).
    pub max_body_bytes: usize,
    /// Largest message, as the bytes of its JSON content.
    pub max_message_bytes: usize,
    /// Most messages in one append request.
    pub max_messages_per_request: usize,
    /// Seconds a client may take to send a request's headers, counted from their first
    /// byte; a connection still sending them then is closed.
    pub header_timeout_secs: u64,
    /// Seconds a client may take to send a request's body, counted from the end of its
    /// headers; a body still arriving then is answered 408 and the connection closed.
    pub body_timeout_secs: u64,
    /// Seconds a connection may stay open with no request under way (a new connection
    /// that sends nothing, a kept-alive one between requests, a WebSocket with no turn and no
    /// request, pings or not) before it is closed.
    pub idle_timeout_secs: u64,
    /// Seconds an answer may wait for the client to read any of it (a streamed answer, a
    /// large page, a WebSocket frame): a connection whose writes make no progress this long
    /// is closed, which frees its place. A reply being generated is still stored (as
    /// `partial` when cut).
    pub write_timeout_secs: u64,
    /// Most connections open at once, WebSockets included; a connection over the cap is
    /// answered 503 and closed. WebSockets take at most half of the places (an upgrade over
    /// that is a 503 too).
    pub max_connections: usize,
    /// Most bytes of messages in one page of `GET …/messages` (their JSON): the page stops
    /// before the message that would go over, and always holds at least one message.
    pub max_page_bytes: usize,
    /// Largest context prompt the server builds (a text prompt's bytes, a JSON prompt's
    /// serialisation), for `POST …/context`, chat, retry and edit turns, compaction, the
    /// gateway and `/mcp`; a larger one is refused (413; an MCP tool error).
    pub max_context_bytes: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_body_bytes: 4 << 20,
            max_message_bytes: 1 << 20,
            max_messages_per_request: 1000,
            header_timeout_secs: 10,
            body_timeout_secs: 30,
            idle_timeout_secs: 60,
            write_timeout_secs: 30,
            max_connections: 1024,
            max_page_bytes: 8 << 20,
            max_context_bytes: recall_engine::DEFAULT_MAX_CONTEXT_BYTES,
        }
    }
}

/// Longest timeout accepted (a day): far past any use, and far from `Instant` overflow.
pub const MAX_TIMEOUT_SECS: u64 = 86_400;

impl HttpLimits {
    /// Checks what the types cannot: every limit above zero, timeouts at most a day.
    pub fn check(&self) -> Result<(), ConfigError> {
        for (name, value) in [
            ("max_body_bytes", self.max_body_bytes),
            ("max_message_bytes", self.max_message_bytes),
            ("max_messages_per_request", self.max_messages_per_request),
            ("max_connections", self.max_connections),
            ("max_page_bytes", self.max_page_bytes),
            ("max_context_bytes", self.max_context_bytes),
        ] {
            if value == 0 {
                return Err(ConfigError::Invalid(format!(
                    "limits: {name} must be above zero"
                )));
            }
        }
        for (name, value) in [
            ("header_timeout_secs", self.header_timeout_secs),
            ("body_timeout_secs", self.body_timeout_secs),
            ("idle_timeout_secs", self.idle_timeout_secs),
            ("write_timeout_secs", self.write_timeout_secs),
        ] {
            if value == 0 || value > MAX_TIMEOUT_SECS {
                return Err(ConfigError::Invalid(format!(
                    "limits: {name} must be 1 to {MAX_TIMEOUT_SECS} seconds, not {value}"
                )));
            }
        }
        Ok(())
    }

    /// [`Self::header_timeout_secs`] as a duration.
    pub fn header_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.header_timeout_secs)
    }

    /// [`Self::body_timeout_secs`] as a duration.
    pub fn body_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.body_timeout_secs)
    }

    /// [`Self::write_timeout_secs`] as a duration.
    pub fn write_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.write_timeout_secs)
    }

    /// [`Self::idle_timeout_secs`] as a duration.
    pub fn idle_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.idle_timeout_secs)
    }

    /// The engine's limits matching these.
    pub fn engine_limits(&self) -> recall_engine::Limits {
        recall_engine::Limits {
            max_message_bytes: self.max_message_bytes,
            max_messages_per_append: self.max_messages_per_request,
            max_context_bytes: Some(self.max_context_bytes),
        }
    }
}

/// A token bucket per tenant: `burst` requests at once, refilled at `requests_per_second`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimit {
    pub requests_per_second: f64,
    pub burst: u32,
}

/// An API key given in the config file: the key itself, or its SHA-256 (hex).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigKey {
    pub tenant: String,
    #[serde(default)]
    pub key: Option<String>,
    #[serde(default)]
    pub sha256: Option<String>,
}

/// The config file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub addr: Option<String>,
    pub db: Option<String>,
    /// SQLite's durability (`normal` unless set here or by `--durability`).
    pub durability: Option<recall_engine::store::Durability>,
    #[serde(default)]
    pub limits: HttpLimits,
    pub rate_limit: Option<RateLimit>,
    #[serde(default)]
    pub keys: Vec<ConfigKey>,
}

/// Why the configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: String, message: String },
    #[error("{0}")]
    Invalid(String),
}

impl FileConfig {
    /// Reads and checks a TOML config file.
    pub fn load(path: &Path) -> Result<FileConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        let cfg: FileConfig = toml::from_str(&text).map_err(|e| ConfigError::Parse {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        cfg.check()?;
        Ok(cfg)
    }

    /// Checks values a type cannot: limits above zero, each key given one way.
    pub fn check(&self) -> Result<(), ConfigError> {
        self.limits.check()?;
        if let Some(r) = &self.rate_limit {
            if !(r.requests_per_second.is_finite() && r.requests_per_second > 0.0) || r.burst == 0 {
                return Err(ConfigError::Invalid(
                    "rate_limit: requests_per_second and burst must be above zero".into(),
                ));
            }
        }
        for (i, k) in self.keys.iter().enumerate() {
            if k.tenant.trim().is_empty() {
                return Err(ConfigError::Invalid(format!("keys[{i}]: empty tenant")));
            }
            match (&k.key, &k.sha256) {
                (Some(key), None) if key.len() >= 16 => {}
                (Some(_), None) => {
                    return Err(ConfigError::Invalid(format!(
                        "keys[{i}]: a key must be at least 16 characters"
                    )))
                }
                (None, Some(h)) if is_sha256_hex(h) => {}
                (None, Some(_)) => {
                    return Err(ConfigError::Invalid(format!(
                        "keys[{i}]: sha256 must be 64 lower-case hex digits"
                    )))
                }
                _ => {
                    return Err(ConfigError::Invalid(format!(
                        "keys[{i}]: give exactly one of `key` and `sha256`"
                    )))
                }
            }
        }
        Ok(())
    }
}

/// True for 64 lower-case hex digits (a key's SHA-256 as `recall keys` prints it).
pub fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The server's settings (what a config file and the command line give); the live
/// clients it talks to are [`crate::Upstreams`], passed beside it.
#[derive(Debug, Clone, Default)]
pub struct ServerConfig {
    pub limits: HttpLimits,
    pub rate_limit: Option<RateLimit>,
    /// Keys from the config file (keys in the database are accepted as well).
    pub keys: Vec<ConfigKey>,
    /// No authentication: every request acts as the default tenant. Only allowed on a
    /// loopback address.
    pub no_auth: bool,
    /// Serve the web app's files from this folder, read at each request, instead of the
    /// copy embedded in the binary (for working on the page; `RECALL_WEB_DIR` in the CLI).
    pub web_dir: Option<std::path::PathBuf>,
}

impl ServerConfig {
    /// The server settings of a config file.
    pub fn from_file(cfg: &FileConfig) -> ServerConfig {
        ServerConfig {
            limits: cfg.limits,
            rate_limit: cfg.rate_limit,
            keys: cfg.keys.clone(),
            no_auth: false,
            web_dir: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_example() {
        let text = r#"
addr = "127.0.0.1:8080"
[limits]
max_body_bytes = 1000
[rate_limit]
requests_per_second = 5.0
burst = 10
[[keys]]
tenant = "acme"
sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
[[keys]]
tenant = "dev"
key = "rk_dev_only_plain_text_key"
"#;
        let cfg: FileConfig = toml::from_str(text).unwrap();
        cfg.check().unwrap();
        assert_eq!(cfg.limits.max_body_bytes, 1000);
        assert_eq!(
            cfg.limits.max_message_bytes,
            HttpLimits::default().max_message_bytes
        );
        assert_eq!(cfg.keys.len(), 2);
        assert_eq!(cfg.durability, None);
    }

    #[test]
    fn reads_durability_and_the_read_limits() {
        let cfg: FileConfig = toml::from_str(
            "durability = 'full'\n[limits]\nmax_page_bytes = 1000\nmax_context_bytes = 2000",
        )
        .unwrap();
        cfg.check().unwrap();
        assert_eq!(cfg.durability, Some(recall_engine::store::Durability::Full));
        assert_eq!(cfg.limits.max_page_bytes, 1000);
        assert_eq!(cfg.limits.max_context_bytes, 2000);
        assert!(toml::from_str::<FileConfig>("durability = 'fsync'").is_err());
        let zero: FileConfig = toml::from_str("[limits]\nmax_page_bytes = 0").unwrap();
        assert!(zero.check().is_err());
    }

    #[test]
    fn refuses_bad_keys_and_unknown_fields() {
        let both: FileConfig =
            toml::from_str("[[keys]]\ntenant='a'\nkey='0123456789abcdefg'\nsha256='00'").unwrap();
        assert!(both.check().is_err());
        let short: FileConfig = toml::from_str("[[keys]]\ntenant='a'\nkey='short'").unwrap();
        assert!(short.check().is_err());
        assert!(toml::from_str::<FileConfig>("adr = 'x'").is_err());
    }

    #[test]
    fn timeouts_and_the_connection_cap_are_read_and_checked() {
        let cfg: FileConfig = toml::from_str(
            "[limits]\nheader_timeout_secs = 2\nbody_timeout_secs = 3\nidle_timeout_secs = 4\n\
             write_timeout_secs = 6\nmax_connections = 5",
        )
        .unwrap();
        cfg.check().unwrap();
        assert_eq!(
            cfg.limits.header_timeout(),
            std::time::Duration::from_secs(2)
        );
        assert_eq!(cfg.limits.body_timeout(), std::time::Duration::from_secs(3));
        assert_eq!(cfg.limits.idle_timeout(), std::time::Duration::from_secs(4));
        assert_eq!(
            cfg.limits.write_timeout(),
            std::time::Duration::from_secs(6)
        );
        assert_eq!(cfg.limits.max_connections, 5);
        let d = HttpLimits::default();
        assert_eq!(
            (
                d.header_timeout_secs,
                d.body_timeout_secs,
                d.idle_timeout_secs,
                d.write_timeout_secs
            ),
            (10, 30, 60, 30)
        );
        assert_eq!(d.max_connections, 1024);
        for bad in [
            "header_timeout_secs = 0",
            "body_timeout_secs = 0",
            "idle_timeout_secs = 100000",
            "write_timeout_secs = 0",
            "max_connections = 0",
            "max_body_bytes = 0",
        ] {
            let cfg: FileConfig = toml::from_str(&format!("[limits]\n{bad}")).unwrap();
            let e = cfg.check().unwrap_err().to_string();
            let name = bad.split(' ').next().unwrap();
            assert!(e.contains(name), "{bad}: {e}");
        }
    }
}
