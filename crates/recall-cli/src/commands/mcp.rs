//! `recall mcp`: the MCP server on stdio.

use std::process::ExitCode;

use recall_engine::Limits;

use crate::cli::McpArgs;
use crate::db;

/// Opens the database, then serves MCP on stdin/stdout until the client closes stdin.
/// Nothing else may write to stdout: it carries the protocol.
pub async fn run(a: McpArgs) -> anyhow::Result<ExitCode> {
    let engine = db::open(Limits {
        max_message_bytes: a.store.max_message_bytes,
        max_context_bytes: Some(a.max_context_bytes),
        ..Limits::default()
    })
    .await?;
    // What an import or another process stored is embedded while the server runs, as
    // `recall serve` does, so that contexts become complete without an append.
    recall_server::catch_up_at_start(&engine);
    // `retry_turn` needs a chat backend: the one `recall chat` would pick, if any (stdout
    // carries the protocol, so a problem is told on stderr).
    let backend = match crate::commands::serve::backends_from_env() {
        Ok(b) => b.default_backend(),
        Err(e) => {
            eprintln!("recall mcp: no chat backend for retry_turn: {e}");
            None
        }
    };
    recall_mcp::serve_stdio(engine, &a.store.tenant, backend).await?;
    Ok(ExitCode::SUCCESS)
}
