//! Recall for a context built from the store: the store ranks the messages older than the
//! window (`Store::recall_lexical`; with an embedder, `Store::recall_semantic` too), the two
//! lists are fused by reciprocal rank; the store reads the messages recall-core's choice looks at
//! (`Store::recall_choose`, core's `choose_from` within the budget) and the section is placed
//! by core (`recall_core::recall`).

use recall_core::context::Prepared;
use recall_core::recall::{reciprocal_rank_fusion, Ranking, RecallSection};

use crate::{ConversationRef, Engine, EngineError};
use recall_store::RecallChoice;

impl Engine {
    /// The recalled section of a prepared context: `None` when its policy does not recall.
    pub async fn recall_for(
        &self,
        c: ConversationRef<'_>,
        prepared: &Prepared,
    ) -> Result<Option<RecallSection>, EngineError> {
        let (tenant, id) = (c.tenant, c.id);
        let Some(query) = &prepared.recall else {
            return Ok(None);
        };
        if query.scope == recall_core::policy::RecallScope::Conversation {
            self.catch_up_index(tenant, id).await?;
        }
        let lexical = self.store.recall_lexical(tenant, id, query).await?;
        let mut complete = lexical.complete;
        let mut ranking = Ranking::Lexical;
        let mut hits = lexical.hits;
        if let Some(embedder) = self.embedder() {
            self.catch_up_before_context(tenant, id).await?;
            // Semantic similarity of the query's text, fused with the lexical ranking.
            let text = if query.text.trim().is_empty() {
                None
            } else {
                embedder
                    .embed(&[query.text.as_str()])
                    .await?
                    .into_iter()
                    .next()
            };
            if let Some(q) = text {
                let semantic = self
                    .store
                    .recall_semantic(tenant, id, query, embedder.model(), q.vector())
                    .await?;
                complete &= semantic.complete;
                if !semantic.complete {
                    // Stored by another process, or before the embedder was on: embed it in
                    // the background rather than wait for an append through this engine.
                    self.embed_in_background(tenant, id);
                }
                hits = reciprocal_rank_fusion(&[hits, semantic.hits]);
                ranking = Ranking::Hybrid;
            }
        }
        hits.truncate(query.limit);
        let mut section = self
            .store
            .recall_choose(RecallChoice {
                conv: c,
                query,
                hits: &hits,
                tokenizer: prepared.policy.tokenizer,
                escape: prepared.escape,
                complete,
            })
            .await?;
        section.stats.ranking = ranking;
        Ok(Some(section))
    }
}
