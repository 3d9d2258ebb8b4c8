//! The Claude Code CLI adapter: runs `claude -p --output-format stream-json …` with the whole
//! history rendered into one prompt on stdin, and turns its stdout lines into events.
//!
//! The child runs in its own process group. On timeout, cancel, or when the stream is
//! dropped, the whole group is killed with `SIGKILL` and the child is waited for, so no
//! process and no zombie is left behind.

mod parse;
mod process;

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::backend::{channel, Backend, Emitter, EventStream};
use crate::error::{redact, BackendError, BackendErrorKind};
use crate::event::{BackendEvent, ChatRequest};
use crate::http::sleep_until_opt;
use crate::key::ApiKey;
use crate::render::{kept, require_messages, user_text};

use parse::CliParser;
use process::{ChildGuard, StderrTail};

/// The most bytes of prompt the Claude Code CLI accepts on stdin (its own limit); recall
/// refuses a larger prompt before starting the CLI.
pub const MAX_PROMPT_BYTES: usize = 10 * 1024 * 1024;

/// The longest stdout line accepted (a whole assistant message is one line).
const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// How the history is written into the one prompt the CLI takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PromptFormat {
    /// `<conversation_history>` with the earlier turns, then the new message (recall-core's
    /// `xml` format). The default: a bare transcript makes the model answer old turns again.
    #[default]
    Xml,
    /// `Human:` / `Assistant:` turns (recall-core's `transcript` format).
    Transcript,
}

impl FromStr for PromptFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "xml" => Ok(PromptFormat::Xml),
            "transcript" => Ok(PromptFormat::Transcript),
            other => Err(format!(
                "unknown prompt format '{other}' (expected xml or transcript)"
            )),
        }
    }
}

/// Settings of the Claude Code CLI backend.
#[derive(Debug, Clone)]
pub struct ClaudeCliConfig {
    /// The `claude` executable: a path, or a name looked up in `PATH` (default `claude`).
    pub claude_path: PathBuf,
    /// How the history becomes the prompt.
    pub prompt_format: PromptFormat,
    /// `--system-prompt` when the request has none (it replaces Claude Code's own prompt).
    pub default_system_prompt: String,
    /// `--model` when the request names none; `None` leaves the CLI's default.
    pub model: Option<String>,
    /// Injected as `ANTHROPIC_API_KEY` into the child's environment (never its arguments).
    /// `None` leaves the environment as inherited so the CLI's own login keeps working.
    pub api_key: Option<ApiKey>,
    /// The longest a whole call may take; the child is killed after it.
    pub timeout: Option<Duration>,
    /// How long the CLI may take to exit after its `result` line before it is killed.
    pub exit_grace: Duration,
    /// Extra environment for the child (for example `ANTHROPIC_BASE_URL`).
    pub env: Vec<(String, String)>,
    /// Extra arguments, appended after recall's own.
    pub extra_args: Vec<String>,
    /// The child's working directory (the CLI reads `CLAUDE.md` from there); `None` inherits.
    pub working_dir: Option<PathBuf>,
}

impl Default for ClaudeCliConfig {
    fn default() -> Self {
        ClaudeCliConfig {
            claude_path: PathBuf::from("claude"),
            prompt_format: PromptFormat::Xml,
            default_system_prompt: "You are a helpful assistant.".into(),
            model: None,
            api_key: None,
            timeout: Some(Duration::from_secs(600)),
            exit_grace: Duration::from_secs(5),
            env: Vec::new(),
            extra_args: Vec::new(),
            working_dir: None,
        }
    }
}

/// The Claude Code CLI backend.
#[derive(Debug, Clone)]
pub struct ClaudeCliBackend {
    config: Arc<ClaudeCliConfig>,
}

