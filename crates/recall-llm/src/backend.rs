//! The `Backend` trait and the channel every adapter streams through.

use futures::stream::BoxStream;
use recall_core::Format;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::BackendError;
use crate::event::{BackendEvent, ChatRequest};

/// A stream of [`BackendEvent`]s that ends with one terminal event.
pub type EventStream = BoxStream<'static, BackendEvent>;

/// A language-model backend that streams a reply.
///
/// [`Backend::stream`] returns once the backend has accepted the request (an HTTP 2xx after
/// any retries, or a spawned CLI process); errors before that point are its `Err`. Everything
/// after it arrives as events, ending with exactly one [`BackendEvent::Done`] or
/// [`BackendEvent::Error`].
///
/// Cancelling `cancel` ends the stream with [`crate::BackendErrorKind::Cancelled`]; dropping
/// the stream stops the work as well (the HTTP request is closed, the CLI process killed).
/// Both must be called inside a Tokio runtime.
#[async_trait::async_trait]
pub trait Backend: Send + Sync {
    /// A short stable name: `anthropic`, `openai` or `claude-cli`.
    fn name(&self) -> &'static str;

    /// The context format whose selection defaults suit this backend: the native format of
    /// an API, or the text format a one-prompt CLI is given.
    fn context_format(&self) -> Format;

    /// Exactly what [`Backend::stream`] would send for `req`, for display: the JSON request
    /// body of an API (pretty-printed, no credentials: they travel in headers), or the CLI's
    /// system prompt and stdin prompt.
    fn preview(&self, req: &ChatRequest) -> Result<String, BackendError>;

    /// Sends `req` and streams the reply.
    async fn stream(
        &self,
        req: ChatRequest,
        cancel: CancellationToken,
    ) -> Result<EventStream, BackendError>;

    /// The context size, in tokens, the backend serves `model` (its default when `None`)
    /// with, when it says: an OpenAI-compatible server's model list (llama-server's
    /// `meta.n_ctx`, vLLM's `max_model_len`, …). `None` when it does not say or cannot be
    /// asked; callers then assume a hosted model's large context. Asked once per use, not
    /// per request.
    async fn context_window(&self, _model: Option<&str>) -> Option<u64> {
        None
    }
}

/// The bound of the channel between an adapter's task and the consumer.
const CHANNEL_CAPACITY: usize = 64;

/// The sending half used by adapter tasks: tracks whether output has started and stamps it on
/// every error it forwards.
pub(crate) struct Emitter {
    tx: mpsc::Sender<BackendEvent>,
    started: bool,
    finished: bool,
}

impl Emitter {
    /// Sends one event. Returns false when the consumer is gone (the stream was dropped) or a
    /// terminal event was already sent.
    pub(crate) async fn send(&mut self, mut ev: BackendEvent) -> bool {
        if self.finished {
            return false;
        }
        if ev.is_output() {
            self.started = true;
        }
        if let BackendEvent::Error(e) = &mut ev {
            e.output_started = self.started;
        }
        if ev.is_terminal() {
            self.finished = true;
        }
        self.tx.send(ev).await.is_ok() && !self.finished
    }

    /// Sends an error as the terminal event.
    pub(crate) async fn fail(&mut self, e: BackendError) {
        self.send(BackendEvent::Error(e)).await;
    }

    /// True once a terminal event has been sent.
    pub(crate) fn finished(&self) -> bool {
        self.finished
    }

    /// Resolves when the consumer has dropped the stream.
    pub(crate) async fn closed(&self) {
        self.tx.closed().await
    }
}

/// A channel-backed event stream and the emitter feeding it.
pub(crate) fn channel() -> (Emitter, EventStream) {
    let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
    let stream = futures::stream::unfold(
        rx,
        |mut rx| async move { rx.recv().await.map(|ev| (ev, rx)) },
    );
    (
        Emitter {
            tx,
            started: false,
            finished: false,
        },
        Box::pin(stream),
    )
}
