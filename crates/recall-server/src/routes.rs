//! The REST handlers under `/v1`. Each one reads its input strictly, calls one engine use
//! case for the caller's tenant, and shapes the answer.

use recall_engine::ConversationRef;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::{Extension, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use recall_core::context::ContextRequest;
use recall_core::json_chunks::JsonChunks;
use recall_engine::store::NewConversation;
use serde_json::Value;

use crate::auth::Tenant;
use crate::body::{parse_json, ApiJson, ApiQuery, ConversationId, RawBody};
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::*;

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

/// `after` of the conversation list: a conversation id (the `next_after` of a page) as the
/// server writes them, a UUID in lower-case hyphenated form. Anything else would page from
/// an arbitrary point of the id order.
fn check_cursor(after: &str) -> Result<(), ApiError> {
    // `to_string` is the lower-case hyphenated form.
    let canonical = uuid::Uuid::try_parse(after).is_ok_and(|u| u.to_string() == after);
    if canonical {
        return Ok(());
    }
    let shown: String = after.chars().take(64).collect();
    Err(ApiError::invalid(format!(
        "invalid query string: `after` must be a conversation id (the `next_after` of the \
         previous page, like 0193f0c4-7b8e-7d2a-9c1e-5f6a7b8c9d0e), not '{}'",
        shown.escape_debug()
    )))
}

/// A body that may be empty or JSON `null` (then the defaults), else strict JSON.
pub(crate) fn optional_json<T: serde::de::DeserializeOwned + Default>(
    bytes: &Bytes,
) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) || bytes.trim_ascii() == b"null" {
        Ok(T::default())
    } else {
        parse_json(bytes)
    }
}

/// Create a conversation, or with `key` open the one of that name (creating it on first use).
#[utoipa::path(post, path = "/v1/conversations", tag = "conversations",
    request_body = Option<CreateConversation>,
    responses((status = 201, description = "Created", body = ConversationView),
        (status = 200, description = "The conversation named `key` already existed", body = ConversationView),
        V1Errors),
    security(("bearer" = [])))]
pub async fn create_conversation(
    State(state): State<AppState>,
    Extension(Tenant(tenant)): Extension<Tenant>,
    RawBody(body): RawBody,
) -> Result<impl IntoResponse, ApiError> {
    let b: CreateConversation = optional_json(&body)?;
    let new = NewConversation {
        title: b.title,
        system_prompt: b.system_prompt,
        metadata: b.metadata.unwrap_or_default(),
        policy: b.policy,
    };
    let engine = state.engine();
    let (c, created) = match b.key.as_deref() {
        Some(key) => engine.open_conversation(&tenant, key, new).await?,
        None => (engine.create_conversation(&tenant, new).await?, true),
    };
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(ConversationView::from(&c))))
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
    if let Some(after) = q.after.as_deref() {
        check_cursor(after)?;
    }
    let mut list = state
        .engine()
        .list_conversations(&tenant, q.after.as_deref(), limit + 1)
        .await?;
    let more = list.len() > limit as usize;
    list.truncate(limit as usize);
    let next_after = if more {
        list.last().map(|c| c.id.clone())
    } else {
        None
    };
    Ok(Json(ConversationPage {
        data: list.iter().map(ConversationView::from).collect(),
        next_after,
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
    Ok(Json(
        state
            .engine()
            .conversation_view(ConversationRef::new(&tenant, &id))
            .await?,
    ))
}

/// Delete a conversation and its messages.
/// A conversation with forks is refused (409) unless `cascade=true`, which deletes its forks
/// (and theirs) too.
#[utoipa::path(delete, path = "/v1/conversations/{id}", tag = "conversations",
    params(("id" = String, Path, description = "The conversation id"), DeleteQuery),
    responses((status = 204), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody),
        V1Errors),
    security(("bearer" = [])))]
pub async fn delete_conversation(
    State(state): State<AppState>,
    Extension(Tenant(tenant)): Extension<Tenant>,
    ConversationId(id): ConversationId,
    ApiQuery(q): ApiQuery<DeleteQuery>,
) -> Result<StatusCode, ApiError> {
    state
        .engine()
        .delete_conversation(
            ConversationRef::new(&tenant, &id),
            q.cascade.unwrap_or(false),
        )
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Remove a conversation's messages, keeping the conversation (seq keeps counting). A
/// conversation with forks is refused (409): its forks read its history. A cleared fork stops
/// reading its parent.
#[utoipa::path(post, path = "/v1/conversations/{id}/clear", tag = "conversations",
    params(("id" = String, Path, description = "The conversation id")),
    responses((status = 200, body = Cleared), (status = 404, body = ErrorBody),
        (status = 409, description = "Forks read its history", body = ErrorBody), V1Errors),
    security(("bearer" = [])))]
