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

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use recall_core::context::ContextRequest;
use recall_core::message::{Message, Role};
use recall_core::policy::{Format, PolicyOverrides};
use recall_core::recall::RecallCandidate;
use recall_core::summary::{
    check_summary, compaction_chunks, cut_to_fit, input_allowance, keep_names, render_summary,
    shorten_prompt, summarizer_prompt, target_tokens, without_cut_line, Summary,
    EXCERPT_OVERHEAD_TOKENS, SUMMARIZER_SYSTEM,
};
use recall_core::tokens::{TokenCounter, Tokenizer};
use recall_llm::{Assembler, Backend, BackendError, BackendEvent, ChatRequest, Usage};
use recall_store::{NewSummary, StoredSummary, SummaryTokens};
use tokio_util::sync::CancellationToken;

use crate::{Engine, EngineError};

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
    /// context the backend serves ([`input_allowance`]: 6,000, less for a small local model).
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
        tenant: &str,
        id: &str,
        limit: u32,
    ) -> Result<Vec<StoredSummary>, EngineError> {
        self.store.get_conversation(tenant, id).await?;
        Ok(self.store.summaries(tenant, id, limit).await?)
    }

    /// Brings the conversation's summary up to its window start (see the module
    /// documentation). `Err` leaves the summary in force as it was (versions committed before
    /// a failing call stay: each covers its messages).
    pub async fn compact_conversation(
        &self,
        tenant: &str,
        id: &str,
        backend: &dyn Backend,
        opts: &CompactOptions,
        cancel: CancellationToken,
    ) -> Result<CompactReport, EngineError> {
        let mut req = ContextRequest::new(Format::Transcript);
        req.format = opts.format;
        req.overrides = opts.overrides.clone();
        req.overrides.summarize = Some(true);
        let context = self.context(tenant, id, &req).await?;
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
            return Err(EngineError::Store(
                recall_store::StoreError::CompactionBusy {
                    conversation: id.to_string(),
                },
            ));
        }
        let run = self
            .compact_held(
                tenant,
                id,
                backend,
                opts,
                &lease,
                policy.summary_tokens,
                policy.tokenizer,
                &mut report,
                cancel,
            )
            .await;
        // The lease goes whatever happened; a failure to give it up only delays the next
        // compaction until it expires.
        let _ = self
            .store
            .release_compaction_lease(tenant, id, &lease.holder)
            .await;
        run?;
        Ok(report)
    }

    /// The work of [`Engine::compact_conversation`] once the lease is held: summarise the
    /// messages after the summary in force through `target`.
    #[allow(clippy::too_many_arguments)]
    async fn compact_held(
        &self,
        tenant: &str,
        id: &str,
        backend: &dyn Backend,
        opts: &CompactOptions,
        lease: &Lease,
        summary_tokens: u64,
        tokenizer: Tokenizer,
        report: &mut CompactReport,
        cancel: CancellationToken,
    ) -> Result<(), EngineError> {
        let target = lease.upto;
        // Read under the lease: what another summariser committed before it is the base (on
        // a fork with none of its own yet, its parent's).
        let conv = self.store.get_conversation(tenant, id).await?;
        let mut base = self.summary_in_force(tenant, &conv, target + 1).await?;
        let mut after_version = self
            .store
            .summaries(tenant, id, 1)
            .await?
            .first()
            .map(|s| s.version);
        report.summary = base.clone();
        // A base over this policy's summary_tokens (written under a larger bound) is not
        // carried by its contexts: start over rather than roll it on.
        if base
            .as_ref()
            .is_some_and(|b| b.tokens.get(tokenizer) > summary_tokens)
        {
            base = None;
        }
        let mut next = base.as_ref().map_or(0, |s| s.to_seq);
        if next >= target {
            return Ok(());
        }
        let (max_input, context_window) = match opts.max_input_tokens {
            Some(n) => (n.max(1), None),
            None => {
                let window = backend.context_window(opts.model.as_deref()).await;
                let Some(n) = input_allowance(window, summary_tokens) else {
                    return Err(EngineError::Invalid(format!(
                        "the summariser's backend serves a context of {} tokens, too small for \
                         summary_tokens {summary_tokens} (the summary so far and the new one \
                         take up to {} tokens each): lower summary_tokens, or serve the model \
                         with a larger context",
                        window.unwrap_or(0),
                        target_tokens(summary_tokens)
                    )));
                };
                (n, window)
            }
        };
        let tell = |p: CompactProgress| {
            if let Some(f) = &opts.progress {
                (f.0)(&p);
            }
        };
        tell(CompactProgress::Planned {
            from_seq: next + 1,
            to_seq: target,
            input_tokens: max_input,
            context_window,
        });
        let commit = Commit {
            engine: self,
            tenant,
            id,
            lease,
            backend: backend.name(),
            model: opts.model.clone().unwrap_or_default(),
            summary_tokens,
            tokenizer,
        };
        // Read the backlog page by page; summarise a call's worth whenever one is full.
        let mut pending: Vec<(RecallCandidate, u64)> = Vec::new();
        let mut done_reading = false;
        while !(done_reading && pending.is_empty()) {
            if !done_reading {
                let page = self.store.messages(tenant, id, next, 200).await?;
                done_reading = page.is_empty();
                for m in page {
                    next = m.seq;
                    if m.seq > target {
                        done_reading = true;
                        break;
                    }
                    if m.message.role == Role::System {
                        continue;
                    }
                    let tokens = u64::try_from(m.figures.tokens_o200k).unwrap_or(0)
                        + EXCERPT_OVERHEAD_TOKENS;
                    pending.push((
                        RecallCandidate {
                            conversation_id: None,
                            seq: m.seq,
                            message: m.message,
                            at: Some(m.created_at),
                        },
                        tokens,
                    ));
                }
                if next >= target {
                    done_reading = true;
                }
            }
            let costs: Vec<(i64, u64)> = pending.iter().map(|(c, t)| (c.seq, *t)).collect();
            let ends = compaction_chunks(&costs, max_input);
            // A call is made for a full chunk (another follows it), or for the rest once all
            // is read.
            let ready = if done_reading {
                ends.len()
            } else {
                ends.len().saturating_sub(1)
            };
            for end in ends.into_iter().take(ready) {
                let split = pending.iter().take_while(|(c, _)| c.seq <= end).count();
                let chunk: Vec<RecallCandidate> = pending.drain(..split).map(|(c, _)| c).collect();
                let Some(mut last) = chunk.last().map(|c| c.seq) else {
                    continue;
                };
                // The last call covers through the window start: system messages after its
                // last message are in every system prompt, not in a summary.
                if done_reading && pending.is_empty() {
                    last = last.max(target);
                }
                let previous = base.as_ref().map(|s| Summary {
                    from_seq: s.from_seq,
                    to_seq: s.to_seq,
                    text: s.text.clone(),
                });
                let from = previous
                    .as_ref()
                    .map_or_else(|| chunk.first().map_or(1, |c| c.seq), |p| p.from_seq);
                let prompt =
                    summarizer_prompt(previous.as_ref(), &chunk, target_tokens(summary_tokens));
                tell(CompactProgress::Calling {
                    call: report.calls + 1,
                    from_seq: chunk.first().map_or(from, |c| c.seq),
                    to_seq: last,
                });
                let call = Call {
                    backend,
                    opts,
                    lease,
                    tenant,
                    id,
                    summary_tokens,
                    cancel: &cancel,
                };
                // Every name the summary so far or the new messages hold stays named (a small
                // model drops them), here and after a shortening.
                let keep = |t: &str| keep_names(t, previous.as_ref(), &chunk);
                let mut text = keep(&self.summarise_call(&call, prompt, report).await?);
                let tokens = commit.tokens(from, last, &text);
                if tokens > summary_tokens && !text.trim().is_empty() {
                    text = self
                        .shorten(
                            &call,
                            &commit,
                            (from, last),
                            text,
                            tokens,
                            &keep,
                            &tell,
                            report,
                        )
                        .await?;
                }
                let stored = commit.version(from, last, text, after_version).await?;
                tell(CompactProgress::Committed {
                    version: stored.version,
                    to_seq: stored.to_seq,
                    tokens: stored.tokens.get(tokenizer),
                });
                after_version = Some(stored.version);
                report.status = CompactStatus::Compacted;
                report.summary = Some(stored.clone());
                base = Some(stored);
            }
        }
        // Only system messages between the summary in force and the window: the same text
        // now covers through the window start, with no call.
        if let Some(b) = base
            .as_ref()
            .filter(|b| report.calls == 0 && b.to_seq < target)
        {
            let stored = commit
                .version(b.from_seq, target, b.text.clone(), after_version)
                .await?;
            report.status = CompactStatus::Compacted;
            report.summary = Some(stored);
        }
        Ok(())
    }

    /// One summariser call (see [`Engine::summarise_held`]), counted in `report`.
    async fn summarise_call(
        &self,
        c: &Call<'_>,
        prompt: String,
        report: &mut CompactReport,
    ) -> Result<String, EngineError> {
        let (text, usage) = self
            .summarise_held(
                c.backend,
                c.opts,
                c.lease,
                c.tenant,
                c.id,
                prompt,
                c.summary_tokens,
                c.cancel,
            )
            .await?;
        report.calls += 1;
        report.input_tokens += usage.input_tokens.unwrap_or(0);
        report.output_tokens += usage.output_tokens.unwrap_or(0);
        Ok(text)
    }

    /// An answer over `summary_tokens` (`tokens` with its frame): the summariser is asked
    /// once to shorten it (a small call: the answer alone), and what is still over is cut at
    /// a line, so that the work of the call is kept rather than thrown away.
    #[allow(clippy::too_many_arguments)]
    async fn shorten(
        &self,
        c: &Call<'_>,
        commit: &Commit<'_>,
        (from, to): (i64, i64),
        draft: String,
        tokens: u64,
        keep: &impl Fn(&str) -> String,
        tell: &impl Fn(CompactProgress),
        report: &mut CompactReport,
    ) -> Result<String, EngineError> {
        let budget = c.summary_tokens;
        tell(CompactProgress::Shortening { tokens, budget });
        let prompt = shorten_prompt(
            &Summary {
                from_seq: from,
                to_seq: to,
                text: draft.trim().to_string(),
            },
            target_tokens(budget) * 3 / 4,
        );
        let shorter = keep(&self.summarise_call(c, prompt, report).await?);
        // The shorter of the two when neither fits: less to cut.
        let (best, best_tokens) = {
            let t = commit.tokens(from, to, &shorter);
            if shorter.trim().is_empty() || t >= tokens {
                (draft, tokens)
            } else {
                (shorter, t)
            }
        };
        if best_tokens <= budget {
            return Ok(best);
        }
        tell(CompactProgress::Cut {
            tokens: best_tokens,
            budget,
        });
        Ok(cut_to_fit(&best, |t| commit.tokens(from, to, t) <= budget).unwrap_or(best))
    }

    /// One summariser call while holding `lease`: renewed before the call and every third of
    /// its duration during it; the call is stopped when it is lost (another summariser took
    /// over, or a redaction or a clear reached what it reads).
    #[allow(clippy::too_many_arguments)]
    async fn summarise_held(
        &self,
        backend: &dyn Backend,
        opts: &CompactOptions,
        lease: &Lease,
        tenant: &str,
        id: &str,
        prompt: String,
        summary_tokens: u64,
        cancel: &CancellationToken,
    ) -> Result<(String, Usage), EngineError> {
        let busy = || {
            EngineError::Store(recall_store::StoreError::CompactionBusy {
                conversation: id.to_string(),
            })
        };
        if !lease.renew(self, tenant, id).await? {
            return Err(busy());
        }
        let call = cancel.child_token();
        let lost = CancellationToken::new();
        let renewer = {
            let (engine, lease, tenant, id) = (
                self.clone(),
                lease.clone(),
                tenant.to_string(),
                id.to_string(),
            );
            let (call, lost) = (call.clone(), lost.clone());
            let every = Duration::from_millis(u64::try_from(lease.ms / 3).unwrap_or(1).max(1));
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(every).await;
                    if !matches!(lease.renew(&engine, &tenant, &id).await, Ok(true)) {
                        lost.cancel();
                        call.cancel();
                        break;
                    }
                }
            })
        };
        let result = summarise(backend, opts, prompt, summary_tokens, call).await;
        renewer.abort();
        if lost.is_cancelled() {
            return Err(busy());
        }
        result
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
                    &tenant,
                    &id,
                    s.backend.as_ref(),
                    &opts,
                    CancellationToken::new(),
                )
                .await;
        });
    }
}

