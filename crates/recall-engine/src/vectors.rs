//! Vectors for recall's semantic ranking, computed off the append path: an append marks its
//! conversation as behind and wakes one background task per engine, which embeds what is not
//! embedded yet (`Store::vector_backlog`) in batches and saves it (`Store::save_vectors`).
//! Appends never wait for it; a context built before it is done ranks what is embedded and
//! says so (`stats.recalled.complete: false`), and marks its conversation behind. Each
//! conversation is caught up under the store's vector lease (renewed before each batch), so
//! two processes on one database embed each message once; `catch_up.rs` has the whole
//! store's catch-up (a server's start, `recall index`).
//!
//! The catch-up also yields to appends: embedding is the heaviest work recall does, and on a
//! small machine its matrix products slow every append that runs beside them (by a quarter
//! on 2 cores, even on a thread of its own). So before each batch it waits until no append
//! came for [`APPEND_QUIET`] (50 ms), but no longer than [`BUSY_SHARE`] − 1 times what its
//! last batch took (at least [`MIN_YIELD`], 1 s): under a steady stream of appends it embeds
//! at most a tenth of the time, and between the turns of a chat it runs at once. It embeds
//! with `Embedder::embed_background`, which the in-process model runs on one thread, in
//! batches of `BACKGROUND_BATCH` (8) messages, so that a batch is soon over when appends come
//! back.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use recall_core::recall::searchable_text;
use recall_embed::Embedder;
use recall_store::NewVector;

use crate::backlog::Backlog;
use crate::{Engine, EngineError};

/// Messages embedded per batch: one call to the embedder and one write.
pub const EMBED_BATCH: usize = 64;

/// Messages embedded per batch by the background catch-up: few, so that a batch is soon over
/// when appends come back.
pub(crate) const BACKGROUND_BATCH: usize = 8;

/// How long the background catch-up waits for a pause in the appends before each batch.
pub(crate) const APPEND_QUIET: Duration = Duration::from_millis(50);

/// Under a steady stream of appends, the background catch-up embeds one part in this many of
/// the time: it yields `BUSY_SHARE - 1` times as long as its last batch took.
pub(crate) const BUSY_SHARE: u32 = 10;

/// The shortest the background catch-up yields to a steady stream of appends.
pub(crate) const MIN_YIELD: Duration = Duration::from_secs(1);

/// The embedder and the catch-up's state.
#[derive(Clone)]
pub(crate) struct Vectors {
    pub(crate) embedder: Arc<dyn Embedder>,
    /// Conversations appended to since the catch-up last looked.
    backlog: Arc<Backlog>,
    /// When the last append marked a conversation behind (the catch-up yields to appends).
    appends: Arc<AppendClock>,
    /// With recall by meaning, a context first embeds its conversation's backlog for at most
    /// this long ([`Engine::with_context_catch_up`]).
    pub(crate) before_context: Option<Duration>,
    /// This engine's name in the store's vector leases (`Store::take_vector_lease`): two
    /// processes on one database embed each message once.
    pub(crate) holder: Arc<str>,
}

/// How long a vector lease lasts; its holder renews it before each batch, so only a holder
/// that died (or a batch that took this long) lets another process take over.
pub(crate) const LEASE: Duration = Duration::from_secs(120);

impl Engine {
    /// This engine with an embedder: recall then fuses semantic similarity with the lexical
    /// ranking, and appends start the vector catch-up in the background.
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Engine {
        self.vectors = Some(Vectors {
            embedder,
            backlog: Arc::default(),
            appends: Arc::default(),
            before_context: None,
            holder: Arc::from(format!("engine-{}", uuid::Uuid::now_v7())),
        });
        self
    }

    /// This engine, with an embedder, embedding a conversation's backlog for at most `budget`
    /// before each context that recalls by meaning, in batches of [`EMBED_BATCH`]: what a
    /// one-shot process (`recall context`) does, having no background catch-up that lives
    /// long enough. What is still behind then stays lexical and the context says so
    /// (`stats.recalled.complete: false`); the next context goes on from there.
    pub fn with_context_catch_up(mut self, budget: Duration) -> Engine {
        if let Some(v) = &mut self.vectors {
            v.before_context = Some(budget);
        }
        self
    }

    /// The embedder, when one is configured.
    pub fn embedder(&self) -> Option<&Arc<dyn Embedder>> {
        self.vectors.as_ref().map(|v| &v.embedder)
    }

    /// Embeds what is not embedded yet of conversation `id` (of every conversation of the
    /// tenant when `None`), in batches of [`EMBED_BATCH`], until nothing is left or `max`
    /// messages were done; returns how many were done. Without an embedder, nothing.
    pub async fn catch_up_vectors(
        &self,
        tenant: &str,
        id: Option<&str>,
        max: usize,
    ) -> Result<usize, EngineError> {
        self.catch_up(tenant, id, max, None).await
    }

