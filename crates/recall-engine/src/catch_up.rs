//! Every stored message embedded, whoever stored it: the vectors of conversations that no
//! append through this engine marked behind (an import by another process, messages stored
//! before the embedder was on or under another model, appends through another server of a
//! shared database). A server marks every conversation behind at start
//! ([`Engine::embed_store_in_background`]) and the background catch-up of `vectors.rs` goes
//! through them, yielding to appends; a context that finds its conversation incomplete marks it
//! too. `recall index` runs [`Engine::embed_all`] to completion with a progress bar. Each
//! conversation is embedded under the store's vector lease, so two processes on one database
//! embed each message once.

use recall_store::{VectorScope, VectorStatus};

use crate::{ConversationRef, Engine, EngineError};

/// Conversations read per page when going through the store's backlog.
const PAGE: u32 = 500;

/// How long [`Engine::embed_all`] waits before it looks again at a conversation that another
/// process is embedding.
const HELD_ELSEWHERE: std::time::Duration = std::time::Duration::from_millis(500);

/// What [`Engine::embed_all`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct EmbedReport {
    /// Conversations gone through.
    pub conversations: u64,
    /// Messages this process went through (embedded, or passed: system messages and messages
    /// without text get no vector).
    pub messages: u64,
}

impl Engine {
    /// What is left to embed over `scope` under this engine's model; `None` without an
    /// embedder.
    pub async fn vector_status(
        &self,
        scope: VectorScope<'_>,
    ) -> Result<Option<VectorStatus>, EngineError> {
        let Some(e) = self.embedder() else {
            return Ok(None);
        };
        Ok(Some(self.store.vector_status(scope, e.model()).await?))
    }

    /// Marks every conversation of the store with messages not embedded yet for the
    /// background catch-up (what a server does at start); returns how many. Without an
    /// embedder, none.
    pub async fn embed_store_in_background(&self) -> Result<usize, EngineError> {
        let Some(e) = self.embedder() else {
            return Ok(0);
        };
        let model = e.model().to_string();
        let mut marked = 0;
        let mut after: Option<(String, String)> = None;
        loop {
            let page = self
                .store
                .vectors_behind(
                    &model,
                    None,
                    after.as_ref().map(|(t, i)| ConversationRef::new(t, i)),
                    PAGE,
                )
                .await?;
            for (tenant, id) in &page {
                self.embed_in_background(tenant, id);
            }
            marked += page.len();
            match page.into_iter().last() {
                Some(last) => after = Some(last),
                None => return Ok(marked),
            }
        }
    }

    /// Embeds every message of `scope` not embedded yet, to completion, and catches up the
    /// recall index of each conversation it goes through (of the one conversation, for that
    /// scope); `progress` is told the messages of each batch. A conversation another process
    /// is embedding (its vector lease) is waited for. Without an embedder,
    /// [`EngineError::Invalid`].
    pub async fn embed_all(
        &self,
        scope: VectorScope<'_>,
        progress: &(dyn Fn(usize) + Sync),
    ) -> Result<EmbedReport, EngineError> {
        let Some(e) = self.embedder() else {
            return Err(EngineError::Invalid(
                "no embedder is configured: nothing to embed with (scripts/models.sh fetch \
                 installs all-MiniLM-L6-v2, or set RECALL_EMBED_URL)"
                    .into(),
            ));
        };
        let model = e.model().to_string();
        let mut report = EmbedReport::default();
        let mut after: Option<(String, String)> = None;
        loop {
            let page: Vec<(String, String)> = match scope {
                VectorScope::Conversation(c) => {
                    if after.is_some() {
                        Vec::new()
                    } else {
                        // Not found is an error here, not an empty page.
                        self.store.vector_status(scope, &model).await?;
                        vec![(c.tenant.to_string(), c.id.to_string())]
                    }
                }
                VectorScope::Store | VectorScope::Tenant(_) => {
                    let of = match scope {
                        VectorScope::Tenant(t) => Some(t),
                        _ => None,
                    };
                    let after = after.as_ref().map(|(t, i)| ConversationRef::new(t, i));
                    self.store.vectors_behind(&model, of, after, PAGE).await?
                }
            };
            let Some(last) = page.last().cloned() else {
                return Ok(report);
            };
            for (tenant, id) in &page {
                self.store.catch_up_recall(tenant, id, None).await?;
                loop {
                    let n = self.catch_up_leased(tenant, id, false, progress).await?;
                    report.messages += n as u64;
                    let c = ConversationRef::new(tenant, id);
                    let left = self
                        .store
                        .vector_status(VectorScope::Conversation(c), &model)
                        .await?;
                    if left.messages_behind == 0 {
                        break;
                    }
                    if n == 0 {
                        // Held by another process: it is embedding this conversation.
                        tokio::time::sleep(HELD_ELSEWHERE).await;
                    }
                }
                report.conversations += 1;
            }
            after = Some(last);
        }
    }
}
