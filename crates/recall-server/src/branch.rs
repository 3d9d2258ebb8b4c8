//! The `/v1` routes of branching and parity with MCP: fork a conversation, list its forks,
//! change its settings (`PATCH`), redact a message, list a message's alternatives, search the
//! tenant's messages. Each reads its input strictly and calls one engine use case.

use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use recall_core::policy::ConversationPolicy;
use recall_engine::store::ConversationUpdate;
use recall_engine::ConversationRef;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Tenant;
use crate::body::{parse_json, ApiQuery, ConversationId, RawBody};
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::{ConversationView, ErrorBody, V1Errors};
use recall_engine::views::{AlternativeView, SearchHitView};

/// `POST …/fork`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkBody {
    /// The last message the fork keeps (0 keeps none): its history is the conversation's
    /// messages up to `at`, then its own.
    pub at: i64,
    /// The fork's title (default: the conversation's).
    pub title: Option<String>,
}

/// Fork a conversation at a message: a new conversation whose history is this one's up to
/// `at`, then its own. Nothing is copied (O(1)); the original is unchanged. The fork has the
/// conversation's system prompt, metadata and policy.
#[utoipa::path(post, path = "/v1/conversations/{id}/fork", tag = "conversations",
    params(("id" = String, Path, description = "The conversation id")),
    request_body = ForkBody,
    responses((status = 201, body = ConversationView), (status = 404, body = ErrorBody),
        (status = 409, description = "The message at `at` is a partial reply", body = ErrorBody),
        V1Errors),
    security(("bearer" = [])))]
pub async fn fork(
    State(state): State<AppState>,
    Extension(Tenant(tenant)): Extension<Tenant>,
    ConversationId(id): ConversationId,
    RawBody(body): RawBody,
) -> Result<impl IntoResponse, ApiError> {
    let b: ForkBody = parse_json(&body)?;
    let f = state
        .engine()
        .fork_conversation(ConversationRef::new(&tenant, &id), b.at, b.title)
        .await?;
    Ok((StatusCode::CREATED, Json(ConversationView::from(&f))))
}

/// A list of conversations.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ForkList {
    pub data: Vec<ConversationView>,
}

/// The direct forks of a conversation, by fork point.
#[utoipa::path(get, path = "/v1/conversations/{id}/forks", tag = "conversations",
    params(("id" = String, Path, description = "The conversation id")),
    responses((status = 200, body = ForkList), (status = 404, body = ErrorBody), V1Errors),
    security(("bearer" = [])))]
pub async fn forks(
    State(state): State<AppState>,
    Extension(Tenant(tenant)): Extension<Tenant>,
    ConversationId(id): ConversationId,
) -> Result<Json<ForkList>, ApiError> {
    let list = state
        .engine()
        .forks(ConversationRef::new(&tenant, &id))
        .await?;
    Ok(Json(ForkList {
        data: list.iter().map(ConversationView::from).collect(),
    }))
}

/// A field that may be absent (`None`), `null` (`Some(None)`) or a value.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// `PATCH /v1/conversations/{id}`: the fields to change; `null` removes a title, system
/// prompt or policy; a field left out is kept.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateConversation {
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub title: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub system_prompt: Option<Option<String>>,
    /// Replaces the metadata object.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Map<String, Value>>,
    /// The default context policy; a change resets the conversation's stable windows.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<ConversationPolicy>)]
    pub policy: Option<Option<ConversationPolicy>>,
}

/// Change a conversation's title, system prompt, metadata or default policy.
#[utoipa::path(patch, path = "/v1/conversations/{id}", tag = "conversations",
    params(("id" = String, Path, description = "The conversation id")),
    request_body = UpdateConversation,
    responses((status = 200, body = ConversationView), (status = 404, body = ErrorBody), V1Errors),
    security(("bearer" = [])))]
pub async fn update(
    State(state): State<AppState>,
    Extension(Tenant(tenant)): Extension<Tenant>,
    ConversationId(id): ConversationId,
    RawBody(body): RawBody,
) -> Result<Json<ConversationView>, ApiError> {
    let b: UpdateConversation = parse_json(&body)?;
    let c = state
        .engine()
        .update_conversation(
            ConversationRef::new(&tenant, &id),
            ConversationUpdate {
                title: b.title,
                system_prompt: b.system_prompt,
                metadata: b.metadata,
                policy: b.policy,
            },
        )
        .await?;
    Ok(Json(ConversationView::from(&c)))
}

