//! The REST handlers under `/v1`. Each one reads its input strictly, calls one engine use
//! case for the caller's tenant, and shapes the answer.

use std::time::Instant;

use axum::body::Bytes;
use axum::extract::{Extension, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use recall_core::context::ContextRequest;
use recall_core::parse::{conversation_from_value, ParseOptions};
use recall_engine::conversation_format;
use recall_engine::store::NewConversation;
use serde_json::Value;

use crate::auth::Tenant;
use crate::body::{parse_json, ApiJson, ApiQuery, ConversationId, RawBody};
use crate::error::ApiError;
use crate::views::*;
use crate::AppState;

/// Most items in one page.
const MAX_PAGE: u32 = 1000;

fn page_size(limit: Option<u32>, default: u32) -> Result<u32, ApiError> {
    match limit.unwrap_or(default) {
        0 => Err(ApiError::invalid("limit must be at least 1")),
        n if n > MAX_PAGE => Err(ApiError::invalid(format!(
            "limit must be at most {MAX_PAGE}"
        ))),
        n => Ok(n),
    }
}

/// A body that may be empty or JSON `null` (then the defaults), else strict JSON.
fn optional_json<T: serde::de::DeserializeOwned + Default>(bytes: &Bytes) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) || bytes.trim_ascii() == b"null" {
        Ok(T::default())
    } else {
        parse_json(bytes)
    }
}

/// The counts of a policy as integers: `8000.0` is read as 8000 (JSON does not tell the two
/// apart, and some encoders write whole numbers that way). A count past the document's int64
/// range is refused here; anything else is left for the engine to judge.
fn whole_counts(policy: Value) -> Result<Value, ApiError> {
    const COUNTS: [&str; 6] = [
        "max_turns",
        "max_chars",
        "max_tokens",
        "user_max_chars",
        "assistant_max_chars",
        "tool_result_max_chars",
    ];
    let Value::Object(mut o) = policy else {
        return Ok(policy);
    };
    for key in COUNTS {
        if let Some(v) = o.get_mut(key) {
            if v.as_u64().is_some_and(|n| n > i64::MAX as u64) {
                return Err(ApiError::invalid(format!(
                    "policy.{key} must be at most {}",
                    i64::MAX
                )));
            }
            // Below 2^53 every whole f64 is exact.
            if let Some(f) = v
                .as_f64()
                .filter(|f| v.is_f64() && f.fract() == 0.0 && (0.0..9.0e15).contains(f))
            {
                *v = Value::from(f as u64);
            }
        }
    }
    Ok(Value::Object(o))
}

/// Create a conversation.
#[utoipa::path(post, path = "/v1/conversations", tag = "conversations",
    request_body = Option<CreateConversation>,
    responses((status = 201, body = ConversationView), V1Errors),
    security(("bearer" = [])))]
pub async fn create_conversation(
    State(state): State<AppState>,
    Extension(Tenant(tenant)): Extension<Tenant>,
    RawBody(body): RawBody,
) -> Result<impl IntoResponse, ApiError> {
    let b: CreateConversation = optional_json(&body)?;
    let c = state
        .engine()
        .create_conversation(
            &tenant,
            NewConversation {
                title: b.title,
                system_prompt: b.system_prompt,
                metadata: b.metadata.unwrap_or_default(),
                policy: b.policy.map(whole_counts).transpose()?,
            },
        )
        .await?;
    Ok((StatusCode::CREATED, Json(ConversationView::from(&c))))
}

/// List conversations, oldest first, a page at a time.
#[utoipa::path(get, path = "/v1/conversations", tag = "conversations", params(ListQuery),
    responses((status = 200, body = ConversationPage), V1Errors), security(("bearer" = [])))]
