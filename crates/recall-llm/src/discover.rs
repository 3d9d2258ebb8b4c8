//! Backend discovery: which backends the environment configures, and how each is built. The
//! one place that reads `ANTHROPIC_API_KEY`, `OPENAI_BASE_URL` and friends, so `recall chat`
//! and `recall serve` pick backends the same way.
//!
//! It also finds the local model server that `scripts/models.sh start` runs: that script
//! writes the server's address to `${XDG_CACHE_HOME:-$HOME/.cache}/recall/run/llama-server.env`
//! ([`local_state_file`]), the same file whichever directory recall runs in, and discovery
//! offers the `local` backend when that server answers `GET /health` ([`local_server`]).
//!
//! The environment is passed in as a lookup function, so discovery is a function of what it
//! is given (tests pass a map; the binary passes [`process_env`]); the only other things it
//! looks at are the `claude` executable, that state file and the server it names.
//!
//! ```
//! use recall_llm::discover::{discover, BackendKind, DiscoverOptions};
//! let env = |name: &str| (name == "OPENAI_BASE_URL").then(|| "http://127.0.0.1:8080/v1".to_string());
//! let opts = DiscoverOptions { claude_path: "/nonexistent/claude".into(), ..DiscoverOptions::default() };
//! let found = discover(&env, &opts);
//! assert_eq!(found.len(), 1);
//! assert_eq!(found[0].kind, BackendKind::OpenAi);
//! assert_eq!(found[0].why, "OPENAI_BASE_URL is set");
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::{ApiKey, BackendConfig, ClaudeCliConfig, HttpConfig, PromptFormat};

/// The kinds of backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// The Anthropic Messages API.
    Anthropic,
    /// The Claude Code CLI as a subprocess.
    ClaudeCli,
    /// An OpenAI-compatible chat completions server.
    OpenAi,
    /// The local model server `scripts/models.sh start` runs (llama-server, OpenAI-compatible).
    Local,
}

impl BackendKind {
    /// The name interfaces use (`--backend`, the server's backend list).
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Anthropic => "anthropic",
            BackendKind::ClaudeCli => "claude-cli",
            BackendKind::OpenAi => "openai",
            BackendKind::Local => "local",
        }
    }

    /// The reply cap a chat uses with this backend when none is asked for: the local model
    /// (a small model on a CPU) gets [`LOCAL_MAX_OUTPUT_TOKENS`], so a turn ends in seconds
    /// rather than rambling on; the others use the request's default.
    pub fn default_max_output_tokens(self) -> Option<u32> {
        (self == BackendKind::Local).then_some(LOCAL_MAX_OUTPUT_TOKENS)
    }
}

/// The local model's default reply cap ([`BackendKind::default_max_output_tokens`]).
pub const LOCAL_MAX_OUTPUT_TOKENS: u32 = 256;

/// What the caller decides rather than the environment.
#[derive(Debug, Clone)]
pub struct DiscoverOptions {
    /// The `claude` executable: a path, or a name looked up in `PATH`.
    pub claude_path: PathBuf,
    /// The model, when the caller names one.
    pub model: Option<String>,
    /// The longest a whole call may take.
    pub timeout: Option<Duration>,
    /// How the Claude Code CLI is given the history.
    pub prompt_format: PromptFormat,
    /// The Claude Code CLI's working directory (it reads `CLAUDE.md` from there).
    pub working_dir: Option<PathBuf>,
}

impl Default for DiscoverOptions {
    fn default() -> Self {
        DiscoverOptions {
            claude_path: PathBuf::from("claude"),
            model: None,
            timeout: None,
            prompt_format: PromptFormat::default(),
            working_dir: None,
        }
    }
}

/// A configured backend and why it was picked.
#[derive(Debug, Clone)]
pub struct Discovered {
    pub kind: BackendKind,
    pub config: BackendConfig,
    /// A phrase for the user: "ANTHROPIC_API_KEY is set", "claude found", …
    pub why: String,
}

/// A backend that was asked for but cannot work as configured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotConfigured(pub String);

/// How to configure a chat backend, for errors that find none.
macro_rules! how_to_configure {
    () => {
        "set ANTHROPIC_API_KEY, install the Claude Code CLI (npm install -g \
         @anthropic-ai/claude-code), set OPENAI_API_KEY (OpenAI) or OPENAI_BASE_URL (another \
         OpenAI-compatible server), or start the local model (bash \
         scripts/models.sh fetch, once, then bash scripts/models.sh start, in the recall checkout)"
    };
}

