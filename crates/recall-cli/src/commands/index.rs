//! `recall index`: embed every stored message of a store, a tenant or one conversation that is
//! not embedded yet, to completion, with a progress bar (after an import, or a model change).

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Args;
use recall_engine::store::VectorScope;
use recall_engine::ConversationRef;

use crate::cli::StoreArgs;
use crate::commands::store_cmds::{engine_err, open};
use crate::exit::bad_input;

/// Arguments of `recall index`.
#[derive(Debug, Args)]
pub struct IndexArgs {
    /// The conversation to embed [default: every conversation of --tenant].
    #[arg(value_name = "ID", conflicts_with = "all_tenants")]
    pub id: Option<String>,
    /// Every conversation of every tenant (the whole store).
    #[arg(long)]
    pub all_tenants: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// Help after the options.
pub const INDEX_HELP: &str = "\
Recall ranks stored messages by meaning once they are embedded. `recall serve` embeds what is
behind in the background (the whole store at start, then every append); this command does it
now, to completion, and catches up the recall index of each conversation it goes through. A
conversation that a running server is embedding is waited for, not embedded twice. The
embedder is configured as for `recall embed` (RECALL_EMBED_URL, RECALL_EMBED_MODEL, else
all-MiniLM-L6-v2 from ~/.cache/recall/minilm); `recall conversations show ID` shows how far a
conversation is.

Examples:
  recall import chat.jsonl && recall index           # the default tenant
  recall index 0193…                                 # one conversation
  recall index --all-tenants --db postgres://recall@db/recall
  recall index --tenant acme --json";

pub async fn run(a: IndexArgs) -> anyhow::Result<ExitCode> {
    let engine = open(&a.store).await?;
    let Some(model) = engine.embedder().map(|e| e.model().to_string()) else {
        return Err(bad_input(
            "no embedder: install all-MiniLM-L6-v2 with `bash scripts/models.sh fetch`, or set \
             RECALL_EMBED_URL (RECALL_EMBED=off turns embedding off)",
        ));
    };
    let tenant = a.store.tenant.as_str();
    let scope = match (&a.id, a.all_tenants) {
        (Some(id), _) => VectorScope::Conversation(ConversationRef::new(tenant, id)),
        (None, true) => VectorScope::Store,
        (None, false) => VectorScope::Tenant(tenant),
    };
    let before = engine
        .vector_status(scope)
        .await
        .map_err(engine_err)?
        .unwrap_or_default();
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::new(before.messages_behind);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} embedding {pos}/{len} messages [{bar:30}] {per_sec} {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        b
    });
    let progress = |n: usize| {
        if let Some(b) = &bar {
            // Appends during the run can make more than counted at the start.
            let pos = b.position() + n as u64;
            if pos > b.length().unwrap_or(0) {
                b.set_length(pos);
            }
            b.set_position(pos);
        }
    };
    let report = engine
        .embed_all(scope, &progress)
        .await
        .map_err(engine_err)?;
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let after = engine
        .vector_status(scope)
        .await
        .map_err(engine_err)?
        .unwrap_or_default();
    if a.json {
        let shown = serde_json::json!({
            "model": model,
            "conversations": report.conversations,
            "messages": report.messages,
            "messages_behind": after.messages_behind,
        });
        println!("{}", serde_json::to_string_pretty(&shown)?);
    } else {
        println!(
            "embedded {} messages of {} conversation(s) with {model}; {} left behind",
            report.messages, report.conversations, after.messages_behind
        );
    }
    Ok(ExitCode::SUCCESS)
}