pub async fn list_conversations(
    State(state): State<AppState>,
    Extension(Tenant(tenant)): Extension<Tenant>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Json<ConversationPage>, ApiError> {
    let limit = page_size(q.limit, 50)?;
    let mut list = state
        .engine()
        .list_conversations(&tenant, q.after.as_deref(), limit + 1)
        .await?;
    let more = list.len() > limit as usize;
    list.truncate(limit as usize);
    let next_cursor = if more {
        list.last().map(|c| c.id.clone())
    } else {
        None
    };
    Ok(Json(ConversationPage {
        data: list.iter().map(ConversationView::from).collect(),
        next_cursor,
    }))
}

/// One conversation.
#[utoipa::path(get, path = "/v1/conversations/{id}", tag = "conversations",
    params(("id" = String, Path, description = "The conversation id")),
    responses((status = 200, body = ConversationView), (status = 404, body = ErrorBody), V1Errors),
    security(("bearer" = [])))]
pub async fn get_conversation(
    State(state): State<AppState>,
    Extension(Tenant(tenant)): Extension<Tenant>,
    ConversationId(id): ConversationId,
) -> Result<Json<ConversationView>, ApiError> {
    let c = state.engine().get_conversation(&tenant, &id).await?;
    Ok(Json(ConversationView::from(&c)))
}

/// Delete a conversation and its messages.
#[utoipa::path(delete, path = "/v1/conversations/{id}", tag = "conversations",
    params(("id" = String, Path, description = "The conversation id")),
    responses((status = 204), (status = 404, body = ErrorBody), V1Errors), security(("bearer" = [])))]
pub async fn delete_conversation(
    State(state): State<AppState>,
    Extension(Tenant(tenant)): Extension<Tenant>,
    ConversationId(id): ConversationId,
) -> Result<StatusCode, ApiError> {
    state.engine().delete_conversation(&tenant, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Remove a conversation's messages, keeping the conversation (seq keeps counting).
#[utoipa::path(post, path = "/v1/conversations/{id}/clear", tag = "conversations",
    params(("id" = String, Path, description = "The conversation id")),
    responses((status = 200, body = Cleared), (status = 404, body = ErrorBody), V1Errors),
    security(("bearer" = [])))]
pub async fn clear_conversation(
    State(state): State<AppState>,
    Extension(Tenant(tenant)): Extension<Tenant>,
    ConversationId(id): ConversationId,
) -> Result<Json<Cleared>, ApiError> {
    let removed = state.engine().clear_conversation(&tenant, &id).await?;
    Ok(Json(Cleared { removed }))
}

/// Append one message, or several in `{"messages": [...]}` (one transaction: all or none).
/// A message with a client `id` seen before is not stored again: its first `seq` comes back
/// with `duplicate: true`; the same id with a different message is a 409.
#[utoipa::path(post, path = "/v1/conversations/{id}/messages", tag = "messages",
    params(("id" = String, Path, description = "The conversation id")),
    request_body(content = AppendBody, description = "A message (Anthropic- or OpenAI-shaped, \
        optional client `id` and `metadata`), or `{\"messages\": [...]}`"),
    responses((status = 201, body = AppendResponse), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody), V1Errors),
    security(("bearer" = [])))]
