//! The connection loop: accepts connections up to a cap and serves each with hyper (HTTP/1.1,
//! WebSocket upgrades), shedding clients too slow to be worth a connection.
//!
//! Each connection is in one of three phases, watched by its own task:
//! - **idle** — no request under way (just accepted, or between kept-alive requests): closed
//!   `idle_timeout` after the later of the last request's end and the last write that made
//!   progress. hyper ends a request when it takes the last piece of its body, which it may
//!   still be writing: a 32 MB answer read slowly goes on for as long as it progresses;
//!   from its last write on, the idle clock runs;
//! - **head** — the first bytes of a request arrived, its headers are not complete: closed
//!   `header_timeout` after that first byte (a client sending a header byte now and then);
//! - **busy** — a request is being answered (until its response body is sent, streams
//!   included): never closed by the clock. Its body must arrive within `body_timeout` of the
//!   end of its headers, else reading it fails and the request is answered 408.
//!
//! In every phase, and after a WebSocket upgrade, a write that makes no progress for
//! `write_timeout` (a client that reads nothing of its answer, so the socket's buffers stay
//! full) fails the connection, which closes it: a crowd that never reads holds its places
//! for that long at most, and is reset rather than closed, so that the kernel drops what
//! was still queued for it.
//! A connection that ends with bytes still queued for its client (an answer that fitted
//! the socket's buffers, to a client that reads nothing; then closed as idle) keeps its
//! place until the client takes them, or is reset `write_timeout` after it ended: a place
//! freed never leaves the kernel holding an answer.
//!
//! Over `max_connections`, a new connection is answered 503 and closed at once, so a crowd
//! of slow clients costs a bounded number of sockets and tasks; each of them is shed within
//! its timeout, which frees its place. A WebSocket holds its place until it closes.
//!
//! Shutdown: stop accepting, let every request in flight finish (hyper's graceful shutdown),
//! close idle connections, then return.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::mem::ManuallyDrop;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{Request, Response};
use axum::Router;
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::{sleep_until, Instant, Sleep};
use tower_service::Service;

use crate::body::BodyTimedOut;
use crate::config::HttpLimits;
use crate::guard::LocalAddr;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The answer to a connection over the cap (written without reading the request).
const OVER_CAPACITY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
content-type: application/json\r\n\
retry-after: 1\r\n\
connection: close\r\n\
content-length: 89\r\n\
\r\n\
{\"error\":{\"type\":\"unavailable\",\"message\":\"too many open connections; retry in a moment\"}}";

/// Serves `app` on `listener` under `limits` until `shutdown` completes, then lets requests
/// in flight finish.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: HttpLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let places = Arc::new(Semaphore::new(limits.max_connections));
    // Dropping `stop_rx` tells the accept loop and every connection to stop.
    let (stop_tx, stop_rx) = watch::channel(());
    tokio::spawn(async move {
        shutdown.await;
        drop(stop_rx);
    });
    // Each connection task holds a receiver; `closed()` completes when the last one ends.
    let (done_tx, done_rx) = watch::channel(());
    loop {
        let (stream, peer) = tokio::select! {
            accepted = accept(&listener) => accepted,
            _ = stop_tx.closed() => break,
        };
        let Ok(place) = places.clone().try_acquire_owned() else {
            tracing::warn!(%peer, max = limits.max_connections, "connection refused: too many open connections");
            // Best effort, without waiting: the socket is new, its send buffer empty.
            let _ = stream.try_write(OVER_CAPACITY);
            continue;
        };
        let local = match stream.local_addr() {
            Ok(a) => a,
            Err(e) => {
                tracing::debug!(%peer, error = %e, "connection gone before it was served");
                continue;
            }
        };
        let conn = Connection {
            app: app.clone(),
            limits,
            local,
            stop: stop_tx.clone(),
            done: done_rx.clone(),
        };
        tokio::spawn(conn.run(stream, peer, place));
    }
    drop(done_rx);
    drop(listener);
    done_tx.closed().await;
    Ok(())
}