    /// The catch-up a context runs first ([`Engine::with_context_catch_up`]): conversation
    /// `id`'s backlog, until it is done or the budget is spent (a batch started is finished).
    pub(crate) async fn catch_up_before_context(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<(), EngineError> {
        let Some(budget) = self.vectors.as_ref().and_then(|v| v.before_context) else {
            return Ok(());
        };
        let deadline = tokio::time::Instant::now() + budget;
        self.catch_up(tenant, Some(id), usize::MAX, Some(deadline))
            .await
            .map(|_| ())
    }

    /// [`Engine::catch_up_vectors`], until `deadline` if one is given (the background
    /// catch-up is [`Engine::catch_up_leased`]).
    async fn catch_up(
        &self,
        tenant: &str,
        id: Option<&str>,
        max: usize,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<usize, EngineError> {
        let mut done = 0;
        while done < max {
            if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
                break;
            }
            let n = self
                .catch_up_batch_of(tenant, id, false, max - done)
                .await?;
            if n == 0 {
                break;
            }
            done += n;
        }
        Ok(done)
    }

    /// One batch of [`Engine::catch_up`], of at most `max` messages: the messages it went
    /// through (0: nothing left). In the background (`yielding`: smaller batches, timed for
    /// the next yield) the caller has waited for a pause in the appends first.
    async fn catch_up_batch_of(
        &self,
        tenant: &str,
        id: Option<&str>,
        yielding: bool,
        max: usize,
    ) -> Result<usize, EngineError> {
        let Some(v) = &self.vectors else {
            return Ok(0);
        };
        let e = &v.embedder;
        let batch = if yielding {
            BACKGROUND_BATCH
        } else {
            EMBED_BATCH
        };
        let batch_started = tokio::time::Instant::now();
        let limit = batch.min(max);
        let todo = self
            .store
            .vector_backlog(tenant, id, e.model(), limit as u32)
            .await?;
        if todo.is_empty() {
            return Ok(0);
        }
        // System messages and messages without text get no vector; progress passes them.
        let texts: Vec<(usize, String)> = todo
            .iter()
            .enumerate()
            .filter(|(_, t)| t.message.role != recall_core::Role::System)
            .map(|(i, t)| (i, searchable_text(&t.message)))
            .filter(|(_, s)| !s.trim().is_empty())
            .collect();
        let refs: Vec<&str> = texts.iter().map(|(_, s)| s.as_str()).collect();
        let embedded = if refs.is_empty() {
            Vec::new()
        } else {
            e.embed_background(&refs).await?
        };
        let vectors: Vec<NewVector> = texts
            .iter()
            .zip(embedded)
            .map(|((i, _), emb)| NewVector {
                conversation_id: todo[*i].conversation_id.clone(),
                seq: todo[*i].seq,
                vector: emb.vector().to_vec(),
            })
            .collect();
        let mut progress: Vec<(String, i64)> = Vec::new();
        for t in &todo {
            match progress.last_mut() {
                Some((c, seq)) if *c == t.conversation_id => *seq = (*seq).max(t.seq),
                _ => progress.push((t.conversation_id.clone(), t.seq)),
            }
        }
        self.store
            .save_vectors(tenant, e.model(), e.dimension(), vectors, progress)
            .await?;
        if yielding {
            v.appends.batch_took(batch_started.elapsed());
        }
        Ok(todo.len())
    }

    /// Messages were appended to conversation `id`: marks it behind and starts the
    /// background catch-up unless it runs (which then yields to appends). Without an
    /// embedder, nothing.
    pub(crate) fn vectors_behind(&self, tenant: &str, id: &str) {
        if let Some(v) = &self.vectors {
            v.appends.mark();
        }
        self.embed_in_background(tenant, id);
    }

    /// Marks conversation `id` behind for the background catch-up and starts it unless it
    /// runs: after an append, for a context that found it incomplete, for every conversation
    /// behind when a server starts. Without an embedder, nothing.
    pub fn embed_in_background(&self, tenant: &str, id: &str) {
        let Some(v) = &self.vectors else {
            return;
        };
        if !v.backlog.mark(tenant, id) {
            return;
        }
        let engine = self.clone();
        let backlog = v.backlog.clone();
        tokio::spawn(async move {
            while let Some((tenant, id)) = backlog.next() {
                // A failure leaves the backlog for the next append or context to retry;
                // nothing is lost by giving up here.
                let _ = engine.catch_up_leased(&tenant, &id, true, &|_| {}).await;
            }
        });
    }

    /// Conversation `id`'s whole backlog, under the store's vector lease (renewed before each
    /// batch, given up at the end): when another process holds it, that process embeds the
    /// conversation and this returns at once. `progress` is told how many messages each batch
    /// did. Returns the messages done here.
    pub(crate) async fn catch_up_leased(
        &self,
        tenant: &str,
        id: &str,
        yielding: bool,
        progress: &(dyn Fn(usize) + Sync),
    ) -> Result<usize, EngineError> {
        let Some(v) = &self.vectors else {
            return Ok(0);
        };
        let c = crate::ConversationRef::new(tenant, id);
        let model = v.embedder.model().to_string();
        let mut done = 0;
        loop {
            // Yield to appends before the lease is taken, so that a long wait never outlasts it.
            if yielding {
                v.appends.wait_for_quiet(v.appends.yield_limit()).await;
            }
            let until = now_ms().saturating_add(LEASE.as_millis() as i64);
            if !self
                .store
                .take_vector_lease(c, &model, &v.holder, until)
                .await?
            {
                return Ok(done);
            }
            let n = match self
                .catch_up_batch_of(tenant, Some(id), yielding, usize::MAX)
                .await
            {
                Ok(n) => n,
                Err(e) => {
                    // It would expire; given back, another process can go on at once.
                    let _ = self.store.release_vector_lease(c, &model, &v.holder).await;
                    return Err(e);
                }
            };
            if n == 0 {
                break;
            }
            done += n;
            progress(n);
        }
        self.store
            .release_vector_lease(c, &model, &v.holder)
            .await?;
        Ok(done)
    }
}

/// Milliseconds since the Unix epoch (the lease's clock: the store compares expiries with
/// its own).
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// When the last append came and how long the catch-up's last batch took, for the catch-up
/// to yield to appends. One per engine, whichever conversation the batches are of.
#[derive(Debug, Default)]
pub(crate) struct AppendClock {
    last: Mutex<Option<tokio::time::Instant>>,
    last_batch: Mutex<Duration>,
}

impl AppendClock {
    /// An append came now.
    pub(crate) fn mark(&self) {
        if let Ok(mut at) = self.last.lock() {
            *at = Some(tokio::time::Instant::now());
        }
    }