/// What to do to get a chat backend: the end of every error that finds none.
pub const HOW_TO_CONFIGURE: &str = how_to_configure!();

/// The message when no backend is configured at all, saying what to set.
pub const NONE_CONFIGURED: &str = concat!("no chat backend configured: ", how_to_configure!());

/// The command that starts the local model server.
pub const LOCAL_START: &str = "bash scripts/models.sh start";

/// The model the local server runs when its state file names none.
const LOCAL_MODEL: &str = "qwen2.5-coder-1.5b-instruct";

/// An environment variable of this process, `None` when unset or blank.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// True when `name` is an executable file on `PATH` (or a path to one).
pub fn on_path(name: &Path) -> bool {
    if name.components().count() > 1 {
        return name.is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(name).is_file()))
}

/// Every backend the environment configures, in order of preference: the Anthropic API
/// (`ANTHROPIC_API_KEY`), the Claude Code CLI (found at `claude_path`), an OpenAI-compatible
/// server (`OPENAI_BASE_URL`, or OpenAI's own API when only `OPENAI_API_KEY` is set), the local model server `scripts/models.sh start` runs (when it
/// answers). What the user set outranks the local model, which runs whatever was started last.
pub fn discover(env: &dyn Fn(&str) -> Option<String>, opts: &DiscoverOptions) -> Vec<Discovered> {
    let mut found = Vec::new();
    if env("ANTHROPIC_API_KEY").is_some() {
        found.push(build(
            BackendKind::Anthropic,
            env,
            opts,
            "ANTHROPIC_API_KEY is set",
        ));
    }
    if on_path(&opts.claude_path) {
        let why = format!("{} found", opts.claude_path.display());
        found.push(build(BackendKind::ClaudeCli, env, opts, &why));
    }
    if env("OPENAI_BASE_URL").is_some() {
        found.push(build(
            BackendKind::OpenAi,
            env,
            opts,
            "OPENAI_BASE_URL is set",
        ));
    } else if env("OPENAI_API_KEY").is_some() {
        // A key alone is OpenAI's own API, as OpenAI's SDKs read it.
        found.push(build(
            BackendKind::OpenAi,
            env,
            opts,
            "OPENAI_API_KEY is set (https://api.openai.com/v1)",
        ));
    }
    if let LocalServer::Up(server) = local_server(env) {
        found.push(local(server, opts, "started by scripts/models.sh"));
    }
    found
}

/// The backend `kind`, configured from the environment, or what is missing for it to work —
/// checked before anything is stored or sent.
pub fn configure(
    kind: BackendKind,
    env: &dyn Fn(&str) -> Option<String>,
    opts: &DiscoverOptions,
) -> Result<Discovered, NotConfigured> {
    let missing = match kind {
        BackendKind::Anthropic
            if env("ANTHROPIC_API_KEY").is_none() && env("ANTHROPIC_BASE_URL").is_none() =>
        {
            Some("the anthropic backend needs ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL for a server that needs no key)")
        }
        BackendKind::OpenAi
            if env("OPENAI_BASE_URL").is_none() && env("OPENAI_API_KEY").is_none() =>
        {
            Some("the openai backend needs OPENAI_BASE_URL (a local server: bash scripts/models.sh start) or OPENAI_API_KEY")
        }
        _ => None,
    };
    if kind == BackendKind::Local {
        return match local_server(env) {
            LocalServer::Up(server) => Ok(local(server, opts, "chosen with --backend")),
            LocalServer::NotStarted => Err(NotConfigured(format!(
                "the local model server is not running: start it with `{LOCAL_START}` in the \
                 recall checkout (the first time, `bash scripts/models.sh fetch` installs it: \
                 5 to 15 minutes)"
            ))),
            LocalServer::Down { url } => Err(NotConfigured(format!(
                "the local model server scripts/models.sh started at {url} does not answer: \
                 start it again with `{LOCAL_START}` in the recall checkout"
            ))),
        };
    }
    match missing {
        Some(m) => Err(NotConfigured(m.to_string())),
        None => Ok(build(kind, env, opts, "chosen with --backend")),
    }
}

