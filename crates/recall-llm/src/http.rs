//! What the two HTTP adapters share: sending with retries, mapping transport errors, and the
//! task that reads an SSE body into events.
//!
//! One skeleton for both providers: an `Endpoint` is set up once from an `HttpConfig` (each
//! provider's defaults: `HttpConfig::anthropic()`, `HttpConfig::openai()`), and `stream_call`
//! encodes, sends with retries, checks the stream and decodes its SSE in a task. `Backend` is
//! implemented once for every `HttpProvider`; a provider brings only its name, format, body,
//! headers, error reading and decoder.

use std::time::Duration;

use futures::StreamExt;
use reqwest::header::HeaderMap;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::backend::{channel, Emitter, EventStream};
use crate::error::{error_chain, redact, BackendError, BackendErrorKind};
use crate::event::BackendEvent;
use crate::retry::{is_retryable_status, parse_retry_after, RetryPolicy};
use crate::sse::{SseEvent, SseParser};

/// Time limits of an HTTP backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Connecting (TCP and TLS).
    pub connect: Duration,
    /// The longest silence allowed while waiting for the response head or the next body
    /// bytes. Anthropic sends `ping` events, so a healthy stream is never silent this long.
    pub idle: Duration,
    /// The whole call, retries and streaming included; `None` for no limit.
    pub total: Option<Duration>,
}

impl Default for Timeouts {
    /// 10 s to connect, 5 minutes of silence, 15 minutes in all.
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            idle: Duration::from_secs(300),
            total: Some(Duration::from_secs(900)),
        }
    }
}

/// How long an error body may take to read, and how much of it is read.
const ERROR_BODY_TIMEOUT: Duration = Duration::from_secs(10);
const ERROR_BODY_MAX: usize = 64 * 1024;

/// Builds the shared reqwest client.
pub(crate) fn client(timeouts: &Timeouts) -> Result<reqwest::Client, BackendError> {
    reqwest::Client::builder()
        .connect_timeout(timeouts.connect)
        .build()
        .map_err(|e| BackendError::invalid_request(format!("cannot build the HTTP client: {e}")))
}

/// Joins a base URL and a path, accepting a base with or without a trailing slash.
pub(crate) fn join_url(base: &str, path: &str) -> Result<reqwest::Url, BackendError> {
    let url = format!("{}{}", base.trim_end_matches('/'), path);
    reqwest::Url::parse(&url)
        .map_err(|e| BackendError::invalid_request(format!("bad base URL '{base}': {e}")))
}

/// A mapped HTTP error status: the error, and the `retry-after` the provider asked for.
pub(crate) struct StatusError {
    pub error: BackendError,
    pub retry_after: Option<Duration>,
}

/// Sends the request built by `build` until it gets a 2xx, retrying retryable statuses
/// under `policy` (waiting as the provider's `retry-after` asks). `map_status` turns an
/// error status and its body into an error (it must redact the key). Cancellation and the
/// deadline are honoured while sending and while waiting.
pub(crate) async fn send(
    build: impl Fn() -> reqwest::RequestBuilder,
    policy: &RetryPolicy,
    timeouts: &Timeouts,
    deadline: Option<Instant>,
    cancel: &CancellationToken,
    secret: Option<&str>,
    map_status: impl Fn(u16, &str) -> BackendError,
) -> Result<reqwest::Response, BackendError> {
    let mut retry = 0u32;
    loop {
        let attempt = async {
            let resp = tokio::time::timeout(timeouts.idle, build().send())
                .await
                .map_err(|_| {
                    BackendError::new(BackendErrorKind::Timeout {
                        after: timeouts.idle,
                    })
                })?
                .map_err(|e| transport_error(&e, secret, false))?;
            let status = resp.status().as_u16();
            if resp.status().is_success() {
                return Ok(Ok(resp));
            }
            let retry_after = header_retry_after(resp.headers());
            let body = read_error_body(resp).await;
            let mut error = map_status(status, &body);
            if let BackendErrorKind::RateLimited { retry_after: ra } = &mut error.kind {
                *ra = retry_after;
            }
            Ok::<_, BackendError>(Err((status, StatusError { error, retry_after })))
        };
        let outcome = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(BackendErrorKind::Cancelled.into()),
            _ = sleep_until_opt(deadline) => return Err(total_timeout(timeouts)),
            r = attempt => r,
        };
        let (status, err) = match outcome? {
            Ok(resp) => return Ok(resp),
            Err(e) => e,
        };
        if !is_retryable_status(status) {
            return Err(err.error);
        }
        let Some(wait) = policy.delay(retry, err.retry_after) else {
            return Err(err.error);
        };
        tracing::warn!(
            status,
            retry = retry + 1,
            wait_ms = wait.as_millis() as u64,
            "provider returned a retryable status; retrying"
        );
        tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(BackendErrorKind::Cancelled.into()),
            _ = sleep_until_opt(deadline) => return Err(total_timeout(timeouts)),
            _ = tokio::time::sleep(wait) => {}
        }
        retry += 1;
    }
}

