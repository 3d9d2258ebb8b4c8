//! What can go wrong while loading a model or embedding texts.

use std::path::PathBuf;

/// An embedding error. Messages name the file, the server or the setting at fault and never
/// contain an API key.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// A model file is missing, unreadable or not what the model needs.
    #[error("embedding model file {}: {reason}", path.display())]
    ModelFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The configuration (environment or arguments) is incomplete or invalid.
    #[error("embedding configuration: {0}")]
    Config(String),
    /// The in-process model failed on an input.
    #[error("embedding with {model} failed: {reason}")]
    Inference {
        /// The model.
        model: String,
        /// What failed.
        reason: String,
    },
    /// The embeddings server could not be reached or answered with an error or a body that
    /// is not an embeddings response.
    #[error("embeddings server {url}: {reason}")]
    Server {
        /// The endpoint called.
        url: String,
        /// The HTTP status, when one came back.
        status: Option<u16>,
        /// What went wrong (the server's own message when it gave one, key redacted).
        reason: String,
    },
    /// Two vectors of different models or dimensions were compared.
    #[error("cannot compare embeddings of different models: {left} and {right}")]
    Mismatch {
        /// The first vector's model and dimension.
        left: String,
        /// The second vector's model and dimension.
        right: String,
    },
    /// A vector that cannot be normalised (empty, zero or not finite).
    #[error("bad embedding vector from {0}")]
    BadVector(String),
}
