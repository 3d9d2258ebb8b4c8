//! Backend errors: one type, with a message a user can act on and whether output had started.
//!
//! No error ever contains an API key: messages taken from providers or from the CLI pass
//! through [`redact`] with the configured key before they are stored.

use std::time::Duration;

/// Why a backend call failed, and whether any reply content had been streamed before it.
///
/// `Display` gives one clear line (the [`BackendErrorKind`] message).
///
/// ```
/// use recall_llm::{BackendError, BackendErrorKind};
/// let e = BackendError::new(BackendErrorKind::Auth { key_env: "ANTHROPIC_API_KEY".into() });
/// assert_eq!(e.to_string(), "authentication failed: check the API key (ANTHROPIC_API_KEY)");
/// assert!(!e.output_started);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}")]
pub struct BackendError {
    /// What went wrong.
    pub kind: BackendErrorKind,
    /// True when reply content (text, thinking, a tool call) had already been streamed: the
    /// reply is partial and the request must not be retried blindly.
    pub output_started: bool,
}

/// What went wrong in a backend call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendErrorKind {
    /// The provider rejected the credentials (HTTP 401, or an `authentication_error`).
    #[error("authentication failed: check the API key ({key_env})")]
    Auth {
        /// The environment variable or setting that holds the key.
        key_env: String,
    },
    /// HTTP 429 or a `rate_limit_error`, after the configured retries.
    #[error("rate limited by the provider{}: try again later", retry_hint(.retry_after))]
    RateLimited {
        /// The provider's `retry-after`, when it sent one.
        retry_after: Option<Duration>,
    },
    /// HTTP 529 or an `overloaded_error`, after the configured retries.
    #[error("the provider is overloaded: try again later")]
    Overloaded,
    /// Any other HTTP error status.
    #[error("HTTP {status} from the provider: {message}")]
    Http {
        /// The HTTP status code.
        status: u16,
        /// The provider's error message (or a summary of the body).
        message: String,
    },
    /// An error the provider reported inside a stream (an SSE `error` event of a type that has
    /// no variant of its own).
    #[error("the provider reported an error ({error_type}): {message}")]
    Api {
        /// The provider's error type, e.g. `api_error`.
        error_type: String,
        /// The provider's message.
        message: String,
    },
    /// The connection dropped or the body could not be read after the response began.
    #[error("connection dropped mid-stream: {message}")]
    Stream {
        /// What the transport reported.
        message: String,
    },
    /// The provider could not be reached (connection refused, DNS, TLS).
    #[error("could not reach the provider: {message}")]
    Connect {
        /// What the transport reported.
        message: String,
    },
    /// The provider answered with something that does not follow its protocol.
    #[error("invalid response from the provider: {message}")]
    Protocol {
        /// What was wrong.
        message: String,
    },
    /// No reply (or no progress) within the configured time.
    #[error("the backend did not answer within {}", secs(.after))]
    Timeout {
        /// The limit that was reached.
        after: Duration,
    },
    /// The caller cancelled the request.
    #[error("cancelled")]
    Cancelled,
    /// The `claude` executable could not be found.
    #[error("Claude Code CLI not installed. Run: npm install -g @anthropic-ai/claude-code")]
    NotInstalled {
        /// The program that was looked for (the configured `claude_path`).
        program: String,
    },
    /// The Claude Code CLI is not logged in or its API key was rejected.
    #[error(
        "Claude Code CLI is not authenticated ({detail}): log in by running `claude`, or set ANTHROPIC_API_KEY"
    )]
    CliAuth {
        /// What the CLI said.
        detail: String,
    },
    /// The Claude Code CLI failed for another reason.
    #[error("Claude Code CLI failed: {message}")]
    Cli {
        /// What the CLI said (its error result, or the end of its stderr).
        message: String,
    },
    /// The request cannot be sent as it is (no messages, a bad base URL, …).
    #[error("invalid request: {message}")]
    InvalidRequest {
        /// What is wrong with it.
        message: String,
    },
}

fn retry_hint(d: &Option<Duration>) -> String {
    match d {
        Some(d) => format!(" (retry after {})", secs(d)),
        None => String::new(),
    }
}

