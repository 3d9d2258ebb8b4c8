//! Sub-agent tasks over HTTP (as MCP's `create_task` and `get_task`, with the same bodies:
//! `recall_mcp::tasks`).

use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use recall_mcp::tools::{CreateTaskArgs, TaskCreated, TaskView};

use crate::auth::Tenant;
use crate::body::{parse_json, RawBody};
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::{ErrorBody, V1Errors};

/// Hand work to a sub-agent: validate a task and the conversation that led to it, store it,
/// and return its brief. Invalid history entries are skipped with a warning
/// (`validation_warnings`); content is capped.
#[utoipa::path(post, path = "/v1/tasks", tag = "tasks", request_body = CreateTaskArgs,
    responses((status = 201, body = TaskCreated), V1Errors), security(("bearer" = [])))]
pub async fn create_task(
    State(state): State<AppState>,
    Extension(Tenant(tenant)): Extension<Tenant>,
    RawBody(body): RawBody,
) -> Result<impl IntoResponse, ApiError> {
    let args: CreateTaskArgs = parse_json(&body)?;
    let created = recall_mcp::tasks::create_task(state.engine(), &tenant, args).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

/// A stored task and its brief.
#[utoipa::path(get, path = "/v1/tasks/{id}", tag = "tasks",
    params(("id" = String, Path, description = "The id `POST /v1/tasks` returned")),
    responses((status = 200, body = TaskView), (status = 404, body = ErrorBody), V1Errors),
    security(("bearer" = [])))]
pub async fn get_task(
    State(state): State<AppState>,
    Extension(Tenant(tenant)): Extension<Tenant>,
    Path(id): Path<String>,
) -> Result<Json<TaskView>, ApiError> {
    Ok(Json(
        recall_mcp::tasks::get_task(state.engine(), &tenant, &id).await?,
    ))
}
