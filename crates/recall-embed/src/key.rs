//! The embeddings server's key, kept out of logs and messages.

/// A secret bearer key. `Debug` prints `EmbedKey([redacted])`; the value is reachable only
/// through [`EmbedKey::expose`], which the client calls when it sets the header.
#[derive(Clone, PartialEq, Eq)]
pub struct EmbedKey(String);

impl EmbedKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        EmbedKey(key.into())
    }

    /// The key itself.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the key replaced by `[redacted]` (a server may echo
    /// the header back in an error body).
    pub(crate) fn redact(&self, text: &str) -> String {
        if self.0.is_empty() {
            text.to_string()
        } else {
            text.replace(&self.0, "[redacted]")
        }
    }
}

impl std::fmt::Debug for EmbedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EmbedKey([redacted])")
    }
}

#[cfg(test)]
mod tests {
    use super::EmbedKey;

    #[test]
    fn debug_and_redact_hide_the_key() {
        let k = EmbedKey::new("sk-embed-123");
        assert_eq!(format!("{k:?}"), "EmbedKey([redacted])");
        assert_eq!(k.redact("bad key sk-embed-123!"), "bad key [redacted]!");
        assert_eq!(k.expose(), "sk-embed-123");
    }
}