/// A compaction's hold on its conversation: who holds it, for how long at a time, and the
/// last message its summariser reads.
#[derive(Clone)]
struct Lease {
    holder: String,
    ms: i64,
    upto: i64,
}

impl Lease {
    /// Takes or renews it; `false` when another holder has it (or a redaction or a clear took
    /// it away).
    async fn renew(&self, engine: &Engine, tenant: &str, id: &str) -> Result<bool, EngineError> {
        Ok(engine
            .store
            .take_compaction_lease(
                tenant,
                id,
                &self.holder,
                now_ms().saturating_add(self.ms),
                self.upto,
            )
            .await?)
    }
}

/// What every summariser call of one compaction shares.
struct Call<'a> {
    backend: &'a dyn Backend,
    opts: &'a CompactOptions,
    lease: &'a Lease,
    tenant: &'a str,
    id: &'a str,
    summary_tokens: u64,
    cancel: &'a CancellationToken,
}

/// What committing a version needs besides its range and text.
struct Commit<'a> {
    engine: &'a Engine,
    tenant: &'a str,
    id: &'a str,
    lease: &'a Lease,
    backend: &'static str,
    model: String,
    summary_tokens: u64,
    tokenizer: Tokenizer,
}

impl Commit<'_> {
    /// The tokens of `text`'s section covering `from..=to`, under the policy's tokenizer.
    fn tokens(&self, from: i64, to: i64, text: &str) -> u64 {
        let section = render_summary(
            &Summary {
                from_seq: from,
                to_seq: to,
                text: text.trim().to_string(),
            },
            true,
        );
        self.tokenizer.count(&section) as u64
    }

    /// Checks `text` (not empty, its section within `summary_tokens`) and commits it as the
    /// version covering `from..=to`, written from version `after`.
    async fn version(
        &self,
        from: i64,
        to: i64,
        text: String,
        after: Option<i64>,
    ) -> Result<StoredSummary, EngineError> {
        let text = text.trim().to_string();
        let section = render_summary(
            &Summary {
                from_seq: from,
                to_seq: to,
                text: text.clone(),
            },
            true,
        );
        let tokens = SummaryTokens {
            o200k: Tokenizer::O200k.count(&section) as u64,
            cl100k: Tokenizer::Cl100k.count(&section) as u64,
            chars4: Tokenizer::Chars4.count(&section) as u64,
        };
        check_summary(&text, tokens.get(self.tokenizer), self.summary_tokens)?;
        Ok(self
            .engine
            .store
            .commit_summary(
                self.tenant,
                self.id,
                &self.lease.holder,
                NewSummary {
                    from_seq: from,
                    to_seq: to,
                    text,
                    tokens,
                    backend: self.backend.to_string(),
                    model: self.model.clone(),
                    after_version: after,
                },
            )
            .await?)
    }
}

