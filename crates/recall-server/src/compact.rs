//! `POST /v1/conversations/{id}/compact` and the summary a conversation's view shows: one
//! engine call (`Engine::compact_conversation`).
//!
//! The compaction runs in a task of its own, so that a client going away does not cut a
//! summariser call short.

use axum::extract::{Extension, State};
use axum::Json;
use recall_core::policy::{Format, PolicyOverrides};
use recall_engine::views::CompactView;
use recall_engine::CompactOptions;
use recall_engine::ConversationRef;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;
use utoipa::ToSchema;

use crate::auth::Tenant;
use crate::body::{ConversationId, RawBody};
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::{ErrorBody, V1Errors};

/// `POST …/compact`: which backend summarises (default: the server's summariser, else its
/// first chat backend), its model, and the window to summarise up to (the format and limits
/// over the conversation's policy; `summary_tokens` bounds the summary).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
// No `deny_unknown_fields`: the flattened `PolicyOverrides` refuses what is not a policy field.
pub struct CompactBody {
    /// A backend name this server offers.
    pub backend: Option<String>,
    /// The summariser's model (default: the backend's).
    pub model: Option<String>,
    /// The format whose window the summary ends before (default: the conversation's, else
    /// `transcript`).
    pub format: Option<Format>,
    #[serde(flatten)]
    pub policy: PolicyOverrides,
}

/// Summarise what the window has left behind: the summary in force plus the messages between
/// its end and the window start become the next version (docs/FORMAT-DECISIONS.md,
/// "Summaries"). 409 while another summariser works on the conversation; 502 when the
/// summariser fails or answers with an empty or over-budget summary (the summary in force
/// stays).
#[utoipa::path(post, path = "/v1/conversations/{id}/compact", tag = "conversations",
    params(("id" = String, Path, description = "The conversation id")),
    request_body = Option<CompactBody>,
    responses((status = 200, body = CompactView), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody), (status = 502, body = ErrorBody),
        (status = 503, body = ErrorBody), V1Errors),
    security(("bearer" = [])))]
pub async fn compact(
    State(state): State<AppState>,
    Extension(Tenant(tenant)): Extension<Tenant>,
    ConversationId(id): ConversationId,
    RawBody(body): RawBody,
) -> Result<Json<CompactView>, ApiError> {
    let b: CompactBody = crate::routes::optional_json(&body)?;
    // The named backend, else the engine's summariser (`recall serve` makes its first chat
    // backend the summariser), else the server's first chat backend.
    let (name, backend, default_model) = match (b.backend.as_deref(), state.engine().summarizer()) {
        (None, Some((backend, model))) => (backend.name().to_string(), backend, model),
        (name, _) => {
            let (n, backend) = state.inner.upstreams.backends.pick(name)?;
            (n, backend, None)
        }
    };
    let model = b.model.or(default_model);
    let opts = CompactOptions {
        format: b.format,
        overrides: b.policy,
        model,
        ..CompactOptions::default()
    };
    // Run to completion in a task of its own: a client that goes away does not cut a
    // summariser call short (its commit is what the call was for).
    let engine = state.engine().clone();
    let conversation = id.clone();
    let report = tokio::spawn(async move {
        engine
            .compact_conversation(
                ConversationRef::new(&tenant, &conversation),
                backend.as_ref(),
                &opts,
                CancellationToken::new(),
            )
            .await
    })
    .await
    .map_err(|_| ApiError::internal())??;
    tracing::info!(backend = %name, calls = report.calls, "compacted");
    Ok(Json(CompactView::new(&id, &report)))
}
