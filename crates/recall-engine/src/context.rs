//! A stored conversation's context, with an optional limit on the size of its prompt.
//!
//! A server must not hold a prompt it will refuse: a conversation of 200 messages of 1 MB and
//! `max_tokens: 1e8` would otherwise be read (200 MB), rendered (200 MB more) and serialised
//! before anyone looks at its size. Under a limit of `L` bytes the window is first read with
//! an extra character budget of `L` (a *guard*; characters never outnumber the UTF-8 bytes
//! they are written in), so at most about `L` characters of history are read. That read
//! decides the answer in every case that matters:
//! - when it holds no more than `L` characters (or the whole conversation), the guard did not
//!   move the window's start: it is the window the policy reads, and its prompt is the answer
//!   (refused if over `L`);
//! - otherwise the guard cut the read short. The policy's own selection over what was read
//!   keeps a subset of what it keeps over the whole window (the walk goes newest first, and a
//!   window starts on a cut point), so a prompt over `L` already proves the whole one is: it
//!   is refused without reading more. Only a prompt under `L` from more than `L` measured
//!   characters (tool inputs that a text format does not print) needs the full read.
//!
//! Stable windows (their start is persisted per budget) and policies with per-message caps
//! (the store ignores budgets for them) are read as before and checked once rendered.

use crate::ConversationRef;
use recall_core::context::{prepare, ContextOutput, ContextRequest, Gathered, Resolved};
use recall_core::policy::{Policy, TrimMode};
use recall_core::render::Prompt;
use recall_store::{Conversation, Window};

use crate::{resolve, Engine, EngineError};

impl Engine {
    /// [`Engine::context`] refused with [`EngineError::ContextTooLarge`] when the prompt
    /// (a text prompt's UTF-8 bytes, a JSON prompt's compact serialisation) is over
    /// `max_bytes`; `None` is no limit. Under a limit, the history read for the check is
    /// about `max_bytes` characters at most (see the module documentation).
    pub async fn context_within(
        &self,
        c: ConversationRef<'_>,
        req: &ContextRequest,
        max_bytes: Option<usize>,
    ) -> Result<ContextOutput, EngineError> {
        let (tenant, id) = (c.tenant, c.id);
        // Most conversations have no stored policy: the request alone then decides, and the
        // conversation and its window come back from one statement. When the stored policy
        // changes the outcome, the window is read again under the right one (a
        // conversation's policy and system prompt never change, so the two reads agree).
        let (conv, window, resolved) = match req.resolve(None) {
            Ok(guess) => {
                let (conv, window) = self
                    .store
                    .conversation_window(tenant, id, &guarded(&guess.policy, max_bytes))
                    .await?;
                let resolved = resolve(&conv, req)?;
                if resolved == guess {
                    (conv, window, resolved)
                } else {
                    let window = self
                        .store
                        .context_window(tenant, id, &guarded(&resolved.policy, max_bytes))
                        .await?;
                    (conv, window, resolved)
                }
            }
            // The request alone may not make a valid policy while the stored one repairs
            // it: the stored policy decides, as before.
            Err(_) => {
                let conv = self.store.get_conversation(tenant, id).await?;
                let resolved = resolve(&conv, req)?;
                let window = self
                    .store
                    .context_window(tenant, id, &guarded(&resolved.policy, max_bytes))
                    .await?;
                (conv, window, resolved)
            }
        };
        self.bounded(tenant, &conv, window, req, resolved, max_bytes)
            .await
    }

    /// The context built from `window` (read under `guarded(policy, max_bytes)`), checked
    /// against `max_bytes` (see [`Engine::context_within`]).
    async fn bounded(
        &self,
        tenant: &str,
        conv: &Conversation,
        window: Window,
        req: &ContextRequest,
        resolved: Resolved,
        max_bytes: Option<usize>,
    ) -> Result<ContextOutput, EngineError> {
        let id = conv.id.as_str();
        let Some(limit) = max_bytes else {
            return self.build(tenant, id, conv, window, req, resolved).await;
        };
        let cut_short = guarded(&resolved.policy, max_bytes) != resolved.policy.window_read()
            && window.older > 0
            && window.messages.iter().map(|h| h.measure.chars).sum::<u64>() > limit as u64;
        let out = self
            .build(tenant, id, conv, window, req, resolved.clone())
            .await?;
        let size = prompt_bytes(&out.prompt);
        if size > limit {
            return Err(EngineError::ContextTooLarge {
                size,
                at_least: cut_short,
                limit,
            });
        }
        if !cut_short {
            return Ok(out);
        }
        // Many measured characters, few rendered bytes: the full read decides.
        drop(out);
        let window = self
            .store
            .context_window(tenant, id, &resolved.policy.window_read())
            .await?;
        let out = self.build(tenant, id, conv, window, req, resolved).await?;
        let size = prompt_bytes(&out.prompt);
        if size > limit {
            return Err(EngineError::ContextTooLarge {
                size,
                at_least: false,
                limit,
            });
        }
        Ok(out)
    }
}