    /// The background catch-up's last batch took `took`.
    pub(crate) fn batch_took(&self, took: Duration) {
        if let Ok(mut b) = self.last_batch.lock() {
            *b = took;
        }
    }

    /// How long the next batch yields to a steady stream of appends at most: `BUSY_SHARE - 1`
    /// times the last batch, at least [`MIN_YIELD`].
    pub(crate) fn yield_limit(&self) -> Duration {
        let last = self.last_batch.lock().map_or(Duration::ZERO, |b| *b);
        (last * (BUSY_SHARE - 1)).max(MIN_YIELD)
    }

    /// Returns once no append came for [`APPEND_QUIET`], or after `limit`.
    pub(crate) async fn wait_for_quiet(&self, limit: Duration) {
        let started = tokio::time::Instant::now();
        let give_up = started + limit;
        loop {
            let Some(last) = self.last.lock().ok().and_then(|at| *at) else {
                return;
            };
            let quiet_at = last + APPEND_QUIET;
            let now = tokio::time::Instant::now();
            if now >= quiet_at || now >= give_up {
                return;
            }
            tokio::time::sleep_until(quiet_at.min(give_up)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::Instant;

    // Real time, so only bounds that a slow machine cannot break: at least the wait asked
    // for, and far less than a hang.

    #[tokio::test]
    async fn the_catch_up_waits_for_a_pause_in_the_appends() {
        let clock = AppendClock::default();
        // Never an append: no wait (no await point is reached).
        let t = Instant::now();
        clock.wait_for_quiet(MIN_YIELD).await;
        assert!(t.elapsed() < APPEND_QUIET, "{:?}", t.elapsed());
        // An append now: the quiet period, and not the longest yield.
        clock.mark();
        let t = Instant::now();
        clock.wait_for_quiet(MIN_YIELD * 10).await;
        let waited = t.elapsed();
        assert!(waited >= APPEND_QUIET, "{waited:?}");
        assert!(waited < MIN_YIELD * 10, "{waited:?}");
    }

    #[test]
    fn the_limit_is_nine_times_the_last_batch_and_at_least_the_floor() {
        let clock = AppendClock::default();
        assert_eq!(clock.yield_limit(), MIN_YIELD);
        clock.batch_took(Duration::from_millis(50));
        assert_eq!(clock.yield_limit(), MIN_YIELD);
        clock.batch_took(Duration::from_secs(2));
        assert_eq!(clock.yield_limit(), Duration::from_secs(18));
    }

    #[tokio::test]
    async fn a_steady_stream_of_appends_delays_it_by_the_limit() {
        let clock = Arc::new(AppendClock::default());
        clock.mark();
        let appender = {
            let clock = Arc::clone(&clock);
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    clock.mark();
                }
            })
        };
        let t = Instant::now();
        clock.wait_for_quiet(MIN_YIELD).await;
        let waited = t.elapsed();
        appender.abort();
        assert!(waited >= MIN_YIELD, "{waited:?}");
        assert!(waited < MIN_YIELD * 4, "{waited:?}");
    }
}