fn total_timeout(t: &Timeouts) -> BackendError {
    BackendError::new(BackendErrorKind::Timeout {
        after: t.total.unwrap_or(t.idle),
    })
}

/// Sleeps until `deadline`, or forever without one.
pub(crate) async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

fn header_retry_after(h: &HeaderMap) -> Option<Duration> {
    h.get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_retry_after)
}

/// Reads at most [`ERROR_BODY_MAX`] bytes of an error body, giving up after
/// [`ERROR_BODY_TIMEOUT`].
async fn read_error_body(resp: reqwest::Response) -> String {
    let read = async {
        let mut body = Vec::new();
        let mut stream = resp.bytes_stream();
        while let Some(Ok(chunk)) = stream.next().await {
            body.extend_from_slice(&chunk);
            if body.len() >= ERROR_BODY_MAX {
                body.truncate(ERROR_BODY_MAX);
                break;
            }
        }
        String::from_utf8_lossy(&body).into_owned()
    };
    tokio::time::timeout(ERROR_BODY_TIMEOUT, read)
        .await
        .unwrap_or_default()
}

/// Maps a reqwest error. `started` tells whether the response had begun (then a failure is
/// a dropped stream rather than a connection failure). The URL is left out.
pub(crate) fn transport_error(
    e: &reqwest::Error,
    secret: Option<&str>,
    started: bool,
) -> BackendError {
    let message = redact(&error_chain(&WithoutUrl(e)), secret);
    let kind = if e.is_connect() || !started {
        BackendErrorKind::Connect { message }
    } else {
        BackendErrorKind::Stream { message }
    };
    BackendError::new(kind)
}

/// `host:port` of a server on this machine (a loopback address or `localhost`), the only
/// ones whose going away is worth checking for: a local model server someone stopped.
pub(crate) fn loopback_address(url: &reqwest::Url) -> Option<String> {
    let port = url.port_or_known_default()?;
    let host = url.host_str()?;
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = bare == "localhost"
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    loopback.then(|| format!("{host}:{port}"))
}

/// Whether something still listens at `addr` (a connect within half a second).
pub(crate) async fn accepts_connections(addr: &str) -> bool {
    matches!(
        tokio::time::timeout(
            Duration::from_millis(500),
            tokio::net::TcpStream::connect(addr)
        )
        .await,
        Ok(Ok(_))
    )
}

/// A dropped stream whose local server no longer listens: it was stopped (or crashed), which
/// is what the user needs to hear rather than the transport's "unexpected EOF".
pub(crate) fn stopped_message(addr: &str, transport: &str) -> String {
    format!(
        "the model server at {addr} stopped while answering (it no longer accepts \
         connections; was it stopped, or did it crash?): {transport}"
    )
}

/// Displays a reqwest error without its URL (which could hold credentials in userinfo).
struct WithoutUrl<'a>(&'a reqwest::Error);

impl std::fmt::Debug for WithoutUrl<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl std::fmt::Display for WithoutUrl<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = self.0.to_string();
        match self.0.url() {
            Some(url) => f.write_str(
                &text
                    .replace(&format!(" for url ({url})"), "")
                    .replace(&format!(" ({url})"), ""),
            ),
            None => f.write_str(&text),
        }
    }
}

impl std::error::Error for WithoutUrl<'_> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(self.0)
    }
}

