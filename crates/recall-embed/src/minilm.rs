//! all-MiniLM-L6-v2 in-process: candle's BERT, mean pooling over the attention mask, L2 norm
//! (what sentence-transformers computes for this model).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{Tokenizer, TruncationParams};

use crate::{EmbedError, Embedder, Embedding};

/// Where and how to load the in-process model.
#[derive(Debug, Clone, PartialEq)]
pub struct MiniLmConfig {
    /// Directory holding `model.safetensors`, `tokenizer.json` and `config.json`.
    pub dir: PathBuf,
    /// Name recorded with every vector (default [`MiniLm::MODEL_NAME`]).
    pub name: String,
    /// Texts per forward pass (default 32).
    pub batch_size: usize,
    /// Longest input in word pieces; longer texts are truncated (default 256, the model's
    /// `max_seq_length`).
    pub max_tokens: usize,
}

impl MiniLmConfig {
    /// Defaults for the model in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        MiniLmConfig {
            dir: dir.into(),
            name: MiniLm::MODEL_NAME.to_string(),
            batch_size: 32,
            max_tokens: 256,
        }
    }
}

/// The in-process embedder. Cheap to clone (the weights are shared).
#[derive(Clone)]
pub struct MiniLm {
    inner: Arc<Inner>,
}

struct Inner {
    model: BertModel,
    tokenizer: Tokenizer,
    name: Arc<str>,
    dimension: usize,
    batch_size: usize,
    /// Characters of a text the tokenizer sees ([`chars_for`]).
    max_chars: usize,
}

/// How many characters of a text can matter to an input of `max_tokens` word pieces: the
/// tokenizer would read a text in full only to keep its first `max_tokens` pieces, so a
/// 10 MB message is cut before it (a word piece is at most a hundred characters only in
/// text that is not language; ordinary text takes about five a piece).
pub(crate) fn chars_for(max_tokens: usize) -> usize {
    max_tokens.saturating_mul(64)
}

/// `text` cut to at most `max` bytes, at a character boundary.
pub(crate) fn prefix(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

impl std::fmt::Debug for MiniLm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniLm")
            .field("name", &self.inner.name)
            .field("dimension", &self.inner.dimension)
            .field("batch_size", &self.inner.batch_size)
            .finish()
    }
}

/// The files a model directory must hold.
pub(crate) const MODEL_FILES: [&str; 3] = ["model.safetensors", "tokenizer.json", "config.json"];

const FETCH_HINT: &str =
    "run `bash scripts/models.sh fetch`, or set RECALL_EMBED_MODEL to a directory with \
     model.safetensors, tokenizer.json and config.json";

impl MiniLm {
    /// The name recorded with vectors of the model `scripts/models.sh` installs.
    pub const MODEL_NAME: &'static str = "all-MiniLM-L6-v2";

