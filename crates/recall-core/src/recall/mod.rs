//! Recall: the earlier messages most relevant to what is asked now, brought into a context
//! next to its window (docs/FORMAT-DECISIONS.md, "Recall"). The pure parts live here; the
//! stores rank with their full-text indexes (and vectors), the engine joins them.
//!
//! A context with `recall_tokens > 0`:
//! 1. selects its window from `max_tokens − recall_tokens` (`Policy::reserve_recall`);
//! 2. takes the query — the request's `query`, else the newest user message's text — and its
//!    [`query_terms`];
//! 3. ranks the messages older than the window (a store: `seq` below the window's first;
//!    with `recall_scope: tenant`, the tenant's other conversations too): BM25 with OR
//!    semantics from per-message term weights, one definition in memory ([`LexicalIndex`])
//!    and in the stores (see `lexical`), fused with semantic similarity when an embedder is
//!    configured ([`reciprocal_rank_fusion`]);
//! 4. scores each hit with its session's best hits ([`score_by_session`]: sessions from the
//!    messages' times, a gap of hours between them), then [`choose`]s within `recall_tokens`:
//!    each hit in that order (with its tool pair whole)
//!    while it fits, so the section fills its budget with the most relevant messages; oldest
//!    first, deduplicated;
//! 5. renders them as one tagged section ([`render_section`]) placed so that no byte before
//!    the newest user message changes: a leading text block of that message in
//!    `anthropic`/`openai`, a section just before its turn in the text formats (`xml`: just
//!    before the current message).
//!
//! ```
//! use recall_core::message::{Message, Role};
//! use recall_core::recall::{choose, LexicalIndex, RecallCandidate, RecallQuery};
//! use recall_core::policy::RecallScope;
//! use recall_core::tokens::Tokenizer;
//! let old = ["My sister Ana lives in Lisbon.", "Nice!", "What's for dinner?", "Soup."];
//! let cands: Vec<RecallCandidate> = old.iter().enumerate().map(|(i, t)| RecallCandidate {
//!     conversation_id: None,
//!     seq: i as i64 + 1,
//!     message: Message::text(if i % 2 == 0 { Role::User } else { Role::Assistant }, *t),
//!     at: None,
//! }).collect();
//! let q = RecallQuery::new("Where does Ana live?", 5, 200, RecallScope::Conversation);
//! let idx = LexicalIndex::over(&cands);
//! let hits = idx.rank(&q.terms, q.limit);
//! let s = choose(&q, &hits, &cands, &Tokenizer::O200k, true, true);
//! let seqs: Vec<i64> = s.messages.iter().map(|m| m.seq).collect();
//! // The hit, then the two after it, whose documents hold its words at lower weights.
//! assert_eq!(seqs, [1, 2, 3]);
//! assert!(s.text.starts_with("<recalled_messages>\n"));
//! ```

mod fuse;
mod lexical;
mod section;
mod session;
mod terms;
mod vector;

pub use fuse::{reciprocal_rank_fusion, RRF_K};
pub use lexical::{
    document, idf, posting_order, rank_postings, ranked_terms, searchable_text, term_weight,
    Document, LexicalIndex, Posting, TermList, B, DATE_WEIGHT, K1, NEIGHBOUR_WEIGHTS,
    POSTINGS_PER_TERM, RANKED_TERMS, REF_LEN,
};
pub(crate) use section::excerpt;
pub use section::{
    choose, choose_from, date_of_millis, excerpt_text, excerpt_tokens, known_frame_tokens,
    render_section, with_leading_text, CandidateSource, Prefetched, RECALL_CLOSE, RECALL_INTRO,
    RECALL_INTRO_TENANT, RECALL_OPEN,
};
pub use session::{score_by_session, SESSION_BEST, SESSION_GAP_MS, TURN_SHARE};
pub use terms::{
    is_stop_word, query_terms, stem, stems, words, MAX_TERMS, MAX_TERM_BYTES, STOP_WORDS,
};
pub use vector::{dot, dot_bytes, vector_from_bytes, vector_to_bytes, CosineTop};

use crate::message::Message;
use crate::policy::RecallScope;

/// Hits each ranking is asked for per context, and kept after fusion: about what a section of
/// 2,000 tokens holds when some hits do not fit (40 hits filled 1,898 of 2,000 tokens on
/// LoCoMo; 60 held the evidence of 82.7% of the questions at 4,000 tokens against 81.4%,
/// docs/BENCHMARKS.md "The method study"), few enough to read their neighbours in one
/// statement.
pub const HITS_PER_QUERY: usize = 60;

/// Which message: its conversation (`None`: the conversation the context is built for, in
/// `conversation` scope) and its `seq`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecallKey {
    pub conversation_id: Option<String>,
    pub seq: i64,
}

/// A ranked message: a hit of one list (lexical or semantic), or of the fused list.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    pub conversation_id: Option<String>,
    pub seq: i64,
    /// The list's own score (BM25, cosine, the fused score, or one with its session's:
    /// [`score_by_session`]); higher is better.
    pub score: f64,
}

impl Ranked {
    pub fn new(conversation_id: Option<String>, seq: i64, score: f64) -> Ranked {
        Ranked {
            conversation_id,
            seq,
            score,
        }
    }