/// The `{id}` and `{seq}` of a message route.
fn message_path(id: String, seq: String) -> Result<(String, i64), ApiError> {
    let n = seq.parse::<i64>().ok().filter(|n| *n >= 1).ok_or_else(|| {
        let shown: String = seq.chars().take(32).collect();
        ApiError::invalid(format!(
            "invalid message seq '{}': a whole number from 1",
            shown.escape_debug()
        ))
    })?;
    Ok((id, n))
}

#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct RedactQuery {
    /// Also compact the database at once (SQLite: checkpoint, vacuum, truncate the WAL, so
    /// the file's bytes no longer hold the text; PostgreSQL: vacuum). Default false.
    pub compact: Option<bool>,
}

/// Redact a message: its content and metadata are removed (it reads as `[redacted]`, status
/// `redacted`), from search and contexts too, for every conversation whose history holds it
/// (a fork's shared messages are its parent's); its seq stays.
#[utoipa::path(delete, path = "/v1/conversations/{id}/messages/{seq}", tag = "messages",
    params(("id" = String, Path, description = "The conversation id"),
        ("seq" = i64, Path, description = "The message's seq"), RedactQuery),
    responses((status = 204), (status = 404, body = ErrorBody), V1Errors),
    security(("bearer" = [])))]
pub async fn redact(
    State(state): State<AppState>,
    Extension(Tenant(tenant)): Extension<Tenant>,
    Path((id, seq)): Path<(String, String)>,
    ApiQuery(q): ApiQuery<RedactQuery>,
) -> Result<StatusCode, ApiError> {
    let (id, seq) = message_path(id, seq)?;
    state
        .engine()
        .redact_message(ConversationRef::new(&tenant, &id), seq)
        .await?;
    if q.compact.unwrap_or(false) {
        state.engine().vacuum().await?;
    }
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AlternativeList {
    pub data: Vec<AlternativeView>,
}

/// The alternatives of a message: the message at the same seq on every path sharing the
/// history before it (the original, retries, edits, forks made just before it).
#[utoipa::path(get, path = "/v1/conversations/{id}/messages/{seq}/alternatives",
    tag = "messages",
    params(("id" = String, Path, description = "The conversation id"),
        ("seq" = i64, Path, description = "The message's seq")),
    responses((status = 200, body = AlternativeList), (status = 404, body = ErrorBody), V1Errors),
    security(("bearer" = [])))]
pub async fn alternatives(
    State(state): State<AppState>,
    Extension(Tenant(tenant)): Extension<Tenant>,
    Path((id, seq)): Path<(String, String)>,
) -> Result<Json<AlternativeList>, ApiError> {
    let (id, seq) = message_path(id, seq)?;
    let alts = state
        .engine()
        .alternatives(ConversationRef::new(&tenant, &id), seq)
        .await?;
    Ok(Json(AlternativeList {
        data: alts.iter().map(AlternativeView::from).collect(),
    }))
}

#[derive(Debug, Clone, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct SearchQuery {
    /// Words to find: a message matches when it holds every word (case-insensitive).
    pub q: String,
    /// At most this many hits, 1 to 100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<u32>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SearchResults {
    /// Best matches first.
    pub data: Vec<SearchHitView>,
}

/// Full-text search over the tenant's messages (as MCP's `search_history`). A fork's shared
/// messages are found once, under the conversation that holds them.
#[utoipa::path(get, path = "/v1/search", tag = "search", params(SearchQuery),
    responses((status = 200, body = SearchResults), V1Errors), security(("bearer" = [])))]
pub async fn search(
    State(state): State<AppState>,
    Extension(Tenant(tenant)): Extension<Tenant>,
    ApiQuery(q): ApiQuery<SearchQuery>,
) -> Result<Json<SearchResults>, ApiError> {
    let hits = state
        .engine()
        .search_messages(&tenant, &q.q, q.limit.unwrap_or(20))
        .await?;
    Ok(Json(SearchResults {
        data: hits.into_iter().map(SearchHitView::from).collect(),
    }))
}
