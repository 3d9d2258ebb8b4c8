//! The OpenAPI document, generated from the handlers' annotations and the view types.

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::views::*;

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
        crate::ops::healthz,
        crate::ops::readyz,
        crate::ops::metrics,
    ),
    components(schemas(
        ConversationView, CreateConversation, ConversationPage, MessageView, MessagePage,
        AppendedView, AppendResponse, Cleared, ContextBody, ContextResponse, ErrorBody,
        ErrorDetail, crate::chat::ChatBody, AppendBody
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
