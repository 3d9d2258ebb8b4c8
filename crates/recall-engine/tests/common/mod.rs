//! Test support shared by the engine's tests: the real local embedding model.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use recall_engine::embed::{Embedder, MiniLm, MiniLmConfig};

/// all-MiniLM-L6-v2 from `RECALL_EMBED_MODEL` or where `scripts/models.sh fetch` puts it;
/// `None` (the test skips with a note) when it is not installed, a failure under `CI=true`.
pub fn minilm_model() -> Option<Arc<MiniLm>> {
    let dir = std::env::var_os("RECALL_EMBED_MODEL")
        .map(PathBuf::from)
        .or_else(recall_engine::embed::default_model_dir)
        .filter(|d| d.join("model.safetensors").is_file());
    match dir {
        Some(d) => Some(Arc::new(
            MiniLm::load(MiniLmConfig::new(d)).expect("load MiniLM"),
        )),
        None => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "all-MiniLM-L6-v2 is not installed (CI runs this test with the real model)"
            );
            recall_testkit::skipped(
                "all-MiniLM-L6-v2 is not installed (bash scripts/models.sh fetch)",
            );
            None
        }
    }
}

/// [`minilm_model`] as an embedder.
pub fn minilm() -> Option<Arc<dyn Embedder>> {
    minilm_model().map(|m| m as Arc<dyn Embedder>)
}