    /// Loads the model; the error names the missing or bad file.
    pub fn load(config: MiniLmConfig) -> Result<Self, EmbedError> {
        let dir = &config.dir;
        if !dir.is_dir() {
            return Err(EmbedError::ModelFile {
                path: dir.clone(),
                reason: format!("not a directory ({FETCH_HINT})"),
            });
        }
        for f in MODEL_FILES {
            let path = dir.join(f);
            if !path.is_file() {
                return Err(EmbedError::ModelFile {
                    path,
                    reason: format!("missing ({FETCH_HINT})"),
                });
            }
        }
        if config.batch_size == 0 || config.max_tokens < 2 {
            return Err(EmbedError::Config(format!(
                "batch size {} and max tokens {} must be at least 1 and 2",
                config.batch_size, config.max_tokens
            )));
        }

        let bert_config = read_config(&dir.join("config.json"))?;
        if config.max_tokens > bert_config.max_position_embeddings {
            return Err(EmbedError::Config(format!(
                "max tokens {} is more than the model's {} positions",
                config.max_tokens, bert_config.max_position_embeddings
            )));
        }

        let tokenizer_path = dir.join("tokenizer.json");
        let mut tokenizer =
            Tokenizer::from_file(&tokenizer_path).map_err(|e| EmbedError::ModelFile {
                path: tokenizer_path.clone(),
                reason: format!("not a tokenizer: {e}"),
            })?;
        // The file pads every input to 128 and truncates there; this crate pads per batch
        // and truncates at the model's max_seq_length instead.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: config.max_tokens,
                ..TruncationParams::default()
            }))
            .map_err(|e| EmbedError::ModelFile {
                path: tokenizer_path.clone(),
                reason: format!("cannot set truncation: {e}"),
            })?;

        let weights_path = dir.join("model.safetensors");
        let weights = read(&weights_path).map_err(|reason| EmbedError::ModelFile {
            path: weights_path.clone(),
            reason,
        })?;
        let device = Device::Cpu;
        let vb =
            VarBuilder::from_buffered_safetensors(weights, DType::F32, &device).map_err(|e| {
                EmbedError::ModelFile {
                    path: weights_path.clone(),
                    reason: format!("not a safetensors file: {e}"),
                }
            })?;
        let model = BertModel::load(vb, &bert_config).map_err(|e| EmbedError::ModelFile {
            path: weights_path.clone(),
            reason: format!("does not hold the BERT weights config.json describes: {e}"),
        })?;
        Ok(MiniLm {
            inner: Arc::new(Inner {
                model,
                tokenizer,
                name: config.name.into(),
                dimension: bert_config.hidden_size,
                batch_size: config.batch_size,
                max_chars: chars_for(config.max_tokens),
            }),
        })
    }

    /// [`Embedder::embed`] on the calling thread (for callers that are not on a runtime, and
    /// benchmarks).
    pub fn embed_blocking(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        self.inner.embed(texts)
    }
}

/// A model directory's `config.json`; the error names the file.
pub(crate) fn read_config(path: &Path) -> Result<Config, EmbedError> {
    read(path)
        .and_then(|bytes| serde_json::from_slice(&bytes).map_err(|e| e.to_string()))
        .map_err(|reason| EmbedError::ModelFile {
            path: path.to_path_buf(),
            reason: format!("not a BERT config: {reason}"),
        })
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("cannot read: {e}"))
}

impl Inner {
    fn fail(&self, reason: impl std::fmt::Display) -> EmbedError {
        EmbedError::Inference {
            model: self.name.to_string(),
            reason: reason.to_string(),
        }
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let cut: Vec<&str> = texts.iter().map(|t| prefix(t, self.max_chars)).collect();
        let encodings = self
            .tokenizer
            .encode_batch(cut, true)
            .map_err(|e| self.fail(format!("tokenizing: {e}")))?;
        // Batches of similar lengths pad less: sort by length, embed, put back in order.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(encodings[i].get_ids().len()));
        let mut out: Vec<Option<Embedding>> = vec![None; texts.len()];
        for batch in order.chunks(self.batch_size) {
            let vectors = self.forward(batch.iter().map(|&i| &encodings[i]))?;
            for (&i, v) in batch.iter().zip(vectors) {
                out[i] = Some(Embedding::new(self.name.clone(), v)?);
            }
        }
        Ok(out.into_iter().flatten().collect())
    }

    /// One forward pass over a batch, mean-pooled: one raw vector per encoding.
    fn forward<'a>(
        &self,
        batch: impl ExactSizeIterator<Item = &'a tokenizers::Encoding> + Clone,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let n = batch.len();
        let len = batch.clone().map(|e| e.get_ids().len()).max().unwrap_or(0);
        let mut ids = vec![0u32; n * len];
        let mut mask = vec![0u32; n * len];
        for (row, e) in batch.enumerate() {
            let k = e.get_ids().len();
            ids[row * len..row * len + k].copy_from_slice(e.get_ids());
            mask[row * len..row * len + k].copy_from_slice(e.get_attention_mask());
        }
        let run = || -> candle_core::Result<Vec<Vec<f32>>> {
            let device = &self.model.device;
            let ids = Tensor::from_vec(ids, (n, len), device)?;
            let mask = Tensor::from_vec(mask, (n, len), device)?;
            let type_ids = ids.zeros_like()?;
            let hidden = self.model.forward(&ids, &type_ids, Some(&mask))?; // [n, len, dim]
            let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?; // [n, len, 1]
            let summed = hidden.broadcast_mul(&mask)?.sum(1)?; // [n, dim]
            let counts = mask.sum(1)?; // [n, 1]; ≥ 2 ([CLS] and [SEP])
            summed.broadcast_div(&counts)?.to_vec2::<f32>()
        };
        run().map_err(|e| self.fail(e))
    }
}