/// The next connection. Errors of one connection (reset before accept) are skipped; others
/// (out of file descriptors) are logged and retried after a pause, as connections close.
async fn accept(listener: &TcpListener) -> (TcpStream, SocketAddr) {
    loop {
        match listener.accept().await {
            Ok(c) => {
                // Streams write small pieces (SSE events, the gateway's chunks): without
                // TCP_NODELAY, Nagle holds one back until the peer acknowledges the last,
                // which a delayed ACK puts off by some 40 ms.
                let _ = c.0.set_nodelay(true);
                return c;
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionRefused
                        | io::ErrorKind::ConnectionAborted
                        | io::ErrorKind::ConnectionReset
                ) => {}
            Err(e) => {
                tracing::error!(error = %e, "accept failed; retrying in 100 ms");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

struct Connection {
    app: Router,
    limits: HttpLimits,
    local: SocketAddr,
    stop: watch::Sender<()>,
    done: watch::Receiver<()>,
}

impl Connection {
    async fn run(self, stream: TcpStream, peer: SocketAddr, place: OwnedSemaphorePermit) {
        let clock = Arc::new(Clock::new());
        let io = TokioIo::new(Watched {
            io: ManuallyDrop::new(stream),
            clock: clock.clone(),
            place: ManuallyDrop::new(place),
            write_timeout: self.limits.write_timeout(),
            stalled: None,
            reset: false,
        });
        let service = ConnService {
            app: self.app,
            clock: clock.clone(),
            body_timeout: self.limits.body_timeout(),
            local: LocalAddr(self.local),
        };
        let mut builder = hyper::server::conn::http1::Builder::new();
        // The clock below replaces hyper's own header timer, which would also count the idle
        // time before a request as header time.
        builder.header_read_timeout(None);
        let conn = builder.serve_connection(io, service).with_upgrades();
        tokio::pin!(conn);
        let expired = clock.expired(self.limits.header_timeout(), self.limits.idle_timeout());
        tokio::pin!(expired);
        let mut stopping = false;
        loop {
            tokio::select! {
                result = conn.as_mut() => {
                    if let Err(e) = result {
                        tracing::debug!(%peer, error = %e, "connection ended with an error");
                    }
                    break;
                }
                phase = expired.as_mut() => {
                    tracing::debug!(%peer, "closing a connection {phase}");
                    break;
                }
                _ = self.stop.closed(), if !stopping => {
                    stopping = true;
                    conn.as_mut().graceful_shutdown();
                }
            }
        }
        drop(self.done);
    }
}

/// Where a connection is (see the module documentation).
#[derive(Debug, Clone, Copy)]
enum Phase {
    Idle(Instant),
    Head(Instant),
    Busy(usize),
}

/// A connection's phase, changed by its reads and its requests, watched by its task.
struct Clock {
    phase: Mutex<Phase>,
    changed: Notify,
    /// When the clock started, and milliseconds from then to the last write that made
    /// progress (no notification: the idle deadline reads it when it falls due).
    born: Instant,
    wrote_ms: AtomicU64,
}

impl Clock {
    fn new() -> Clock {
        let now = Instant::now();
        Clock {
            phase: Mutex::new(Phase::Idle(now)),
            changed: Notify::new(),
            born: now,
            wrote_ms: AtomicU64::new(0),
        }
    }

    /// Bytes were written: an answer is still going out, so the connection is not idle.
    fn wrote(&self) {
        let ms = u64::try_from(self.born.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.wrote_ms.fetch_max(ms, Ordering::Relaxed);
    }

    /// The last write that made progress (the clock's start if none).
    fn last_write(&self) -> Instant {
        self.born + Duration::from_millis(self.wrote_ms.load(Ordering::Relaxed))
    }

    fn update(&self, f: impl FnOnce(Phase) -> Phase) {
        let mut p = self.phase.lock().unwrap_or_else(|e| e.into_inner());
        *p = f(*p);
        drop(p);
        // One waiter (the connection task); a stored permit covers a change made while it
        // is not waiting.
        self.changed.notify_one();
    }

    /// Bytes arrived: an idle connection starts a request head.
    fn bytes_read(&self) {
        let idle = matches!(
            *self.phase.lock().unwrap_or_else(|e| e.into_inner()),
            Phase::Idle(_)
        );
        if idle {
            self.update(|p| match p {
                Phase::Idle(_) => Phase::Head(Instant::now()),
                other => other,
            });
        }
    }

    fn request_started(&self) {
        self.update(|p| match p {
            Phase::Busy(n) => Phase::Busy(n + 1),
            _ => Phase::Busy(1),
        });
    }

    fn request_finished(&self) {
        self.update(|p| match p {
            Phase::Busy(n) if n > 1 => Phase::Busy(n - 1),
            _ => Phase::Idle(Instant::now()),
        });
    }

    /// Completes when the connection has been idle (since the later of its last request and
    /// its last write) or in a request head for too long; says which.
    async fn expired(&self, header: Duration, idle: Duration) -> &'static str {
        loop {
            let phase = *self.phase.lock().unwrap_or_else(|e| e.into_inner());
            let (deadline, why) = match phase {
                Phase::Idle(since) => (since.max(self.last_write()) + idle, "idle for too long"),
                Phase::Head(since) => (since + header, "still sending its request headers"),
                Phase::Busy(_) => {
                    self.changed.notified().await;
                    continue;
                }
            };
            if Instant::now() >= deadline {
                return why;
            }
            tokio::select! {
                _ = sleep_until(deadline) => {}
                _ = self.changed.notified() => {}
            }
        }
    }
}

/// A connection's socket, reporting reads to its clock and holding its place under the cap
/// (through a WebSocket upgrade too: the upgraded stream owns this).
///
/// Dropped (the connection is over: the answer written, an idle close, an error) while the
/// kernel still holds bytes the client has not taken, the socket and its place are kept
/// until the client takes them or `write_timeout` passes, then it is reset ([`linger`]): a
/// plain close would free the place and leave the kernel holding the data (a client that
/// reads nothing of an answer that fitted the send buffer cost a buffer's worth per socket,
/// unbounded by `max_connections`).
struct Watched {
    io: ManuallyDrop<TcpStream>,
    clock: Arc<Clock>,
    place: ManuallyDrop<OwnedSemaphorePermit>,
    write_timeout: Duration,
    /// Since when a write has been waiting for the client to read (`None`: not waiting).
    stalled: Option<Pin<Box<Sleep>>>,
    /// Set to be reset when closed (the write timeout passed): nothing to wait for.
    reset: bool,
}

impl Watched {
    /// A write is pending: fails once it has been for `write_timeout`.
    fn poll_stalled<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        let timeout = self.write_timeout;
        let stall = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        ready!(stall.as_mut().poll(cx));
        // Closed with a reset, not a FIN behind the unsent answer: the kernel would otherwise
        // go on offering up to a send buffer's worth (megabytes) to a client that reads
        // nothing, holding that memory after the place is freed.
        let _ = self.io.set_zero_linger();
        self.reset = true;
        Poll::Ready(Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "the client read nothing for {}s (write timeout)",
                timeout.as_secs()
            ),
        )))
    }

    /// What a write returned: progress resets the stall clock.
    fn written<T>(&mut self, r: Poll<io::Result<T>>, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        match r {
            Poll::Ready(r) => {
                self.stalled = None;
                Poll::Ready(r)
            }
            Poll::Pending => self.poll_stalled(cx),
        }
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        // SAFETY: each field is taken once, here, and `self` is not used after.
        let (io, place) = unsafe {
            (
                ManuallyDrop::take(&mut self.io),
                ManuallyDrop::take(&mut self.place),
            )
        };
        if !self.reset {
            linger(io, place, self.write_timeout);
        }
    }
}

