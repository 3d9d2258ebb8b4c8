//! One compaction once its conversation's lease is held ([`Run`]): read the backlog page by
//! page, fold each call's worth of messages into the summary so far, shorten or cut an answer
//! over budget, and commit a version after every call. The lease is renewed before each call
//! and during it; a call whose lease is lost is stopped and commits nothing.

use std::time::Duration;

use futures::StreamExt;
use recall_core::message::{Message, Role};
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

use super::{CompactOptions, CompactProgress, CompactReport, CompactStatus};
use crate::{Engine, EngineError};

/// Messages read from the store at a time while gathering the backlog.
const PAGE: u32 = 200;

/// A compaction's hold on its conversation: who holds it, for how long at a time, and the
/// last message its summariser reads.
#[derive(Clone)]
pub(super) struct Lease {
    pub(super) holder: String,
    pub(super) ms: i64,
    pub(super) upto: i64,
}

impl Lease {
    /// Takes or renews it; `false` when another holder has it (or a redaction or a clear took
    /// it away).
    pub(super) async fn renew(
        &self,
        engine: &Engine,
        tenant: &str,
        id: &str,
    ) -> Result<bool, EngineError> {
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

/// The error of a compaction that does not (or no longer) hold its lease.
pub(super) fn busy(id: &str) -> EngineError {
    EngineError::Store(recall_store::StoreError::CompactionBusy {
        conversation: id.to_string(),
    })
}

/// One compaction of conversation `id` under `lease`, through `lease.upto`.
pub(super) struct Run<'a> {
    pub(super) engine: &'a Engine,
    pub(super) tenant: &'a str,
    pub(super) id: &'a str,
    pub(super) backend: &'a dyn Backend,
    pub(super) opts: &'a CompactOptions,
    pub(super) lease: &'a Lease,
    /// The policy's bound on a summary's section, and the tokenizer it is counted with.
    pub(super) summary_tokens: u64,
    pub(super) tokenizer: Tokenizer,
    pub(super) cancel: CancellationToken,
    /// What the run did so far (what the caller reports).
    pub(super) report: CompactReport,
    /// The summary the next call rolls on, and the newest version committed (the one the
    /// next commit must follow).
    pub(super) base: Option<StoredSummary>,
    pub(super) after_version: Option<i64>,
}

impl Run<'_> {
    /// Summarises the messages after the summary in force through the lease's `upto`.
    pub(super) async fn run(&mut self) -> Result<(), EngineError> {
        let target = self.lease.upto;
        // Read under the lease: what another summariser committed before it is the base (on
        // a fork with none of its own yet, its parent's).
        let conv = self
            .engine
            .store
            .get_conversation(self.tenant, self.id)
            .await?;
        self.base = self
            .engine
            .summary_in_force(self.tenant, &conv, target + 1)
            .await?;
        self.after_version = self
            .engine
            .store
            .summaries(self.tenant, self.id, 1)
            .await?
            .first()
            .map(|s| s.version);
        self.report.summary = self.base.clone();
        // A base over this policy's summary_tokens (written under a larger bound) is not
        // carried by its contexts: start over rather than roll it on.
        if self
            .base
            .as_ref()
            .is_some_and(|b| b.tokens.get(self.tokenizer) > self.summary_tokens)
        {
            self.base = None;
        }
        let mut next = self.base.as_ref().map_or(0, |s| s.to_seq);
        if next >= target {
            return Ok(());
        }
        let (max_input, context_window) = self.input_size().await?;
        self.tell(CompactProgress::Planned {
            from_seq: next + 1,
            to_seq: target,
            input_tokens: max_input,
            context_window,
        });
        // Read the backlog page by page; summarise a call's worth whenever one is full.
        let mut pending: Vec<(RecallCandidate, u64)> = Vec::new();
        let mut done_reading = false;
        while !(done_reading && pending.is_empty()) {
            if !done_reading {
                done_reading = self.read_page(&mut next, &mut pending).await?;
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
                self.fold(&chunk, last).await?;
            }
        }
        // Only system messages between the summary in force and the window: the same text
        // now covers through the window start, with no call.
        if let Some(b) = self
            .base
            .clone()
            .filter(|b| self.report.calls == 0 && b.to_seq < target)
        {
            self.commit(b.from_seq, target, b.text).await?;
        }
        Ok(())
    }

