//! Branching a conversation: forks (the store's, O(1)), retry and edit on top of them (a fork
//! before the message and a chat turn on the fork; the old path stays), and the alternatives
//! of a message (the other paths at the same point).

use recall_core::message::Role;
use recall_llm::Backend;
use recall_store::{Conversation, NewFork, StoreError, StoredMessage};
use tokio_util::sync::CancellationToken;

use crate::chat::{ChatTurn, TurnEvent, TurnOutcome};
use crate::{ConversationRef, Engine, EngineError};

/// A retry or an edit: the fork it made (or, for a retry of an unanswered message, the
/// conversation itself) and the turn that ran on it.
#[derive(Debug, Clone)]
pub struct Branched {
    pub conversation: Conversation,
    pub outcome: TurnOutcome,
}

/// One alternative of a message: the message at that seq on one path through the history.
#[derive(Debug, Clone, PartialEq)]
pub struct Alternative {
    /// The conversation to read (or continue) to follow this path.
    pub conversation_id: String,
    pub message: StoredMessage,
    /// Whether this is the path of the conversation asked about.
    pub current: bool,
}

/// A conversation of a history's chain as the alternatives see it: its own messages come
/// after `after`, and it is read up to `upto`.
struct Link {
    conv: Conversation,
    after: i64,
    upto: i64,
}

impl Engine {
    /// Forks conversation `id` at seq `at` (0 to its last seq): a new conversation whose
    /// history is this one's up to `at`, then its own. O(1): nothing is copied.
    pub async fn fork_conversation(
        &self,
        c: ConversationRef<'_>,
        at: i64,
        title: Option<String>,
    ) -> Result<Conversation, EngineError> {
        let (tenant, id) = (c.tenant, c.id);
        Ok(self
            .store
            .fork_conversation(tenant, id, at, NewFork { title })
            .await?)
    }

    /// The direct forks of a conversation.
    pub async fn forks(&self, c: ConversationRef<'_>) -> Result<Vec<Conversation>, EngineError> {
        let (tenant, id) = (c.tenant, c.id);
        Ok(self.store.forks(tenant, id).await?)
    }

    /// Message `seq` of conversation `id`'s history.
    async fn message_at(
        &self,
        tenant: &str,
        id: &str,
        seq: i64,
    ) -> Result<StoredMessage, EngineError> {
        let page = if seq >= 1 {
            self.store.messages(tenant, id, seq - 1, 1).await?
        } else {
            // The conversation's absence is a 404; a seq that cannot exist is the caller's
            // mistake.
            self.get_conversation(ConversationRef::new(tenant, id))
                .await?;
            return Err(EngineError::Invalid(format!(
                "seq: {seq} is not a message's seq (seqs start at 1)"
            )));
        };
        page.into_iter()
            .next()
            .filter(|m| m.seq == seq)
            .ok_or_else(|| {
                EngineError::Store(StoreError::MessageNotFound {
                    conversation: id.to_string(),
                    seq,
                })
            })
    }

    /// [`Engine::message_at`] for a seq the caller put in a request body (retry, edit): the
    /// conversation exists, so a seq it does not hold is bad input, not a missing resource.
    async fn body_message_at(
        &self,
        tenant: &str,
        id: &str,
        seq: i64,
    ) -> Result<StoredMessage, EngineError> {
        match self.message_at(tenant, id, seq).await {
            Err(EngineError::Store(StoreError::MessageNotFound { .. })) => Err(
                EngineError::Invalid(format!("seq: conversation '{id}' has no message {seq}")),
            ),
            other => other,
        }
    }

    /// Regenerates the reply at `seq`: forks the conversation before it and runs the reply
    /// half of a chat turn on the fork (the history there ends with the message the old reply
    /// answered). The old reply stays, an alternative of the new one. `turn`'s content is
    /// not used; its model, output limit and context limits are.
    ///
    /// When `seq` is a user message that ends the conversation (its reply failed before any
    /// text, so none was stored), there is nothing to keep: the reply is written in place, on
    /// the conversation itself, with no fork and no `Forked` event.
    pub async fn retry_turn(
        &self,
        conv: ConversationRef<'_>,
        seq: i64,
        backend: &dyn Backend,
        turn: ChatTurn,
        cancel: CancellationToken,
        mut on_event: impl FnMut(TurnEvent) + Send,
    ) -> Result<Branched, EngineError> {
        let ConversationRef { tenant, id } = conv;
        let m = self.body_message_at(tenant, id, seq).await?;
        // A bad policy leaves no fork behind.
        self.check_turn_policy(conv, backend, &turn.overrides)
            .await?;
        if m.message.role == Role::User {
            let conversation = self
                .get_conversation(ConversationRef::new(tenant, id))
                .await?;
            if conversation.last_seq == seq {
                let outcome = self
                    .reply_turn(conv, backend, &turn, seq, cancel, &mut on_event)
                    .await?;
                let conversation = self
                    .get_conversation(ConversationRef::new(tenant, id))
                    .await?;
                return Ok(Branched {
                    conversation,
                    outcome,
                });
            }
        }
        if m.message.role != Role::Assistant {
            return Err(EngineError::Invalid(format!(
                "message {seq} is a {} message{}: retry regenerates a reply (an assistant \
                 message, or a user message that ends the conversation unanswered); to change \
                 what was sent, edit it",
                m.message.role.as_str(),
                if m.message.role == Role::User {
                    " with a reply after it"
                } else {
                    ""
                }
            )));
        }
        let fork = self
            .fork_conversation(ConversationRef::new(tenant, id), seq - 1, None)
            .await?;
        on_event(TurnEvent::Forked {
            conversation_id: fork.id.clone(),
        });
        let outcome = self
            .reply_turn(
                ConversationRef::new(tenant, &fork.id),
                backend,
                &turn,
                seq - 1,
                cancel,
                &mut on_event,
            )
            .await?;
        let conversation = self
            .get_conversation(ConversationRef::new(tenant, &fork.id))
            .await?;
        Ok(Branched {
            conversation,
            outcome,
        })
    }