impl ClaudeCliBackend {
    /// A backend for `config`. Nothing is checked until the first call (a missing binary is
    /// reported then, as [`BackendErrorKind::NotInstalled`]).
    pub fn new(config: ClaudeCliConfig) -> Self {
        ClaudeCliBackend {
            config: Arc::new(config),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ClaudeCliConfig {
        &self.config
    }
}

/// The prompt written to the CLI's stdin for `req`.
///
/// `xml` needs the last message to be a user message with text (the "current" message);
/// `transcript` takes any history. Fails on an empty prompt or one over
/// [`MAX_PROMPT_BYTES`].
pub fn render_prompt(req: &ChatRequest, format: PromptFormat) -> Result<String, BackendError> {
    require_messages(&req.messages)?;
    let mut kept = kept(&req.messages);
    let prompt = match format {
        PromptFormat::Xml => {
            let current = match kept.last() {
                Some(k) if k.message.is_cut_point() => user_text(&k.message),
                _ => {
                    return Err(BackendError::invalid_request(
                        "the xml prompt format needs the conversation to end with a user message that has text",
                    ))
                }
            };
            kept.pop();
            recall_core::render::render_xml(&recall_core::RenderInput {
                system_parts: &[],
                kept: &kept,
                current: Some(&current),
                escape: true,
                recalled: None,
                summary: None,
            })
        }
        PromptFormat::Transcript => {
            recall_core::render::render_transcript(&recall_core::RenderInput {
                system_parts: &[],
                kept: &kept,
                current: None,
                escape: true,
                recalled: None,
                summary: None,
            })
        }
    };
    if prompt.trim().is_empty() {
        return Err(BackendError::invalid_request(
            "nothing to send: the rendered prompt is empty",
        ));
    }
    if prompt.len() > MAX_PROMPT_BYTES {
        return Err(BackendError::invalid_request(format!(
            "the rendered prompt is {} bytes; the Claude Code CLI accepts at most {MAX_PROMPT_BYTES} bytes on stdin",
            prompt.len()
        )));
    }
    Ok(prompt)
}

/// The arguments recall passes to `claude` for `req` (the prompt is not among them).
pub fn cli_args(req: &ChatRequest, config: &ClaudeCliConfig) -> Vec<String> {
    let parts = req.system_parts();
    let system = if parts.is_empty() {
        config.default_system_prompt.clone()
    } else {
        parts.join("\n")
    };
    let mut args: Vec<String> = [
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
        "--system-prompt",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(system);
    // `--tools` takes a list: the empty string disables every built-in tool.
    args.extend(["--tools".to_string(), String::new()]);
    args.push("--no-session-persistence".into());
    if let Some(m) = req.model.as_ref().or(config.model.as_ref()) {
        args.extend(["--model".to_string(), m.clone()]);
    }
    args.extend(config.extra_args.iter().cloned());
    args
}

#[async_trait::async_trait]
impl Backend for ClaudeCliBackend {
    fn name(&self) -> &'static str {
        "claude-cli"
    }

    fn context_format(&self) -> recall_core::Format {
        match self.config.prompt_format {
            PromptFormat::Xml => recall_core::Format::Xml,
            PromptFormat::Transcript => recall_core::Format::Transcript,
        }
    }

    fn preview(&self, req: &ChatRequest) -> Result<String, BackendError> {
        let prompt = render_prompt(req, self.config.prompt_format)?;
        let args = cli_args(req, &self.config);
        // The system prompt is the argument after `--system-prompt`.
        let system = args
            .iter()
            .position(|a| a == "--system-prompt")
            .and_then(|i| args.get(i + 1))
            .cloned()
            .unwrap_or_default();
        Ok(format!("--system-prompt:\n{system}\n\nstdin:\n{prompt}"))
    }

    async fn stream(
        &self,
        req: ChatRequest,
        cancel: CancellationToken,
    ) -> Result<EventStream, BackendError> {
        let cfg = &self.config;
        let prompt = render_prompt(&req, cfg.prompt_format)?;
        let args = cli_args(&req, cfg);
        let secret = cfg.api_key.as_ref().map(|k| k.expose().to_string());
        let deadline = cfg.timeout.map(|t| Instant::now() + t);
        let mut guard = ChildGuard::spawn(cfg, &args)?;
        let (stdin, stdout, stderr) = guard.take_pipes()?;

        let stdin_task = tokio::spawn(async move {
            let mut stdin = stdin;
            // A child that exits early closes the pipe; its result or exit status says why.
            let _ = stdin.write_all(prompt.as_bytes()).await;
            let _ = stdin.shutdown().await;
        });
        let tail = StderrTail::default();
        let stderr_task = tokio::spawn(tail.clone().collect(stderr));

        let (em, stream) = channel();
        let run = Run {
            em,
            guard,
            reader: BufReader::new(stdout),
            parser: CliParser::new(secret.clone()),
            cancel,
            deadline,
            timeout: cfg.timeout,
            exit_grace: cfg.exit_grace,
            secret,
            tail,
            meter: req.max_reply_bytes.map(crate::ReplyMeter::new),
        };
        tokio::spawn(async move {
            run.run(stderr_task).await;
            stdin_task.abort();
        });
        Ok(stream)
    }
}

/// How the reading loop ended.
enum Outcome {
    /// The `result` line arrived; its terminal event.
    Result(BackendEvent),
    /// Cancelled, timed out or unreadable: kill the child and report this.
    Fail(BackendError),
    /// The consumer dropped the stream.
    Dropped,
    /// stdout ended without a `result` line.
    Eof,
}

/// One call's task state.
struct Run<R> {
    em: Emitter,
    guard: ChildGuard,
    reader: R,
    parser: CliParser,
    cancel: CancellationToken,
    deadline: Option<Instant>,
    timeout: Option<Duration>,
    exit_grace: Duration,
    secret: Option<String>,
    tail: StderrTail,
    /// The reply's cap ([`crate::ReplyMeter`]).
    meter: Option<crate::ReplyMeter>,
}

/// The result of reading one line.
enum LineRead {
    Line,
    Eof,
    TooLong,
}

async fn read_line<R: AsyncBufRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
) -> std::io::Result<LineRead> {
    let n = r
        .take(MAX_LINE_BYTES as u64 + 1)
        .read_until(b'\n', buf)
        .await?;
    if n == 0 {
        Ok(LineRead::Eof)
    } else if buf.len() > MAX_LINE_BYTES && buf.last() != Some(&b'\n') {
        Ok(LineRead::TooLong)
    } else {
        Ok(LineRead::Line)
    }
}

impl<R: AsyncBufRead + Unpin> Run<R> {
    async fn run(mut self, mut stderr_task: tokio::task::JoinHandle<()>) {
        let outcome = self.read_loop().await;
        match outcome {
            Outcome::Result(ev) => {
                self.em.send(ev).await;
                self.guard.wait_or_kill(self.exit_grace).await;
            }
            Outcome::Fail(e) => {
                // Kill first, so that when the consumer sees the error the child is gone.
                self.guard.kill().await;
                self.em.fail(e).await;
            }
            Outcome::Dropped => self.guard.kill().await,
            Outcome::Eof => {
                let status = self.guard.wait_or_kill(self.exit_grace).await;
                // Let the stderr reader drain what the child wrote before it exited.
                let _ = tokio::time::timeout(Duration::from_secs(1), &mut stderr_task).await;
                let stderr = redact(&self.tail.text(), self.secret.as_deref());
                let e = self.parser.eof_error(status, &stderr);
                self.em.fail(e).await;
            }
        }
        stderr_task.abort();
    }

