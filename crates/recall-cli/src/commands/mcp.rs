//! `recall mcp`: the MCP server on stdio.

use std::process::ExitCode;

use recall_engine::Limits;

use crate::cli::McpArgs;
use crate::db;

/// Opens the database, then serves MCP on stdin/stdout until the client closes stdin.
/// Nothing else may write to stdout: it carries the protocol.
pub async fn run(a: McpArgs) -> anyhow::Result<ExitCode> {
    let engine = db::open(
        a.store.db.as_deref(),
        Limits {
            max_message_bytes: a.store.max_message_bytes,
            ..Limits::default()
        },
    )
    .await?;
    recall_mcp::serve_stdio(engine, &a.store.tenant).await?;
    Ok(ExitCode::SUCCESS)
}
