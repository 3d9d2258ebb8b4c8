//! Bearer API keys mapped to tenants. Keys come from the config file or the database, where
//! only their SHA-256 is kept (`recall keys create`). A key is never logged.

use std::collections::HashMap;

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;
use recall_engine::store::{ApiKey, NewApiKey, Store};
use recall_engine::EngineError;
use sha2::{Digest, Sha256};

use crate::error::ApiError;
use crate::state::AppState;

/// The tenant a request acts for, set by the auth layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant(pub String);

/// Prefix of generated keys, so that a leaked one is recognisable (secret scanners).
pub const KEY_PREFIX: &str = "rk_";

/// SHA-256 of a key, lower-case hex.
pub fn hash_key(key: &str) -> String {
    let digest = Sha256::digest(key.as_bytes());
    let mut s = String::with_capacity(64);
    for b in digest {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// A new random key: `rk_` and 256 bits from the operating system, hex.
pub fn generate_key() -> Result<String, std::io::Error> {
    let mut bytes = [0u8; 32];
    getrandom::getrandom(&mut bytes).map_err(std::io::Error::other)?;
    let mut s = String::from(KEY_PREFIX);
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    Ok(s)
}

/// Creates a key for `tenant` in the store and returns it with its record. The key itself is
/// shown this once: only its hash is stored.
pub async fn create_key(
    store: &dyn Store,
    tenant: &str,
    label: Option<String>,
) -> Result<(String, ApiKey), EngineError> {
    if tenant.trim().is_empty() {
        return Err(EngineError::Invalid("the tenant must not be empty".into()));
    }
    let key = generate_key()
        .map_err(|e| EngineError::Invalid(format!("no randomness for a new key: {e}")))?;
    let record = store
        .create_api_key(NewApiKey {
            id: uuid::Uuid::now_v7().to_string(),
            tenant: tenant.to_string(),
            key_sha256: hash_key(&key),
            label,
        })
        .await?;
    Ok((key, record))
}

/// How requests are authenticated.
#[derive(Debug, Clone)]
pub enum Auth {
    /// Keys: config-file key hashes here, then the database.
    Keys(HashMap<String, String>),
    /// Everyone is the default tenant (`--no-auth`, loopback only).
    Disabled,
}

impl Auth {
    /// From the config file's keys.
    pub fn from_config(keys: &[crate::config::ConfigKey]) -> Auth {
        let map = keys
            .iter()
            .filter_map(|k| {
                let hash = match (&k.key, &k.sha256) {
                    (Some(key), _) => hash_key(key),
                    (None, Some(h)) => h.clone(),
                    (None, None) => return None,
                };
                Some((hash, k.tenant.clone()))
            })
            .collect();
        Auth::Keys(map)
    }
}

/// Finds the caller's tenant from `Authorization: Bearer KEY`; 401 without a valid key.
pub async fn authenticate(
    State(state): State<AppState>,
    mut req: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let tenant = match &state.inner.auth {
        Auth::Disabled => recall_engine::DEFAULT_TENANT.to_string(),
        Auth::Keys(config_keys) => {
            let key = presented_key(req.headers())?;
            let hash = hash_key(key);
            match config_keys.get(&hash) {
                Some(t) => t.clone(),
                None => state
                    .inner
                    .engine
                    .store()
                    .api_key_tenant(&hash)
                    .await
                    .map_err(ApiError::from)?
                    .ok_or_else(|| ApiError::unauthorized("invalid or revoked API key"))?,
            }
        }
    };
    state.inner.rate.check(&tenant)?;
    tracing::Span::current().record("tenant", tenant.as_str());
    req.extensions_mut().insert(Tenant(tenant));
    Ok(next.run(req).await)
}

/// The key a request presents: `Authorization: Bearer KEY`, or `x-api-key: KEY` (what the
/// Anthropic SDKs and the Claude Code CLI send).
fn presented_key(headers: &axum::http::HeaderMap) -> Result<&str, ApiError> {
    if let Some(v) = headers.get(header::AUTHORIZATION) {
        let v = v
            .to_str()
            .map_err(|_| ApiError::unauthorized("the Authorization header is not text"))?;
        return v
            .strip_prefix("Bearer ")
            .or_else(|| v.strip_prefix("bearer "))
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .ok_or_else(|| {
                ApiError::unauthorized(
                    "the Authorization header must be `Bearer KEY` with an API key",
                )
            });
    }
    match headers.get("x-api-key") {
        Some(v) => v
            .to_str()
            .ok()
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .ok_or_else(|| ApiError::unauthorized("the x-api-key header must hold an API key")),
        None => Err(ApiError::unauthorized(
            "missing API key: send the header `Authorization: Bearer KEY` (or `x-api-key: KEY`)",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::is_sha256_hex;

    #[test]
    fn hashes_are_sha256_hex() {
        assert_eq!(
            hash_key("test"),
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
        );
        assert!(is_sha256_hex(&hash_key("x")));
        assert!(!is_sha256_hex("ABC"));
    }

    #[test]
    fn generated_keys_differ_and_are_long() {
        let a = generate_key().unwrap();
        let b = generate_key().unwrap();
        assert_ne!(a, b);
        assert!(a.starts_with(KEY_PREFIX) && a.len() == KEY_PREFIX.len() + 64);
    }
}
