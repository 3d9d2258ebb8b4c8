//! The one error shape of the API: `{"error": {"type", "message"}}` with the status that says
//! whose fault it was.
//!
//! Engine errors are mapped here; a summariser's failure or refused answer is 502
//! `upstream_error`.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use recall_engine::store::StoreError;
use recall_engine::EngineError;
use serde_json::json;

/// An error answer: a status, a machine-readable type and a sentence for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub kind: &'static str,
    pub message: String,
    /// Seconds to wait before retrying (429).
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            kind,
            message: message.into(),
            retry_after: None,
        }
    }

    /// 400: the body is not JSON at all (syntax, encoding, nesting).
    pub fn malformed(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_json", message)
    }

    /// 422: well-formed JSON that is not an acceptable request.
    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_request", message)
    }

    pub fn unauthorized(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, "authentication_error", message)
    }

    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    pub fn conflict(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, "conflict", message)
    }

    pub fn too_large(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "too_large", message)
    }

    pub fn rate_limited(retry_after: u64) -> ApiError {
        ApiError {
            retry_after: Some(retry_after),
            ..ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                format!("too many requests for this API key; retry in {retry_after} s"),
            )
        }
    }

    /// 500: the details go to the log (with the request id), not to the client.
    pub fn internal() -> ApiError {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            "internal error; the server log has the details under this request's id",
        )
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> ApiError {
        if e.is_not_found() {
            return ApiError::not_found(e.to_string());
        }
        match &e {
            EngineError::TooLarge { .. } | EngineError::ContextTooLarge { .. } => {
                ApiError::too_large(e.to_string())
            }
            _ if e.is_conflict() => ApiError::conflict(e.to_string()),
            // The summariser is another service: its failure is a bad gateway, said as it is.
            _ if e.is_upstream() => {
                ApiError::new(StatusCode::BAD_GATEWAY, "upstream_error", e.to_string())
            }
            // The caller's input, the store's refusals included (NUL characters, blocks with
            // missing fields, a fork point past the end).
            _ if e.is_bad_input() => ApiError::invalid(e.to_string()),
            _ => {
                tracing::error!(error = %e, "request failed");
                ApiError::internal()
            }
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        ApiError::from(EngineError::from(e))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"type": self.kind, "message": self.message}});
        let mut res = (self.status, axum::Json(body)).into_response();
        if let Some(s) = self.retry_after {
            res.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        // The metrics layer counts internal errors without parsing bodies; the gateway
        // routes write the error again in the provider's shape.
        res.extensions_mut().insert(self.kind);
        res.extensions_mut().insert(self.clone());
        res
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_failures_map_to_whose_fault_it_was() {
        let status = |e: StoreError| ApiError::from(e).status;
        // The store's own failure is the server's: a 500, never a 4xx.
        assert_eq!(
            status(StoreError::Internal("no reader connection".into())),
            StatusCode::INTERNAL_SERVER_ERROR
        );
        assert_eq!(
            status(StoreError::Invalid("messages[0] has a NUL".into())),
            StatusCode::UNPROCESSABLE_ENTITY
        );
        let conflict = ApiError::from(StoreError::Conflict {
            index: 2,
            client_id: "x1".into(),
            seq: 1,
        });
        assert_eq!(conflict.status, StatusCode::CONFLICT);
        assert_eq!(
            conflict.message,
            "messages[2]: client id 'x1' was already used for a different message (seq 1)"
        );
    }
}