pub async fn append_messages(
    State(state): State<AppState>,
    Extension(Tenant(tenant)): Extension<Tenant>,
    ConversationId(id): ConversationId,
    ApiJson(body): ApiJson<Value>,
) -> Result<impl IntoResponse, ApiError> {
    let values = match body {
        Value::Object(mut o) if o.contains_key("messages") && !o.contains_key("role") => {
            if let Some(k) = o.keys().find(|k| *k != "messages") {
                return Err(ApiError::invalid(format!(
                    "unknown field `{k}` next to `messages`"
                )));
            }
            match o.remove("messages") {
                Some(Value::Array(a)) => a,
                _ => return Err(ApiError::invalid("`messages` must be an array of messages")),
            }
        }
        v @ Value::Object(_) => vec![v],
        _ => {
            return Err(ApiError::invalid(
                "the body must be a message object or {\"messages\": [...]}",
            ))
        }
    };
    let limits = state.inner.config.limits;
    if values.len() > limits.max_messages_per_request {
        return Err(ApiError::too_large(format!(
            "{} messages in one request, over the limit of {}",
            values.len(),
            limits.max_messages_per_request
        )));
    }
    let engine = state.engine();
    // Client ids already used for a different message: refused before anything is written.
    // (The engine validates and reports the message errors themselves.)
    let parsed = if values.iter().any(|v| v.get("id").is_some()) {
        conversation_from_value(Value::Array(values.clone()), &ParseOptions::strict()).ok()
    } else {
        None
    };
    if let Some(conv) = &parsed {
        for (i, im) in conv.messages.iter().enumerate() {
            let Some(cid) = &im.message.id else { continue };
            if let Some(stored) = engine
                .store()
                .message_by_client_id(&tenant, &id, cid)
                .await?
            {
                check_same(i, cid, &im.message, &stored)?;
            }
        }
    }
    let report = engine.append_messages(&tenant, &id, values).await?;
    // A concurrent request may have used the same id between the check and the append.
    if let Some(conv) = &parsed {
        for (i, (im, a)) in conv.messages.iter().zip(&report.appended).enumerate() {
            if let (true, Some(cid)) = (a.duplicate, &im.message.id) {
                if let Some(stored) = engine
                    .store()
                    .message_by_client_id(&tenant, &id, cid)
                    .await?
                {
                    check_same(i, cid, &im.message, &stored)?;
                }
            }
        }
    }
    Ok((
        StatusCode::CREATED,
        Json(AppendResponse {
            messages: report
                .appended
                .iter()
                .map(|a| AppendedView {
                    seq: a.seq,
                    duplicate: a.duplicate,
                })
                .collect(),
            warnings: report.warnings,
        }),
    ))
}

/// A retry must carry the message it first carried.
fn check_same(
    i: usize,
    cid: &str,
    sent: &recall_core::Message,
    stored: &recall_engine::store::StoredMessage,
) -> Result<(), ApiError> {
    if sent.to_json() == stored.message.to_json() {
        Ok(())
    } else {
        Err(ApiError::conflict(format!(
            "messages[{i}]: client id '{cid}' was already used for a different message (seq {})",
            stored.seq
        )))
    }
}

/// Messages after a seq, oldest first. A page holds at most `limit` messages and at most
/// `max_page_bytes` of their JSON (always at least one message); `next_after` continues it.
/// The page is read from the store a few messages at a time and written out as it is read.
#[utoipa::path(get, path = "/v1/conversations/{id}/messages", tag = "messages",
    params(("id" = String, Path, description = "The conversation id"), MessagesQuery),
    responses((status = 200, body = MessagePage), (status = 404, body = ErrorBody), V1Errors),
    security(("bearer" = [])))]
pub async fn list_messages(
    State(state): State<AppState>,
    Extension(Tenant(tenant)): Extension<Tenant>,
    ConversationId(id): ConversationId,
    ApiQuery(q): ApiQuery<MessagesQuery>,
) -> Result<axum::response::Response, ApiError> {
    let limit = page_size(q.limit, 100)?;
    let after = q.after.unwrap_or(0);
    if after < 0 {
        return Err(ApiError::invalid("after must be 0 or more"));
    }
    let mut page = crate::pages::MessagePageStream::new(
        state.engine().store().clone(),
        tenant,
        id,
        after,
        limit,
        state.inner.config.limits.max_page_bytes,
    );
    // The first read happens before the answer starts, so that an unknown conversation or a
    // failing database is still a proper error answer.
    page.prefetch().await?;
    Ok(page.into_response())
}

/// The context the conversation would send next: the prompt and stats `recall context`
/// prints. A prompt over `max_context_bytes` is a 413 naming the limit.
#[utoipa::path(post, path = "/v1/conversations/{id}/context", tag = "context",
    params(("id" = String, Path, description = "The conversation id")),
    request_body = Option<ContextBody>,
    responses((status = 200, body = ContextResponse), (status = 404, body = ErrorBody), V1Errors),
    security(("bearer" = [])))]
