//! The CLI child's environment: the configured API key is injected into the environment and
//! never into argv or stdin; `CLAUDECODE` is removed; nothing is injected when no key is
//! configured. One test in its own binary, because it changes this process's environment.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use recall_llm::{ApiKey, Backend, ClaudeCliBackend};
use support::{assemble, drain, fake_claude, fake_cli_config, three_turns};
use tokio_util::sync::CancellationToken;

const KEY: &str = "sk-ant-cli-SECRET-9876543210";

fn env_lines(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("env"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_key_goes_to_the_env_only_and_claudecode_is_removed() {
    let _ = fake_claude();
    // As if recall itself ran inside Claude Code. Only this test runs in this binary.
    std::env::set_var("CLAUDECODE", "1");
    std::env::remove_var("ANTHROPIC_API_KEY");

    // With a configured key.
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = fake_cli_config("replay", dir.path());
    cfg.api_key = Some(ApiKey::new(KEY));
    let cfg_debug = format!("{cfg:?}");
    assert!(
        !cfg_debug.contains(KEY),
        "the key is in the config's Debug output"
    );
    let events = drain(
        ClaudeCliBackend::new(cfg)
            .stream(three_turns(), CancellationToken::new())
            .await
            .unwrap(),
    )
    .await;
    assert!(assemble(&events).is_complete(), "{events:?}");
    let env = env_lines(dir.path());
    assert!(
        env.contains(&format!("ANTHROPIC_API_KEY={KEY}")),
        "the key is not in the child's environment"
    );
    assert!(
        !env.iter().any(|l| l.starts_with("CLAUDECODE=")),
        "CLAUDECODE was inherited"
    );
    // Everything else is inherited.
    let path = std::env::var("PATH").unwrap();
    assert!(env.contains(&format!("PATH={path}")));
    let argv = std::fs::read_to_string(dir.path().join("argv")).unwrap();
    assert!(!argv.contains(KEY), "the key is in argv");
    let stdin = std::fs::read_to_string(dir.path().join("stdin")).unwrap();
    assert!(!stdin.contains(KEY), "the key is in the prompt");

    // Without a configured key nothing is injected (the CLI's own login must keep working).
    let dir = tempfile::tempdir().unwrap();
    let events = drain(
        ClaudeCliBackend::new(fake_cli_config("replay", dir.path()))
            .stream(three_turns(), CancellationToken::new())
            .await
            .unwrap(),
    )
    .await;
    assert!(assemble(&events).is_complete());
    let env = env_lines(dir.path());
    assert!(!env.iter().any(|l| l.starts_with("ANTHROPIC_API_KEY=")));
    assert!(!env.iter().any(|l| l.starts_with("CLAUDECODE=")));
}
