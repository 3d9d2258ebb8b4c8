//! `recall compact`: brings a stored conversation's summary up to its window start
//! (`Engine::compact_conversation`) with the backend `recall chat` would pick.

use std::process::ExitCode;

use recall_engine::{CompactOptions, CompactReport, CompactStatus};
use tokio_util::sync::CancellationToken;

use crate::cli::CompactArgs;
use crate::commands::chat::pick_backend;
use crate::commands::store_cmds::{engine_err, open};

pub async fn run(a: CompactArgs) -> anyhow::Result<ExitCode> {
    let (backend, why) = pick_backend(&a.llm)?;
    eprintln!("recall compact: backend {why}");
    let engine = open(&a.store).await?;
    let opts = CompactOptions {
        format: a.format,
        overrides: a.limits.clone(),
        model: a.llm.model.clone(),
        max_input_tokens: a.max_input_tokens.max(1),
        lease: std::time::Duration::from_secs(a.lease_secs.max(1)),
    };
    // Ctrl-C stops the summariser call under way; nothing of it is committed.
    let cancel = CancellationToken::new();
    let on_ctrl_c = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        })
    };
    let r = engine
        .compact_conversation(&a.store.tenant, &a.id, backend.as_ref(), &opts, cancel)
        .await;
    on_ctrl_c.abort();
    let r = r.map_err(engine_err)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        println!("{}", describe(&r));
    }
    Ok(ExitCode::SUCCESS)
}

/// One paragraph saying what a compaction did, and the summary in force.
pub(crate) fn describe(r: &CompactReport) -> String {
    let head = match (r.status, &r.summary) {
        (CompactStatus::UpToDate, None) => {
            return "Nothing to summarise: every message is in the window.".to_string()
        }
        (CompactStatus::UpToDate, Some(s)) => format!(
            "Up to date: the summary (version {}) covers messages {} to {}, just before the \
             window.",
            s.version, s.from_seq, s.to_seq
        ),
        (CompactStatus::Compacted, Some(s)) => format!(
            "Summarised messages {} to {} in {} call(s): version {}, {} tokens.",
            s.from_seq, s.to_seq, r.calls, s.version, s.tokens.o200k
        ),
        (CompactStatus::Compacted, None) => "Compacted.".to_string(),
    };
    match &r.summary {
        Some(s) => format!("{head}\n\n{}", s.text),
        None => head,
    }
}