/// Milliseconds since the Unix epoch: lease expiries.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// One summariser call: the fixed system prompt and `prompt` as the user message; the text
/// of a complete reply, or the backend's error.
async fn summarise(
    backend: &dyn Backend,
    opts: &CompactOptions,
    prompt: String,
    summary_tokens: u64,
    cancel: CancellationToken,
) -> Result<(String, Usage), EngineError> {
    let request = ChatRequest {
        system: Some(SUMMARIZER_SYSTEM.to_string()),
        messages: vec![Message::text(Role::User, prompt)],
        model: opts.model.clone(),
        // The frame's share stays free, so an answer of this length still fits.
        max_tokens: u32::try_from(target_tokens(summary_tokens)).unwrap_or(u32::MAX),
    };
    let mut assembler = Assembler::new();
    match backend.stream(request, cancel).await {
        Err(e) => return Err(EngineError::Summarizer(e)),
        Ok(mut events) => {
            while let Some(ev) = events.next().await {
                assembler.push(&ev);
                if ev.is_terminal() {
                    break;
                }
            }
        }
    }
    if !assembler.is_finished() {
        assembler.push(&BackendEvent::Error(BackendError::new(
            recall_llm::BackendErrorKind::Stream {
                message: "the summariser's stream ended without a final event".into(),
            },
        )));
    }
    let reply = assembler.finish();
    if let Some(e) = reply.error.clone() {
        return Err(EngineError::Summarizer(e));
    }
    let text = reply.text();
    // Stopped at max_tokens: its last line was cut off mid-way.
    let text = if reply.stop_reason.as_deref() == Some("max_tokens") {
        without_cut_line(&text).to_string()
    } else {
        text
    };
    Ok((text, reply.usage))
}
