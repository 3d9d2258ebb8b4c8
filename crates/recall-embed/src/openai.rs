//! A client of OpenAI-compatible embeddings servers: `POST {base}/v1/embeddings` with
//! `{"model", "input": [...], "encoding_format": "float"}`.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use crate::{EmbedError, EmbedKey, Embedder, Embedding};

/// Settings of the embeddings client.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenAiEmbedderConfig {
    /// The server's root (`http://127.0.0.1:8000`) or its `/v1` (`http://127.0.0.1:8000/v1`,
    /// the form OpenAI's own clients use).
    pub base_url: String,
    /// Sent as `Authorization: Bearer …` when set; never logged or put in an error.
    pub api_key: Option<EmbedKey>,
    /// Sent as `model` and recorded with every vector.
    pub model: String,
    /// Texts per request (default 64).
    pub batch_size: usize,
    /// Time limit of one request (default 60 s).
    pub timeout: Duration,
    /// Put before each text recall looks for ([`Embedder::embed`]): models trained with
    /// asymmetric prefixes want them (nomic-embed-text-v1.5: `search_query: `). Empty: none.
    pub query_prefix: String,
    /// Put before each stored message ([`Embedder::embed_background`]; nomic-embed-text-v1.5:
    /// `search_document: `). Empty: none.
    pub document_prefix: String,
}

impl OpenAiEmbedderConfig {
    /// Defaults for `model` at `base_url`, no key.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        OpenAiEmbedderConfig {
            base_url: base_url.into(),
            api_key: None,
            model: model.into(),
            batch_size: 64,
            timeout: Duration::from_secs(60),
            query_prefix: String::new(),
            document_prefix: String::new(),
        }
    }
}

/// The embeddings client. Its dimension is the one the server answered with when
/// [`OpenAiEmbedder::connect`] asked; a later answer of another length is an error.
#[derive(Debug, Clone)]
pub struct OpenAiEmbedder {
    config: OpenAiEmbedderConfig,
    client: reqwest::Client,
    url: String,
    name: Arc<str>,
    dimension: usize,
}

/// `{base}/v1/embeddings`, or `{base}/embeddings` when `base` already ends in `/v1`.
pub(crate) fn endpoint(base: &str) -> Result<String, EmbedError> {
    let base = base.trim_end_matches('/');
    let url = if base.ends_with("/v1") {
        format!("{base}/embeddings")
    } else {
        format!("{base}/v1/embeddings")
    };
    reqwest::Url::parse(&url)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .ok_or_else(|| {
            EmbedError::Config(format!(
                "bad embeddings URL '{base}': expected http(s)://host[:port][/v1]"
            ))
        })?;
    Ok(url)
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    index: Option<usize>,
    embedding: Vec<f32>,
}

impl OpenAiEmbedder {
    /// A client for `config`. Embeds one short text to learn the server's dimension, so a
    /// wrong URL, key or model fails here rather than on the first real text.
    pub async fn connect(config: OpenAiEmbedderConfig) -> Result<Self, EmbedError> {
        let url = endpoint(&config.base_url)?;
        if config.batch_size == 0 {
            return Err(EmbedError::Config("batch size must be at least 1".into()));
        }
        if config.model.trim().is_empty() {
            return Err(EmbedError::Config(
                "the embedding model name is empty".into(),
            ));
        }
        let client = reqwest::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| EmbedError::Config(format!("cannot build the HTTP client: {e}")))?;
        let mut me = OpenAiEmbedder {
            name: config.model.clone().into(),
            config,
            client,
            url,
            dimension: 0,
        };
        let probe = me.request(&["dimension probe"]).await?;
        me.dimension = probe[0].len();
        Ok(me)
    }

    fn server_error(&self, status: Option<u16>, reason: impl Into<String>) -> EmbedError {
        let reason = reason.into();
        let reason = match &self.config.api_key {
            Some(k) => k.redact(&reason),
            None => reason,
        };
        EmbedError::Server {
            url: self.url.clone(),
            status,
            reason,
        }
    }

    /// One request: the raw vectors, in the order of `texts`.
    async fn request(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let body = json!({
            "model": self.config.model,
            "input": texts,
            "encoding_format": "float",
        });
        let mut req = self.client.post(&self.url).json(&body);
        if let Some(key) = &self.config.api_key {
            let mut v = reqwest::header::HeaderValue::from_str(&format!("Bearer {}", key.expose()))
                .map_err(|_| {
                    EmbedError::Config(
                        "the embeddings key contains characters not allowed in an HTTP header"
                            .into(),
                    )
                })?;
            v.set_sensitive(true);
            req = req.header(reqwest::header::AUTHORIZATION, v);
        }
        // reqwest's error text names the URL only; the key travels in a sensitive header.
        let resp = req
            .send()
            .await
            .map_err(|e| self.server_error(None, format!("request failed: {e}")))?;
        let status = resp.status();
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| self.server_error(Some(status.as_u16()), format!("reading: {e}")))?;
        if !status.is_success() {
            return Err(self.server_error(Some(status.as_u16()), error_message(status, &bytes)));
        }
        let parsed: Response = serde_json::from_slice(&bytes).map_err(|e| {
            self.server_error(
                Some(status.as_u16()),
                format!("not an embeddings response: {e}"),
            )
        })?;
        if parsed.data.len() != texts.len() {
            return Err(self.server_error(
                Some(status.as_u16()),
                format!(
                    "{} embeddings for {} inputs",
                    parsed.data.len(),
                    texts.len()
                ),
            ));
        }
        let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for (pos, item) in parsed.data.into_iter().enumerate() {
            let i = item.index.unwrap_or(pos);
            match out.get_mut(i) {
                Some(slot @ None) => *slot = Some(item.embedding),
                _ => {
                    return Err(self.server_error(
                        Some(status.as_u16()),
                        format!("embedding index {i} is out of range or repeated"),
                    ))
                }
            }
        }
        Ok(out.into_iter().flatten().collect())
    }
}

