//! Compaction against a fake Anthropic server that answers deterministically from the request:
//! the exact summariser request, rolling ranges (each message summarised once, in calls of
//! bounded size), the summary in later contexts, refusals and backend errors leaving the
//! summary in force, a second summariser kept out, and compaction after chat turns.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use recall_core::context::ContextRequest;
use recall_core::message::Role;
use recall_core::policy::Format;
use recall_core::recall::RecallCandidate;
use recall_core::summary::{summarizer_prompt, target_tokens, Summary, SUMMARIZER_SYSTEM};
use recall_engine::llm::{AnthropicBackend, HttpConfig, RetryPolicy};
use recall_engine::store::NewConversation;
use recall_engine::{
    ChatTurn, CompactOptions, CompactStatus, ConversationRef, Engine, EngineError, Limits,
    DEFAULT_TENANT as T,
};
use recall_testkit::{anthropic, FakeServer, Recorded, Reply};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

const OK: u8 = 0;
const EMPTY: u8 = 1;
const HUGE: u8 = 2;
const FAIL: u8 = 3;
/// Two lines, the second cut off where the summariser hit max_tokens.
const CUT: u8 = 4;

/// The user text of a request.
fn user_text(body: &Value) -> String {
    let m = &body["messages"][0]["content"];
    match m {
        Value::String(s) => s.clone(),
        Value::Array(b) => b
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The seqs of the messages a summariser request carries (`[seq N, …]` headers).
fn seqs_in(prompt: &str) -> Vec<i64> {
    let body = prompt
        .split("<new_messages>\n")
        .nth(1)
        .and_then(|s| s.split("</new_messages>").next())
        .unwrap_or("");
    body.lines()
        .filter_map(|l| l.strip_prefix("[seq "))
        .filter_map(|l| l.split(',').next())
        .map(|n| n.parse().unwrap())
        .collect()
}

/// The summariser's answer: the previous summary's lines, then one line per new message that
/// states a fact (`FACT …`), then the range. A chat request gets "ok".
fn answer(body: &Value, mode: u8) -> Reply {
    if body["system"].as_str() != Some(SUMMARIZER_SYSTEM) {
        return Reply::sse(anthropic::text_reply(&["ok"]));
    }
    match mode {
        FAIL => {
            return Reply::json(
                500,
                json!({"type": "error", "error": {"type": "api_error", "message": "boom"}}),
            )
        }
        EMPTY => return Reply::sse(anthropic::text_reply(&["  \n"])),
        HUGE => return Reply::sse(anthropic::text_reply(&[&"word ".repeat(3000)])),
        CUT => {
            return Reply::sse(vec![
                anthropic::message_start("msg_cut", 10),
                anthropic::block_start(0, json!({"type": "text", "text": ""})),
                anthropic::text_delta(0, "- The user is Ana.\n- She lives in Lis"),
                anthropic::block_stop(0),
                anthropic::message_delta("max_tokens", 12),
                anthropic::message_stop(),
            ])
        }
        _ => {}
    }
    let prompt = user_text(body);
    // Asked to shorten its own answer: the draft's first line and its range line.
    if prompt.starts_with("This summary is too long") {
        let draft: Vec<&str> = prompt
            .lines()
            .filter(|l| l.starts_with("  "))
            .map(str::trim)
            .collect();
        let short = [draft.first(), draft.last()]
            .into_iter()
            .flatten()
            .copied()
            .collect::<Vec<_>>()
            .join("\n");
        return Reply::sse(anthropic::text_reply(&[&short]));
    }
    let mut lines: Vec<String> = Vec::new();
    if let Some(prev) = prompt
        .split("<conversation_summary>\n")
        .nth(1)
        .and_then(|s| s.split("\n</conversation_summary>").next())
    {
        // Skip the intro line; each text line is indented by two spaces.
        lines.extend(
            prev.lines()
                .skip(1)
                .map(|l| l.trim_start().to_string())
                .filter(|l| !l.starts_with("covered")),
        );
    }
    let new_part = prompt.split("<new_messages>").nth(1).unwrap_or("");
    lines.extend(
        new_part
            .lines()
            .filter(|l| l.trim_start().starts_with("FACT"))
            .map(|l| l.trim().to_string()),
    );
    let seqs = seqs_in(&prompt);
    lines.push(format!(
        "covered {}-{}",
        seqs.first().unwrap(),
        seqs.last().unwrap()
    ));
    let text = lines.join("\n");
    Reply::sse(anthropic::text_reply(&[&text]))
}

struct Fixture {
    engine: Engine,
    server: FakeServer,
    mode: Arc<AtomicU8>,
    backend: Arc<AnthropicBackend>,
    _dir: tempfile::TempDir,
}

impl Fixture {
    async fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("compact.db");
        let engine = Engine::open(path.to_str().unwrap(), Limits::default())
            .await
            .unwrap();
        let mode = Arc::new(AtomicU8::new(OK));
        let m = mode.clone();
        let server = FakeServer::start(Arc::new(move |r: &Recorded, _| {
            answer(&r.json(), m.load(Ordering::SeqCst))
        }))
        .await;
        let mut c = HttpConfig::anthropic().with_key("sk-ant-test-key");
        c.base_url = server.base_url();
        c.retry = RetryPolicy::none();
        let backend = Arc::new(AnthropicBackend::new(c).unwrap());
        Fixture {
            engine,
            server,
            mode,
            backend,
            _dir: dir,
        }
    }

    fn summariser_requests(&self) -> Vec<Value> {
        self.server
            .requests()
            .iter()
            .map(Recorded::json)
            .filter(|b| b["system"].as_str() == Some(SUMMARIZER_SYSTEM))
            .collect()
    }

    /// A conversation with a stable 600-token window (400 tokens reserved for the summary)
    /// and `n` messages; every tenth user message states a fact.
    async fn conversation(&self, n: usize) -> String {
        let policy = json!({"max_tokens": 1000, "trim": "stable", "summarize": true,
                            "summary_tokens": 400});
        let id = self
            .engine
            .create_conversation(
                T,
                NewConversation {
                    policy: Some(serde_json::from_value(policy).unwrap()),
                    ..NewConversation::default()
                },
            )
            .await
            .unwrap()
            .id;
        self.append(&id, 1, n).await;
        id
    }

    async fn append(&self, id: &str, from: usize, n: usize) {
        let ms: Vec<Value> = (from..from + n)
            .map(|i| {
                let role = if i % 2 == 1 { "user" } else { "assistant" };
                let text = if i % 10 == 1 {
                    format!("FACT {i}: the code word is w{i}.")
                } else {
                    format!("message {i}: {}", "some filler words here ".repeat(4))
                };
                json!({"role": role, "content": text})
            })
            .collect();
        self.engine
            .append_messages(ConversationRef::new(T, id), ms)
            .await
            .unwrap();
    }

    async fn compact(
        &self,
        id: &str,
        opts: &CompactOptions,
    ) -> Result<recall_engine::CompactReport, EngineError> {
        self.engine
            .compact_conversation(
                ConversationRef::new(T, id),
                self.backend.as_ref(),
                opts,
                CancellationToken::new(),
            )
            .await
    }

    async fn window_first(&self, id: &str) -> i64 {
        let mut req = ContextRequest::new(Format::Transcript);
        req.format = None;
        let ctx = self
            .engine
            .context(ConversationRef::new(T, id), &req)
            .await
            .unwrap();
        ctx.kept.first().unwrap().index as i64
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolling_summaries_cover_each_message_once() {
    let f = Fixture::new().await;
    let id = f.conversation(80).await;
    let opts = CompactOptions {
        max_input_tokens: Some(400),
        ..CompactOptions::default()
    };

    let first = f.window_first(&id).await;
    assert!(first > 20, "the window has moved: {first}");
    let r = f.compact(&id, &opts).await.unwrap();
    assert_eq!(r.status, CompactStatus::Compacted);
    assert!(
        r.calls > 1,
        "a bounded call size makes several calls: {}",
        r.calls
    );
    let s = r.summary.clone().unwrap();
    assert_eq!((s.from_seq, s.to_seq), (1, first - 1));
    assert_eq!(s.version, i64::from(r.calls), "one version per call");
    assert_eq!(s.backend, "anthropic");

    // The exact request: the fixed system prompt, and summarizer_prompt over the stored
    // messages and the previous version, within summary_tokens.
    let reqs = f.summariser_requests();
    assert_eq!(reqs.len() as u32, r.calls);
    let stored = f.engine.store().messages(T, &id, 0, 1000).await.unwrap();
    let cands = |seqs: &[i64]| -> Vec<RecallCandidate> {
        seqs.iter()
            .map(|q| {
                let m = stored.iter().find(|m| m.seq == *q).unwrap();
                RecallCandidate {
                    conversation_id: None,
                    seq: m.seq,
                    message: m.message.clone(),
                    at: Some(m.created_at),
                }
            })
            .collect()
    };
    let versions = f
        .engine
        .summaries(ConversationRef::new(T, &id), 100)
        .await
        .unwrap();
    let mut previous: Option<Summary> = None;
    for (i, req) in reqs.iter().enumerate() {
        assert_eq!(req["max_tokens"], target_tokens(400));
        let seqs = seqs_in(&user_text(req));
        let expected = summarizer_prompt(previous.as_ref(), &cands(&seqs), target_tokens(400));
        assert_eq!(user_text(req), expected, "request {i}");
        let v = versions.iter().find(|v| v.version == i as i64 + 1).unwrap();
        assert_eq!(v.to_seq, *seqs.last().unwrap());
        previous = Some(Summary {
            from_seq: v.from_seq,
            to_seq: v.to_seq,
            text: v.text.clone(),
        });
    }

    // The next context carries it, before the history, with its range in the stats.
    let mut req = ContextRequest::new(Format::Anthropic);
    req.format = Some(Format::Anthropic);
    let ctx = f
        .engine
        .context(ConversationRef::new(T, &id), &req)
        .await
        .unwrap();
    let st = ctx.stats.summary.unwrap();
    assert_eq!((st.from_seq, st.to_seq), (1, first - 1));
    let recall_core::render::Prompt::Json(body) = &ctx.prompt else {
        panic!("anthropic renders JSON")
    };
    // On the user side, leading the first message; never in the system prompt (issue 49).
    assert!(body.get("system").is_none(), "{body}");
    assert_eq!(body["messages"][0]["role"], "user");
    let system = body["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(system.starts_with("<conversation_summary>\nA summary of messages 1 to "));
    assert!(system.contains("FACT 1: the code word is w1."), "{system}");
    assert!(ctx.stats.tokens + st.tokens <= 1000);

    // Up to date: no call.
    let again = f.compact(&id, &opts).await.unwrap();
    assert_eq!(again.status, CompactStatus::UpToDate);
    assert_eq!(again.calls, 0);

    // More turns move the window: the next summary rolls from the last one, and every
    // message is summarised exactly once overall.
    f.append(&id, 81, 120).await;
    let first2 = f.window_first(&id).await;
    assert!(first2 > first);
    let r2 = f.compact(&id, &opts).await.unwrap();
    assert_eq!(r2.summary.as_ref().unwrap().to_seq, first2 - 1);
    let mut all: Vec<i64> = f
        .summariser_requests()
        .iter()
        .flat_map(|b| seqs_in(&user_text(b)))
        .collect();
    let n = all.len();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), n, "a message was summarised twice");
    assert_eq!(all, (1..first2).collect::<Vec<_>>());
    let text = &r2.summary.unwrap().text;
    assert!(text.contains("w1.") && text.contains("w101."), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_and_failures_keep_the_summary_in_force() {
    let f = Fixture::new().await;
    let id = f.conversation(60).await;
    let opts = CompactOptions::default();
    let v1 = f.compact(&id, &opts).await.unwrap().summary.unwrap();
    f.append(&id, 61, 80).await;

    for (mode, what) in [(EMPTY, "empty"), (FAIL, "a 500")] {
        f.mode.store(mode, Ordering::SeqCst);
        let e = f.compact(&id, &opts).await.unwrap_err();
        match mode {
            EMPTY => assert!(e.to_string().contains("empty summary"), "{e}"),
            _ => assert!(matches!(e, EngineError::Summarizer(_)), "{e}"),
        }
        let versions = f
            .engine
            .summaries(ConversationRef::new(T, &id), 10)
            .await
            .unwrap();
        assert_eq!(versions.len(), 1, "{what}: nothing committed");
        assert_eq!(versions[0], v1, "{what}: the summary in force is unchanged");
    }
    // An answer over summary_tokens is not thrown away (issue 36 item 2): asked again shorter
    // (the fake answers as long again), then cut to its words that fit. The lease was given
    // up after each failure above: this compaction runs.
    f.mode.store(HUGE, Ordering::SeqCst);
    let before = f.summariser_requests().len();
    let r = f.compact(&id, &opts).await.unwrap();
    assert_eq!(r.status, CompactStatus::Compacted);
    assert_eq!(r.calls, 2, "the answer, then the request to shorten it");
    let asked = f.summariser_requests();
    assert!(user_text(&asked[before + 1]).starts_with("This summary is too long"));
    let s = r.summary.unwrap();
    assert_eq!(s.version, 2);
    assert!(s.tokens.o200k <= 400, "{}", s.tokens.o200k);
    assert!(s.text.starts_with("word word") && !s.text.ends_with(' '));
}

/// An over-long answer that the summariser shortens when asked is committed shortened.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_over_long_summary_is_asked_again_shorter() {
    let f = Fixture::new().await;
    let id = f.conversation(200).await;
    // Some twenty FACT lines do not fit 150 tokens; the fake's shortened answer (the first
    // line and the range) does.
    let opts = CompactOptions {
        overrides: serde_json::from_value(json!({"max_tokens": 750, "summary_tokens": 150}))
            .unwrap(),
        ..CompactOptions::default()
    };
    let r = f.compact(&id, &opts).await.unwrap();
    let asked = f.summariser_requests();
    assert!(
        asked
            .iter()
            .any(|b| user_text(b).starts_with("This summary is too long")),
        "the summariser was asked to shorten its answer"
    );
    assert_eq!(r.calls as usize, asked.len());
    let s = r.summary.unwrap();
    assert!(s.tokens.o200k <= 150, "{}", s.tokens.o200k);
    // Shortened by the summariser, not cut (a cut would have dropped the range line).
    assert!(
        s.text.lines().last().unwrap().starts_with("covered "),
        "{}",
        s.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_summariser_is_kept_out() {
    let f = Fixture::new().await;
    let id = f.conversation(60).await;
    let far = i64::MAX / 2;
    assert!(f
        .engine
        .store()
        .take_compaction_lease(T, &id, "someone-else", far, i64::MAX)
        .await
        .unwrap());
    let e = f
        .compact(&id, &CompactOptions::default())
        .await
        .unwrap_err();
    assert!(e.is_conflict(), "{e}");
    assert!(f.summariser_requests().is_empty(), "no call was made");
    assert!(f
        .engine
        .summaries(ConversationRef::new(T, &id), 10)
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_turns_compact_in_the_background() {
    let f = Fixture::new().await;
    let engine = f.engine.clone().with_summarizer(f.backend.clone(), None);
    let id = f.conversation(60).await;
    // The history ends with an assistant message: a turn adds the user's.
    let turn = ChatTurn {
        overrides: serde_json::from_value(json!({})).unwrap(),
        ..ChatTurn::text("FACT 61: one more.")
    };
    let out = engine
        .chat_turn(
            ConversationRef::new(T, &id),
            f.backend.as_ref(),
            turn,
            CancellationToken::new(),
            |_| {},
        )
        .await
        .unwrap();
    assert!(out.error.is_none());
    assert!(
        out.stats.summary.is_none(),
        "nothing was committed before this turn"
    );
    // The compaction the turn started commits without anyone waiting for it.
    let mut waited = 0;
    while engine
        .summaries(ConversationRef::new(T, &id), 1)
        .await
        .unwrap()
        .is_empty()
    {
        assert!(waited < 100, "no summary after 10 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
        waited += 1;
    }
    // The next turn carries it in its system prompt.
    let out = engine
        .chat_turn(
            ConversationRef::new(T, &id),
            f.backend.as_ref(),
            ChatTurn::text("And now?"),
            CancellationToken::new(),
            |_| {},
        )
        .await
        .unwrap();
    assert!(out.stats.summary.is_some());
    let last_chat = f
        .server
        .requests()
        .iter()
        .map(Recorded::json)
        .rfind(|b| b["system"].as_str() != Some(SUMMARIZER_SYSTEM))
        .unwrap();
    assert!(!last_chat["system"]
        .as_str()
        .unwrap_or_default()
        .contains("<conversation_summary>"));
    assert!(last_chat["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("<conversation_summary>\n"));
    let roles: Vec<&str> = last_chat["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles.last(), Some(&Role::User.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_carries_its_parents_summary_and_rolls_on_from_it() {
    let f = Fixture::new().await;
    let id = f.conversation(80).await;
    let parent = f.compact(&id, &CompactOptions::default()).await.unwrap();
    let parent_summary = parent.summary.unwrap();
    // A fork at the newest message reads the same window: it carries the parent's summary.
    let fork = f
        .engine
        .fork_conversation(ConversationRef::new(T, &id), 80, None)
        .await
        .unwrap()
        .id;
    let mut req = ContextRequest::new(Format::Transcript);
    req.format = None;
    let ctx = f
        .engine
        .context(ConversationRef::new(T, &fork), &req)
        .await
        .unwrap();
    assert_eq!(
        ctx.stats.summary.map(|s| s.to_seq),
        Some(parent_summary.to_seq)
    );
    // The fork grows; its compaction starts from the parent's summary, and commits its own.
    f.append(&fork, 81, 100).await;
    let calls_before = f.summariser_requests().len();
    let r = f.compact(&fork, &CompactOptions::default()).await.unwrap();
    assert_eq!(r.status, CompactStatus::Compacted);
    let s = r.summary.unwrap();
    assert_eq!((s.version, s.from_seq), (1, 1));
    let first = &f.summariser_requests()[calls_before];
    let prompt = user_text(first);
    assert!(prompt.starts_with("The summary so far:"), "{prompt}");
    assert_eq!(seqs_in(&prompt)[0], parent_summary.to_seq + 1);
    // The parent is unchanged.
    assert_eq!(
        f.engine
            .summaries(ConversationRef::new(T, &id), 10)
            .await
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_summary_over_a_smaller_bound_is_written_again() {
    let f = Fixture::new().await;
    let id = f.conversation(200).await;
    let big = f.compact(&id, &CompactOptions::default()).await.unwrap();
    let big = big.summary.unwrap();
    // The same 600-token window with a 150-token summary share: the stored version is too
    // large for it, so its contexts leave it out with a warning...
    let small: recall_core::policy::PolicyOverrides =
        serde_json::from_value(json!({"max_tokens": 750, "summary_tokens": 150})).unwrap();
    let mut req = ContextRequest::new(Format::Transcript);
    req.format = None;
    req.overrides = small.clone();
    let ctx = f
        .engine
        .context(ConversationRef::new(T, &id), &req)
        .await
        .unwrap();
    assert!(big.tokens.o200k > 150, "{}", big.tokens.o200k);
    assert!(ctx.stats.summary.is_none());
    assert!(ctx
        .stats
        .warnings
        .iter()
        .any(|w| w.contains("over summary_tokens (150)")));
    // ...and compacting under it writes a summary of its own, from the start.
    f.mode.store(OK, Ordering::SeqCst);
    let calls = f.summariser_requests().len();
    let opts = CompactOptions {
        overrides: small,
        ..CompactOptions::default()
    };
    let r = f.compact(&id, &opts).await;
    let first = f.summariser_requests()[calls].clone();
    assert!(user_text(&first).starts_with("There is no summary yet"));
    match r {
        Ok(r) => {
            let s = r.summary.unwrap();
            assert!(s.tokens.o200k <= 150);
            let ctx = f
                .engine
                .context(ConversationRef::new(T, &id), &req)
                .await
                .unwrap();
            assert_eq!(ctx.stats.summary.map(|x| x.to_seq), Some(s.to_seq));
        }
        // The fake's answer may not fit 150 tokens: then it is refused, as any would be.
        Err(e) => assert!(e.to_string().contains("over summary_tokens (150)"), "{e}"),
    }
}

/// An answer the summariser stopped at max_tokens loses its cut-off last line, not the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_cut_at_max_tokens_drops_its_cut_line() {
    let f = Fixture::new().await;
    let id = f.conversation(60).await;
    f.mode.store(CUT, Ordering::SeqCst);
    let r = f.compact(&id, &CompactOptions::default()).await.unwrap();
    assert_eq!(r.summary.unwrap().text, "- The user is Ana.");
}
