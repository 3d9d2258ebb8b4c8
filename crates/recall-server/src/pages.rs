//! A page of messages (`GET …/messages`), read from the store a few messages at a time and
//! written out as it is read, so that a page of large messages is never held whole: neither
//! as the messages, nor as a JSON tree, nor as one string.
//!
//! The body is the [`crate::views::MessagePage`] JSON, `{"data":[…],"next_after":…}`, byte
//! for byte what serde writes for it. `next_after` comes last, so it is known by the time it
//! is written: the seq of the last message sent when a message was left out (by the count or
//! by the byte limit), else null.
//!
//! An error after the answer started (the database failing mid-page) cannot become an error
//! answer any more: the body is cut short, which the client sees as a broken response (the
//! chunked encoding never ends), never as a shorter page that looks whole.

use std::collections::VecDeque;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use recall_engine::store::{Store, StoredMessage};

use crate::error::ApiError;
use crate::views::MessageView;

/// Messages asked of the store by the first read of a page.
const FIRST_CHUNK: u32 = 8;
/// The most messages one read asks for.
const MAX_CHUNK: u32 = 256;
/// A piece of the body is sent once it holds this many bytes.
const PIECE_BYTES: usize = 64 << 10;
/// What one read aims to bring into memory, going by the messages read so far.
const CHUNK_BYTES: usize = 1 << 20;

/// One page being read and written.
pub(crate) struct MessagePageStream {
    store: Arc<dyn Store>,
    tenant: String,
    id: String,
    /// Messages read and not yet written.
    pending: VecDeque<StoredMessage>,
    /// The seq the next read starts after.
    read_after: i64,
    /// The store has nothing after `read_after`.
    exhausted: bool,
    limit: u32,
    max_bytes: usize,
    /// Messages written, their JSON's bytes, the last one's seq.
    sent: u32,
    sent_bytes: usize,
    last_seq: Option<i64>,
    /// Bytes and count of every message read so far (to size the next read).
    read_bytes: usize,
    read_count: usize,
    started: bool,
    done: bool,
}

impl MessagePageStream {
    /// A page of at most `limit` messages and `max_bytes` bytes of their JSON, after `after`.
    pub(crate) fn new(
        store: Arc<dyn Store>,
        tenant: String,
        id: String,
        after: i64,
        limit: u32,
        max_bytes: usize,
    ) -> Self {
        MessagePageStream {
            store,
            tenant,
            id,
            pending: VecDeque::new(),
            read_after: after,
            exhausted: false,
            limit,
            max_bytes,
            sent: 0,
            sent_bytes: 0,
            last_seq: None,
            read_bytes: 0,
            read_count: 0,
            started: false,
            done: false,
        }
    }

    /// Reads the first messages (an unknown conversation is an error here, before any byte
    /// of the answer).
    pub(crate) async fn prefetch(&mut self) -> Result<(), ApiError> {
        self.read().await.map_err(ApiError::from)
    }

    /// How many messages the next read asks for: enough for the rest of the page and the one
    /// after it (to tell whether there is more), as many as make about [`CHUNK_BYTES`] by the
    /// average size read so far.
    fn next_chunk(&self) -> u32 {
        let wanted = (self.limit - self.sent).saturating_add(1);
        let by_size = match self.read_bytes.checked_div(self.read_count) {
            None => FIRST_CHUNK,
            Some(average) => u32::try_from(CHUNK_BYTES / average.max(1)).unwrap_or(MAX_CHUNK),
        };
        wanted.min(by_size.clamp(1, MAX_CHUNK))
    }

    async fn read(&mut self) -> Result<(), recall_engine::store::StoreError> {
        let n = self.next_chunk();
        let chunk = self
            .store
            .messages(&self.tenant, &self.id, self.read_after, n)
            .await?;
        if chunk.len() < n as usize {
            self.exhausted = true;
        }
        if let Some(last) = chunk.last() {
            self.read_after = last.seq;
        }
        for m in &chunk {
            self.read_bytes += m.figures.chars.max(0) as usize;
        }
        self.read_count += chunk.len();
        self.pending.extend(chunk);
        Ok(())
    }

    /// The next piece of the body; `None` once the page is closed.
    async fn next_piece(&mut self) -> Option<Result<Bytes, std::io::Error>> {
        if self.done {
            return None;
        }
        let mut out: Vec<u8> = Vec::new();
        if !self.started {
            self.started = true;
            out.extend_from_slice(b"{\"data\":[");
        }
        loop {
            if self.pending.is_empty() && !self.exhausted {
                if let Err(e) = self.read().await {
                    tracing::error!(error = %e, "a page of messages failed after it started");
                    self.done = true;
                    return Some(Err(std::io::Error::other(e)));
                }
            }
            let Some(m) = self.pending.pop_front() else {
                // The conversation ends in this page.
                return Some(Ok(self.close(out, None)));
            };
            if self.sent == self.limit {
                let more = self.last_seq;
                return Some(Ok(self.close(out, more)));
            }
            let mark = out.len();
            if self.sent > 0 {
                out.push(b',');
            }
            let start = out.len();
            if let Err(e) = serde_json::to_writer(&mut out, &MessageView::from(&m)) {
                tracing::error!(error = %e, "a stored message did not serialise");
                self.done = true;
                return Some(Err(std::io::Error::other(e)));
            }
            let len = out.len() - start;
            if self.sent > 0 && self.sent_bytes + len > self.max_bytes {
                out.truncate(mark);
                let more = self.last_seq;
                return Some(Ok(self.close(out, more)));
            }
            self.sent += 1;
            self.sent_bytes += len;
            self.last_seq = Some(m.seq);
            // Small messages go out together; a large one on its own, taken by the
            // connection before the next one is read or made.
            if out.len() >= PIECE_BYTES {
                return Some(Ok(Bytes::from(out)));
            }
        }
    }

    /// The end of the body: `],"next_after":…}` after what `out` holds.
    fn close(&mut self, mut out: Vec<u8>, next_after: Option<i64>) -> Bytes {
        self.done = true;
        self.pending.clear();
        out.extend_from_slice(b"],\"next_after\":");
        match next_after {
            Some(seq) => out.extend_from_slice(seq.to_string().as_bytes()),
            None => out.extend_from_slice(b"null"),
        }
        out.push(b'}');
        Bytes::from(out)
    }
}

impl IntoResponse for MessagePageStream {
    fn into_response(self) -> Response {
        let body = futures::stream::unfold(self, |mut page| async move {
            let piece = page.next_piece().await?;
            Some((piece, page))
        });
        (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            Body::from_stream(body),
        )
            .into_response()
    }
}