/// Ends a connection's socket: at once when the kernel holds nothing more for the client
/// (the usual case), else once the client has taken it, or with a reset after `timeout`; the
/// place is held until then.
fn linger(io: TcpStream, place: OwnedSemaphorePermit, timeout: Duration) {
    if unsent(&io) == 0 {
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        let _ = io.set_zero_linger();
        return;
    };
    runtime.spawn(async move {
        let deadline = Instant::now() + timeout;
        // Most sockets still hold only bytes in flight, acknowledged within a round trip
        // (microseconds on loopback): look again soon, then less and less often, so that a
        // closed connection holds its place about as long as its bytes take to arrive.
        let mut wait = LINGER_FIRST_POLL;
        while unsent(&io) > 0 {
            if Instant::now() >= deadline {
                let _ = io.set_zero_linger();
                break;
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(LINGER_MAX_POLL);
        }
        drop(io);
        drop(place);
    });
}

/// The first and the longest wait between two looks at a lingering socket.
const LINGER_FIRST_POLL: Duration = Duration::from_millis(1);
const LINGER_MAX_POLL: Duration = Duration::from_millis(100);

/// Bytes in the socket's send queue: written by the server and not yet acknowledged by the
/// client (Linux's `TIOCOUTQ`); 0 where it cannot be asked.
#[cfg(target_os = "linux")]
fn unsent(io: &TcpStream) -> usize {
    use std::os::fd::AsRawFd;
    let mut n: libc::c_int = 0;
    // SAFETY: TIOCOUTQ writes one c_int through the pointer; the fd is an open socket `io`
    // owns for the duration of the call.
    let r = unsafe { libc::ioctl(io.as_raw_fd(), libc::TIOCOUTQ, &mut n) };
    if r == 0 {
        usize::try_from(n).unwrap_or(0)
    } else {
        0
    }
}

#[cfg(not(target_os = "linux"))]
fn unsent(_: &TcpStream) -> usize {
    0
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        ready!(Pin::new(&mut *self.io).poll_read(cx, buf))?;
        if buf.filled().len() > before {
            self.clock.bytes_read();
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut *self.io).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.clock.wrote();
        }
        self.written(r, cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut *self.io).poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.clock.wrote();
        }
        self.written(r, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut *self.io).poll_flush(cx);
        self.written(r, cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.io).poll_shutdown(cx)
    }
}

