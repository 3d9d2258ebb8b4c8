//! Every write of the SQLite store, on its one writer connection, in one `BEGIN IMMEDIATE`
//! transaction each. A write runs on the calling thread when it need not wait (the writer
//! connection is free and the database's write lock is taken at once): the common case, one
//! writer with nobody in its way, with no hand-off. One that would wait goes to the writer
//! thread, which waits instead: the lock's holder may be another process, or a task that
//! needs the very runtime thread that would wait. One thread, rather than `block_in_place`,
//! also keeps the thread count (and the memory of per-thread allocator arenas) flat under
//! load.

use std::sync::mpsc;
use std::sync::{Arc, TryLockError};
use std::time::Duration;

use rusqlite::Connection;

use super::conn::{lock, Connections, BUSY_TIMEOUT};
use crate::error::StoreError;

/// A write waiting for the writer thread: it runs on the writer connection.
type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// The writer thread's queue. Dropping the last handle ends the thread.
#[derive(Debug)]
pub(super) struct Writer {
    conns: Arc<Connections>,
    jobs: mpsc::Sender<Job>,
}

/// A write's outcome on the calling thread: done (committed, or failed and rolled back), or
/// not started because it would have waited.
enum Now<R, F> {
    Done(Result<R, StoreError>),
    WouldWait(F),
}

impl Writer {
    pub(super) fn start(conns: Arc<Connections>) -> Result<Writer, StoreError> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let on_thread = Arc::clone(&conns);
        std::thread::Builder::new()
            .name("recall-sqlite-writer".into())
            .spawn(move || {
                for job in queue {
                    job(&mut lock(&on_thread.writer));
                }
            })
            .map_err(|e| {
                StoreError::Internal(format!("cannot start the SQLite writer thread: {e}"))
            })?;
        Ok(Writer { conns, jobs })
    }

    /// Runs `write` in a write transaction, committed when it returns `Ok` (rolled back
    /// otherwise): on the calling thread when it need not wait, else on the writer thread.
    pub(super) async fn write<R, F>(&self, write: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<R, StoreError> + Send + 'static,
    {
        let write = match self.try_now(write) {
            Now::Done(r) => return r,
            Now::WouldWait(w) => w,
        };
        let (reply, outcome) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |conn| {
            let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                match run(conn, true, write) {
                    Now::Done(r) => r,
                    // `run` gives a write back only when it is not to wait.
                    Now::WouldWait(_) => Err(StoreError::Internal(
                        "the writer thread was refused the write lock".into(),
                    )),
                }
            }))
            .unwrap_or_else(|_| {
                Err(StoreError::Internal(
                    "the SQLite writer thread panicked during this write".into(),
                ))
            });
            // Nobody waiting (the request was dropped): the write stands, unacknowledged.
            let _ = reply.send(done);
        });
        self.jobs
            .send(job)
            .map_err(|_| StoreError::Internal("the SQLite writer thread has stopped".into()))?;
        outcome.await.unwrap_or_else(|_| {
            Err(StoreError::Internal(
                "the SQLite writer thread stopped before answering".into(),
            ))
        })
    }

    /// The write on the calling thread if the writer connection is free and the write lock is
    /// taken at once; else it comes back.
    fn try_now<R, F>(&self, write: F) -> Now<R, F>
    where
        F: FnOnce(&mut Connection) -> Result<R, StoreError>,
    {
        let mut conn = match self.conns.writer.try_lock() {
            Ok(c) => c,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return Now::WouldWait(write),
        };
        run(&mut conn, false, write)
    }
}

/// Runs `write` in a write transaction on `conn`, committed on `Ok`. With `wait` false, a
/// write lock held elsewhere gives the write back at once instead of the busy timeout.
fn run<R, F>(conn: &mut Connection, wait: bool, write: F) -> Now<R, F>
where
    F: FnOnce(&mut Connection) -> Result<R, StoreError>,
{
    let ready = (|| {
        if !conn.is_autocommit() {
            // Left open by a panic while the lock was held: nothing of it was acknowledged.
            conn.execute_batch("ROLLBACK")?;
        }
        if !wait {
            conn.busy_timeout(Duration::ZERO)?;
        }
        Ok::<(), StoreError>(())
    })();
    if let Err(e) = ready {
        return Now::Done(Err(e));
    }
    // BEGIN IMMEDIATE by hand rather than rusqlite's `Transaction`: the write gets the
    // connection itself (`&mut Connection` is `Send`, so a transaction can be driven by the
    // shared control flow of `crate::driver`), and `Open` rolls back whatever did not commit.
    let refused = match conn.execute_batch("BEGIN IMMEDIATE") {
        Ok(()) => {
            let open = Open(conn);
            return Now::Done(open.finish(|c| {
                if !wait {
                    c.busy_timeout(BUSY_TIMEOUT)?;
                }
                write(c)
            }));
        }
        Err(e) => e,
    };
    if !wait {
        if let Err(e) = conn.busy_timeout(BUSY_TIMEOUT) {
            return Now::Done(Err(e.into()));
        }
        if refused.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy) {
            return Now::WouldWait(write);
        }
    }
    Now::Done(Err(refused.into()))
}

/// An open write transaction: committed by [`Open::finish`] when the write succeeds, rolled
/// back when it fails or panics (on drop).
struct Open<'c>(&'c mut Connection);

impl Open<'_> {
    fn finish<R>(
        self,
        write: impl FnOnce(&mut Connection) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        let out = write(&mut *self.0)?;
        self.0.execute_batch("COMMIT")?;
        Ok(out)
    }
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        if !self.0.is_autocommit() {
            let _ = self.0.execute_batch("ROLLBACK");
        }
    }
}
