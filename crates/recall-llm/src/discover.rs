//! Backend discovery: which backends the environment configures, and how each is built. The
//! one place that reads `ANTHROPIC_API_KEY`, `OPENAI_BASE_URL` and friends, so `recall chat`
//! and `recall serve` pick backends the same way.
//!
//! The environment is passed in as a lookup function, so discovery is a plain function of
//! what it is given (tests pass a map; the binary passes [`process_env`]).
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
}

impl BackendKind {
    /// The name interfaces use (`--backend`, the server's backend list).
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Anthropic => "anthropic",
            BackendKind::ClaudeCli => "claude-cli",
            BackendKind::OpenAi => "openai",
        }
    }
}

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

/// The message when no backend is configured at all, saying what to set.
pub const NONE_CONFIGURED: &str = "no chat backend configured: set ANTHROPIC_API_KEY, install \
     the Claude Code CLI (npm install -g @anthropic-ai/claude-code), or set OPENAI_BASE_URL \
     (for example to a local llama.cpp server: bash scripts/models.sh start)";

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
/// server (`OPENAI_BASE_URL`).
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
    match missing {
        Some(m) => Err(NotConfigured(m.to_string())),
        None => Ok(build(kind, env, opts, "chosen with --backend")),
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
        BackendKind::OpenAi => {
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
}
