//! What the API returns and accepts, as typed structs (the OpenAPI document is generated from
//! them).
//!
//! These are the server's own bodies (pages, append results, the context answer); the views
//! every interface shares are recall-engine's (`views.rs` there).

use recall_core::policy::{ConversationPolicy, Format, PolicyOverrides};
pub use recall_engine::views::{ConversationView, ForkPointView, MessageView};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};

/// `POST /v1/conversations`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateConversation {
    pub title: Option<String>,
    /// Sent with every context.
    pub system_prompt: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Map<String, Value>>,
    /// Default context policy, e.g. `{"format": "xml", "max_turns": 10}`.
    pub policy: Option<ConversationPolicy>,
    /// A name of the client's own for the conversation (1–256 bytes, unique per tenant):
    /// the first request with a key creates the conversation (201), later ones answer the
    /// same conversation (200) and ignore the other fields. A key that is one of the
    /// tenant's conversation ids opens that conversation.
    pub key: Option<String>,
}

/// A page of conversations.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ConversationPage {
    pub data: Vec<ConversationView>,
    /// Pass as `after` for the next page; null on the last page.
    pub next_after: Option<String>,
}

#[derive(Debug, Clone, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// The `next_after` of the previous page.
    pub after: Option<String>,
    /// Page size, 1 to 1000 (default 50).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
}

#[derive(Debug, Clone, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DeleteQuery {
    /// Also delete the conversation's forks (and theirs). Default false: a conversation with
    /// forks is refused.
    pub cascade: Option<bool>,
}

#[derive(Debug, Clone, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct MessagesQuery {
    /// Messages with a seq above this (default 0: from the start).
    #[param(minimum = 0)]
    pub after: Option<i64>,
    /// Page size, 1 to 1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
}

/// A page of messages: at most `limit` messages and at most `max_page_bytes` of their JSON
/// (always at least one message).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MessagePage {
    pub data: Vec<MessageView>,
    /// Pass as `after` for the next page; null on the last page.
    pub next_after: Option<i64>,
}

/// `POST …/messages`: one message, or `{"messages": [...]}`. The schema of the OpenAPI
/// document; the handler reads the body with the engine's parser, which also takes
/// OpenAI-shaped messages (`tool_calls`, `role: "tool"`) and keeps unknown block types.
pub struct AppendBody;

/// Block types the parser reads into typed blocks; any other `type` is kept as it came.
const TYPED_BLOCKS: &str =
    "text|input_text|output_text|thinking|redacted_thinking|tool_use|tool_result";

impl utoipa::PartialSchema for AppendBody {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{
            AdditionalProperties, ArrayBuilder, ObjectBuilder, OneOfBuilder, SchemaType, Type,
        };
        let string = || ObjectBuilder::new().schema_type(Type::String);
        // Text with something besides white space: blank content is refused.
        let text = || string().pattern(Some(r"\S"));
        let block = |ty: &str| {
            ObjectBuilder::new()
                .schema_type(Type::Object)
                .property("type", string().enum_values(Some([ty])))
                .required("type")
        };
        let any_block = ObjectBuilder::new()
            .schema_type(Type::Object)
            .description(Some(
                "Any other block (image, document, ...): kept as it came",
            ))
            .property(
                "type",
                string().pattern(Some(format!("^(?!({TYPED_BLOCKS})$)"))),
            )
            .required("type");
        let blocks = ArrayBuilder::new().min_items(Some(1)).items(
            OneOfBuilder::new()
                .item(block("text").property("text", text()).required("text"))
                .item(
                    block("tool_use")
                        .property("id", string())
                        .property("name", string())
                        .property(
                            "input",
                            ObjectBuilder::new()
                                .schema_type(SchemaType::AnyValue)
                                .description(Some(
                                    "The tool's arguments, an object for every provider; any \
                                 other JSON value (an OpenAI `arguments` string that is not \
                                 JSON) is kept as it came",
                                )),
                        )
                        .required("id")
                        .required("name"),
                )
                .item(
                    block("tool_result")
                        .property("tool_use_id", string())
                        .property(
                            "content",
                            // Text, blocks, or null (no content).
                            OneOfBuilder::new()
                                .item(string())
                                .item(
                                    ArrayBuilder::new()
                                        .items(ObjectBuilder::new().schema_type(Type::Object)),
                                )
                                .item(ObjectBuilder::new().schema_type(Type::Null)),
                        )
                        .required("tool_use_id"),
                )
                .item(any_block),
        );
        let content = OneOfBuilder::new().item(text()).item(blocks);
        let message = ObjectBuilder::new()
            .schema_type(Type::Object)
            .property(
                "role",
                string().enum_values(Some(["user", "assistant", "system", "developer"])),
            )
            .property("content", content)
            .property(
                "id",
                ObjectBuilder::new()
                    .schema_type(SchemaType::from_iter([
                        Type::String,
                        Type::Number,
                        Type::Null,
                    ]))
                    .description(Some(
                        "Client id: a retry with the same id and message is not stored again",
                    )),
            )
            .property(
                "metadata",
                ObjectBuilder::new().schema_type(SchemaType::from_iter([Type::Object, Type::Null])),
            )
            .property(
                "created_at",
                ObjectBuilder::new()
                    .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
                    .format(Some(utoipa::openapi::schema::SchemaFormat::KnownFormat(
                        utoipa::openapi::schema::KnownFormat::DateTime,
                    )))
                    .description(Some(
                        "When the message was written, RFC 3339 (any offset; kept to the \
                         millisecond); absent or null: the server's clock. Not earlier than \
                         the message before it in the conversation, nor more than 5 minutes \
                         ahead of the server's clock (a 422 naming the message, and nothing \
                         of the request is stored)",
                    )),
            )
            .required("role")
            .required("content")
            .description(Some(
                "A message, Anthropic-shaped (OpenAI-shaped is read too)",
            ))
            .build();
        let batch = ObjectBuilder::new()
            .schema_type(Type::Object)
            .property(
                "messages",
                ArrayBuilder::new()
                    .min_items(Some(1))
                    .items(message.clone()),
            )
            .required("messages")
            .additional_properties(Some(AdditionalProperties::FreeForm(false)))
            .description(Some(
                "Several messages, stored in one transaction (all or none)",
            ));
        OneOfBuilder::new().item(message).item(batch).into()
    }
}

