//! Where a gateway request's history meets the stored one (issue 33): recall-core's
//! `match_history` places it on the newest stored messages; this checks everything older
//! with the stored mirror sums (a few index probes, whatever the conversation's length), so
//! that an edit anywhere forks and a redacted message the client still holds never comes back.
//! Only when the sums disagree, or are unknown (a history stored before they were kept), are
//! the stored messages the request covers read and compared one by one.
//!
//! The sums are recall-core's (`gateway::mirror`), kept with every message row (`cum_mirror`,
//! the conversation's `total_mirror`, migration 0013) by appends, forks, clears, updates and
//! redactions. `Store::mirror_sums` answers with a few index probes and the range's redacted
//! seqs, from the partial index `messages_redacted`.

use recall_core::gateway::mirror;
use recall_core::gateway::{common_prefix, match_history, HistoryMatch, StoredTurn};
use recall_core::message::{Message, Role};
use recall_core::select::HistoryMessage;
use recall_store::{Conversation, MessageStatus};

use crate::{Engine, EngineError};

/// What a gateway request's history is, against the stored one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Placement {
    /// Store the request's messages from this index on, in the conversation.
    Continue { mode: Continued, from: usize },
    /// Fork the conversation at seq `at` and store the request's messages from `from` on in
    /// the fork.
    Fork { at: i64, from: usize },
}

/// How a request continues the stored history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Continued {
    Append,
    Mirror,
    Retry,
}

impl Engine {
    /// Places `incoming` (the request's history) against conversation `conv`, whose newest
    /// messages are `window` (its last turns, oldest first).
    pub(crate) async fn place_history(
        &self,
        tenant: &str,
        conv: &Conversation,
        window: Vec<HistoryMessage>,
        incoming: &[Message],
    ) -> Result<Placement, EngineError> {
        let count = usize::try_from(conv.message_count).unwrap_or(0);
        let first = conv.last_seq - conv.message_count + 1;
        // The sums of the whole history and every redacted seq in it: the tail's redacted
        // messages match whatever the client holds in their place. One message (append mode)
        // is placed on the tail alone, where a redacted message would prove nothing anyway.
        let sums = if count > 0 && incoming.len() > 1 {
            Some(self.store.mirror_sums(tenant, &conv.id, first - 1).await?)
        } else {
            None
        };
        let redacted = sums.as_ref().map_or(&[][..], |s| s.redacted.as_slice());
        let skip = window
            .len()
            .saturating_sub(recall_core::gateway::MIRROR_ANCHOR);
        let tail: Vec<StoredTurn> = window
            .into_iter()
            .skip(skip)
            .map(|h| StoredTurn {
                redacted: redacted.contains(&(h.index as i64)),
                message: h.message,
            })
            .collect();
        let (mode, covered) = match match_history(count, &tail, incoming) {
            HistoryMatch::Append => {
                return Ok(Placement::Continue {
                    mode: Continued::Append,
                    from: 0,
                })
            }
            HistoryMatch::Retry => (Continued::Retry, incoming.len()),
            HistoryMatch::Mirror { from } => (Continued::Mirror, from),
            HistoryMatch::Diverged => return self.diverged(tenant, conv, incoming).await,
        };
        let continued = Placement::Continue {
            mode,
            from: if mode == Continued::Retry {
                incoming.len()
            } else {
                covered
            },
        };
        // What the request holds before what is new covers the newest `n` stored messages.
        // Only when it holds no more than is stored: more means the client holds a message
        // recall never stored (one inserted in the middle), and the sums of a tail-aligned
        // copy would not see it.
        let n = covered.min(count);
        if n == 0 || incoming.len() == 1 {
            return Ok(continued);
        }
        if covered <= count {
            let at = conv.last_seq - n as i64;
            let sums = match sums {
                Some(s) if at == first - 1 => s,
                _ => self.store.mirror_sums(tenant, &conv.id, at).await?,
            };
            let held = &incoming[covered - n..covered];
            if let (Some(total), Some(before)) = (sums.total, sums.at) {
                if mirror::sum_of(at + 1, held, &sums.redacted) == mirror::sub(total, before) {
                    return Ok(continued);
                }
            }
        }
        // The sums disagree (an edit, a message inserted or deleted, a message written another
        // way, or system messages in the stored history, which a request never carries in it)
        // or were not asked: compare the request with the stored messages, one by one.
        let stored = self.stored_turns(tenant, &conv.id, first - 1).await?;
        let turns: Vec<StoredTurn> = stored.iter().map(|(_, t)| t.clone()).collect();
        // A complete copy (it starts with the stored first message, or holds more than is
        // stored) is compared from the start: a message inserted or deleted in its middle then
        // forks right where it is, and the fork holds exactly the client's history. Aligning
        // it on the tail would put the fork point before the change and store or drop the
        // client's messages around it.
        let complete = covered > count
            || turns
                .first()
                .zip(incoming.first())
                .is_some_and(|(s, i)| !s.redacted && s.matches(i));
        if complete {
            let shared = common_prefix(&turns, &incoming[..covered]);
            if shared == turns.len() {
                // All of it stored: what the client holds after it is new.
                return Ok(if shared >= covered {
                    continued
                } else {
                    Placement::Continue {
                        mode: Continued::Mirror,
                        from: shared,
                    }
                });
            }
            let at = match shared {
                0 => 0,
                k => stored[k - 1].0,
            };
            return Ok(Placement::Fork { at, from: shared });
        }
        // A client that trims its own history: aligned on the tail.
        let m = covered.min(stored.len());
        let part = &stored[stored.len() - m..];
        let shared = common_prefix(&turns[turns.len() - m..], &incoming[covered - m..covered]);
        if shared == m {
            return Ok(continued);
        }
        let at = match shared {
            0 => part[0].0 - 1,
            k => part[k - 1].0,
        };
        Ok(Placement::Fork {
            at,
            from: covered - m + shared,
        })
    }

    /// A history that never meets the stored tail: it forks where it leaves the stored
    /// history read from its start (or continues it, when it holds all of it and more).
    async fn diverged(
        &self,
        tenant: &str,
        conv: &Conversation,
        incoming: &[Message],
    ) -> Result<Placement, EngineError> {
        let first = conv.last_seq - conv.message_count + 1;
        let stored = self.stored_turns(tenant, &conv.id, first - 1).await?;
        let turns: Vec<StoredTurn> = stored.iter().map(|(_, t)| t.clone()).collect();
        let shared = common_prefix(&turns, incoming);
        if shared == stored.len() && shared < incoming.len() {
            return Ok(Placement::Continue {
                mode: Continued::Mirror,
                from: shared,
            });
        }
        let at = match shared {
            0 => 0,
            k => stored[k - 1].0,
        };
        Ok(Placement::Fork { at, from: shared })
    }

    /// The stored messages of a conversation after seq `after`, oldest first, with their
    /// seqs; system messages left out (a request carries its system prompt apart).
    async fn stored_turns(
        &self,
        tenant: &str,
        id: &str,
        mut after: i64,
    ) -> Result<Vec<(i64, StoredTurn)>, EngineError> {
        let mut out = Vec::new();
        loop {
            let page = self.store.messages(tenant, id, after, 1000).await?;
            let Some(last) = page.last() else { break };
            after = last.seq;
            out.extend(
                page.into_iter()
                    .filter(|m| m.message.role != Role::System)
                    .map(|m| {
                        (
                            m.seq,
                            StoredTurn {
                                redacted: m.status == MessageStatus::Redacted,
                                message: m.message,
                            },
                        )
                    }),
            );
        }
        Ok(out)
    }
}
