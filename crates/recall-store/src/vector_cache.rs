//! A store's copy of conversations' vectors in memory, for recall by meaning in conversation
//! scope (issue 52): the cosine scan reads every vector of the conversation, and reading 8,000
//! of them out of SQLite took 14 ms a context where the dot products take about one.
//!
//! What is held is always checked against the database first, in the statement that reads
//! the conversation's progress: `vector_progress.embedded_seq` (every message at or below it
//! is embedded) and `epoch` (migration 0016: moved by a trigger whenever a stored vector is
//! removed or rewritten, or embedding moves back). A catch-up saves vectors and moves the
//! progress in one transaction, so with the same epoch and a higher `embedded_seq` only
//! vectors of seqs above the copy's progress were added, and only those are read (as a new
//! chunk). Another epoch means the copy is read again whole, as is a copy that holds vectors
//! above its progress (left by a message edited after them, until their catch-up). So a copy
//! is never used that differs from what is stored when the context began, whichever process
//! wrote it (a second server on one PostgreSQL, another `recall` on one SQLite file).
//!
//! The copies are bounded by [`VECTOR_CACHE_BYTES`] in all: the least recently used are
//! dropped first, and a conversation larger than the bound is read whole each time, as
//! before.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use recall_core::recall::CosineTop;

/// The most vector bytes one store holds in memory (all conversations and models together):
/// about 170,000 MiniLM vectors (384 floats).
pub const VECTOR_CACHE_BYTES: usize = 256 << 20;

/// Chunks a copy is extended by before they are merged into one (each context that finds
/// new vectors adds one).
const MAX_CHUNKS: usize = 16;

/// One read of vectors: their seqs, in order, and their floats end to end.
#[derive(Debug, Default)]
pub(crate) struct Chunk {
    seqs: Vec<i64>,
    data: Vec<f32>,
}

impl Chunk {
    /// Adds a stored vector (`dim` little-endian floats); one of another length is skipped,
    /// as the scan skips it.
    pub(crate) fn push_bytes(&mut self, seq: i64, bytes: &[u8], dim: usize) {
        if bytes.len() != dim * 4 {
            return;
        }
        self.seqs.push(seq);
        self.data.extend(
            bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        );
    }

    fn bytes(&self) -> usize {
        self.seqs.len() * 8 + self.data.len() * 4
    }
}

/// A conversation's vectors under one model, as stored at (`embedded`, `epoch`).
#[derive(Debug)]
pub(crate) struct VectorSet {
    embedded: i64,
    /// The highest seq held (0 when none).
    top: i64,
    epoch: i64,
    dim: usize,
    chunks: Vec<Arc<Chunk>>,
    bytes: usize,
}

impl VectorSet {
    /// Ranks every held vector of a seq below `before` into `top`.
    pub(crate) fn rank(&self, top: &mut CosineTop, before: i64) {
        for chunk in &self.chunks {
            for (i, &seq) in chunk.seqs.iter().enumerate() {
                if seq < before {
                    top.push(None, seq, &chunk.data[i * self.dim..(i + 1) * self.dim]);
                }
            }
        }
    }
}

/// What a context reads: vectors of seqs after `after` up to `upto`, on top of `base`.
#[derive(Debug)]
pub(crate) struct Plan {
    base: Option<Arc<VectorSet>>,
    /// Read vectors of seqs above this one.
    pub(crate) after: i64,
    /// … and at most this one: the progress read, when extending a copy (a vector saved
    /// meanwhile is above it, and read by the next context); every seq for a whole read.
    pub(crate) upto: i64,
    embedded: i64,
    epoch: i64,
    dim: usize,
}

impl Plan {
    /// Nothing to read: the copy held is current.
    pub(crate) fn is_current(&self) -> bool {
        self.base.is_some() && self.after >= self.upto
    }
}

/// The copies of one store.
#[derive(Debug)]
pub(crate) struct VectorCache {
    max_bytes: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    sets: HashMap<(String, String), (Arc<VectorSet>, u64)>,
    bytes: usize,
    clock: u64,
}

impl Default for VectorCache {
    fn default() -> Self {
        VectorCache::new(VECTOR_CACHE_BYTES)
    }
}

