//! The conversations a background worker still has to go through (the vector catch-up, the
//! recall index's), and whether the worker runs: marking one behind starts the worker unless
//! it runs, and the worker stops once nothing is left — without losing a conversation marked
//! between its last look and its stop.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Conversations (tenant, id) waiting for a worker, and whether it runs.
#[derive(Debug, Default)]
pub(crate) struct Backlog {
    behind: Mutex<BTreeSet<(String, String)>>,
    running: AtomicBool,
}

impl Backlog {
    /// Marks conversation `id` behind. True when the caller must start the worker (none
    /// runs); it then takes the work with [`Backlog::next`].
    pub(crate) fn mark(&self, tenant: &str, id: &str) -> bool {
        if let Ok(mut b) = self.behind.lock() {
            b.insert((tenant.to_string(), id.to_string()));
        }
        !self.running.swap(true, Ordering::AcqRel)
    }

    /// The next conversation for the worker, or `None` when it must stop (then it is marked
    /// stopped, unless a conversation came in meanwhile, which it takes).
    pub(crate) fn next(&self) -> Option<(String, String)> {
        loop {
            if let Some(next) = self.behind.lock().ok().and_then(|mut b| b.pop_first()) {
                return Some(next);
            }
            self.running.store(false, Ordering::Release);
            // A mark may have come between the pop and the store: take the work back unless
            // a new worker already did.
            let more = self.behind.lock().is_ok_and(|b| !b.is_empty());
            if !more || self.running.swap(true, Ordering::AcqRel) {
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_worker_at_a_time_and_nothing_lost() {
        let b = Backlog::default();
        assert!(b.mark("t", "a"), "the first mark starts the worker");
        assert!(!b.mark("t", "b"), "a running worker takes later marks");
        assert!(!b.mark("t", "a"), "marked twice, done once");
        assert_eq!(b.next(), Some(("t".into(), "a".into())));
        assert_eq!(b.next(), Some(("t".into(), "b".into())));
        assert_eq!(b.next(), None, "the worker stops");
        assert!(b.mark("u", "a"), "and the next mark starts one again");
        assert_eq!(b.next(), Some(("u".into(), "a".into())));
    }
}
