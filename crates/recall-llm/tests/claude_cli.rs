//! The Claude Code CLI adapter against a fake `claude` shell script: a real subprocess, real
//! pipes, real process groups.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::{Duration, Instant};

use futures::StreamExt;
use recall_llm::claude_cli::render_prompt;
use recall_llm::{
    Backend, BackendErrorKind, BackendEvent, ClaudeCliBackend, ClaudeCliConfig, PromptFormat,
    ReplyStatus, Usage,
};
use support::{
    assemble, drain, eventually, expect_err, fake_claude, fake_cli_config, pid_dead, pid_gone,
    read_pid, text_of, three_turns,
};
use tokio_util::sync::CancellationToken;

fn tmp() -> tempfile::TempDir {
    let _ = fake_claude();
    tempfile::tempdir().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replays_the_recorded_stream() {
    let dir = tmp();
    let backend = ClaudeCliBackend::new(fake_cli_config("replay", dir.path()));
    let req = three_turns();
    let events = drain(
        backend
            .stream(req.clone(), CancellationToken::new())
            .await
            .unwrap(),
    )
    .await;

    // The recorded run's text arrives exactly once (stream events, not the assistant line).
    assert_eq!(text_of(&events), "Hello from fake");
    let reply = assemble(&events);
    assert_eq!(reply.status, ReplyStatus::Complete);
    assert_eq!(reply.text(), "Hello from fake");
    assert_eq!(reply.stop_reason.as_deref(), Some("end_turn"));
    assert_eq!(
        reply.usage,
        Usage {
            input_tokens: Some(10),
            output_tokens: Some(3),
            cache_creation_input_tokens: Some(0),
            cache_read_input_tokens: Some(0),
        }
    );

    // The history went to stdin as the xml prompt, and nowhere in argv.
    let stdin = std::fs::read_to_string(dir.path().join("stdin")).unwrap();
    assert_eq!(stdin, render_prompt(&req, PromptFormat::Xml).unwrap());
    assert!(stdin.starts_with("<conversation_history>\nHuman: My name is Zorblax"));
    assert!(stdin.ends_with("The human says:\nWhat do I collect?"));
    let argv = std::fs::read_to_string(dir.path().join("argv")).unwrap();
    assert_eq!(
        argv,
        "[-p]\n[--output-format]\n[stream-json]\n[--verbose]\n[--include-partial-messages]\n\
         [--system-prompt]\n[You are a helpful assistant.]\n[--tools]\n[]\n[--no-session-persistence]\n"
    );
    assert!(!argv.contains("Zorblax"));

    // The child has been waited for: no process, no zombie.
    let pid = read_pid(&dir.path().join("pid"));
    assert!(pid_gone(pid), "child {pid} still exists");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transcript_format_and_model_flag() {
    let dir = tmp();
    let mut cfg = fake_cli_config("replay", dir.path());
    cfg.prompt_format = PromptFormat::Transcript;
    cfg.model = Some("claude-haiku-4-5".into());
    let mut req = three_turns();
    req.system = Some("You are a teapot expert.".into());
    let events = drain(
        ClaudeCliBackend::new(cfg)
            .stream(req, CancellationToken::new())
            .await
            .unwrap(),
    )
    .await;
    assert!(assemble(&events).is_complete());
    let stdin = std::fs::read_to_string(dir.path().join("stdin")).unwrap();
    assert!(stdin.starts_with("Human: My name is Zorblax"), "{stdin}");
    assert!(stdin.contains("\n\n---\n\nAssistant: Nice to meet you"));
    let argv = std::fs::read_to_string(dir.path().join("argv")).unwrap();
    assert!(argv.contains("[--system-prompt]\n[You are a teapot expert.]\n"));
    assert!(argv.ends_with("[--model]\n[claude-haiku-4-5]\n"), "{argv}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hung_cli_is_killed_at_the_timeout_with_its_children() {
    let dir = tmp();
    let mut cfg = fake_cli_config("hang", dir.path());
    cfg.timeout = Some(Duration::from_secs(1));
    let start = Instant::now();
    let events = drain(
        ClaudeCliBackend::new(cfg)
            .stream(three_turns(), CancellationToken::new())
            .await
            .unwrap(),
    )
    .await;
    let elapsed = start.elapsed();
    match events.last() {
        Some(BackendEvent::Error(e)) => {
            assert_eq!(
                e.kind,
                BackendErrorKind::Timeout {
                    after: Duration::from_secs(1)
                }
            );
            assert!(!e.output_started);
            assert_eq!(e.to_string(), "the backend did not answer within 1s");
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(
        elapsed >= Duration::from_millis(900) && elapsed < Duration::from_secs(10),
        "{elapsed:?}"
    );
    let pid = read_pid(&dir.path().join("pid"));
    assert!(pid_gone(pid), "child {pid} survived the timeout");
    let grandchild = read_pid(&dir.path().join("grandchild"));
    assert!(
        eventually(Duration::from_secs(5), || pid_dead(grandchild)).await,
        "the child's own child {grandchild} survived: the process group was not killed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_kills_the_child() {
    let dir = tmp();
    let cancel = CancellationToken::new();
    let stream = ClaudeCliBackend::new(fake_cli_config("hang", dir.path()))
        .stream(three_turns(), cancel.clone())
        .await
        .unwrap();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        c.cancel();
    });
    let events = drain(stream).await;
    assert!(
        matches!(events.last(), Some(BackendEvent::Error(e)) if e.kind == BackendErrorKind::Cancelled),
        "{events:?}"
    );
    let pid = read_pid(&dir.path().join("pid"));
    assert!(pid_gone(pid), "child {pid} survived the cancel");
    let grandchild = read_pid(&dir.path().join("grandchild"));
    assert!(eventually(Duration::from_secs(5), || pid_dead(grandchild)).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_stream_kills_the_child() {
    let dir = tmp();
    let mut stream = ClaudeCliBackend::new(fake_cli_config("hang", dir.path()))
        .stream(three_turns(), CancellationToken::new())
        .await
        .unwrap();
    // Wait until the script is running (it writes its pid first).
    let pid_file = dir.path().join("grandchild");
    assert!(eventually(Duration::from_secs(10), || pid_file.exists()).await);
    let pid = read_pid(&dir.path().join("pid"));
    let _ = tokio::time::timeout(Duration::from_millis(100), stream.next()).await;
    drop(stream);
    assert!(
        eventually(Duration::from_secs(5), || pid_gone(pid)).await,
        "child {pid} survived dropping the stream"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_binary_is_not_installed() {
    let dir = tmp();
    for path in [
        dir.path().join("no-such-claude"),
        "recall-test-no-such-claude-binary".into(),
    ] {
        let cfg = ClaudeCliConfig {
            claude_path: path.clone(),
            ..ClaudeCliConfig::default()
        };
        let e = expect_err(
            ClaudeCliBackend::new(cfg)
                .stream(three_turns(), CancellationToken::new())
                .await,
        );
        assert!(
            matches!(e.kind, BackendErrorKind::NotInstalled { .. }),
            "{path:?}: {e:?}"
        );
        assert_eq!(
            e.to_string(),
            "Claude Code CLI not installed. Run: npm install -g @anthropic-ai/claude-code"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_error_result_is_cli_auth() {
    let dir = tmp();
    let events = drain(
        ClaudeCliBackend::new(fake_cli_config("auth", dir.path()))
            .stream(three_turns(), CancellationToken::new())
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(events.len(), 1, "{events:?}");
    match &events[0] {
        BackendEvent::Error(e) => {
            assert!(matches!(e.kind, BackendErrorKind::CliAuth { .. }), "{e:?}");
            let msg = e.to_string();
            assert!(msg.contains("Not logged in"), "{msg}");
            assert!(msg.contains("log in by running `claude`"), "{msg}");
            assert!(msg.contains("ANTHROPIC_API_KEY"), "{msg}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_result_is_a_cli_error() {
    let dir = tmp();
    let events = drain(
        ClaudeCliBackend::new(fake_cli_config("error", dir.path()))
            .stream(three_turns(), CancellationToken::new())
            .await
            .unwrap(),
    )
    .await;
    match events.last() {
        Some(BackendEvent::Error(e)) => assert_eq!(
            e.to_string(),
            "Claude Code CLI failed: No conversation found with session ID: 42"
        ),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_without_result_reports_status_and_stderr() {
    let dir = tmp();
    let events = drain(
        ClaudeCliBackend::new(fake_cli_config("crash", dir.path()))
            .stream(three_turns(), CancellationToken::new())
            .await
            .unwrap(),
    )
    .await;
    match events.last() {
        Some(BackendEvent::Error(e)) => assert_eq!(
            e.to_string(),
            "Claude Code CLI failed: exited with status 3: fatal: something went wrong"
        ),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_mid_reply_keeps_the_partial_text() {
    let dir = tmp();
    let events = drain(
        ClaudeCliBackend::new(fake_cli_config("partial", dir.path()))
            .stream(three_turns(), CancellationToken::new())
            .await
            .unwrap(),
    )
    .await;
    match events.last() {
        Some(BackendEvent::Error(e)) => {
            assert!(e.output_started);
            assert!(e.to_string().contains("exited with status 1"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    let reply = assemble(&events);
    assert_eq!(reply.status, ReplyStatus::Partial);
    assert_eq!(reply.text(), "Hello from fake");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xml_refuses_a_history_not_ending_with_a_user_message() {
    let dir = tmp();
    let mut req = three_turns();
    req.messages.pop();
    let e = expect_err(
        ClaudeCliBackend::new(fake_cli_config("replay", dir.path()))
            .stream(req, CancellationToken::new())
            .await,
    );
    assert!(matches!(e.kind, BackendErrorKind::InvalidRequest { .. }));
    assert!(!dir.path().join("pid").exists(), "nothing was spawned");
}
