//! The drop-in gateway: `POST /anthropic/v1/messages` and `POST /openai/v1/chat/completions`
//! speak the providers' APIs, so the official SDKs (base URL pointed here) and the Claude
//! Code CLI (`ANTHROPIC_BASE_URL`) keep their code and get recall's memory. The turn is the
//! engine's ([`recall_engine::Engine::gateway_prepare`], `gateway_forward`); this module
//! reads the HTTP request, runs the forwarding in a task of its own (so a client going away
//! leaves a `partial` reply, not a dropped one) and writes errors in each provider's shape.
//!
//! Errors of the auth and rate-limit layers on these routes are rewritten in the provider's
//! shape too, and each forwarded turn adds to the gateway metrics.

use std::task::{ready, Poll};
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Extension, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use recall_core::gateway::Provider;
use recall_engine::llm::Usage;
use recall_engine::{GatewayEvent, GatewayRequest};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::auth::Tenant;
use crate::body::RawBody;
use crate::error::ApiError;
use crate::metrics::GatewayFigures;
use crate::state::AppState;

/// The request header naming the conversation (`new`, or absent, creates one); the response
/// carries the conversation's id in it.
pub const CONVERSATION_HEADER: HeaderName = HeaderName::from_static("x-recall-conversation");

/// The response header saying how the request's history was taken: `append`, `mirror`,
/// `retry` or `fork`.
pub const MODE_HEADER: HeaderName = HeaderName::from_static("x-recall-mode");

/// `Server-Timing: recall;dur=MS`: recall's own time on the request before forwarding it
/// (reading, storing, building the context), in milliseconds.
pub const SERVER_TIMING: HeaderName = HeaderName::from_static("server-timing");

/// `POST /anthropic/v1/messages`.
pub async fn anthropic(
    State(state): State<AppState>,
    Extension(tenant): Extension<Tenant>,
    headers: HeaderMap,
    body: RawBody,
) -> Response {
    handle(Provider::Anthropic, state, tenant, headers, body).await
}

/// `POST /openai/v1/chat/completions`.
pub async fn openai(
    State(state): State<AppState>,
    Extension(tenant): Extension<Tenant>,
    headers: HeaderMap,
    body: RawBody,
) -> Response {
    handle(Provider::OpenAi, state, tenant, headers, body).await
}

