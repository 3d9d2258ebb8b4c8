//! API keys that never show up in `Debug` output or logs.

/// A secret API key. `Debug` prints `ApiKey([redacted])`; the value is only reachable through
/// [`ApiKey::expose`], which the adapters call when they set a header or a child's
/// environment.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    /// The key itself.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

impl From<String> for ApiKey {
    fn from(s: String) -> Self {
        ApiKey(s)
    }
}

impl From<&str> for ApiKey {
    fn from(s: &str) -> Self {
        ApiKey(s.to_string())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn debug_hides_the_key() {
        let k = super::ApiKey::new("sk-secret");
        assert_eq!(format!("{k:?}"), "ApiKey([redacted])");
        assert_eq!(k.expose(), "sk-secret");
    }
}
