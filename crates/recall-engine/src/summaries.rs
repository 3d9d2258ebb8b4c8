//! Compaction (issue 22): the rolling summary of what the window left behind.
//!
//! [`Engine::compact_conversation`] finds where the conversation's window starts under its policy, and
//! when that is past the end of the summary in force, writes the next summary from that
//! summary and the messages in between (never from the whole conversation again), in
//! summariser calls of at most [`CompactOptions::max_input_tokens`] each, committing a version
//! after each call. One summariser per conversation at a time, across processes: it holds the
//! conversation's lease in the database (renewed before every call) and commits only while it
//! holds it and no other version was committed meanwhile. An answer over `summary_tokens` is
//! sent back once to be shortened, and cut at a line if it is still over. A crash, a backend
//! error or a refused answer (empty) commits nothing, so the previous summary stays in force;
//! the next compaction retries. Without a set `max_input_tokens`, a call's input is sized to
//! the context the backend says it serves (a local model's 4,096 tokens).
//!
//! With a summariser set (`Engine::with_summarizer`), a chat turn whose policy summarises and
//! whose window has moved past the summary in force starts a compaction in a task of its own
//! (`Engine::compact_after_turn`); the turn itself only reads the summary in force. The lease is
//! renewed before every summariser call and every third of its length during one, expires
//! `DEFAULT_LEASE` (120 s) after its last renewal, so a killed summariser's lease frees itself,
//! and is released at the end. The lease's rules in the database are recall-store's
//! (`summaries.rs` there).

use crate::ConversationRef;
use std::sync::Arc;
use std::time::Duration;

use recall_core::context::ContextRequest;
use recall_core::policy::{Format, PolicyOverrides};
use recall_llm::Backend;
use recall_store::StoredSummary;
use tokio_util::sync::CancellationToken;

use crate::{Engine, EngineError};

mod compaction;

use compaction::{busy, Lease, Run};

/// How long a compaction lease lasts unless renewed: a summariser killed mid-way holds the
/// conversation this long at most.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(120);

/// What [`Engine::compact_conversation`] is asked to do.
#[derive(Debug, Clone)]
pub struct CompactOptions {
    /// The format whose window the summary ends before; `None`: the conversation's own, else
    /// `transcript` (as a context request).
    pub format: Option<Format>,
    /// Policy values over the conversation's (`summary_tokens`, the window's limits);
    /// `summarize` is on whatever they say.
    pub overrides: PolicyOverrides,
    /// The summariser's model; `None`: the backend's default.
    pub model: Option<String>,
    /// The most tokens of new messages one summariser call is given (each message's own
    /// tokens and its excerpt header, `EXCERPT_OVERHEAD_TOKENS`). `None`: what fits the
    /// context the backend serves ([`recall_core::summary::input_allowance`]: 6,000, less for a small local model).
    pub max_input_tokens: Option<u64>,
    /// How long the lease lasts between renewals.
    pub lease: Duration,
    /// Told what the compaction does as it goes (a summariser call can take minutes).
    pub progress: Option<Progress>,
}

impl Default for CompactOptions {
    fn default() -> Self {
        CompactOptions {
            format: None,
            overrides: PolicyOverrides::default(),
            model: None,
            max_input_tokens: None,
            lease: DEFAULT_LEASE,
            progress: None,
        }
    }
}

/// A compaction's progress callback ([`CompactOptions::progress`]).
#[derive(Clone)]
pub struct Progress(pub Arc<dyn Fn(&CompactProgress) + Send + Sync>);

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Progress(..)")
    }
}

/// What a compaction is doing, as it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompactProgress {
    /// The work: messages `from_seq..=to_seq` to fold into the summary, in calls of at most
    /// `input_tokens` tokens of messages; `context_window` is what the backend said it serves.
    Planned {
        from_seq: i64,
        to_seq: i64,
        input_tokens: u64,
        context_window: Option<u64>,
    },
    /// A summariser call starts (`call` counts from 1) for messages through `to_seq`.
    Calling {
        call: u32,
        from_seq: i64,
        to_seq: i64,
    },
    /// The answer's section took `tokens`, over `budget`: the summariser is asked to shorten it.
    Shortening { tokens: u64, budget: u64 },
    /// Still over after shortening: cut at a line to fit.
    Cut { tokens: u64, budget: u64 },
    /// A version was committed, covering messages through `to_seq`.
    Committed {
        version: i64,
        to_seq: i64,
        tokens: u64,
    },
}

/// How a compaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactStatus {
    /// New versions were committed.
    Compacted,
    /// The summary in force already ends just before the window (or nothing is older than
    /// the window): nothing to do.
    UpToDate,
}

/// What a compaction did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CompactReport {
    pub status: CompactStatus,
    /// The summary the conversation's contexts now carry (`None`: none yet).
    pub summary: Option<StoredSummary>,
    /// Summariser calls made, and versions committed (one per call).
    pub calls: u32,
    /// The summariser's input and output tokens, as it reported them (0 when it reports none).
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// The summariser an engine runs after chat turns ([`Engine::with_summarizer`]).
#[derive(Clone)]
pub(crate) struct Summarizer {
    pub(crate) backend: Arc<dyn Backend>,
    pub(crate) model: Option<String>,
}

impl Engine {
    /// Runs compaction after chat turns with `backend` (and `model`): a turn whose context
    /// summarises and whose window starts past the summary in force starts a compaction in a
    /// task of its own; the turn does not wait for it and the next one uses whatever is
    /// committed by then.
    pub fn with_summarizer(mut self, backend: Arc<dyn Backend>, model: Option<String>) -> Engine {
        self.summarizer = Some(Summarizer { backend, model });
        self
    }