impl Engine {
    /// [`Engine::context_within`] of a conversation already read: its stored policy decides
    /// the window read, so the window is read once (where `context_within` first guesses
    /// that there is no stored policy, which a gateway conversation always has: that guess,
    /// under a byte limit, read the whole history of a long conversation on every request).
    pub(crate) async fn context_of(
        &self,
        tenant: &str,
        conv: &Conversation,
        req: &ContextRequest,
        max_bytes: Option<usize>,
    ) -> Result<ContextOutput, EngineError> {
        let resolved = resolve(conv, req)?;
        let window = self
            .store
            .context_window(tenant, &conv.id, &guarded(&resolved.policy, max_bytes))
            .await?;
        self.bounded(tenant, conv, window, req, resolved, max_bytes)
            .await
    }
}

/// The policy the window is read under: `policy`'s [`Policy::window_read`] (the whole budget
/// while recall has not reserved its share), with a character budget of `max_bytes` when
/// that bounds the read (a sliding window without caps) and the policy has none as tight.
fn guarded(policy: &Policy, max_bytes: Option<usize>) -> Policy {
    let mut p = policy.window_read();
    if let Some(limit) = max_bytes {
        if p.trim == TrimMode::Sliding && !p.has_caps() {
            let limit = limit as u64;
            p.max_chars = Some(p.max_chars.map_or(limit, |c| c.min(limit)));
        }
    }
    p
}

impl Engine {
    /// Selection, recall (when the policy recalls), the committed summary (when it
    /// summarises) and rendering over a window read from the store.
    async fn build(
        &self,
        tenant: &str,
        id: &str,
        conv: &Conversation,
        window: Window,
        req: &ContextRequest,
        resolved: Resolved,
    ) -> Result<ContextOutput, EngineError> {
        let mut system_parts: Vec<String> = conv
            .system_prompt
            .iter()
            .filter(|s| !s.trim().is_empty())
            .cloned()
            .collect();
        system_parts.extend(
            window
                .system_parts
                .into_iter()
                .filter(|s| !s.trim().is_empty()),
        );
        let gathered = Gathered {
            system_parts,
            history: window.messages,
            older: window.older,
            window_start: 0,
            skipped: 0,
            warnings: Vec::new(),
        };
        let prepared = prepare(gathered, req, resolved)?;
        let recalled = self
            .recall_for(ConversationRef::new(tenant, id), &prepared)
            .await?;
        let mut prepared = prepared;
        let summary = match prepared.summary_before() {
            Some(before) => match self.summary_in_force(tenant, conv, before).await? {
                Some(s) => {
                    // The stored count is of the escaped section; unescaped, count it.
                    let known = prepared
                        .escape
                        .then(|| s.tokens.get(prepared.policy.tokenizer));
                    let summary = recall_core::summary::Summary {
                        from_seq: s.from_seq,
                        to_seq: s.to_seq,
                        text: s.text,
                    };
                    prepared.summary_section(&summary, known)
                }
                None => None,
            },
            None => None,
        };
        Ok(prepared.finish(recalled, summary))
    }
}

/// The size of a prompt as an answer carries it: a text prompt as a JSON string (escaped: a
/// control character weighs six bytes there, so a limit on the UTF-8 length let an answer
/// reach six times the limit), a JSON prompt's compact serialisation; counted without
/// building either.
pub fn prompt_bytes(prompt: &Prompt) -> usize {
    match prompt {
        Prompt::Text(s) => recall_core::json_text::json_str_len(s),
        Prompt::Json(v) => {
            let mut counter = ByteCounter(0);
            // Writing to a counter cannot fail, and a `Value` always serialises.
            let _ = serde_json::to_writer(&mut counter, v);
            counter.0
        }
    }
}

struct ByteCounter(usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