/// The running local model server, as its state file describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalModelServer {
    /// The OpenAI-compatible base URL, `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    /// The model it serves.
    pub model: String,
}

/// Whether the local model server runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalServer {
    /// It answers `GET /health`.
    Up(LocalModelServer),
    /// No state file: `scripts/models.sh start` was not run (or `stop` was).
    NotStarted,
    /// The state file names a server that does not answer (it crashed, or the machine
    /// restarted).
    Down { url: String },
}

/// The file `scripts/models.sh start` writes the server's address to:
/// `${XDG_CACHE_HOME:-$HOME/.cache}/recall/run/llama-server.env`, the rule the script uses.
/// `None` when neither variable is set.
pub fn local_state_file(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let cache = env("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(cache.join("recall").join("run").join("llama-server.env"))
}

/// Reads the local model server's state file and asks the server it names for `/health`
/// (loopback, a second at most).
pub fn local_server(env: &dyn Fn(&str) -> Option<String>) -> LocalServer {
    let Some(text) = local_state_file(env).and_then(|p| std::fs::read_to_string(p).ok()) else {
        return LocalServer::NotStarted;
    };
    let value = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix('='))
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    let Some(url) = value("OPENAI_BASE_URL") else {
        return LocalServer::NotStarted;
    };
    if healthy(&url) {
        LocalServer::Up(LocalModelServer {
            base_url: url,
            model: value("MODEL").unwrap_or_else(|| LOCAL_MODEL.to_string()),
        })
    } else {
        LocalServer::Down { url }
    }
}