    /// The summariser set with [`Engine::with_summarizer`]: its backend and model.
    pub fn summarizer(&self) -> Option<(Arc<dyn Backend>, Option<String>)> {
        self.summarizer
            .as_ref()
            .map(|s| (s.backend.clone(), s.model.clone()))
    }

    /// The summary a context of conversation `conv` whose window starts at seq `before`
    /// carries: its own newest version ending before `before`, else (for a fork) its parent's
    /// newest ending at or before the fork point, and so on up the chain. A parent's version
    /// stands for messages the fork reads unchanged (redacting one drops it), so a retry or an
    /// edit keeps the summary its conversation had.
    pub async fn summary_in_force(
        &self,
        tenant: &str,
        conv: &recall_store::Conversation,
        before: i64,
    ) -> Result<Option<StoredSummary>, EngineError> {
        if let Some(s) = self.store.summary_before(tenant, &conv.id, before).await? {
            return Ok(Some(s));
        }
        let mut link = conv.forked_from.clone();
        let mut before = before;
        while let Some(f) = link {
            before = before.min(f.seq + 1);
            if let Some(s) = self
                .store
                .summary_before(tenant, &f.conversation_id, before)
                .await?
            {
                return Ok(Some(s));
            }
            link = self
                .store
                .get_conversation(tenant, &f.conversation_id)
                .await?
                .forked_from;
        }
        Ok(None)
    }

    /// The conversation's summary versions, newest first (at most `limit`).
    pub async fn summaries(
        &self,
        c: ConversationRef<'_>,
        limit: u32,
    ) -> Result<Vec<StoredSummary>, EngineError> {
        let (tenant, id) = (c.tenant, c.id);
        self.store.get_conversation(tenant, id).await?;
        Ok(self.store.summaries(tenant, id, limit).await?)
    }

    /// Brings the conversation's summary up to its window start (see the module
    /// documentation). `Err` leaves the summary in force as it was (versions committed before
    /// a failing call stay: each covers its messages).
    pub async fn compact_conversation(
        &self,
        c: ConversationRef<'_>,
        backend: &dyn Backend,
        opts: &CompactOptions,
        cancel: CancellationToken,
    ) -> Result<CompactReport, EngineError> {
        let (tenant, id) = (c.tenant, c.id);
        let mut req = ContextRequest::new(Format::Transcript);
        req.format = opts.format;
        req.overrides = opts.overrides.clone();
        req.overrides.summarize = Some(true);
        let context = self.context(c, &req).await?;
        let policy = context.policy.clone();
        let window_first = context.kept.first().map(|k| k.index as i64);
        let in_force = context.stats.summary;
        let mut report = CompactReport {
            status: CompactStatus::UpToDate,
            summary: None,
            calls: 0,
            input_tokens: 0,
            output_tokens: 0,
        };
        let Some(first) = window_first.filter(|_| context.stats.dropped > 0) else {
            report.summary = self
                .store
                .summaries(tenant, id, 1)
                .await?
                .into_iter()
                .next();
            return Ok(report);
        };
        let target = first - 1;
        if in_force.is_some_and(|s| s.to_seq == target) {
            report.summary = self.store.summary_before(tenant, id, first).await?;
            return Ok(report);
        }

        let lease = Lease {
            holder: uuid::Uuid::now_v7().to_string(),
            ms: i64::try_from(opts.lease.as_millis()).unwrap_or(i64::MAX),
            upto: target,
        };
        if !lease.renew(self, tenant, id).await? {
            return Err(busy(id));
        }
        let mut run = Run {
            engine: self,
            tenant,
            id,
            backend,
            opts,
            lease: &lease,
            summary_tokens: policy.summary_tokens,
            tokenizer: policy.tokenizer,
            cancel,
            report,
            base: None,
            after_version: None,
        };
        let outcome = run.run().await;
        // The lease goes whatever happened; a failure to give it up only delays the next
        // compaction until it expires.
        let _ = self
            .store
            .release_compaction_lease(tenant, id, &lease.holder)
            .await;
        outcome?;
        Ok(run.report)
    }

    /// After a chat turn: starts a compaction in its own task when the engine has a
    /// summariser, the turn's context summarises and its window starts past the summary in
    /// force. Errors are the next compaction's to retry.
    pub(crate) fn compact_after_turn(
        &self,
        tenant: &str,
        id: &str,
        format: Format,
        overrides: &PolicyOverrides,
        stats: &recall_core::select::Stats,
        window_first: Option<i64>,
    ) {
        let Some(s) = self.summarizer.clone() else {
            return;
        };
        let Some(first) = window_first else {
            return;
        };
        if stats.dropped == 0 || stats.summary.is_some_and(|x| x.to_seq + 1 >= first) {
            return;
        }
        let engine = self.clone();
        let (tenant, id) = (tenant.to_string(), id.to_string());
        let opts = CompactOptions {
            format: Some(format),
            overrides: overrides.clone(),
            model: s.model.clone(),
            ..CompactOptions::default()
        };
        tokio::spawn(async move {
            let _ = engine
                .compact_conversation(
                    ConversationRef::new(&tenant, &id),
                    s.backend.as_ref(),
                    &opts,
                    CancellationToken::new(),
                )
                .await;
        });
    }
}