/// The server's own message (`{"error": {"message"}}` or `{"error": "…"}`), else the start of
/// the body, else the status.
fn error_message(status: reqwest::StatusCode, body: &[u8]) -> String {
    let from_json = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            let e = v.get("error")?;
            e.get("message")
                .and_then(|m| m.as_str())
                .or_else(|| e.as_str())
                .map(str::to_string)
        });
    let text = from_json.unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_string());
    let text: String = text.chars().take(300).collect();
    if text.is_empty() {
        format!("HTTP {status}")
    } else {
        format!("HTTP {status}: {text}")
    }
}

#[async_trait::async_trait]
impl Embedder for OpenAiEmbedder {
    fn model(&self) -> &str {
        &self.name
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    async fn embed(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        self.embed_with(&self.config.query_prefix, texts).await
    }

    async fn embed_background(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        self.embed_with(&self.config.document_prefix, texts).await
    }
}

impl OpenAiEmbedder {
    /// Embeds `texts`, each after `prefix`, in batches of the configured size.
    async fn embed_with(&self, prefix: &str, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        let prefixed: Vec<String>;
        let texts: Vec<&str> = if prefix.is_empty() {
            texts.to_vec()
        } else {
            prefixed = texts.iter().map(|t| format!("{prefix}{t}")).collect();
            prefixed.iter().map(String::as_str).collect()
        };
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.config.batch_size) {
            for v in self.request(batch).await? {
                if v.len() != self.dimension {
                    return Err(self.server_error(
                        None,
                        format!(
                            "a vector of {} dimensions; this model gave {} before",
                            v.len(),
                            self.dimension
                        ),
                    ));
                }
                out.push(Embedding::new(self.name.clone(), v)?);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_accepts_the_root_or_v1() {
        for base in [
            "http://127.0.0.1:8000",
            "http://127.0.0.1:8000/",
            "http://127.0.0.1:8000/v1",
            "http://127.0.0.1:8000/v1/",
        ] {
            assert_eq!(
                endpoint(base).unwrap(),
                "http://127.0.0.1:8000/v1/embeddings",
                "{base}"
            );
        }
        assert!(endpoint("127.0.0.1:8000").is_err());
        assert!(endpoint("ftp://h/v1").is_err());
    }

    #[test]
    fn error_message_prefers_the_servers_message() {
        let s = reqwest::StatusCode::UNAUTHORIZED;
        assert_eq!(
            error_message(s, br#"{"error":{"message":"bad key","type":"auth"}}"#),
            "HTTP 401 Unauthorized: bad key"
        );
        assert_eq!(
            error_message(s, br#"{"error":"nope"}"#),
            "HTTP 401 Unauthorized: nope"
        );
        assert_eq!(error_message(s, b"plain"), "HTTP 401 Unauthorized: plain");
        assert_eq!(error_message(s, b""), "HTTP 401 Unauthorized");
    }
}
