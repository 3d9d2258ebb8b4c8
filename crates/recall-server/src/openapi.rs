//! The OpenAPI document, generated from the handlers' annotations and the view types.
//!
//! A copy is kept in `clients/openapi.json`, the spec the Python and TypeScript clients are
//! generated from; `tests/openapi_file.rs` fails when the two differ.

use axum::http::header;
use axum::response::IntoResponse;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::error::ApiError;

use crate::views::*;

/// The API's paths and schemas, from the handlers' `utoipa::path` annotations.
#[derive(OpenApi)]
#[openapi(
    info(title = "recall", description = "Conversation memory for LLM apps and agents."),
    paths(
        crate::routes::create_conversation,
        crate::routes::list_conversations,
        crate::routes::get_conversation,
        crate::routes::delete_conversation,
        crate::routes::clear_conversation,
        crate::routes::append_messages,
        crate::routes::list_messages,
        crate::routes::context,
        crate::chat::chat_sse,
        crate::chat::chat_ws,
        crate::chat::retry_sse,
        crate::chat::edit_sse,
        crate::branch::fork,
        crate::branch::forks,
        crate::compact::compact,
        crate::branch::update,
        crate::branch::redact,
        crate::branch::alternatives,
        crate::branch::search,
        crate::tasks::create_task,
        crate::tasks::get_task,
        crate::ops::healthz,
        crate::ops::readyz,
        crate::ops::metrics,
    ),
    components(schemas(
        ConversationView, CreateConversation, ConversationPage, MessageView, MessagePage,
        AppendedView, AppendResponse, Cleared, ContextBody, ContextResponse, WindowView, ErrorBody,
        recall_core::context::Sections, recall_core::context::SummarySectionView,
        recall_core::context::RecalledSectionView,
        ErrorDetail, crate::chat::ChatBody, AppendBody, ForkPointView, crate::chat::RetryBody,
        crate::chat::EditBody, crate::chat::TurnOptions, crate::branch::ForkBody, crate::branch::ForkList,
        crate::branch::UpdateConversation, recall_engine::views::AlternativeView,
        crate::branch::AlternativeList, recall_engine::views::SearchHitView,
        crate::branch::SearchResults, recall_mcp::tools::CreateTaskArgs,
        recall_mcp::tools::TaskCreated, recall_mcp::tools::TaskView,
        recall_mcp::tools::TaskMessageView, recall_mcp::tools::HistoryEntry,
        recall_mcp::tools::HistoryRole, recall_mcp::tools::Priority,
        crate::compact::CompactBody, recall_engine::views::CompactView,
        recall_engine::views::SummaryView
    )),
    modifiers(&BearerAuth)
)]
pub struct ApiDoc;

/// Declares the `bearer` scheme the paths refer to.
struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, api: &mut utoipa::openapi::OpenApi) {
        let components = api.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("An API key (`recall keys create --tenant T`)"))
                    .build(),
            ),
        );
    }
}

/// The OpenAPI document `GET /openapi.json` serves, as pretty JSON ending in a newline: the
/// text of `clients/openapi.json`.
pub fn document() -> Result<String, serde_json::Error> {
    let mut text = ApiDoc::openapi().to_pretty_json()?;
    text.push('\n');
    Ok(text)
}

/// `GET /openapi.json`: [`document`].
pub(crate) async fn serve() -> Result<impl IntoResponse, ApiError> {
    let text = document().map_err(|e| {
        tracing::error!(error = %e, "the OpenAPI document did not serialise");
        ApiError::internal()
    })?;
    Ok(([(header::CONTENT_TYPE, "application/json")], text))
}
