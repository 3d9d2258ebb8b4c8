//! One turn at a time per conversation: a gateway turn stores the request's new messages,
//! forwards, and stores the reply; two turns on one conversation at once would store
//! `u, u, a, a` (each reply after both questions) and build each context without the other's
//! exchange. A turn holds its conversation's lock from before it reads the stored history
//! until its reply is stored; a second turn waits for it.
//!
//! The locks live in this process: servers sharing one PostgreSQL database serialise the
//! turns each of them runs, not turns that two servers run on one conversation at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::{Mutex as TurnMutex, OwnedMutexGuard};

/// A held turn: the conversation's lock until dropped.
pub type TurnGuard = Arc<OwnedMutexGuard<()>>;

/// Each conversation's lock by (tenant, id), held weakly: an entry lives while a turn holds
/// or waits for it.
type LockMap = HashMap<(String, String), Weak<TurnMutex<()>>>;

/// The lock of every conversation with a turn under way or waiting, by (tenant, id).
#[derive(Debug, Default, Clone)]
pub(crate) struct TurnLocks {
    locks: Arc<Mutex<LockMap>>,
}

/// Past this many entries, the map drops those no turn holds any more.
const PRUNE_AT: usize = 256;

impl TurnLocks {
    /// Waits for conversation `id`'s turn and holds it until the guard is dropped.
    pub(crate) async fn acquire(&self, tenant: &str, id: &str) -> TurnGuard {
        let lock = {
            let mut map = self.locks.lock().unwrap_or_else(|e| e.into_inner());
            let key = (tenant.to_string(), id.to_string());
            match map.get(&key).and_then(Weak::upgrade) {
                Some(l) => l,
                None => {
                    if map.len() >= PRUNE_AT {
                        map.retain(|_, w| w.strong_count() > 0);
                    }
                    let l = Arc::new(TurnMutex::new(()));
                    map.insert(key, Arc::downgrade(&l));
                    l
                }
            }
        };
        Arc::new(lock.lock_owned().await)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.locks.lock().map(|m| m.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_second_turn_waits_for_the_first() {
        let locks = TurnLocks::default();
        let first = locks.acquire("t", "c").await;
        let l2 = locks.clone();
        let second = tokio::spawn(async move { l2.acquire("t", "c").await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!second.is_finished(), "the second turn waits");
        // Another conversation, or another tenant's, does not wait.
        let _other = locks.acquire("t", "d").await;
        let _tenant = locks.acquire("u", "c").await;
        drop(first);
        let _second = tokio::time::timeout(Duration::from_secs(5), second)
            .await
            .expect("the second turn runs once the first is done")
            .unwrap();
    }

    #[tokio::test]
    async fn locks_no_turn_holds_are_dropped() {
        let locks = TurnLocks::default();
        for i in 0..PRUNE_AT + 10 {
            drop(locks.acquire("t", &format!("c{i}")).await);
        }
        assert!(locks.len() <= PRUNE_AT, "{}", locks.len());
    }
}