    async fn read_loop(&mut self) -> Outcome {
        let mut line = Vec::new();
        let mut out = Vec::new();
        loop {
            line.clear();
            let read = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => {
                    return Outcome::Fail(BackendErrorKind::Cancelled.into());
                }
                _ = self.em.closed() => return Outcome::Dropped,
                _ = sleep_until_opt(self.deadline) => {
                    return Outcome::Fail(BackendErrorKind::Timeout {
                        after: self.timeout.unwrap_or_default(),
                    }.into());
                }
                r = read_line(&mut self.reader, &mut line) => r,
            };
            match read {
                Err(e) => {
                    return Outcome::Fail(BackendError::new(BackendErrorKind::Cli {
                        message: format!("reading its output failed: {e}"),
                    }))
                }
                Ok(LineRead::Eof) => return Outcome::Eof,
                Ok(LineRead::TooLong) => {
                    return Outcome::Fail(BackendError::protocol(format!(
                        "a Claude Code CLI output line is longer than {MAX_LINE_BYTES} bytes"
                    )))
                }
                Ok(LineRead::Line) => {
                    let terminal = self.parser.line(&line, &mut out);
                    let pending = self.parser.pending_bytes();
                    let over = self.meter.as_mut().and_then(|m| m.cut(&mut out, pending));
                    for ev in out.drain(..) {
                        if !self.em.send(ev).await {
                            return Outcome::Dropped;
                        }
                    }
                    if let Some(e) = over {
                        return Outcome::Fail(e);
                    }
                    if let Some(ev) = terminal {
                        return Outcome::Result(ev);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use recall_core::{Message, Role};

    fn req() -> ChatRequest {
        ChatRequest::new(vec![
            Message::text(Role::User, "My name is Ada."),
            Message::text(Role::Assistant, "Hello Ada."),
            Message::text(Role::User, "What is my name?"),
        ])
    }

    #[test]
    fn xml_prompt_wraps_history_then_the_new_message() {
        let p = render_prompt(&req(), PromptFormat::Xml).unwrap();
        assert_eq!(
            p,
            "<conversation_history>\nHuman: My name is Ada.\nAssistant: Hello Ada.\n</conversation_history>\n\nContinue the conversation. The human says:\nWhat is my name?"
        );
    }

    #[test]
    fn transcript_prompt() {
        let p = render_prompt(&req(), PromptFormat::Transcript).unwrap();
        assert_eq!(
            p,
            "Human: My name is Ada.\n\n---\n\nAssistant: Hello Ada.\n\n---\n\nHuman: What is my name?"
        );
    }

    #[test]
    fn xml_needs_a_final_user_message() {
        let mut r = req();
        r.messages.pop();
        let e = render_prompt(&r, PromptFormat::Xml).unwrap_err();
        assert!(e.to_string().contains("end with a user message"), "{e}");
    }

    #[test]
    fn args_have_the_documented_flags_and_no_prompt() {
        let mut r = req();
        r.system = Some("Be terse.".into());
        r.model = Some("sonnet".into());
        let a = cli_args(&r, &ClaudeCliConfig::default());
        assert_eq!(
            a,
            [
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--include-partial-messages",
                "--system-prompt",
                "Be terse.",
                "--tools",
                "",
                "--no-session-persistence",
                "--model",
                "sonnet"
            ]
        );
        let a = cli_args(&req(), &ClaudeCliConfig::default());
        assert!(a.contains(&"You are a helpful assistant.".to_string()));
        assert!(!a.iter().any(|s| s.contains("Ada")));
    }

    #[test]
    fn prompt_format_parses() {
        assert_eq!("xml".parse::<PromptFormat>(), Ok(PromptFormat::Xml));
        assert!("json".parse::<PromptFormat>().is_err());
    }
}
