//! Request bodies and query strings read strictly: size, UTF-8, nesting depth, JSON syntax
//! (400), then the expected shape with unknown fields refused (422), each with a message that
//! names the problem and where it is.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ApiError;

/// Deepest JSON nesting accepted in a body. Messages need a handful of levels (tool inputs a
/// few more); the limit keeps recursive code far from its stack's end.
pub const MAX_DEPTH: usize = 64;

/// A JSON body deserialised into `T`.
#[derive(Debug)]
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = read_body(req, state).await?;
        parse_json(&bytes).map(ApiJson)
    }
}

/// The raw bytes of a body that is parsed later (optional or streamed-answer bodies), read
/// like [`ApiJson`]'s so that an oversized body is the same JSON 413, not axum's plain text.
#[derive(Debug)]
pub struct RawBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        read_body(req, state).await.map(RawBody)
    }
}

/// The raw body, within the configured size limit (`DefaultBodyLimit`).
pub async fn read_body<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, ApiError> {
    let limit = req
        .extensions()
        .get::<BodyLimit>()
        .map(|l| l.0)
        .unwrap_or(0);
    Bytes::from_request(req, state).await.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::too_large(format!("request body is over the limit of {limit} bytes"))
        } else if let Some(t) = body_timed_out(&e) {
            ApiError::new(StatusCode::REQUEST_TIMEOUT, "timeout", t.to_string())
        } else {
            ApiError::malformed(format!("cannot read the request body: {e}"))
        }
    })
}

/// The body size limit in force, recorded for error messages.
#[derive(Debug, Clone, Copy)]
pub struct BodyLimit(pub usize);

/// Parses a body: UTF-8, depth, syntax, then shape.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::malformed(
            "request body is empty; send a JSON object",
        ));
    }
    if let Err(e) = std::str::from_utf8(bytes) {
        return Err(ApiError::malformed(format!(
            "request body is not valid UTF-8 (first bad byte at offset {})",
            e.valid_up_to()
        )));
    }
    check_depth(bytes)?;
    // Syntax first, so that a broken body is a 400 whatever its shape.
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|e| ApiError::malformed(format!("request body is not valid JSON: {e}")))?;
    // Every body of this API is an object; serde would otherwise fill a struct from an
    // array, field by field in declaration order.
    let kind = match &value {
        Value::Object(_) => return from_value(value),
        Value::Array(_) => "an array",
        Value::String(_) => "a string",
        Value::Number(_) => "a number",
        Value::Bool(_) => "a boolean",
        Value::Null => "null",
    };
    Err(ApiError::invalid(format!(
        "invalid request body: expected a JSON object, not {kind}"
    )))
}

/// Deserialises a parsed value into `T`, naming the path of the first problem.
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." || path.is_empty() {
            ApiError::invalid(format!("invalid request body: {inner}"))
        } else {
            ApiError::invalid(format!("invalid request body at {path}: {inner}"))
        }
    })
}

/// Refuses JSON nested deeper than [`MAX_DEPTH`] before anything recursive parses it.
fn check_depth(bytes: &[u8]) -> Result<(), ApiError> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(ApiError::malformed(format!(
                        "request body is nested deeper than {MAX_DEPTH} levels (at byte {i})"
                    )));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// A query string deserialised into `T` (unknown parameters refused by `T`).
#[derive(Debug)]
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(q)| ApiQuery(q))
            .map_err(|e| ApiError::invalid(format!("invalid query string: {}", e.body_text())))
    }
}

/// The `{id}` of a conversation route.
#[derive(Debug)]
pub struct ConversationId(pub String);

impl<S: Send + Sync> FromRequestParts<S> for ConversationId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Path::<String>::from_request_parts(parts, state)
            .await
            .map(|Path(id)| ConversationId(id))
            .map_err(|e| ApiError::invalid(format!("invalid conversation id: {}", e.body_text())))
    }
}

/// The error of a request body that did not arrive in time (see [`body_timed_out`]).
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {0} s")]
pub struct BodyTimedOut(pub u64);

/// The [`BodyTimedOut`] somewhere in the chain of `error`'s sources, if any.
fn body_timed_out<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a BodyTimedOut> {
    let mut e: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(err) = e {
        if let Some(t) = err.downcast_ref::<BodyTimedOut>() {
            return Some(t);
        }
        e = err.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_is_counted_outside_strings_only() {
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert!(check_depth(deep.as_bytes()).is_err());
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(check_depth(ok.as_bytes()).is_ok());
        let in_string = format!("{{\"a\": \"{}\\\"{}\"}}", "[".repeat(500), "{".repeat(500));
        assert!(check_depth(in_string.as_bytes()).is_ok());
    }

    #[test]
    fn syntax_is_400_and_shape_is_422() {
        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct B {
            title: Option<String>,
        }
        let e = parse_json::<B>(b"{\"title\": ").unwrap_err();
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        let e = parse_json::<B>(b"{\"title\": 5}").unwrap_err();
        assert_eq!(e.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(e.message.contains("title"), "{}", e.message);
        let e = parse_json::<B>(b"{\"nope\": 1}").unwrap_err();
        assert!(e.message.contains("nope"), "{}", e.message);
        let e = parse_json::<B>(b"{\"title\": \"\xff\"}").unwrap_err();
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        assert!(e.message.contains("UTF-8"), "{}", e.message);
        // serde would read an array into the struct's fields in order.
        let e = parse_json::<B>(b"[\"Support\"]").unwrap_err();
        assert_eq!(e.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(
            e.message,
            "invalid request body: expected a JSON object, not an array"
        );
        let e = parse_json::<B>(b"null").unwrap_err();
        assert_eq!(
            e.message,
            "invalid request body: expected a JSON object, not null"
        );
        assert!(parse_json::<B>(b"{\"title\": \"Support\"}").is_ok());
    }
}
