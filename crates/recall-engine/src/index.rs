//! Recall's lexical index, caught up off the request path: a context that recalls first
//! indexes what is behind for at most [`INDEX_BUDGET`], 100 ms (`Store::catch_up_recall`),
//! ranks what is indexed, and says so when that is not everything
//! (`stats.recalled.complete: false`); the rest is indexed by one background task. From then
//! on, appends to that conversation keep it caught up in the background too. A conversation
//! nobody recalls from is never indexed (the index costs writes). The queue of conversations
//! behind (`backlog`) is the one the vector catch-up uses too.
//!
//! A one-shot process (`recall context`) has no background that outlives it: it catches up
//! fully before ranking ([`Engine::with_index_budget`] `None`).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::backlog::Backlog;
use crate::{Engine, EngineError};

/// How long a context indexes a backlog before it ranks what is indexed (a batch started is
/// finished; at least one batch runs).
pub const INDEX_BUDGET: Duration = Duration::from_millis(100);

/// Conversations remembered as recalled from; past this many, the memory starts over (the
/// next context with recall marks its conversation again).
const MAX_REMEMBERED: usize = 65_536;

/// The index catch-up's state.
#[derive(Debug, Clone)]
pub(crate) struct IndexCatchUp {
    /// A context's budget (`None`: catch up fully first).
    budget: Option<Duration>,
    backlog: Arc<Backlog>,
    /// Conversations a context recalled from: appends to them are indexed in the background.
    recalled: Arc<Mutex<HashSet<(String, String)>>>,
}

impl Default for IndexCatchUp {
    fn default() -> Self {
        IndexCatchUp {
            budget: Some(INDEX_BUDGET),
            backlog: Arc::default(),
            recalled: Arc::default(),
        }
    }
}

impl Engine {
    /// This engine, with a context's index catch-up bounded by `budget` (default
    /// [`INDEX_BUDGET`]), or unbounded with `None`: what a one-shot process wants, whose
    /// background catch-up would not outlive it.
    pub fn with_index_budget(mut self, budget: Option<Duration>) -> Engine {
        self.index.budget = budget;
        self
    }

    /// Before a context ranks conversation `id`: its index caught up within the budget, the
    /// rest in the background; the conversation is remembered as recalled from.
    pub(crate) async fn catch_up_index(&self, tenant: &str, id: &str) -> Result<(), EngineError> {
        let done = self
            .store
            .catch_up_recall(tenant, id, self.index.budget)
            .await?;
        if let Ok(mut r) = self.index.recalled.lock() {
            if r.len() >= MAX_REMEMBERED {
                r.clear();
            }
            r.insert((tenant.to_string(), id.to_string()));
        }
        if !done {
            self.index_behind(tenant, id);
        }
        Ok(())
    }

    /// Messages were appended to conversation `id`: the vectors' catch-up (with an embedder)
    /// and, for a conversation recalled from, the index's, both in the background.
    pub(crate) fn appended(&self, tenant: &str, id: &str) {
        self.vectors_behind(tenant, id);
        let recalled = self
            .index
            .recalled
            .lock()
            .is_ok_and(|r| r.contains(&(tenant.to_string(), id.to_string())));
        if recalled {
            self.index_behind(tenant, id);
        }
    }

    /// Indexes conversation `id` in the background, one worker per engine.
    fn index_behind(&self, tenant: &str, id: &str) {
        if !self.index.backlog.mark(tenant, id) {
            return;
        }
        let engine = self.clone();
        tokio::spawn(async move {
            while let Some((tenant, id)) = engine.index.backlog.next() {
                // A failure leaves the backlog to the next context, which retries.
                let _ = engine.store.catch_up_recall(&tenant, &id, None).await;
            }
        });
    }
}
