//! The CLI child process: spawning it in its own process group, killing the whole group, and
//! always waiting for it so no zombie is left.

use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

use super::ClaudeCliConfig;
use crate::error::{BackendError, BackendErrorKind};

/// Owns the child. Dropping it kills the process group (tokio's `kill_on_drop` kills and
/// reaps the child itself in the background).
pub(crate) struct ChildGuard {
    child: Child,
    /// The process group id (the child's pid; it leads its own group).
    pgid: Option<i32>,
    reaped: bool,
}

impl ChildGuard {
    /// Spawns `claude_path` with `args`: environment inherited minus `CLAUDECODE`, plus the
    /// configured extras and the API key; all three standard streams piped.
    pub(crate) fn spawn(cfg: &ClaudeCliConfig, args: &[String]) -> Result<Self, BackendError> {
        let mut cmd = Command::new(&cfg.claude_path);
        cmd.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .env_remove("CLAUDECODE");
        for (k, v) in &cfg.env {
            cmd.env(k, v);
        }
        if let Some(key) = &cfg.api_key {
            cmd.env("ANTHROPIC_API_KEY", key.expose());
        }
        if let Some(dir) = &cfg.working_dir {
            cmd.current_dir(dir);
        }
        #[cfg(unix)]
        cmd.process_group(0);
        let program = cfg.claude_path.display().to_string();
        let child = cmd.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                BackendError::new(BackendErrorKind::NotInstalled { program })
            }
            _ => BackendError::new(BackendErrorKind::Cli {
                message: format!("cannot run '{program}': {e}"),
            }),
        })?;
        let pgid = child.id().and_then(|id| i32::try_from(id).ok());
        Ok(ChildGuard {
            child,
            pgid,
            reaped: false,
        })
    }

    /// The child's pipes.
    pub(crate) fn take_pipes(
        &mut self,
    ) -> Result<(ChildStdin, ChildStdout, ChildStderr), BackendError> {
        match (
            self.child.stdin.take(),
            self.child.stdout.take(),
            self.child.stderr.take(),
        ) {
            (Some(i), Some(o), Some(e)) => Ok((i, o, e)),
            _ => Err(BackendError::new(BackendErrorKind::Cli {
                message: "the child's standard streams are not available".into(),
            })),
        }
    }

    /// Sends `SIGKILL` to the child's whole process group (its helpers too).
    fn kill_group(&self) {
        #[cfg(unix)]
        if let Some(pgid) = self.pgid {
            use nix::sys::signal::{killpg, Signal};
            use nix::unistd::Pid;
            // ESRCH (the group is already gone) is fine.
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
    }

    /// Kills the group and waits for the child.
    pub(crate) async fn kill(&mut self) {
        if self.reaped {
            return;
        }
        self.kill_group();
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
        self.reaped = true;
    }

    /// Waits up to `grace` for the child to exit by itself, then kills the group (helpers the
    /// CLI left behind included). Returns the exit status when it exited by itself.
    pub(crate) async fn wait_or_kill(&mut self, grace: Duration) -> Option<ExitStatus> {
        if self.reaped {
            return None;
        }
        match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(Ok(status)) => {
                self.reaped = true;
                // The leader is gone; anything it left in its group goes too.
                self.kill_group();
                Some(status)
            }
            _ => {
                tracing::warn!("the Claude Code CLI did not exit in time; killing it");
                self.kill().await;
                None
            }
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if !self.reaped {
            self.kill_group();
        }
    }
}

/// The last few kilobytes of the child's stderr, for error messages.
#[derive(Clone, Default)]
pub(crate) struct StderrTail(Arc<Mutex<Vec<u8>>>);

const STDERR_TAIL_BYTES: usize = 8 * 1024;

impl StderrTail {
    /// Reads `stderr` to its end, keeping the tail.
    pub(crate) async fn collect(self, mut stderr: ChildStderr) {
        let mut buf = [0u8; 4096];
        loop {
            match stderr.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if let Ok(mut tail) = self.0.lock() {
                        tail.extend_from_slice(&buf[..n]);
                        if tail.len() > STDERR_TAIL_BYTES {
                            let cut = tail.len() - STDERR_TAIL_BYTES;
                            tail.drain(..cut);
                        }
                    }
                }
            }
        }
    }

    /// The tail as text.
    pub(crate) fn text(&self) -> String {
        self.0
            .lock()
            .map(|t| String::from_utf8_lossy(&t).trim().to_string())
            .unwrap_or_default()
    }
}