async fn handle(
    provider: Provider,
    state: AppState,
    Tenant(tenant): Tenant,
    headers: HeaderMap,
    RawBody(bytes): RawBody,
) -> Response {
    let received = Instant::now();
    let fail = |e: ApiError| {
        let f = figures(provider, e.status.as_u16(), &Usage::default());
        state.inner.metrics.gateway(provider.name(), f);
        provider_error(provider, &e)
    };
    // A configuration problem, not a passing one: a 404 (`not_found_error`), which the
    // providers' SDKs do not retry, where a 503 made them retry twice before raising.
    let Some(upstream) = state.inner.upstreams.gateway.upstream(provider).cloned() else {
        return fail(ApiError::new(
            StatusCode::NOT_FOUND,
            "no_upstream",
            format!(
                "this server has no {} upstream: start `recall serve` with {} in its environment",
                provider.name(),
                match provider {
                    Provider::Anthropic => "ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for another server)",
                    Provider::OpenAi => "OPENAI_API_KEY (OpenAI's API), OPENAI_BASE_URL (another server, with OPENAI_API_KEY if it needs one), or the local model running",
                }
            ),
        ));
    };
    let body: Value = match crate::body::parse_json(&bytes) {
        Ok(v) => v,
        Err(e) => return fail(e),
    };
    let conversation = match headers.get(&CONVERSATION_HEADER).map(|v| v.to_str()) {
        None => None,
        Some(Ok(v)) => Some(v.to_string()),
        Some(Err(_)) => {
            return fail(ApiError::invalid(
                "the x-recall-conversation header is not text",
            ))
        }
    };
    let engine = state.engine().clone();
    let call = match engine
        .gateway_prepare(
            &tenant,
            GatewayRequest {
                provider,
                conversation,
                body,
                new_policy: state.inner.upstreams.gateway.policy.clone(),
            },
        )
        .await
    {
        Ok(c) => c,
        Err(e) => return fail(ApiError::from(e)),
    };
    let added = received.elapsed();
    let (tx, mut rx) = mpsc::channel::<GatewayEvent>(16);
    let task_state = state.clone();
    let conversation_id = call.conversation_id.clone();
    let mode = call.mode;
    // The forwarding runs to its end whatever the client does: it stores the reply.
    let forward = tokio::spawn(async move {
        let out = task_state
            .engine()
            .gateway_forward(&tenant, &call, &upstream, &headers, tx)
            .await;
        if let Err(e) = &out {
            tracing::error!(error = %e, "the gateway could not store a reply");
        }
        out
    });
    let mut reply_headers = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_str(&conversation_id) {
        reply_headers.insert(CONVERSATION_HEADER, v);
    }
    reply_headers.insert(MODE_HEADER, HeaderValue::from_static(mode.name()));
    // recall's own time before forwarding, for whoever measures what the gateway adds.
    if let Ok(v) = HeaderValue::from_str(&format!("recall;dur={:.3}", added.as_secs_f64() * 1000.0))
    {
        reply_headers.insert(SERVER_TIMING, v);
    }
    let (status, upstream_headers) = match rx.recv().await {
        Some(GatewayEvent::Head { status, headers }) => (status, headers),
        _ => {
            // No response from the provider: the task's outcome says why.
            let why = match forward.await {
                Ok(Ok(o)) => o
                    .error
                    .map(|e| e.to_string())
                    .unwrap_or_else(|| "no response".into()),
                Ok(Err(e)) => e.to_string(),
                Err(e) => e.to_string(),
            };
            let mut res = fail(ApiError::new(
                StatusCode::BAD_GATEWAY,
                "upstream_error",
                format!("the {} upstream did not answer: {why}", provider.name()),
            ));
            res.headers_mut().extend(reply_headers);
            return res;
        }
    };
    let metrics_state = state.clone();
    tokio::spawn(async move {
        if let Ok(Ok(o)) = forward.await {
            let f = GatewayFigures {
                added: Some(added),
                upstream: o.upstream_head,
                ..figures(provider, status, &o.usage)
            };
            metrics_state.inner.metrics.gateway(provider.name(), f);
        }
    });
    // An abort is held back one poll: hyper flushes what it holds (the head, the chunks
    // before) when the body is pending, but drops it when the body fails, and a client that
    // got no head would not even learn its conversation's id.
    let mut aborting = false;
    let stream = futures::stream::poll_fn(move |cx| {
        if aborting {
            return Poll::Ready(Some(Err(std::io::Error::other(
                "the provider's stream broke off",
            ))));
        }
        match ready!(rx.poll_recv(cx)) {
            Some(GatewayEvent::Chunk(b)) => Poll::Ready(Some(Ok(b))),
            Some(GatewayEvent::Head { .. }) => Poll::Ready(Some(Ok(axum::body::Bytes::new()))),
            Some(GatewayEvent::Abort) => {
                aborting = true;
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            None => Poll::Ready(None),
        }
    });
    let mut res = Response::new(Body::from_stream(stream));
    *res.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    for (name, value) in upstream_headers {
        res.headers_mut().insert(name, value);
    }
    res.headers_mut().extend(reply_headers);
    res
}

/// A request's figures from its status and the usage the provider reported.
fn figures(provider: Provider, status: u16, usage: &Usage) -> GatewayFigures {
    let input = usage.input_tokens.unwrap_or(0);
    let read = usage.cache_read_input_tokens.unwrap_or(0);
    // OpenAI counts cached tokens inside `prompt_tokens`, Anthropic beside them.
    let uncached = match provider {
        Provider::Anthropic => input,
        Provider::OpenAi => input.saturating_sub(read),
    };
    GatewayFigures {
        status,
        added: None,
        upstream: None,
        input_tokens: uncached,
        cache_read_tokens: read,
        cache_creation_tokens: usage.cache_creation_input_tokens.unwrap_or(0),
    }
}

/// Rewrites recall's own errors on the gateway routes (authentication, rate limits, body
/// limits, …) in the provider's error shape, so the SDKs raise their usual exceptions.
pub async fn anthropic_errors(req: Request, next: Next) -> Response {
    reshape(Provider::Anthropic, next.run(req).await)
}

/// [`anthropic_errors`] for the OpenAI route.
pub async fn openai_errors(req: Request, next: Next) -> Response {
    reshape(Provider::OpenAi, next.run(req).await)
}

fn reshape(provider: Provider, res: Response) -> Response {
    match res.extensions().get::<ApiError>() {
        Some(e) if res.extensions().get::<Reshaped>().is_none() => provider_error(provider, e),
        _ => res,
    }
}

/// Marks a response already in a provider's shape.
#[derive(Debug, Clone, Copy)]
struct Reshaped;

/// An error in the provider's JSON shape: Anthropic's `{"type": "error", "error": {"type",
/// "message"}}` with its error types, OpenAI's `{"error": {"message", "type", "param",
/// "code"}}`. A 422 (a body recall refuses) is a 400, as the providers answer it.
pub fn provider_error(provider: Provider, e: &ApiError) -> Response {
    let status = match e.status {
        StatusCode::UNPROCESSABLE_ENTITY => StatusCode::BAD_REQUEST,
        s => s,
    };
    let body = match provider {
        Provider::Anthropic => {
            let kind = match status.as_u16() {
                400 | 409 | 415 => "invalid_request_error",
                401 => "authentication_error",
                403 => "permission_error",
                404 => "not_found_error",
                413 => "request_too_large",
                429 => "rate_limit_error",
                503 | 529 => "overloaded_error",
                _ => "api_error",
            };
            json!({"type": "error", "error": {"type": kind, "message": e.message}})
        }
        Provider::OpenAi => {
            let kind = match status.as_u16() {
                401 => "authentication_error",
                404 => "not_found_error",
                429 => "rate_limit_exceeded",
                s if s >= 500 => "server_error",
                _ => "invalid_request_error",
            };
            json!({"error": {"message": e.message, "type": kind, "param": null, "code": e.kind}})
        }
    };
    let mut res = (status, axum::Json(body)).into_response();
    if let Some(s) = e.retry_after {
        res.headers_mut()
            .insert(axum::http::header::RETRY_AFTER, HeaderValue::from(s));
    }
    res.extensions_mut().insert(Reshaped);
    res.extensions_mut().insert(e.kind);
    res
}