pub async fn context(
    State(state): State<AppState>,
    Extension(Tenant(tenant)): Extension<Tenant>,
    ConversationId(id): ConversationId,
    RawBody(body): RawBody,
) -> Result<SizedJson, ApiError> {
    let b: ContextBody = optional_json(&body)?;
    let engine = state.engine();
    let format = match b.format {
        Some(f) => f,
        None => {
            let c = engine.get_conversation(&tenant, &id).await?;
            conversation_format(&c).unwrap_or_default()
        }
    };
    let req = ContextRequest {
        format,
        overrides: b.overrides(),
        current: b.current.clone(),
        escape: b.escape.unwrap_or(true),
    };
    let started = Instant::now();
    // A prompt over the limit is refused before it is rendered whole where the policy allows
    // (see `Engine::context_within`).
    let limit = state.inner.config.limits.max_context_bytes;
    let out = engine
        .context_within(&tenant, &id, &req, Some(limit))
        .await?;
    state
        .inner
        .metrics
        .context_built(format.name(), started.elapsed());
    context_json(format.name(), &out.prompt, &out.stats)
}

/// The [`ContextResponse`] of a built context, written straight into a buffer of its size: a
/// text prompt is tens of kilobytes, which axum's `Json` would copy into a `Value`, escape
/// byte by byte and grow into by doubling from 128 bytes.
fn context_json(
    format: &str,
    prompt: &recall_core::render::Prompt,
    stats: &impl serde::Serialize,
) -> Result<SizedJson, ApiError> {
    use recall_core::json_text::push_json_str;
    let failed = |e: serde_json::Error| {
        tracing::error!(error = %e, "a context did not serialise");
        ApiError::internal()
    };
    let hint = match prompt {
        recall_core::render::Prompt::Text(s) => s.len() + s.len() / 16,
        recall_core::render::Prompt::Json(_) => 16 * 1024,
    };
    let mut out = Vec::with_capacity(hint + 1024);
    out.extend_from_slice(b"{\"format\":");
    push_json_str(&mut out, format);
    out.extend_from_slice(b",\"prompt\":");
    match prompt {
        recall_core::render::Prompt::Text(s) => push_json_str(&mut out, s),
        recall_core::render::Prompt::Json(v) => {
            serde_json::to_writer(&mut out, v).map_err(failed)?
        }
    }
    out.extend_from_slice(b",\"stats\":");
    serde_json::to_writer(&mut out, stats).map_err(failed)?;
    out.push(b'}');
    Ok(SizedJson(out))
}

/// A JSON body already serialised.
pub(crate) struct SizedJson(Vec<u8>);

impl IntoResponse for SizedJson {
    fn into_response(self) -> axum::response::Response {
        (
            [(
                axum::http::header::CONTENT_TYPE,
                axum::http::HeaderValue::from_static("application/json"),
            )],
            self.0,
        )
            .into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use recall_core::render::Prompt;
    use serde_json::json;

    /// The hand-written body is byte for byte what serde writes for [`ContextResponse`].
    #[test]
    fn context_json_is_the_context_response() {
        let stats = json!({"included": 2, "notice": null, "warnings": ["a \"b\"\n"]});
        for (format, prompt) in [
            (
                "transcript",
                Prompt::Text("Human: hi \"there\"\n\n---\n\nAssistant: é😀\u{1}".into()),
            ),
            (
                "anthropic",
                Prompt::Json(json!({"messages": [{"role": "user", "content": "x\ty"}]})),
            ),
        ] {
            let SizedJson(body) = context_json(format, &prompt, &stats).unwrap();
            let expected = serde_json::to_vec(&ContextResponse {
                format: format.into(),
                prompt: match prompt {
                    Prompt::Text(s) => Value::String(s),
                    Prompt::Json(v) => v,
                },
                stats: stats.clone(),
            })
            .unwrap();
            assert_eq!(
                String::from_utf8(body).unwrap(),
                String::from_utf8(expected).unwrap()
            );
        }
    }
}
