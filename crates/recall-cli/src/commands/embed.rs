//! `recall embed`: print the vector of a text (a debugging aid for the embedder settings).

use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use recall_embed::{EmbedError, EmbedSettings};

use crate::exit::bad_input;

/// Arguments of `recall embed`.
#[derive(Debug, Args)]
pub struct EmbedArgs {
    /// Texts to embed; one JSON line is printed for each, in order.
    #[arg(required = true, value_name = "TEXT")]
    pub texts: Vec<String>,
}

/// Help after the options: where the model comes from.
pub const EMBED_HELP: &str = "\
The embedder is configured by environment:
  RECALL_EMBED_URL         an OpenAI-compatible server (root or .../v1), POST /v1/embeddings;
                           with RECALL_EMBED_MODEL_NAME (required) and RECALL_EMBED_KEY, and
                           RECALL_EMBED_QUERY_PREFIX / RECALL_EMBED_DOCUMENT_PREFIX for models
                           trained with them (put before what recall looks for / before
                           stored messages; nomic-embed-text-v1.5: 'search_query: ' and
                           'search_document: '; this command embeds its texts as queries;
                           scripts/models.sh fetch-nomic installs that model and
                           scripts/models.sh embed-serve serves it, printing these settings)
  RECALL_EMBED_MODEL       else: all-MiniLM-L6-v2 in-process from this directory
                           [default: ~/.cache/recall/minilm, filled by scripts/models.sh fetch]

Each line: {\"model\": NAME, \"dimension\": N, \"vector\": [...]} (unit length).

Examples:
  recall embed 'My dog is called Rex'
  recall embed 'first text' 'second text'
  RECALL_EMBED_URL=http://127.0.0.1:8000/v1 RECALL_EMBED_MODEL_NAME=e5 recall embed 'hello'
  RECALL_EMBED_URL=http://127.0.0.1:8089 RECALL_EMBED_MODEL_NAME=nomic-embed-text-v1.5 \
    RECALL_EMBED_QUERY_PREFIX='search_query: ' RECALL_EMBED_DOCUMENT_PREFIX='search_document: ' \
    recall embed 'What is my dog called?'";

pub async fn run(args: EmbedArgs) -> anyhow::Result<ExitCode> {
    let embedder = EmbedSettings::from_env()
        .map_err(|e| bad_input(e.to_string()))?
        .connect()
        .await
        .map_err(|e| match e {
            // A missing model or a bad setting is the user's to fix: exit status 2.
            EmbedError::ModelFile { .. } | EmbedError::Config(_) => bad_input(e.to_string()),
            other => anyhow::Error::new(other),
        })?;
    let texts: Vec<&str> = args.texts.iter().map(String::as_str).collect();
    let vectors = embedder.embed(&texts).await?;
    let mut out = String::new();
    for v in &vectors {
        out.push_str(&serde_json::to_string(v).context("cannot write the vector")?);
        out.push('\n');
    }
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}