impl ToSchema for AppendBody {}

/// One appended message.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AppendedView {
    pub seq: i64,
    /// The client id was seen before: nothing was written; `seq` is the first append's.
    pub duplicate: bool,
}

/// The result of an append.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AppendResponse {
    pub messages: Vec<AppendedView>,
    pub warnings: Vec<String>,
}

/// `POST …/clear`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Cleared {
    pub removed: u64,
}

/// `POST …/context`: the format (default: the conversation's, else `transcript`), the
/// current message, escaping, and limits over the format's and the conversation's defaults.
/// Counts accept integral floats (`8000.0`): JSON does not tell them apart.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
// No `deny_unknown_fields` here: the flattened `PolicyOverrides` is given every field this
// struct does not claim, and refuses the ones that are not policy fields.
pub struct ContextBody {
    #[schema(example = "anthropic")]
    pub format: Option<Format>,
    /// The message the context is built for; not blank.
    #[schema(pattern = r"\S")]
    pub current: Option<String>,
    /// Turn-label escaping in text formats (default true).
    pub escape: Option<bool>,
    /// What recall looks for (with `recall_tokens`); default: the newest user message's
    /// text. Not stored.
    #[schema(pattern = r"\S")]
    pub query: Option<String>,
    #[serde(flatten)]
    pub policy: PolicyOverrides,
}

/// A built context: what `recall context` prints, as JSON.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ContextResponse {
    pub format: String,
    /// A string for text formats, the request body for `anthropic` and `openai`.
    #[schema(schema_with = string_or_object)]
    pub prompt: Value,
    /// Selection stats (docs/FORMATS.md §4.5).
    pub stats: recall_core::select::Stats,
    /// The seqs of the oldest and newest stored messages in the window (a `current` message
    /// given with the request is not stored, so not counted); null when the window holds none.
    pub window: Option<WindowView>,
    /// The limits that were applied: the format's defaults, then the conversation's policy,
    /// then the request's (so `max_tokens` is the budget the stats count against).
    pub policy: recall_core::policy::Policy,
    /// The summary and recalled sections, as placed in `prompt`, as data (a client maps these
    /// instead of reading them out of the prompt).
    pub sections: recall_core::context::Sections,
}

/// The stored messages a context's window holds: every seq from `first_seq` to `last_seq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub struct WindowView {
    pub first_seq: i64,
    pub last_seq: i64,
}

/// `prompt`: a string or an object.
fn string_or_object() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, Type};
    Schema::OneOf(
        OneOfBuilder::new()
            .item(ObjectBuilder::new().schema_type(Type::String))
            .item(ObjectBuilder::new().schema_type(Type::Object))
            .build(),
    )
}

/// A user message's `content` in a chat, edit: text that is not blank, or content blocks
/// (read by the engine's parser, as in an append).
pub(crate) fn user_content() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, OneOfBuilder, Schema, Type};
    Schema::OneOf(
        OneOfBuilder::new()
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .pattern(Some(r"\S")),
            )
            .item(
                ArrayBuilder::new()
                    .min_items(Some(1))
                    .items(ObjectBuilder::new().schema_type(Type::Object)),
            )
            .build(),
    )
}

/// The errors every `/v1` route may answer, besides its own (404, 409).
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
pub enum V1Errors {
    /// The body is not JSON: syntax, encoding, nesting.
    #[response(status = 400)]
    Malformed(ErrorBody),
    /// No API key, or one that is unknown or revoked.
    #[response(status = 401)]
    Unauthorized(ErrorBody),
    /// `--no-auth` only: a Host that is not a loopback name, or an Origin other than the
    /// server's own.
    #[response(status = 403)]
    Forbidden(ErrorBody),
    /// The request body did not arrive within the body timeout.
    #[response(status = 408)]
    Timeout(ErrorBody),
    /// The body is over the size limit, an append carries too many messages, or a context's
    /// prompt is over `max_context_bytes`.
    #[response(status = 413)]
    TooLarge(ErrorBody),
    /// A POST whose body is not declared `Content-Type: application/json`.
    #[response(status = 415)]
    UnsupportedMediaType(ErrorBody),
    /// Well-formed JSON that is not an acceptable request; a bad query string.
    #[response(status = 422)]
    Invalid(ErrorBody),
    /// The tenant's rate limit is spent (`Retry-After` says for how long).
    #[response(status = 429)]
    RateLimited(ErrorBody),
}

/// The error shape of every 4xx and 5xx answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// `invalid_json`, `invalid_request`, `authentication_error`, `not_found`, `conflict`,
    /// `too_large`, `rate_limited`, `internal_error`, `unavailable`.
    #[serde(rename = "type")]
    pub kind: String,
    pub message: String,
}