pub async fn clear_conversation(
    State(state): State<AppState>,
    Extension(Tenant(tenant)): Extension<Tenant>,
    ConversationId(id): ConversationId,
) -> Result<Json<Cleared>, ApiError> {
    let removed = state
        .engine()
        .clear_conversation(ConversationRef::new(&tenant, &id))
        .await?;
    Ok(Json(Cleared { removed }))
}

/// Append one message, or several in `{"messages": [...]}` (one transaction: all or none).
/// A message with a client `id` seen before is not stored again: its first `seq` comes back
/// with `duplicate: true`; the same id with a different message (role, content or metadata) is
/// a 409 naming the message, the id and its seq, and nothing of the request is stored. A
/// message may carry `created_at` (RFC 3339), kept as given; without one it gets the server's
/// clock. Times do not go backwards within a conversation: a `created_at` earlier than the
/// message before it, or more than 5 minutes in the future, is a 422 naming the message and
/// both times, and nothing of the request is stored.
#[utoipa::path(post, path = "/v1/conversations/{id}/messages", tag = "messages",
    params(("id" = String, Path, description = "The conversation id")),
    request_body(content = AppendBody, description = "A message (Anthropic- or OpenAI-shaped, \
        optional client `id`, `metadata` and `created_at`), or `{\"messages\": [...]}`"),
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
    // A client id reused for a different message is a conflict the engine reports (decided
    // under the store's lock: nothing of the batch is stored).
    let report = state
        .engine()
        .append_messages(ConversationRef::new(&tenant, &id), values)
        .await?;
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
) -> Result<ChunkedJson, ApiError> {
    let b: ContextBody = optional_json(&body)?;
    let req = ContextRequest {
        format: b.format,
        overrides: b.policy,
        current: b.current,
        escape: b.escape.unwrap_or(true),
        query: b.query,
        summary: None,
    };
    let started = Instant::now();
    // A prompt over the engine's max_context_bytes is refused before it is rendered whole
    // where the policy allows (see `Engine::context_within`).
    let out = state
        .engine()
        .context(ConversationRef::new(&tenant, &id), &req)
        .await?;
    let format = out.format.name();
    state.inner.metrics.context_built(format, started.elapsed());
    let window = out
        .window_range(req.current.is_some())
        .map(|(first, last)| WindowView {
            first_seq: first as i64,
            last_seq: last as i64,
        });
    let sections = out.sections();
    context_json(
        format,
        out.prompt,
        &out.stats,
        window,
        &out.policy,
        &sections,
    )
}

/// The [`ContextResponse`] of a built context, written as the client reads it: the prompt is
/// escaped a piece at a time ([`JsonChunks`]) and each piece of the prompt is dropped once
/// written, so an answer is never held whole beside the prompt it is made of. Escaping can make
/// the answer six times the prompt (a control character is `\u0001`), and a client that
/// reads slowly would otherwise keep the whole answer alive. The size is measured first
/// ([`recall_engine::prompt_bytes`]: a scan of a text prompt, a serialisation into a counter
/// for a JSON one) and sent as `Content-Length`; the other parts are small and serialised
/// beforehand.
fn context_json(
    format: &str,
    prompt: recall_core::render::Prompt,
    stats: &impl serde::Serialize,
    window: Option<WindowView>,
    policy: &impl serde::Serialize,
    sections: &impl serde::Serialize,
) -> Result<ChunkedJson, ApiError> {
    use recall_core::json_text::{json_str_len, push_json_str};
    let failed = |e: serde_json::Error| {
        tracing::error!(error = %e, "a context did not serialise");
        ApiError::internal()
    };
    let mut head = b"{\"format\":".to_vec();
    push_json_str(&mut head, format);
    head.extend_from_slice(b",\"prompt\":");
    let mut tail = b",\"stats\":".to_vec();
    serde_json::to_writer(&mut tail, stats).map_err(failed)?;
    tail.extend_from_slice(b",\"window\":");
    serde_json::to_writer(&mut tail, &window).map_err(failed)?;
    tail.extend_from_slice(b",\"policy\":");
    serde_json::to_writer(&mut tail, policy).map_err(failed)?;
    tail.extend_from_slice(b",\"sections\":");
    serde_json::to_writer(&mut tail, sections).map_err(failed)?;
    tail.push(b'}');
    let size = head.len() + recall_engine::prompt_bytes(&prompt) + tail.len();
    debug_assert_eq!(json_str_len(format) + 20, head.len());
    let mut chunks = JsonChunks::new();
    chunks.push_raw(head);
    match prompt {
        recall_core::render::Prompt::Text(s) => chunks.push_str(s),
        recall_core::render::Prompt::Json(v) => chunks.push_value(v),
    }
    chunks.push_raw(tail);
    Ok(ChunkedJson {
        chunks,
        left: size as u64,
    })
}

/// A JSON answer of a known size, written a piece at a time as the client reads it.
pub(crate) struct ChunkedJson {
    chunks: JsonChunks,
    /// Bytes not yet handed to hyper: the `Content-Length` at first.
    left: u64,
}

