//! Recall for a context built from the store: the store ranks the messages older than the
//! window (`Store::recall_lexical`; with an embedder, `Store::recall_semantic` too, the two
//! fused by reciprocal rank) and reads the hits' neighbours; recall-core chooses within the
//! budget and places the section (`recall_core::recall`).

use recall_core::context::Prepared;
use recall_core::recall::{choose, reciprocal_rank_fusion, RecallSection};

use crate::{Engine, EngineError};

impl Engine {
    /// The recalled section of a prepared context: `None` when its policy does not recall.
    pub async fn recall_for(
        &self,
        tenant: &str,
        id: &str,
        prepared: &Prepared,
    ) -> Result<Option<RecallSection>, EngineError> {
        let Some(query) = &prepared.recall else {
            return Ok(None);
        };
        let lexical = self.store.recall_lexical(tenant, id, query).await?;
        let mut complete = lexical.complete;
        let mut hits = lexical.hits;
        if let Some(embedder) = self.embedder() {
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
                hits = reciprocal_rank_fusion(&[hits, semantic.hits]);
            }
        }
        hits.truncate(query.limit);
        let keys = query.neighbour_keys(&hits);
        let candidates = self.store.recall_messages(tenant, id, query, &keys).await?;
        Ok(Some(choose(
            query,
            &hits,
            &candidates,
            &prepared.policy.tokenizer,
            prepared.escape,
            complete,
        )))
    }
}