impl VectorCache {
    pub(crate) fn new(max_bytes: usize) -> VectorCache {
        VectorCache {
            max_bytes,
            state: Mutex::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What to read for conversation `id` under `model`, stored at (`embedded`, `epoch`).
    pub(crate) fn plan(
        &self,
        id: &str,
        model: &str,
        dim: usize,
        embedded: i64,
        epoch: i64,
    ) -> Plan {
        let mut st = self.state();
        st.clock += 1;
        let now = st.clock;
        let base = st
            .sets
            .get_mut(&(id.to_string(), model.to_string()))
            .filter(|(s, _)| {
                s.epoch == epoch && s.dim == dim && s.embedded <= embedded && s.top <= s.embedded
            })
            .map(|(s, used)| {
                *used = now;
                Arc::clone(s)
            });
        Plan {
            after: base.as_ref().map_or(0, |s| s.embedded),
            upto: if base.is_some() { embedded } else { i64::MAX },
            base,
            embedded,
            epoch,
            dim,
        }
    }

    /// The vectors after `plan`'s read of `new`, kept for the next context when they fit.
    pub(crate) fn finish(&self, id: &str, model: &str, plan: Plan, new: Chunk) -> Arc<VectorSet> {
        if plan.is_current() {
            if let Some(base) = plan.base {
                return base;
            }
        }
        let mut chunks = plan
            .base
            .as_ref()
            .map_or_else(Vec::new, |b| b.chunks.clone());
        if !new.seqs.is_empty() {
            chunks.push(Arc::new(new));
        }
        if chunks.len() > MAX_CHUNKS {
            chunks = vec![Arc::new(merge(&chunks))];
        }
        let bytes = chunks.iter().map(|c| c.bytes()).sum();
        let top = chunks
            .iter()
            .filter_map(|c| c.seqs.iter().max())
            .max()
            .copied()
            .unwrap_or(0);
        let set = Arc::new(VectorSet {
            embedded: plan.embedded,
            top,
            epoch: plan.epoch,
            dim: plan.dim,
            chunks,
            bytes,
        });
        if bytes <= self.max_bytes {
            self.keep(id, model, &set);
        }
        set
    }

    fn keep(&self, id: &str, model: &str, set: &Arc<VectorSet>) {
        let mut st = self.state();
        st.clock += 1;
        let now = st.clock;
        let key = (id.to_string(), model.to_string());
        if let Some((old, _)) = st.sets.get(&key) {
            // A context that read more recently (or after a change) keeps its copy.
            if old.epoch == set.epoch && old.embedded >= set.embedded {
                return;
            }
        }
        if let Some((old, _)) = st.sets.insert(key, (Arc::clone(set), now)) {
            st.bytes -= old.bytes;
        }
        st.bytes += set.bytes;
        while st.bytes > self.max_bytes {
            let Some(oldest) = st
                .sets
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some((old, _)) = st.sets.remove(&oldest) {
                st.bytes -= old.bytes;
            }
        }
    }

    /// How many bytes of vectors are held (for tests and metrics).
    #[cfg(test)]
    fn held(&self) -> usize {
        self.state().bytes
    }
}

fn merge(chunks: &[Arc<Chunk>]) -> Chunk {
    let mut out = Chunk::default();
    for c in chunks {
        out.seqs.extend_from_slice(&c.seqs);
        out.data.extend_from_slice(&c.data);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use recall_core::recall::vector_to_bytes;

    fn chunk(seqs: &[i64], dim: usize) -> Chunk {
        let mut c = Chunk::default();
        for &s in seqs {
            let v: Vec<f32> = (0..dim)
                .map(|i| if i == (s as usize) % dim { 1.0 } else { 0.0 })
                .collect();
            c.push_bytes(s, &vector_to_bytes(&v), dim);
        }
        c
    }

    fn ranked(set: &VectorSet, q: Vec<f32>, before: i64) -> Vec<i64> {
        let mut top = CosineTop::new(q, 10);
        set.rank(&mut top, before);
        top.finish().iter().map(|r| r.seq).collect()
    }

    #[test]
    fn a_copy_is_extended_by_what_was_added_and_read_again_after_a_change() {
        let cache = VectorCache::new(1 << 20);
        let p = cache.plan("c", "m", 4, 3, 0);
        assert_eq!((p.after, p.upto, p.is_current()), (0, i64::MAX, false));
        let set = cache.finish("c", "m", p, chunk(&[1, 2, 3], 4));
        assert_eq!(ranked(&set, vec![0.0, 1.0, 0.0, 0.0], 99)[0], 1);

        // Nothing new: the copy is used as it is.
        let p = cache.plan("c", "m", 4, 3, 0);
        assert!(p.is_current());
        let again = cache.finish("c", "m", p, Chunk::default());
        assert!(Arc::ptr_eq(&set, &again));

        // Two more embedded: only they are read.
        let p = cache.plan("c", "m", 4, 5, 0);
        assert_eq!((p.after, p.upto), (3, 5));
        let set = cache.finish("c", "m", p, chunk(&[4, 5], 4));
        assert_eq!(set.chunks.len(), 2);
        let mut all = ranked(&set, vec![1.0, 1.0, 1.0, 1.0], 99);
        all.sort_unstable();
        assert_eq!(all, [1, 2, 3, 4, 5]);
        // `before` leaves out the window's seqs.
        let mut some = ranked(&set, vec![1.0, 1.0, 1.0, 1.0], 4);
        some.sort_unstable();
        assert_eq!(some, [1, 2, 3]);

        // Another epoch (a vector removed): read whole again.
        let p = cache.plan("c", "m", 4, 5, 1);
        assert_eq!(p.after, 0);
        // Embedding moved back under the same epoch cannot be trusted either.
        let p2 = cache.plan("c", "m", 4, 2, 0);
        assert_eq!(p2.after, 0);
        // Another model or dimension is another copy.
        assert_eq!(cache.plan("c", "other", 4, 5, 0).after, 0);
        assert_eq!(cache.plan("c", "m", 8, 5, 0).after, 0);
        drop(p);
    }

    #[test]
    fn the_copies_stay_within_their_bound() {
        let one = chunk(&[1, 2, 3, 4], 4).bytes();
        let cache = VectorCache::new(one * 2);
        for id in ["a", "b", "c"] {
            let p = cache.plan(id, "m", 4, 4, 0);
            cache.finish(id, "m", p, chunk(&[1, 2, 3, 4], 4));
        }
        assert_eq!(cache.held(), one * 2);
        // "a" was used least recently: it went.
        assert_eq!(cache.plan("a", "m", 4, 4, 0).after, 0);
        assert_eq!(cache.plan("c", "m", 4, 4, 0).after, 4);
        // A set larger than the bound is used once and not kept.
        let p = cache.plan("big", "m", 4, 12, 0);
        let set = cache.finish("big", "m", p, chunk(&(1..=12).collect::<Vec<_>>(), 4));
        assert_eq!(set.chunks.len(), 1);
        assert_eq!(set.top, 12);
        assert_eq!(cache.plan("big", "m", 4, 12, 0).after, 0);
        assert!(cache.held() <= one * 2);
    }

    #[test]
    fn a_copy_with_vectors_above_its_progress_is_read_whole() {
        // Message 3 was edited: its vector went, progress moved back to 2, 4's stays.
        let cache = VectorCache::new(1 << 20);
        let p = cache.plan("c", "m", 4, 2, 1);
        cache.finish("c", "m", p, chunk(&[1, 2, 4], 4));
        // Embedded again up to 3: the copy is not extended (4 would come before 3), but read
        // whole.
        let p = cache.plan("c", "m", 4, 3, 1);
        assert_eq!((p.after, p.upto), (0, i64::MAX));
    }

    #[test]
    fn many_small_extensions_are_merged() {
        let cache = VectorCache::new(1 << 20);
        for n in 1..=40 {
            let p = cache.plan("c", "m", 4, n, 0);
            cache.finish("c", "m", p, chunk(&[n], 4));
        }
        let p = cache.plan("c", "m", 4, 40, 0);
        let set = cache.finish("c", "m", p, Chunk::default());
        assert!(set.chunks.len() <= MAX_CHUNKS);
        let mut top = CosineTop::new(vec![1.0; 4], 100);
        set.rank(&mut top, 1000);
        assert_eq!(top.finish().len(), 40);
    }
}