/// What a protocol decoder tells the reading task after an SSE event.
pub(crate) enum Flow {
    /// Keep reading.
    Continue,
    /// The reply is complete; the events pushed include the terminal one.
    Finished,
}

/// Turns SSE events of one provider into [`BackendEvent`]s.
pub(crate) trait SseDecoder: Send + 'static {
    /// Handles one event, pushing what it produced to `out`. An `Err` ends the stream with
    /// that error.
    fn on_event(&mut self, ev: SseEvent, out: &mut Vec<BackendEvent>)
        -> Result<Flow, BackendError>;

    /// The body ended before [`Flow::Finished`]: push the last events, ending with the
    /// terminal one (a completion for lenient protocols, usually an error).
    fn on_eof(&mut self, out: &mut Vec<BackendEvent>);

    /// Bytes held for content not emitted yet (tool calls' arguments while they stream),
    /// which the reply's cap counts as they arrive ([`crate::ReplyMeter`]).
    fn pending_bytes(&self) -> usize {
        0
    }
}

/// Spawns the task that reads `resp`'s SSE body through `decoder` and returns the event
/// stream. The task stops on the terminal event, on cancel, at the deadline, after
/// `timeouts.idle` of silence, or when the consumer drops the stream.
pub(crate) fn spawn_sse<D: SseDecoder>(
    resp: reqwest::Response,
    mut decoder: D,
    cancel: CancellationToken,
    timeouts: Timeouts,
    deadline: Option<Instant>,
    secret: Option<String>,
    mut meter: Option<crate::ReplyMeter>,
) -> EventStream {
    let (mut em, stream) = channel();
    let local = loopback_address(resp.url());
    tokio::spawn(async move {
        let mut body = resp.bytes_stream();
        let mut parser = SseParser::default();
        let mut out: Vec<BackendEvent> = Vec::new();
        loop {
            let next = tokio::select! {
                biased;
                _ = cancel.cancelled() => {
                    em.fail(BackendErrorKind::Cancelled.into()).await;
                    return;
                }
                _ = em.closed() => return,
                _ = sleep_until_opt(deadline) => {
                    em.fail(total_timeout(&timeouts)).await;
                    return;
                }
                r = tokio::time::timeout(timeouts.idle, body.next()) => r,
            };
            let chunk = match next {
                Err(_) => {
                    em.fail(
                        BackendErrorKind::Timeout {
                            after: timeouts.idle,
                        }
                        .into(),
                    )
                    .await;
                    return;
                }
                Ok(None) => {
                    decoder.on_eof(&mut out);
                    forward(&mut em, &mut out).await;
                    return;
                }
                Ok(Some(Err(e))) => {
                    let mut err = transport_error(&e, secret.as_deref(), true);
                    if let BackendErrorKind::Connect { message } = err.kind {
                        err.kind = BackendErrorKind::Stream { message };
                    }
                    if let (Some(addr), BackendErrorKind::Stream { message }) = (&local, &err.kind)
                    {
                        if !accepts_connections(addr).await {
                            err.kind = BackendErrorKind::Stream {
                                message: stopped_message(addr, message),
                            };
                        }
                    }
                    em.fail(err).await;
                    return;
                }
                Ok(Some(Ok(chunk))) => chunk,
            };
            let events = match parser.feed(&chunk) {
                Ok(evs) => evs,
                Err(msg) => {
                    em.fail(BackendError::protocol(msg)).await;
                    return;
                }
            };
            for ev in events {
                let flow = decoder.on_event(ev, &mut out);
                // Past the cap: what came before it is passed on, then the error; the body is
                // not read further (dropping it closes the connection).
                let pending = decoder.pending_bytes();
                if let Some(e) = meter.as_mut().and_then(|m| m.cut(&mut out, pending)) {
                    forward(&mut em, &mut out).await;
                    em.fail(e).await;
                    return;
                }
                if !forward(&mut em, &mut out).await {
                    return;
                }
                match flow {
                    Ok(Flow::Continue) => {}
                    Ok(Flow::Finished) => return,
                    Err(e) => {
                        em.fail(e).await;
                        return;
                    }
                }
            }
        }
    });
    stream
}