    /// Edits the user message at `seq`: forks the conversation before it and runs a chat turn
    /// with `turn` (the new message) on the fork. The old message and what followed it stay,
    /// an alternative of the new one.
    pub async fn edit_turn(
        &self,
        conv: ConversationRef<'_>,
        seq: i64,
        backend: &dyn Backend,
        turn: ChatTurn,
        cancel: CancellationToken,
        mut on_event: impl FnMut(TurnEvent) + Send,
    ) -> Result<Branched, EngineError> {
        let ConversationRef { tenant, id } = conv;
        let m = self.body_message_at(tenant, id, seq).await?;
        if m.message.role != Role::User || !m.message.has_text() {
            return Err(EngineError::Invalid(format!(
                "message {seq} is not a user message with text: edit changes what the user \
                 sent; to regenerate a reply, retry it"
            )));
        }
        // Checked before the fork, so a bad message or policy leaves no fork behind.
        self.user_message(&turn)?;
        self.check_turn_policy(conv, backend, &turn.overrides)
            .await?;
        let fork = self
            .fork_conversation(ConversationRef::new(tenant, id), seq - 1, None)
            .await?;
        on_event(TurnEvent::Forked {
            conversation_id: fork.id.clone(),
        });
        let outcome = self
            .chat_turn(
                ConversationRef::new(tenant, &fork.id),
                backend,
                turn,
                cancel,
                on_event,
            )
            .await?;
        let conversation = self
            .get_conversation(ConversationRef::new(tenant, &fork.id))
            .await?;
        Ok(Branched {
            conversation,
            outcome,
        })
    }

    /// The history's chain, newest first: the conversation, then the ones it reads from.
    async fn links(&self, tenant: &str, id: &str) -> Result<Vec<Link>, EngineError> {
        let mut out: Vec<Link> = Vec::new();
        let mut next = Some((id.to_string(), i64::MAX));
        while let Some((cid, upto)) = next.take() {
            let conv = self
                .get_conversation(ConversationRef::new(tenant, &cid))
                .await?;
            next = conv
                .forked_from
                .as_ref()
                .map(|f| (f.conversation_id.clone(), f.seq));
            let after = conv.forked_from.as_ref().map_or(0, |f| f.seq);
            out.push(Link {
                upto: upto.min(conv.last_seq),
                after,
                conv,
            });
        }
        Ok(out)
    }

    /// The alternatives of message `seq` of conversation `id`: the message at `seq` on every
    /// path that shares the history before it — the conversation holding the message before
    /// it, and each of its forks made right before `seq` (retries and edits) — oldest path
    /// first. The one `id` reads is marked `current`; to switch, read or continue another's
    /// conversation.
    pub async fn alternatives(
        &self,
        c: ConversationRef<'_>,
        seq: i64,
    ) -> Result<Vec<Alternative>, EngineError> {
        let (tenant, id) = (c.tenant, c.id);
        let here = self.message_at(tenant, id, seq).await?;
        let links = self.links(tenant, id).await?;
        let at = seq - 1;
        // Where forks at `at` are made (the store's rule: the newest conversation of the
        // chain holding messages up to it, else the root).
        let Some(base) = links.iter().find(|l| l.after < at).or(links.last()) else {
            return Ok(Vec::new());
        };
        // The conversation of the chain whose own message `seq` is.
        let reads = links
            .iter()
            .find(|l| l.after < seq && seq <= l.upto)
            .map(|l| l.conv.id.clone());
        let mut out = Vec::new();
        let mut paths: Vec<Conversation> = Vec::new();
        if base.after < seq && seq <= base.conv.last_seq {
            paths.push(base.conv.clone());
        }
        for f in self
            .forks(ConversationRef::new(tenant, &base.conv.id))
            .await?
        {
            let fork_seq = f.forked_from.as_ref().map_or(-1, |p| p.seq);
            if fork_seq == at && f.last_seq >= seq {
                paths.push(f);
            }
        }
        for p in paths {
            let current = reads.as_deref() == Some(p.id.as_str());
            let message = if current {
                here.clone()
            } else {
                self.message_at(tenant, &p.id, seq).await?
            };
            out.push(Alternative {
                conversation_id: p.id,
                message,
                current,
            });
        }
        Ok(out)
    }
}