    /// Its key.
    pub fn key(&self) -> RecallKey {
        RecallKey {
            conversation_id: self.conversation_id.clone(),
            seq: self.seq,
        }
    }
}

/// Sorts ranked messages best first, ties to the older message (the key's order): every
/// ranking recall makes orders its hits this way.
pub(crate) fn best_first(ranked: &mut [Ranked]) {
    ranked.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.key().cmp(&b.key()))
    });
}

/// A message that may be recalled: a hit or a neighbour, as read from wherever it lives.
#[derive(Debug, Clone, PartialEq)]
pub struct RecallCandidate {
    /// As in [`RecallKey`].
    pub conversation_id: Option<String>,
    pub seq: i64,
    pub message: Message,
    /// When it was stored (milliseconds since the Unix epoch); `None` in memory.
    pub at: Option<i64>,
}

impl RecallCandidate {
    /// Its key.
    pub fn key(&self) -> RecallKey {
        RecallKey {
            conversation_id: self.conversation_id.clone(),
            seq: self.seq,
        }
    }
}

/// What to recall for one context.
#[derive(Debug, Clone, PartialEq)]
pub struct RecallQuery {
    /// The query's text (for an embedder).
    pub text: String,
    /// Its [`query_terms`] (for the lexical ranking).
    pub terms: Vec<String>,
    /// This conversation's messages are recalled only below this seq: the window's first.
    pub before: i64,
    /// The token share of the budget.
    pub budget: u64,
    pub scope: RecallScope,
    /// Hits to rank at most.
    pub limit: usize,
}

impl RecallQuery {
    /// A query for `text` below seq `before`, with [`HITS_PER_QUERY`] hits at most.
    pub fn new(text: &str, before: i64, budget: u64, scope: RecallScope) -> RecallQuery {
        RecallQuery {
            text: text.to_string(),
            terms: query_terms(text),
            before,
            budget,
            scope,
            limit: HITS_PER_QUERY,
        }
    }

    /// True when `key` may be recalled: never a message of the window.
    pub fn allows(&self, key: &RecallKey) -> bool {
        key.conversation_id.is_some() || key.seq < self.before
    }

    /// The keys [`choose`] may use for `hits`: each hit and the two messages on each side
    /// (its neighbours, and a neighbour's tool-pair partner), within [`RecallQuery::allows`]
    /// and never below seq 0 (a conversation in memory counts from 0, a store from 1), in
    /// key order, once each. A store reads these messages.
    pub fn neighbour_keys(&self, hits: &[Ranked]) -> Vec<RecallKey> {
        let mut keys: Vec<RecallKey> = hits
            .iter()
            .flat_map(|h| {
                (h.seq - 2..=h.seq + 2).map(move |seq| RecallKey {
                    conversation_id: h.conversation_id.clone(),
                    seq,
                })
            })
            .filter(|k| k.seq >= 0 && self.allows(k))
            .collect();
        keys.sort();
        keys.dedup();
        keys
    }
}

/// One recalled message, as placed in the context.
#[derive(Debug, Clone, PartialEq)]
pub struct RecalledMessage {
    pub conversation_id: Option<String>,
    pub seq: i64,
    /// The score of the hit that brought it (its own, when it is the hit), as the choice
    /// ranked it: with its session's ([`score_by_session`]).
    pub score: f64,
    /// True for a hit, false for a neighbour or a tool pair's other half.
    pub hit: bool,
    pub message: Message,
    pub at: Option<i64>,
    /// Tokens of its excerpt in the section.
    pub tokens: u64,
}

/// Which ranking chose the recalled messages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Ranking {
    /// BM25 over the messages' documents only (no embedder, or `RECALL_EMBED=off`).
    #[default]
    Lexical,
    /// BM25 fused with the cosine similarity of the embedder's vectors (reciprocal rank
    /// fusion).
    Hybrid,
}

/// What a context reports about recall (`stats.recalled`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct RecallStats {
    /// `recall_tokens`.
    pub budget: u64,
    /// Which ranking ran: `lexical`, or `hybrid` with an embedder.
    pub ranking: Ranking,
    /// Tokens of the recalled section (0 when nothing was recalled).
    pub tokens: u64,
    /// False when the index had not caught up with every message older than the window
    /// (vectors still being computed): what was indexed was used.
    pub complete: bool,
    /// The query terms the lexical ranking used.
    pub terms: Vec<String>,
    /// The messages included, oldest first.
    pub messages: Vec<RecalledRef>,
}

/// One recalled message in the stats.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct RecalledRef {
    /// Set in `tenant` scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    pub seq: i64,
    pub score: f64,
    /// True for a hit, false for a message brought with one.
    pub hit: bool,
}

/// The recalled messages of one context and their section's text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecallSection {
    /// Oldest first.
    pub messages: Vec<RecalledMessage>,
    /// The section ([`render_section`]); empty when nothing was recalled.
    pub text: String,
    pub stats: RecallStats,
}

impl RecallSection {
    /// Nothing recalled (a context whose query has no terms, or a store with no hits).
    pub fn empty(query: &RecallQuery, complete: bool) -> RecallSection {
        RecallSection {
            messages: Vec::new(),
            text: String::new(),
            stats: RecallStats {
                budget: query.budget,
                complete,
                terms: query.terms.clone(),
                ..RecallStats::default()
            },
        }
    }
}