/// Sends the buffered events; false when the consumer is gone or the stream has ended.
async fn forward(em: &mut Emitter, out: &mut Vec<BackendEvent>) -> bool {
    for ev in out.drain(..) {
        if !em.send(ev).await {
            return false;
        }
    }
    !em.finished()
}

/// An HTTP provider's endpoint (Anthropic, OpenAI), set up once from its configuration: the
/// client, the URL requests go to and the settings every call uses. [`stream_call`] does the
/// rest the same way for both: encode, send with retries, check the content type, decode the
/// SSE body in a task of its own; each provider brings its headers, body, error reading and
/// decoder.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    pub client: reqwest::Client,
    pub url: reqwest::Url,
    retry: RetryPolicy,
    timeouts: Timeouts,
    api_key: Option<crate::ApiKey>,
    /// The environment variable named in authentication errors.
    key_env: String,
    /// The provider's own reading of an error status (its error JSON).
    map_status: fn(u16, &str, Option<&str>, &str) -> BackendError,
}

/// Settings of an HTTP backend (Anthropic, OpenAI-compatible). Start from a provider's
/// defaults, [`HttpConfig::anthropic`] or [`HttpConfig::openai`], and change what differs:
///
/// ```
/// use recall_llm::HttpConfig;
/// let local = HttpConfig {
///     base_url: "http://127.0.0.1:8080/v1".into(),
///     ..HttpConfig::openai()
/// };
/// assert_eq!(local.key_env, "OPENAI_API_KEY");
/// ```
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Where the API is (see each provider's defaults for the form).
    pub base_url: String,
    /// Sent with every request when set; local servers may need none.
    pub api_key: Option<crate::ApiKey>,
    /// The model used when the request names none.
    pub model: String,
    /// Retries on 429, 5xx (and Anthropic's 529) before any output.
    pub retry: RetryPolicy,
    /// Connect, idle and total time limits.
    pub timeouts: Timeouts,
    /// Where the user sets the key, named in authentication errors.
    pub key_env: String,
}

impl HttpConfig {
    /// These settings with `api_key`.
    pub fn with_key(self, api_key: impl Into<crate::ApiKey>) -> Self {
        HttpConfig {
            api_key: Some(api_key.into()),
            ..self
        }
    }
}

impl Endpoint {
    /// The endpoint `path` of `config`'s server; fails on a bad base URL.
    pub fn new(
        config: &HttpConfig,
        path: &str,
        map_status: fn(u16, &str, Option<&str>, &str) -> BackendError,
    ) -> Result<Self, BackendError> {
        Ok(Endpoint {
            client: client(&config.timeouts)?,
            url: join_url(&config.base_url, path)?,
            retry: config.retry.clone(),
            timeouts: config.timeouts,
            api_key: config.api_key.clone(),
            key_env: config.key_env.clone(),
            map_status,
        })
    }
}

/// `Content-Type: application/json` and `Accept: text/event-stream`, and the key (when
/// there is one) as a sensitive header `name` whose value is `prefix` then the key.
pub(crate) fn stream_headers(
    api_key: Option<&crate::ApiKey>,
    name: &'static str,
    prefix: &str,
) -> Result<HeaderMap, BackendError> {
    use reqwest::header::{HeaderValue, ACCEPT, CONTENT_TYPE};
    let mut h = HeaderMap::new();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    h.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    if let Some(key) = api_key {
        let mut v = HeaderValue::from_str(&format!("{prefix}{}", key.expose())).map_err(|_| {
            BackendError::invalid_request(
                "the API key contains characters that are not allowed in an HTTP header",
            )
        })?;
        v.set_sensitive(true);
        h.insert(name, v);
    }
    Ok(h)
}