/// Texts up to which an [`Embedder::embed`] call runs on [`query_pool`].
const QUERY_TEXTS: usize = 8;

/// The one-thread pool queries are embedded on (`None` when it cannot be made: then the
/// global pool).
fn query_pool() -> Option<&'static rayon::ThreadPool> {
    static QUERY: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    QUERY
        .get_or_init(|| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .thread_name(|_| "recall-embed-query".into())
                .build()
                .ok()
        })
        .as_ref()
}

#[async_trait::async_trait]
impl Embedder for MiniLm {
    fn model(&self) -> &str {
        &self.inner.name
    }

    fn dimension(&self) -> usize {
        self.inner.dimension
    }

    /// On a pool of one thread: candle's matrix products run on the current rayon pool, so
    /// the catch-up takes one core whatever the machine has.
    async fn embed_background(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        static BACKGROUND: std::sync::OnceLock<Option<rayon::ThreadPool>> =
            std::sync::OnceLock::new();
        let pool = BACKGROUND.get_or_init(|| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .thread_name(|_| "recall-embed-background".into())
                .build()
                .ok()
        });
        let Some(pool) = pool else {
            return self.embed(texts).await;
        };
        let inner = self.inner.clone();
        let owned: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
        let (tx, rx) = tokio::sync::oneshot::channel();
        pool.spawn(move || {
            let refs: Vec<&str> = owned.iter().map(String::as_str).collect();
            let _ = tx.send(inner.embed(&refs));
        });
        rx.await
            .map_err(|e| self.inner.fail(format!("the embedding task failed: {e}")))?
    }

    /// A query (a few texts) runs on one thread of its own: candle would spread its small
    /// matrix products over every core, and on two cores that made a question's embedding
    /// slower, not faster, while the context's store work needs the other core
    /// (docs/BENCHMARKS.md, "One thread for the query"). Larger batches (`recall embed`) use
    /// the whole pool.
    async fn embed(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return self.inner.embed(texts);
        }
        let one_thread = texts.len() <= QUERY_TEXTS;
        // CPU work for milliseconds to seconds: on the blocking pool, not an async worker.
        let inner = self.inner.clone();
        let owned: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
        tokio::task::spawn_blocking(move || {
            let refs: Vec<&str> = owned.iter().map(String::as_str).collect();
            match query_pool().filter(|_| one_thread) {
                Some(pool) => pool.install(|| inner.embed(&refs)),
                None => inner.embed(&refs),
            }
        })
        .await
        .map_err(|e| self.inner.fail(format!("the embedding task failed: {e}")))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_is_cut_at_a_character_boundary() {
        assert_eq!(prefix("short", 10), "short");
        assert_eq!(prefix("abcdef", 3), "abc");
        // 'é' is two bytes: a cut in its middle moves back before it.
        assert_eq!(prefix("aé", 2), "a");
        assert_eq!(prefix("ééé", 5), "éé");
        assert_eq!(prefix("", 0), "");
    }

    #[test]
    fn the_cut_leaves_room_for_every_word_piece_of_ordinary_text() {
        // 256 pieces of ordinary text take about 1,300 characters; the cut is far beyond.
        assert!(chars_for(256) >= 256 * 40);
        assert_eq!(chars_for(usize::MAX), usize::MAX);
    }
}