/// True when `GET /health` on the loopback server of `base_url` (`http://127.0.0.1:PORT/v1`)
/// answers 200 within a second. Plain HTTP/1.0 over a std socket: discovery is synchronous
/// and runs before any runtime is needed.
fn healthy(base_url: &str) -> bool {
    use std::io::{Read, Write};
    use std::net::{SocketAddr, TcpStream};
    let Some(authority) = base_url
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
    else {
        return false;
    };
    // Only a loopback address: the state file is a local file, not a place to name hosts.
    let Ok(addr) = authority
        .replace("localhost", "127.0.0.1")
        .parse::<SocketAddr>()
    else {
        return false;
    };
    if !addr.ip().is_loopback() {
        return false;
    }
    let timeout = Duration::from_secs(1);
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, timeout) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(timeout));
    let _ = stream.set_write_timeout(Some(timeout));
    let request = format!("GET /health HTTP/1.0\r\nHost: {authority}\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 16];
    let mut got = 0;
    while got < head.len() {
        match stream.read(&mut head[got..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    let status = String::from_utf8_lossy(&head[..got]);
    status.starts_with("HTTP/1.") && status.get(9..12) == Some("200")
}

fn local(server: LocalModelServer, opts: &DiscoverOptions, why: &str) -> Discovered {
    let mut c = HttpConfig {
        base_url: server.base_url.clone(),
        model: opts.model.clone().unwrap_or(server.model),
        ..HttpConfig::openai()
    };
    c.timeouts.total = opts.timeout;
    Discovered {
        kind: BackendKind::Local,
        config: BackendConfig::OpenAi(c),
        why: format!("{why}, {}", server.base_url),
    }
}

fn build(
    kind: BackendKind,
    env: &dyn Fn(&str) -> Option<String>,
    opts: &DiscoverOptions,
    why: &str,
) -> Discovered {
    let config = match kind {
        BackendKind::Anthropic => {
            let mut c = HttpConfig {
                api_key: env("ANTHROPIC_API_KEY").map(ApiKey::new),
                ..HttpConfig::anthropic()
            };
            if let Some(url) = env("ANTHROPIC_BASE_URL") {
                c.base_url = url;
            }
            if let Some(m) = &opts.model {
                c.model = m.clone();
            }
            c.timeouts.total = opts.timeout;
            BackendConfig::Anthropic(c)
        }
        // `configure` and `discover` build the local backend from its state file.
        BackendKind::OpenAi | BackendKind::Local => {
            let mut c = HttpConfig {
                api_key: env("OPENAI_API_KEY").map(ApiKey::new),
                ..HttpConfig::openai()
            };
            if let Some(url) = env("OPENAI_BASE_URL") {
                c.base_url = url;
            }
            if let Some(m) = &opts.model {
                c.model = m.clone();
            }
            c.timeouts.total = opts.timeout;
            BackendConfig::OpenAi(c)
        }
        BackendKind::ClaudeCli => BackendConfig::ClaudeCli(ClaudeCliConfig {
            claude_path: opts.claude_path.clone(),
            prompt_format: opts.prompt_format,
            model: opts.model.clone(),
            timeout: opts.timeout,
            working_dir: opts.working_dir.clone(),
            ..ClaudeCliConfig::default()
        }),
    };
    Discovered {
        kind,
        config,
        why: why.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    fn no_claude() -> DiscoverOptions {
        DiscoverOptions {
            claude_path: "/nonexistent/claude".into(),
            ..DiscoverOptions::default()
        }
    }

    #[test]
    fn preference_order_and_reasons() {
        let env = env_of(&[
            ("ANTHROPIC_API_KEY", "k"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:1/v1"),
        ]);
        let found = discover(&env, &no_claude());
        let kinds: Vec<_> = found.iter().map(|d| d.kind).collect();
        assert_eq!(kinds, [BackendKind::Anthropic, BackendKind::OpenAi]);
        assert_eq!(found[0].why, "ANTHROPIC_API_KEY is set");
        assert!(discover(&env_of(&[]), &no_claude()).is_empty());
    }

    /// `OPENAI_API_KEY` alone is OpenAI's public API; with `OPENAI_BASE_URL` the URL wins.
    #[test]
    fn an_openai_key_alone_is_openais_own_api() {
        let found = discover(&env_of(&[("OPENAI_API_KEY", "sk-x")]), &no_claude());
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].why,
            "OPENAI_API_KEY is set (https://api.openai.com/v1)"
        );
        let BackendConfig::OpenAi(c) = &found[0].config else {
            panic!("{:?}", found[0].kind)
        };
        assert_eq!(c.base_url, "https://api.openai.com");
        assert!(c.api_key.is_some());
        let env = env_of(&[
            ("OPENAI_API_KEY", "sk-x"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:1/v1"),
        ]);
        let found = discover(&env, &no_claude());
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].why, "OPENAI_BASE_URL is set");
    }

    #[test]
    fn an_explicit_backend_without_its_settings_is_refused() {
        let e = configure(BackendKind::Anthropic, &env_of(&[]), &no_claude()).unwrap_err();
        assert!(e.0.contains("ANTHROPIC_API_KEY"), "{e}");
        let e = configure(BackendKind::OpenAi, &env_of(&[]), &no_claude()).unwrap_err();
        assert!(e.0.contains("OPENAI_BASE_URL"), "{e}");
        let ok = configure(
            BackendKind::Anthropic,
            &env_of(&[("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")]),
            &no_claude(),
        )
        .unwrap();
        match ok.config {
            BackendConfig::Anthropic(c) => assert_eq!(c.base_url, "http://127.0.0.1:1"),
            other => panic!("{other:?}"),
        }
    }

    /// A loopback server answering every request with `status`, for `count` requests.
    fn health_server(status: &'static str, count: usize) -> u16 {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for stream in listener.incoming().take(count) {
                let mut s = stream.unwrap();
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf);
                let _ = write!(s, "HTTP/1.1 {status}\r\nContent-Length: 2\r\n\r\n{{}}");
            }
        });
        port
    }

    /// A cache directory holding the state file `scripts/models.sh start` writes.
    fn state(dir: &tempfile::TempDir, text: &str) -> String {
        let run = dir.path().join("recall").join("run");
        std::fs::create_dir_all(&run).unwrap();
        std::fs::write(run.join("llama-server.env"), text).unwrap();
        dir.path().display().to_string()
    }

    /// A port nothing listens on (bound, then closed).
    fn closed_port() -> u16 {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    }

    #[test]
    fn the_local_model_server_is_found_from_its_state_file_and_comes_last() {
        let port = health_server("200 OK", 2);
        let dir = tempfile::tempdir().unwrap();
        let url = format!("http://127.0.0.1:{port}/v1");
        let cache = state(
            &dir,
            &format!("OPENAI_BASE_URL={url}\nPORT={port}\nPID=1\n"),
        );
        let env = env_of(&[
            ("XDG_CACHE_HOME", cache.as_str()),
            ("ANTHROPIC_API_KEY", "k"),
        ]);
        let found = discover(&env, &no_claude());
        let kinds: Vec<_> = found.iter().map(|d| d.kind).collect();
        assert_eq!(kinds, [BackendKind::Anthropic, BackendKind::Local]);
        assert_eq!(found[1].kind.name(), "local");
        assert_eq!(found[1].why, format!("started by scripts/models.sh, {url}"));
        match &found[1].config {
            BackendConfig::OpenAi(c) => {
                assert_eq!(c.base_url, url);
                assert_eq!(c.model, LOCAL_MODEL);
                assert!(c.api_key.is_none());
            }
            other => panic!("{other:?}"),
        }
        let chosen = configure(BackendKind::Local, &env, &no_claude()).unwrap();
        assert_eq!(chosen.why, format!("chosen with --backend, {url}"));
    }

    #[test]
    fn home_without_xdg_cache_home_is_where_the_script_writes() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join(".cache");
        std::fs::create_dir_all(&cache).unwrap();
        let home = dir.path().display().to_string();
        assert_eq!(
            local_state_file(&env_of(&[("HOME", home.as_str())])),
            Some(cache.join("recall/run/llama-server.env"))
        );
        assert_eq!(local_state_file(&env_of(&[])), None);
        assert_eq!(
            local_server(&env_of(&[("HOME", home.as_str())])),
            LocalServer::NotStarted
        );
    }

    #[test]
    fn a_local_server_that_is_down_or_not_started_names_the_command_that_starts_it() {
        let empty = tempfile::tempdir().unwrap();
        let cache = empty.path().display().to_string();
        let env = env_of(&[("XDG_CACHE_HOME", cache.as_str())]);
        assert!(discover(&env, &no_claude()).is_empty());
        let e = configure(BackendKind::Local, &env, &no_claude()).unwrap_err();
        assert!(e.0.contains("not running"), "{e}");
        assert!(e.0.contains("`bash scripts/models.sh start`"), "{e}");

        // A state file left behind by a server that is gone.
        let dir = tempfile::tempdir().unwrap();
        let url = format!("http://127.0.0.1:{}/v1", closed_port());
        let cache = state(&dir, &format!("OPENAI_BASE_URL={url}\n"));
        let env = env_of(&[("XDG_CACHE_HOME", cache.as_str())]);
        assert_eq!(local_server(&env), LocalServer::Down { url: url.clone() });
        assert!(discover(&env, &no_claude()).is_empty());
        let e = configure(BackendKind::Local, &env, &no_claude()).unwrap_err();
        assert!(e.0.contains(&url) && e.0.contains("does not answer"), "{e}");
        assert!(e.0.contains("`bash scripts/models.sh start`"), "{e}");
    }

    #[test]
    fn only_a_loopback_server_that_answers_200_counts() {
        // Loading the model: llama-server answers 503 until it is ready.
        let port = health_server("503 Service Unavailable", 1);
        assert!(!healthy(&format!("http://127.0.0.1:{port}/v1")));
        let port = health_server("200 OK", 1);
        assert!(healthy(&format!("http://localhost:{port}/v1")));
        assert!(!healthy("http://192.0.2.1:8080/v1"));
        assert!(!healthy("https://127.0.0.1:8080/v1"));
        assert!(!healthy("not a url"));
    }

    #[test]
    fn the_model_named_in_the_state_file_is_used_unless_the_caller_names_one() {
        let port = health_server("200 OK", 2);
        let dir = tempfile::tempdir().unwrap();
        let cache = state(
            &dir,
            &format!("OPENAI_BASE_URL=http://127.0.0.1:{port}/v1\nMODEL=tiny\n"),
        );
        let env = env_of(&[("XDG_CACHE_HOME", cache.as_str())]);
        let model = |opts: &DiscoverOptions| match configure(BackendKind::Local, &env, opts)
            .unwrap()
            .config
        {
            BackendConfig::OpenAi(c) => c.model,
            other => panic!("{other:?}"),
        };
        assert_eq!(model(&no_claude()), "tiny");
        let named = DiscoverOptions {
            model: Some("other".into()),
            ..no_claude()
        };
        assert_eq!(model(&named), "other");
    }
}
