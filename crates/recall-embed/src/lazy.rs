//! An in-process model loaded on first use: what recall uses by default when the model is
//! installed, so that a command or a server that never ranks by meaning never pays for
//! loading it (about 90 MB read and a graph built).

use tokio::sync::OnceCell;

use crate::minilm::{read_config, MODEL_FILES};
use crate::{EmbedError, Embedder, Embedding, MiniLm, MiniLmConfig};

/// [`MiniLm`] loaded the first time it embeds. Its name and dimension are known before: the
/// name from the configuration, the dimension from the model's `config.json` (read when this
/// is made, a few hundred bytes).
pub struct LazyMiniLm {
    config: MiniLmConfig,
    dimension: usize,
    model: OnceCell<MiniLm>,
}

impl std::fmt::Debug for LazyMiniLm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyMiniLm")
            .field("dir", &self.config.dir)
            .field("loaded", &self.model.initialized())
            .finish()
    }
}

impl LazyMiniLm {
    /// The model in `config.dir`, not loaded yet; an error names a missing file or a
    /// `config.json` that is no BERT configuration.
    pub fn new(config: MiniLmConfig) -> Result<Self, EmbedError> {
        for f in MODEL_FILES {
            let path = config.dir.join(f);
            if !path.is_file() {
                return Err(EmbedError::ModelFile {
                    path,
                    reason: "missing".into(),
                });
            }
        }
        let dimension = read_config(&config.dir.join("config.json"))?.hidden_size;
        Ok(LazyMiniLm {
            config,
            dimension,
            model: OnceCell::new(),
        })
    }

    /// True once the model was loaded.
    pub fn is_loaded(&self) -> bool {
        self.model.initialized()
    }

    async fn model(&self) -> Result<&MiniLm, EmbedError> {
        self.model
            .get_or_try_init(|| async {
                let config = self.config.clone();
                match tokio::runtime::Handle::try_current() {
                    Ok(_) => tokio::task::spawn_blocking(move || MiniLm::load(config))
                        .await
                        .map_err(|e| {
                            EmbedError::Config(format!("loading the model failed: {e}"))
                        })?,
                    Err(_) => MiniLm::load(config),
                }
            })
            .await
    }
}

#[async_trait::async_trait]
impl Embedder for LazyMiniLm {
    fn model(&self) -> &str {
        &self.config.name
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    async fn embed(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        self.model().await?.embed(texts).await
    }

    async fn embed_background(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        self.model().await?.embed_background(texts).await
    }
}
