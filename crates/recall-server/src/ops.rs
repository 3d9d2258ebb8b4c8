//! Operational routes: liveness, readiness, metrics, the OpenAPI document, and the JSON
//! answers for unknown routes and methods.

use std::time::Duration;

use axum::extract::State;
use axum::http::{header, Method, StatusCode, Uri};
use axum::response::IntoResponse;
use axum::Json;
use serde_json::json;

use crate::error::ApiError;
use crate::state::AppState;

/// The process is up.
#[utoipa::path(get, path = "/healthz", tag = "operations",
    responses((status = 200, description = "The process answers")))]
pub async fn healthz() -> impl IntoResponse {
    Json(json!({"status": "ok"}))
}

/// The database answers (within 5 seconds).
#[utoipa::path(get, path = "/readyz", tag = "operations",
    responses((status = 200, description = "Ready"),
        (status = 503, description = "The database does not answer", body = crate::views::ErrorBody)))]
pub async fn readyz(State(state): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    match tokio::time::timeout(Duration::from_secs(5), state.engine().store().ping()).await {
        Ok(Ok(())) => Ok(Json(json!({"status": "ready"}))),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "readiness: the database failed");
            Err(unavailable("the database is not reachable"))
        }
        Err(_) => Err(unavailable("the database did not answer within 5 seconds")),
    }
}

fn unavailable(message: &str) -> ApiError {
    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", message)
}

/// Prometheus text exposition.
#[utoipa::path(get, path = "/metrics", tag = "operations",
    responses((status = 200, description = "Prometheus text format", content_type = "text/plain")))]
pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    let mut text = state.inner.metrics.render();
    // How far the vectors are, read from the store at each scrape (one query over the
    // conversations): what the background catch-up still has to do, whoever stored it.
    let engine = &state.inner.engine;
    if let Some(model) = engine.embedder().map(|e| e.model().to_string()) {
        let status = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            engine.vector_status(recall_engine::store::VectorScope::Store),
        )
        .await;
        match status {
            Ok(Ok(Some(v))) => crate::metrics::render_vectors(&mut text, &model, v),
            Ok(Err(e)) => tracing::warn!(error = %e, "metrics: the vector status failed"),
            Ok(Ok(None)) | Err(_) => {}
        }
    }
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
}

pub async fn no_route(method: Method, uri: Uri) -> ApiError {
    ApiError::not_found(format!("no route for {}", crate::describe(&method, &uri)))
}

pub async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("{} is not allowed here", crate::describe(&method, &uri)),
    )
}
