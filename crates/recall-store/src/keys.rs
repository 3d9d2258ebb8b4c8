//! API keys of the HTTP server: only a hash of each key is stored, never the key.

/// A key to store: its public id, tenant and the SHA-256 of the key (lower-case hex).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewApiKey {
    pub id: String,
    pub tenant: String,
    pub key_sha256: String,
    pub label: Option<String>,
}

/// A stored key, without anything that would let someone use it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ApiKey {
    pub id: String,
    pub tenant: String,
    pub label: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
    pub revoked_at: Option<i64>,
}
