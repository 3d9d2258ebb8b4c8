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
        let embedder = self.embedder();
        // The query's embedding is the slow stage (a model call); it needs nothing from the
        // store, so it runs while the store catches up and ranks by words.
        let lexical = async {
            if query.scope == recall_core::policy::RecallScope::Conversation {
                self.catch_up_index(tenant, id).await?;
            }
            Ok::<_, EngineError>(self.store.recall_lexical(tenant, id, query).await?)
        };
        let query_vector = async {
            match embedder {
                Some(embedder) if !query.text.trim().is_empty() => Ok::<_, EngineError>(
                    embedder
                        .embed(&[query.text.as_str()])
                        .await?
                        .into_iter()
                        .next(),
                ),
                _ => Ok(None),
            }
        };
        let vectors_caught_up = async {
            if embedder.is_some() {
                self.catch_up_before_context(tenant, id).await?;
            }
            Ok::<_, EngineError>(())
        };
        let (lexical, query_vector, caught_up) =
            tokio::join!(lexical, query_vector, vectors_caught_up);
        let lexical = lexical?;
        let query_vector = query_vector?;
        caught_up?;
        let mut complete = lexical.complete;
        let mut ranking = Ranking::Lexical;
        let mut hits = lexical.hits;
        if let Some(embedder) = embedder {
            if let Some(q) = query_vector {
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