/// The application as hyper calls it on one connection: marks the connection busy from a
/// request's head until its response body is done, puts the body deadline on the request
/// body, and tells the application the local address.
#[derive(Clone)]
struct ConnService {
    app: Router,
    clock: Arc<Clock>,
    body_timeout: Duration,
    local: LocalAddr,
}

impl hyper::service::Service<Request<Incoming>> for ConnService {
    type Response = Response<TrackedBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        self.clock.request_started();
        let busy = Busy(self.clock.clone());
        let mut req = req.map(|b| Body::new(TimedBody::new(b, self.body_timeout)));
        req.extensions_mut().insert(self.local);
        let mut app = self.app.clone();
        Box::pin(async move {
            // A Router is always ready (its `poll_ready` does nothing).
            let res = app.call(req).await?;
            Ok(res.map(|body| TrackedBody { body, _busy: busy }))
        })
    }
}

/// While alive, a request is under way on its connection.
struct Busy(Arc<Clock>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.request_finished();
    }
}

/// A response body that marks its request finished when hyper is done with it.
pub(crate) struct TrackedBody {
    body: Body,
    _busy: Busy,
}

impl HttpBody for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A request body that must arrive by a deadline.
struct TimedBody {
    body: Incoming,
    deadline: Pin<Box<Sleep>>,
    timeout: Duration,
}

impl TimedBody {
    fn new(body: Incoming, timeout: Duration) -> TimedBody {
        TimedBody {
            body,
            deadline: Box::pin(tokio::time::sleep(timeout)),
            timeout,
        }
    }
}

impl HttpBody for TimedBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.body).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(BoxError::from)));
        }
        if self.deadline.as_mut().poll(cx).is_ready() {
            let secs = self.timeout.as_secs();
            return Poll::Ready(Some(Err(Box::new(BodyTimedOut(secs)))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_over_capacity_answer_is_well_formed() {
        let text = std::str::from_utf8(OVER_CAPACITY).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(body.len(), len);
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["error"]["type"], "unavailable");
    }

    /// `elapsed` is `expected`, give or take a loaded machine's timer slack.
    fn about(elapsed: Duration, expected: Duration) -> bool {
        (expected..expected + Duration::from_millis(700)).contains(&elapsed)
    }

    #[tokio::test]
    async fn the_clock_expires_idle_and_slow_heads_but_not_busy_connections() {
        let header = Duration::from_millis(200);
        let idle = Duration::from_millis(400);
        let clock = Clock::new();
        let started = Instant::now();
        assert_eq!(clock.expired(header, idle).await, "idle for too long");
        assert!(about(started.elapsed(), idle), "{:?}", started.elapsed());

        // The head clock starts at the first byte, not at the connection's start.
        let clock = Arc::new(Clock::new());
        tokio::time::sleep(Duration::from_millis(300)).await;
        clock.bytes_read();
        let started = Instant::now();
        assert_eq!(
            clock.expired(header, idle).await,
            "still sending its request headers"
        );
        assert!(about(started.elapsed(), header), "{:?}", started.elapsed());

        // Busy for longer than both: not expired; idle again afterwards: the idle clock
        // starts when the request finishes.
        let clock = Arc::new(Clock::new());
        clock.request_started();
        let c = clock.clone();
        let busy = Duration::from_millis(800);
        let finisher = tokio::spawn(async move {
            tokio::time::sleep(busy).await;
            c.request_finished();
        });
        let started = Instant::now();
        assert_eq!(clock.expired(header, idle).await, "idle for too long");
        assert!(
            about(started.elapsed(), busy + idle),
            "{:?}",
            started.elapsed()
        );
        finisher.await.unwrap();
    }

    /// A connection whose request is over but whose answer is still being written (hyper
    /// ended the request when it took the body's last piece) is not idle: the idle clock
    /// runs from its last write.
    #[tokio::test]
    async fn writes_keep_a_connection_from_being_idle() {
        let header = Duration::from_millis(200);
        let idle = Duration::from_millis(400);
        let clock = Arc::new(Clock::new());
        clock.request_started();
        clock.request_finished();
        let writing = Duration::from_millis(1200);
        let c = clock.clone();
        let writer = tokio::spawn(async move {
            let until = Instant::now() + writing;
            while Instant::now() < until {
                c.wrote();
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        let started = Instant::now();
        assert_eq!(clock.expired(header, idle).await, "idle for too long");
        let took = started.elapsed();
        assert!(
            (writing..writing + idle + Duration::from_millis(700)).contains(&took),
            "closed after {took:?} (writes for {writing:?}, idle timeout {idle:?})"
        );
        writer.await.unwrap();
    }
}