/// What an HTTP provider (Anthropic, OpenAI-compatible) brings: its name, format, endpoint,
/// headers, body and decoder. [`Backend`](crate::Backend) is implemented once for every
/// provider from these, so the providers differ only where their APIs do.
pub(crate) trait HttpProvider: Send + Sync {
    /// [`Backend::name`](crate::Backend::name).
    const NAME: &'static str;
    /// [`Backend::context_format`](crate::Backend::context_format).
    const FORMAT: recall_core::Format;
    /// Reads the provider's event stream.
    type Decoder: SseDecoder;
    /// The model a request that names none uses.
    fn default_model(&self) -> &str;
    /// Where requests go and how they are retried.
    fn endpoint(&self) -> &Endpoint;
    /// The request headers (the key among them).
    fn headers(&self) -> Result<HeaderMap, BackendError>;
    /// The JSON request body for `req`.
    fn body(
        req: &crate::ChatRequest,
        default_model: &str,
    ) -> Result<serde_json::Value, BackendError>;
    /// A decoder that redacts `secret` from what it reports.
    fn decoder(&self, secret: Option<String>) -> Self::Decoder;
    /// Where the provider lists its models with their context sizes, if it does.
    fn models_url(&self) -> Option<reqwest::Url> {
        None
    }
    /// The context size of `model` in the provider's model list.
    fn served_context(_models: &serde_json::Value, _model: &str) -> Option<u64> {
        None
    }
}

#[async_trait::async_trait]
impl<P: HttpProvider> crate::Backend for P {
    fn name(&self) -> &'static str {
        P::NAME
    }

    fn context_format(&self) -> recall_core::Format {
        P::FORMAT
    }

    fn preview(&self, req: &crate::ChatRequest) -> Result<String, BackendError> {
        let body = P::body(req, self.default_model())?;
        Ok(serde_json::to_string_pretty(&body).unwrap_or_default())
    }

    async fn stream(
        &self,
        req: crate::ChatRequest,
        cancel: CancellationToken,
    ) -> Result<EventStream, BackendError> {
        let headers = self.headers()?;
        let body = P::body(&req, self.default_model())?;
        let meter = req.max_reply_bytes.map(crate::ReplyMeter::new);
        stream_call(self.endpoint(), headers, &body, cancel, meter, |secret| {
            self.decoder(secret)
        })
        .await
    }

    async fn context_window(&self, model: Option<&str>) -> Option<u64> {
        let url = self.models_url()?;
        let mut headers = self.headers().ok()?;
        headers.insert(
            reqwest::header::ACCEPT,
            reqwest::header::HeaderValue::from_static("application/json"),
        );
        let resp = self
            .endpoint()
            .client
            .get(url)
            .headers(headers)
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .ok()?;
        if !resp.status().is_success() {
            return None;
        }
        let models: serde_json::Value = resp.json().await.ok()?;
        P::served_context(&models, model.unwrap_or(self.default_model()))
    }
}

/// Posts `body` with `headers` to `endpoint` and decodes its event stream with the decoder
/// `decoder` makes (it is given the secret to redact from what it reports).
pub(crate) async fn stream_call<D: SseDecoder>(
    endpoint: &Endpoint,
    headers: HeaderMap,
    body: &serde_json::Value,
    cancel: CancellationToken,
    meter: Option<crate::ReplyMeter>,
    decoder: impl FnOnce(Option<String>) -> D,
) -> Result<EventStream, BackendError> {
    let body = serde_json::to_vec(body)
        .map_err(|e| BackendError::invalid_request(format!("cannot encode request: {e}")))?;
    let timeouts = endpoint.timeouts;
    let deadline = timeouts.total.map(|t| Instant::now() + t);
    let secret = endpoint.api_key.as_ref().map(|k| k.expose().to_string());
    let map_status = endpoint.map_status;
    let resp = send(
        || {
            endpoint
                .client
                .post(endpoint.url.clone())
                .headers(headers.clone())
                .body(body.clone())
        },
        &endpoint.retry,
        &timeouts,
        deadline,
        &cancel,
        secret.as_deref(),
        |status, body| map_status(status, body, secret.as_deref(), &endpoint.key_env),
    )
    .await?;
    check_event_stream(&resp)?;
    let decoder = decoder(secret.clone());
    Ok(spawn_sse(
        resp, decoder, cancel, timeouts, deadline, secret, meter,
    ))
}

/// Fails when a 2xx response is not an event stream (a proxy's JSON, an HTML page).
pub(crate) fn check_event_stream(resp: &reqwest::Response) -> Result<(), BackendError> {
    let ct = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if ct.is_empty() || ct.starts_with("text/event-stream") {
        Ok(())
    } else {
        Err(BackendError::protocol(format!(
            "expected an event stream (text/event-stream), got '{ct}'"
        )))
    }
}