/// The size of one piece of a [`ChunkedJson`]: large enough that a piece costs little to
/// hand over, small beside what a slow client's socket buffers hold anyway.
const PIECE: usize = 64 * 1024;

impl http_body::Body for ChunkedJson {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        let mut piece = Vec::with_capacity(PIECE + 16);
        if !self.chunks.fill(&mut piece, PIECE) {
            return std::task::Poll::Ready(None);
        }
        // The measured size and the bytes written agree (a test checks it); saturating keeps
        // a disagreement from wrapping into a huge hint.
        self.left = self.left.saturating_sub(piece.len() as u64);
        std::task::Poll::Ready(Some(Ok(http_body::Frame::data(piece.into()))))
    }

    fn is_end_stream(&self) -> bool {
        self.left == 0
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(self.left)
    }
}

impl IntoResponse for ChunkedJson {
    fn into_response(self) -> axum::response::Response {
        let length = self.left;
        (
            [
                (
                    axum::http::header::CONTENT_TYPE,
                    axum::http::HeaderValue::from_static("application/json"),
                ),
                (
                    axum::http::header::CONTENT_LENGTH,
                    axum::http::HeaderValue::from(length),
                ),
            ],
            axum::body::Body::new(self),
        )
            .into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_are_conversation_ids() {
        let id = uuid::Uuid::now_v7().to_string();
        assert!(check_cursor(&id).is_ok());
        for bad in [
            "abc".to_string(),
            String::new(),
            "0".to_string(),
            id.to_uppercase(),
            id.replace('-', ""),
            format!("{{{id}}}"),
            format!("urn:uuid:{id}"),
            format!("{id} "),
        ] {
            let e = check_cursor(&bad).unwrap_err();
            assert_eq!(e.status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
            assert!(e.message.contains("`after`"), "{}", e.message);
        }
    }
    use recall_core::render::Prompt;
    use serde_json::json;

    fn collect(mut answer: ChunkedJson) -> Vec<u8> {
        use http_body::Body;
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        let mut body = Vec::new();
        while let std::task::Poll::Ready(Some(frame)) =
            std::pin::Pin::new(&mut answer).poll_frame(&mut cx)
        {
            body.extend_from_slice(&frame.unwrap().into_data().unwrap());
        }
        assert!(answer.is_end_stream());
        body
    }

    /// A large prompt leaves in pieces of about [`PIECE`] bytes, and the announced size shrinks
    /// with each.
    #[test]
    fn a_large_context_is_written_a_piece_at_a_time() {
        let prompt = Prompt::Text("\u{1}abc\n".repeat(200_000));
        let mut answer =
            context_json("text", prompt, &json!({}), None, &json!({}), &json!({})).unwrap();
        let total = answer.left;
        assert!(total > 2_000_000, "{total}");
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        let mut pieces = 0u64;
        let mut seen = 0u64;
        use http_body::Body;
        while let std::task::Poll::Ready(Some(frame)) =
            std::pin::Pin::new(&mut answer).poll_frame(&mut cx)
        {
            let n = frame.unwrap().into_data().unwrap().len() as u64;
            assert!(n > 0 && n <= PIECE as u64 + 8, "{n}");
            seen += n;
            pieces += 1;
            assert_eq!(answer.size_hint().exact(), Some(total - seen));
        }
        assert_eq!(seen, total);
        assert!(pieces >= total / PIECE as u64, "{pieces}");
    }

    /// The hand-written body is byte for byte what serde writes for [`ContextResponse`].
    #[test]
    fn context_json_is_the_context_response() {
        let stats = recall_core::select::Stats {
            included: 2,
            warnings: vec!["a \"b\"\n".into()],
            ..Default::default()
        };
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
            let policy = recall_core::policy::Policy {
                max_tokens: Some(8000),
                ..Default::default()
            };
            for window in [
                None,
                Some(WindowView {
                    first_seq: 3,
                    last_seq: 9,
                }),
            ] {
                let sections = recall_core::context::Sections {
                    summary: Some(recall_core::context::SummarySectionView {
                        from_seq: 1,
                        to_seq: 4,
                        text: "<conversation_summary>\n  \"é\"\n</conversation_summary>".into(),
                    }),
                    recalled: None,
                };
                let answer =
                    context_json(format, prompt.clone(), &stats, window, &policy, &sections)
                        .unwrap();
                let size = answer.left;
                let body = collect(answer);
                assert_eq!(body.len() as u64, size, "{format}: the announced size");
                let expected = serde_json::to_vec(&ContextResponse {
                    format: format.into(),
                    prompt: match &prompt {
                        Prompt::Text(s) => Value::String(s.clone()),
                        Prompt::Json(v) => v.clone(),
                    },
                    stats: stats.clone(),
                    window,
                    policy: policy.clone(),
                    sections: sections.clone(),
                })
                .unwrap();
                assert_eq!(
                    String::from_utf8(body).unwrap(),
                    String::from_utf8(expected).unwrap()
                );
            }
        }
    }
}
