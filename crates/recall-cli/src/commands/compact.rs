//! `recall compact`: brings a stored conversation's summary up to its window start
//! (`Engine::compact_conversation`) with the backend `recall chat` would pick.

use recall_engine::ConversationRef;
use std::process::ExitCode;

use std::sync::Arc;
use std::time::Instant;

use recall_engine::{CompactOptions, CompactProgress, CompactReport, CompactStatus, Progress};
use tokio_util::sync::CancellationToken;

use crate::cli::CompactArgs;
use crate::commands::chat::pick_backend;
use crate::commands::store_cmds::{engine_err, open};

pub async fn run(a: CompactArgs) -> anyhow::Result<ExitCode> {
    let (backend, why, _) = pick_backend(&a.llm)?;
    eprintln!("recall compact: backend {why}");
    let engine = open(&a.store).await?;
    let opts = CompactOptions {
        format: a.format,
        overrides: a.limits.clone(),
        model: a.llm.model.clone(),
        max_input_tokens: a.max_input_tokens.map(|n| n.max(1)),
        lease: std::time::Duration::from_secs(a.lease_secs.max(1)),
        progress: Some(progress_on_stderr()),
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
        .compact_conversation(
            ConversationRef::new(&a.store.tenant, &a.id),
            backend.as_ref(),
            &opts,
            cancel,
        )
        .await;
    on_ctrl_c.abort();
    let r = r.map_err(engine_err)?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&recall_engine::views::CompactView::new(&a.id, &r))?
        );
    } else {
        println!("{}", describe(&r));
    }
    Ok(ExitCode::SUCCESS)
}

/// Progress lines on stderr: a summariser call on a small local model takes minutes.
fn progress_on_stderr() -> Progress {
    let start = Instant::now();
    let call_start = std::sync::Mutex::new(start);
    Progress(Arc::new(move |p: &CompactProgress| {
        let line = progress_line(p, start.elapsed().as_secs_f64(), {
            let mut t = call_start.lock().unwrap_or_else(|e| e.into_inner());
            let since = t.elapsed().as_secs_f64();
            if matches!(p, CompactProgress::Calling { .. }) {
                *t = Instant::now();
            }
            since
        });
        eprintln!("recall compact: {line}");
    }))
}

/// One progress line; `total` seconds since the start, `since_call` since the last call began.
pub(crate) fn progress_line(p: &CompactProgress, total: f64, since_call: f64) -> String {
    match p {
        CompactProgress::Planned {
            from_seq,
            to_seq,
            input_tokens,
            context_window,
        } => format!(
            "summarising messages {from_seq} to {to_seq}, up to {input_tokens} tokens of \
             messages a call{}",
            context_window.map_or(String::new(), |w| format!(
                " (the backend serves a {w}-token context)"
            ))
        ),
        CompactProgress::Calling {
            call,
            from_seq,
            to_seq,
        } => format!("call {call}: messages {from_seq} to {to_seq}…"),
        CompactProgress::Shortening { tokens, budget } => format!(
            "the summary took {tokens} tokens, over summary_tokens {budget}: asking for a \
             shorter one…"
        ),
        CompactProgress::Cut { tokens, budget } => {
            format!("still {tokens} tokens, over {budget}: cut at the last line that fits")
        }
        CompactProgress::Committed {
            version,
            to_seq,
            tokens,
        } => format!(
            "version {version} committed (through message {to_seq}, {tokens} tokens) after \
             {since_call:.0} s; {total:.0} s in all"
        ),
    }
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