fn secs(d: &Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

impl BackendError {
    /// An error of `kind` before any output.
    pub fn new(kind: BackendErrorKind) -> Self {
        BackendError {
            kind,
            output_started: false,
        }
    }

    /// The same error with `output_started` set to `started`.
    pub fn with_output_started(mut self, started: bool) -> Self {
        self.output_started = started;
        self
    }

    /// True for failures that may succeed when tried again later (rate limits, overload,
    /// server errors, dropped connections, timeouts), provided no output had started.
    pub fn is_transient(&self) -> bool {
        match &self.kind {
            BackendErrorKind::RateLimited { .. }
            | BackendErrorKind::Overloaded
            | BackendErrorKind::Stream { .. }
            | BackendErrorKind::Connect { .. }
            | BackendErrorKind::Timeout { .. } => true,
            BackendErrorKind::Http { status, .. } => *status >= 500,
            _ => false,
        }
    }

    pub(crate) fn invalid_request(message: impl Into<String>) -> Self {
        BackendError::new(BackendErrorKind::InvalidRequest {
            message: message.into(),
        })
    }

    /// A reply that breaks the provider's protocol (a body that is not what the API sends).
    pub fn protocol(message: impl Into<String>) -> Self {
        BackendError::new(BackendErrorKind::Protocol {
            message: message.into(),
        })
    }

    pub(crate) fn stream(message: impl Into<String>) -> Self {
        BackendError::new(BackendErrorKind::Stream {
            message: message.into(),
        })
    }
}

impl From<BackendErrorKind> for BackendError {
    fn from(kind: BackendErrorKind) -> Self {
        BackendError::new(kind)
    }
}

/// The most characters of provider text kept in an error message.
const MAX_DETAIL_CHARS: usize = 500;

/// Secrets shorter than this are not searched for (a test key like `k` would mangle every
/// word containing the letter); real API keys are far longer.
const MIN_SECRET_LEN: usize = 8;

/// Removes `secret` from `text` (every occurrence becomes `[redacted]`) and shortens the text
/// to a few hundred characters. Every provider or CLI message goes through this before it is
/// put in an error, so that an echoed API key never reaches a log or a user.
///
/// Anything else that looks like a credential is masked as well ([`mask_credentials`]): a
/// provider may echo a key recall does not know (a client's, a proxy's).
pub fn redact(text: &str, secret: Option<&str>) -> String {
    let out = match secret {
        Some(s) if s.len() >= MIN_SECRET_LEN => text.replace(s, "[redacted]"),
        _ => text.to_string(),
    };
    let mut out = mask_credentials(&out).trim().to_string();
    if out.chars().count() > MAX_DETAIL_CHARS {
        let cut: String = out.chars().take(MAX_DETAIL_CHARS).collect();
        out = format!("{cut}…");
    }
    out
}

/// Prefixes of the API keys and tokens providers and platforms issue (OpenAI, Anthropic,
/// xAI, Groq, Google, GitHub, GitLab, Hugging Face, Slack, AWS access keys).
const KEY_PREFIXES: [&str; 14] = [
    "sk-",
    "sk_",
    "rk_",
    "sess-",
    "xai-",
    "gsk_",
    "AIza",
    "ghp_",
    "gho_",
    "github_pat_",
    "glpat-",
    "hf_",
    "xox",
    "AKIA",
];

/// A token with a known key prefix is a credential from this length on.
const MIN_PREFIXED_LEN: usize = 12;

/// A token of letters and digits mixed is taken for a credential from this length on
/// (request ids and hashes are masked too: they do not help a client's user either).
const MIN_OPAQUE_LEN: usize = 32;

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// `text` with every token that looks like a credential replaced by `[redacted]`: a token
/// (a run of ASCII letters, digits, `-` and `_`) with a known key prefix and at least 12
/// characters, one of at least 32 mixing letters and digits, and the token after `Bearer `.
/// Used on every provider message recall passes on ([`redact`]), so a key a provider echoes
/// never reaches a client, a log or an error.
///
/// ```
/// use recall_llm::error::mask_credentials;
/// assert_eq!(
///     mask_credentials("Incorrect API key provided: sk-proj-abc123def456. Bearer tok_12345678"),
///     "Incorrect API key provided: [redacted]. Bearer [redacted]"
/// );
/// assert_eq!(mask_credentials("max_tokens: 100000 is too many"), "max_tokens: 100000 is too many");
/// ```
pub fn mask_credentials(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut after_bearer = false;
    while let Some(start) = rest.find(is_token_char) {
        out.push_str(&rest[..start]);
        let token_len = rest[start..]
            .find(|c: char| !is_token_char(c))
            .unwrap_or(rest.len() - start);
        let token = &rest[start..start + token_len];
        let prefixed =
            token.len() >= MIN_PREFIXED_LEN && KEY_PREFIXES.iter().any(|p| token.starts_with(p));
        let opaque = token.len() >= MIN_OPAQUE_LEN
            && token.bytes().any(|b| b.is_ascii_digit())
            && token.bytes().any(|b| b.is_ascii_alphabetic());
        // `[redacted]` itself (a known key already replaced) is left as it is.
        let bearer = after_bearer && token.len() >= MIN_SECRET_LEN && token != "redacted";
        if prefixed || opaque || bearer {
            out.push_str("[redacted]");
        } else {
            out.push_str(token);
        }
        after_bearer =
            token.eq_ignore_ascii_case("bearer") && rest[start + token_len..].starts_with(' ');
        rest = &rest[start + token_len..];
    }
    out.push_str(rest);
    out
}

/// The text of an error and all its sources, joined with `": "` (reqwest's own message alone
/// is often just "error sending request").
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut parts = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(s) = cur {
        let t = s.to_string();
        if !parts.iter().any(|p| p.contains(&t)) {
            parts.push(t);
        }
        cur = s.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_removes_the_secret_everywhere() {
        let s = redact("bad key sk-12345678 (sk-12345678)", Some("sk-12345678"));
        assert_eq!(s, "bad key [redacted] ([redacted])");
        assert_eq!(redact("x", Some("")), "x");
        assert_eq!(redact("chunk", Some("k")), "chunk");
    }

    #[test]
    fn keys_recall_does_not_know_are_masked_too() {
        for key in [
            "sk-ant-api03-AbCdEf0123456789",
            "sk-proj-0123456789abcdef",
            "xai-0123456789abcdefghij",
            "AKIAIOSFODNN7EXAMPLE",
            "ghp_0123456789abcdefABCDEF",
            "0f8e2a6c9b1d4e7f0a3c5e8b2d4f6a8c0e2a4c6e",
        ] {
            let s = redact(&format!("invalid key \"{key}\"; check it"), None);
            assert_eq!(s, "invalid key \"[redacted]\"; check it", "{key}");
        }
        assert_eq!(
            redact("Authorization: Bearer abcdefgh12", None),
            "Authorization: Bearer [redacted]"
        );
        assert_eq!(
            redact(
                "Bearer sk-known-12345678 and Bearer sk-known-12345678",
                Some("sk-known-12345678")
            ),
            "Bearer [redacted] and Bearer [redacted]"
        );
        // Ordinary words, numbers, names and short ids stay.
        for plain in [
            "model claude-3-5-sonnet-20241022 not found",
            "max_tokens: 100000 > 8192, the model's limit",
            "prompt is too long: 210000 tokens > 200000 maximum",
            "sk- is how keys start",
            "a risky_identifier_that_is_long_but_has_no_digits_at_all here",
        ] {
            assert_eq!(redact(plain, None), plain);
        }
    }

    #[test]
    fn redact_shortens_long_text() {
        let s = redact(&"a".repeat(2000), None);
        assert_eq!(s.chars().count(), MAX_DETAIL_CHARS + 1);
    }

    #[test]
    fn messages_are_clear() {
        let e = BackendError::new(BackendErrorKind::RateLimited {
            retry_after: Some(Duration::from_secs(3)),
        });
        assert_eq!(
            e.to_string(),
            "rate limited by the provider (retry after 3s): try again later"
        );
        let e = BackendError::new(BackendErrorKind::Timeout {
            after: Duration::from_millis(1500),
        });
        assert_eq!(e.to_string(), "the backend did not answer within 1.5s");
        let e = BackendError::new(BackendErrorKind::NotInstalled {
            program: "claude".into(),
        });
        assert_eq!(
            e.to_string(),
            "Claude Code CLI not installed. Run: npm install -g @anthropic-ai/claude-code"
        );
    }
}