    /// Reads the page after seq `next` into `pending` (each message with its cost in a call:
    /// its tokens and its excerpt header), moving `next` on; `true` once the backlog is read.
    async fn read_page(
        &self,
        next: &mut i64,
        pending: &mut Vec<(RecallCandidate, u64)>,
    ) -> Result<bool, EngineError> {
        let target = self.lease.upto;
        let page = self
            .engine
            .store
            .messages(self.tenant, self.id, *next, PAGE)
            .await?;
        let mut done = page.is_empty();
        for m in page {
            *next = m.seq;
            if m.seq > target {
                done = true;
                break;
            }
            if m.message.role == Role::System {
                continue;
            }
            let tokens =
                u64::try_from(m.figures.tokens_o200k).unwrap_or(0) + EXCERPT_OVERHEAD_TOKENS;
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
        Ok(done || *next >= target)
    }

    /// The most tokens of messages a call is given, and the context the backend said it
    /// serves (when that is what sized it).
    async fn input_size(&self) -> Result<(u64, Option<u64>), EngineError> {
        if let Some(n) = self.opts.max_input_tokens {
            return Ok((n.max(1), None));
        }
        let window = self
            .backend
            .context_window(self.opts.model.as_deref())
            .await;
        match input_allowance(window, self.summary_tokens) {
            Some(n) => Ok((n, window)),
            None => Err(EngineError::Invalid(format!(
                "the summariser's backend serves a context of {} tokens, too small for \
                 summary_tokens {} (the summary so far and the new one take up to {} tokens \
                 each): lower summary_tokens, or serve the model with a larger context",
                window.unwrap_or(0),
                self.summary_tokens,
                target_tokens(self.summary_tokens)
            ))),
        }
    }

    /// Folds `chunk` into the summary so far as the version covering through `last`: one
    /// call, a shortening when the answer is over budget, a commit.
    async fn fold(&mut self, chunk: &[RecallCandidate], last: i64) -> Result<(), EngineError> {
        let previous = self.base.as_ref().map(|s| Summary {
            from_seq: s.from_seq,
            to_seq: s.to_seq,
            text: s.text.clone(),
        });
        let from = previous
            .as_ref()
            .map_or_else(|| chunk.first().map_or(1, |c| c.seq), |p| p.from_seq);
        let prompt =
            summarizer_prompt(previous.as_ref(), chunk, target_tokens(self.summary_tokens));
        self.tell(CompactProgress::Calling {
            call: self.report.calls + 1,
            from_seq: chunk.first().map_or(from, |c| c.seq),
            to_seq: last,
        });
        // Every name the summary so far or the new messages hold stays named (a small model
        // drops them), here and after a shortening.
        let keep = |t: &str| keep_names(t, previous.as_ref(), chunk);
        let mut text = keep(&self.call(prompt).await?);
        let tokens = self.tokens(from, last, &text);
        if tokens > self.summary_tokens && !text.trim().is_empty() {
            text = self.shorten((from, last), text, tokens, &keep).await?;
        }
        let stored = self.commit(from, last, text).await?;
        self.tell(CompactProgress::Committed {
            version: stored.version,
            to_seq: stored.to_seq,
            tokens: stored.tokens.get(self.tokenizer),
        });
        Ok(())
    }

    /// An answer over `summary_tokens` (`tokens` with its frame): the summariser is asked
    /// once to shorten it (a small call: the answer alone), and what is still over is cut at
    /// a line, so that the work of the call is kept rather than thrown away.
    async fn shorten(
        &mut self,
        (from, to): (i64, i64),
        draft: String,
        tokens: u64,
        keep: &impl Fn(&str) -> String,
    ) -> Result<String, EngineError> {
        let budget = self.summary_tokens;
        self.tell(CompactProgress::Shortening { tokens, budget });
        let prompt = shorten_prompt(
            &Summary {
                from_seq: from,
                to_seq: to,
                text: draft.trim().to_string(),
            },
            target_tokens(budget) * 3 / 4,
        );
        let shorter = keep(&self.call(prompt).await?);
        // The shorter of the two when neither fits: less to cut.
        let (best, best_tokens) = {
            let t = self.tokens(from, to, &shorter);
            if shorter.trim().is_empty() || t >= tokens {
                (draft, tokens)
            } else {
                (shorter, t)
            }
        };
        if best_tokens <= budget {
            return Ok(best);
        }
        self.tell(CompactProgress::Cut {
            tokens: best_tokens,
            budget,
        });
        Ok(cut_to_fit(&best, |t| self.tokens(from, to, t) <= budget).unwrap_or(best))
    }

    /// One summariser call, counted in the report. The lease is renewed before it and every
    /// third of its duration during it; the call is stopped when the lease is lost (another
    /// summariser took over, or a redaction or a clear reached what it reads).
    async fn call(&mut self, prompt: String) -> Result<String, EngineError> {
        if !self.lease.renew(self.engine, self.tenant, self.id).await? {
            return Err(busy(self.id));
        }
        let call = self.cancel.child_token();
        let lost = CancellationToken::new();
        let renewer = {
            let (engine, lease, tenant, id) = (
                self.engine.clone(),
                self.lease.clone(),
                self.tenant.to_string(),
                self.id.to_string(),
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
        let result = summarise(self.backend, self.opts, prompt, self.summary_tokens, call).await;
        renewer.abort();
        if lost.is_cancelled() {
            return Err(busy(self.id));
        }
        let (text, usage) = result?;
        self.report.calls += 1;
        self.report.input_tokens += usage.input_tokens.unwrap_or(0);
        self.report.output_tokens += usage.output_tokens.unwrap_or(0);
        Ok(text)
    }

    /// The tokens of `text`'s section covering `from..=to`, under the policy's tokenizer.
    fn tokens(&self, from: i64, to: i64, text: &str) -> u64 {
        self.tokenizer.count(&section(from, to, text)) as u64
    }

    /// Checks `text` (not empty, its section within `summary_tokens`) and commits it as the
    /// version covering `from..=to`, after the newest one; it is then the run's base and its
    /// report's summary.
    async fn commit(
        &mut self,
        from: i64,
        to: i64,
        text: String,
    ) -> Result<StoredSummary, EngineError> {
        let text = text.trim().to_string();
        let section = section(from, to, &text);
        let tokens = SummaryTokens {
            o200k: Tokenizer::O200k.count(&section) as u64,
            cl100k: Tokenizer::Cl100k.count(&section) as u64,
            chars4: Tokenizer::Chars4.count(&section) as u64,
        };
        check_summary(&text, tokens.get(self.tokenizer), self.summary_tokens)?;
        let stored = self
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
                    backend: self.backend.name().to_string(),
                    model: self.opts.model.clone().unwrap_or_default(),
                    after_version: self.after_version,
                },
            )
            .await?;
        self.after_version = Some(stored.version);
        self.report.status = CompactStatus::Compacted;
        self.report.summary = Some(stored.clone());
        self.base = Some(stored.clone());
        Ok(stored)
    }

    /// Tells the progress callback, if there is one.
    fn tell(&self, p: CompactProgress) {
        if let Some(f) = &self.opts.progress {
            (f.0)(&p);
        }
    }
}

/// A summary's section as contexts carry it (what its tokens are counted on).
fn section(from: i64, to: i64, text: &str) -> String {
    render_summary(
        &Summary {
            from_seq: from,
            to_seq: to,
            text: text.trim().to_string(),
        },
        true,
    )
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
        // A provider that ignores max_tokens is cut off long before a summary could use it
        // (no token takes 64 bytes).
        max_reply_bytes: Some(
            usize::try_from(target_tokens(summary_tokens))
                .unwrap_or(usize::MAX)
                .saturating_mul(64),
        ),
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
