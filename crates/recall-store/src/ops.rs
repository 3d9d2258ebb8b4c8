//! The operations each database writes its own way (its file of the same name: `forks.rs`,
//! `append.rs`, `window.rs`, `search.rs`, `recall.rs`, `vectors.rs`), over the statement
//! surface of `driver.rs`; a database that has them all is a [`Driver`], and
//! [`crate::Store`] is implemented once for any `Driver` (`store_impl.rs`).

use async_trait::async_trait;
use recall_core::policy::Policy;
use recall_core::recall::{choose, Ranked, RecallQuery, RecallSection};

use crate::codec::Encoded;
use crate::driver::{Conv, Statements};
use crate::error::StoreError;
use crate::fork_plan::Segment;
use crate::model::{Appended, Conversation, RecallHits, SearchHit, StoredMessage};
use crate::window::Window;

/// A history's chain and the database's vacuum (each database's `forks.rs`); forking,
/// redaction and the reads along a chain are shared (`forks.rs`).
#[async_trait]
pub trait ForkOps {
    /// The segments of a history, newest first (`fork_plan`); not found when it is not the
    /// tenant's.
    async fn chain_of(&self, c: Conv<'_>) -> Result<Vec<Segment>, StoreError>;
    /// Gives the space of deleted and redacted rows back (see `Store::compact`).
    async fn vacuum(&self) -> Result<(), StoreError>;
}

/// The append (each database's `append.rs`), given a batch already encoded and checked
/// (`codec::encode_batch`).
#[async_trait]
pub trait AppendOps {
    async fn append_encoded(
        &self,
        c: Conv<'_>,
        encoded: Vec<Encoded>,
    ) -> Result<Vec<Appended>, StoreError>;
}

/// The context read (each database's `window.rs`).
#[async_trait]
pub trait WindowOps {
    async fn read_window(
        &self,
        c: Conv<'_>,
        policy: &Policy,
    ) -> Result<(Conversation, Window), StoreError>;
}

/// Full-text search (each database's `search.rs`), given checked words and a limit above 0.
#[async_trait]
pub trait SearchOps {
    async fn search_hits(
        &self,
        tenant: &str,
        words: &[String],
        limit: u32,
    ) -> Result<Vec<SearchHit>, StoreError>;
}

/// Recall's lexical index and reads (each database's `recall.rs`).
#[async_trait]
pub trait RecallOps: ForkOps + Sync {
    /// The parts of a history's recall index that are behind: (conversation, the seq its
    /// index must reach), what [`RecallOps::recall_index_batch`] then indexes.
    async fn recall_behind(&self, c: Conv<'_>) -> Result<Vec<(String, i64)>, StoreError>;
    /// Indexes the next batch of conversation `seg`'s messages up to `hi` in one write; how
    /// far its index reaches then.
    async fn recall_index_batch(&self, seg: String, hi: i64) -> Result<i64, StoreError>;
    /// Hits in `conversation` scope: ranked over the store's recall index as far as it is
    /// caught up (`complete` false when it does not reach `query.before`).
    async fn conversation_hits(
        &self,
        c: Conv<'_>,
        query: &RecallQuery,
    ) -> Result<RecallHits, StoreError>;
    /// Hits in `tenant` scope, ranked by the search index.
    async fn tenant_hits(
        &self,
        c: Conv<'_>,
        query: &RecallQuery,
    ) -> Result<Vec<Ranked>, StoreError>;
    /// The messages of `pairs` (conversation, seq) that are `tenant`'s and no system
    /// message, by conversation and seq, with their conversation.
    async fn read_pairs(
        &self,
        tenant: &str,
        pairs: &[(String, i64)],
    ) -> Result<Vec<(String, StoredMessage)>, StoreError>;

    /// Recall's choice (see [`crate::Store::recall_choose`]): by default every message
    /// within two seqs of a hit is read at once, then chosen.
    async fn recall_choice(&self, c: Choice<'_>) -> Result<RecallSection, StoreError> {
        let keys = c.query.neighbour_keys(c.hits);
        let candidates = recall_read(self, c.conv, c.query, &keys).await?;
        Ok(choose(
            c.query,
            c.hits,
            &candidates,
            &c.tokenizer,
            c.escape,
            c.complete,
        ))
    }
}

/// The cosine ranking over stored vectors (each database's `vectors.rs`); the backlog and
/// saving are shared (`vectors.rs`).
#[async_trait]
pub trait VectorOps {
    async fn semantic(
        &self,
        c: Conv<'_>,
        query: &RecallQuery,
        model: &str,
        vector: &[f32],
    ) -> Result<RecallHits, StoreError>;
}

/// One database under the shared store: every capability. [`crate::Store`] is implemented
/// once for any `Driver` (`store_impl.rs`).
pub trait Driver:
    Statements + ForkOps + AppendOps + WindowOps + SearchOps + RecallOps + VectorOps
{
}

impl<D> Driver for D where
    D: Statements + ForkOps + AppendOps + WindowOps + SearchOps + RecallOps + VectorOps
{
}

/// One recall choice's inputs.
pub type Choice<'a> = crate::model::RecallChoice<'a>;

/// The messages under `keys` that `query` allows (see [`crate::Store::recall_messages`]):
/// where each key's message is stored along the history's chain, read in one statement.
pub(crate) async fn recall_read<D: RecallOps + ?Sized>(
    db: &D,
    c: Conv<'_>,
    query: &recall_core::recall::RecallQuery,
    keys: &[recall_core::recall::RecallKey],
) -> Result<Vec<recall_core::recall::RecallCandidate>, crate::StoreError> {
    let segs = db.chain_of(c).await?;
    let pairs = crate::search::recall_pairs(&segs, query, keys);
    if pairs.is_empty() {
        return Ok(Vec::new());
    }
    let found = db.read_pairs(c.tenant, &pairs).await?;
    Ok(found
        .into_iter()
        .map(|(conv, m)| recall_core::recall::RecallCandidate {
            conversation_id: crate::search::recall_key_conversation(&segs, &conv, m.seq),
            seq: m.seq,
            message: m.message,
            at: Some(m.created_at),
        })
        .collect())
}
