//! Vectors for recall's semantic ranking, computed off the append path: an append marks its
//! conversation as behind and wakes one background task per engine, which embeds what is not
//! embedded yet (`Store::vector_backlog`) in batches and saves it (`Store::save_vectors`).
//! Appends never wait for it; a context built before it is done ranks what is embedded and
//! says so (`stats.recalled.complete: false`).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use recall_core::recall::searchable_text;
use recall_embed::Embedder;
use recall_store::NewVector;

use crate::{Engine, EngineError};

/// Messages embedded per batch: one call to the embedder and one write.
pub const EMBED_BATCH: usize = 64;

/// The embedder and the catch-up's state.
#[derive(Clone)]
pub(crate) struct Vectors {
    pub(crate) embedder: Arc<dyn Embedder>,
    /// Conversations (tenant, id) appended to since the catch-up last looked.
    behind: Arc<Mutex<BTreeSet<(String, String)>>>,
    running: Arc<AtomicBool>,
}

impl Engine {
    /// This engine with an embedder: recall then fuses semantic similarity with the lexical
    /// ranking, and appends start the vector catch-up in the background.
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Engine {
        self.vectors = Some(Vectors {
            embedder,
            behind: Arc::default(),
            running: Arc::default(),
        });
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
        let Some(v) = &self.vectors else {
            return Ok(0);
        };
        let e = &v.embedder;
        let mut done = 0;
        while done < max {
            let limit = EMBED_BATCH.min(max - done);
            let todo = self
                .store
                .vector_backlog(tenant, id, e.model(), limit as u32)
                .await?;
            if todo.is_empty() {
                break;
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
            done += todo.len();
        }
        Ok(done)
    }

    /// Marks conversation `id` as behind and starts the background catch-up unless it runs.
    /// Without an embedder, nothing.
    pub(crate) fn vectors_behind(&self, tenant: &str, id: &str) {
        let Some(v) = &self.vectors else {
            return;
        };
        if let Ok(mut b) = v.behind.lock() {
            b.insert((tenant.to_string(), id.to_string()));
        }
        if v.running.swap(true, Ordering::AcqRel) {
            return;
        }
        let engine = self.clone();
        let v = v.clone();
        tokio::spawn(async move {
            loop {
                let next = v.behind.lock().ok().and_then(|mut b| b.pop_first());
                match next {
                    Some((tenant, id)) => {
                        // A failure leaves the backlog for the next append or context to
                        // retry; nothing is lost by giving up here.
                        let _ = engine
                            .catch_up_vectors(&tenant, Some(&id), usize::MAX)
                            .await;
                    }
                    None => {
                        v.running.store(false, Ordering::Release);
                        // An append may have marked a conversation between the pop and the
                        // store: take the work back unless another task already did.
                        let more = v.behind.lock().is_ok_and(|b| !b.is_empty());
                        if !more || v.running.swap(true, Ordering::AcqRel) {
                            break;
                        }
                    }
                }
            }
        });
    }
}
