//! `recall chat`: an interactive REPL (or one turn from piped stdin) over a stored
//! conversation. The turn itself is `Engine::chat_turn`; this module reads input, picks the
//! backend and prints.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use recall_core::policy::{Count, PolicyOverrides};
use recall_engine::llm::discover::{
    configure, discover, process_env, BackendKind, DiscoverOptions, NONE_CONFIGURED,
};
use recall_engine::llm::{build_backend, Backend, BackendEvent, PromptFormat};
use recall_engine::store::{MessageStatus, NewConversation};
use recall_engine::{ChatTurn, ConversationRef, Engine, TurnEvent, TurnOutcome};
use rustyline::error::ReadlineError;
use tokio_util::sync::CancellationToken;

use crate::cli::{BackendArgs, BackendChoice, ChatArgs};
use crate::commands::store_cmds::{engine_err, open};
use crate::exit::bad_input;

/// What the chat needs between turns.
struct Session {
    engine: Engine,
    tenant: String,
    id: String,
    backend: Arc<dyn Backend>,
    overrides: PolicyOverrides,
    model: Option<String>,
    max_output_tokens: Option<u32>,
}

pub async fn run(args: ChatArgs) -> anyhow::Result<ExitCode> {
    let (backend, why, kind) = pick_backend(&args.llm)?;
    // Named before anything else, so a reply is never taken for another backend's.
    eprintln!("recall chat: backend {why}");
    // Piped, one message and one process: the recall index is caught up fully before the
    // context (no background would finish it); the REPL lives long enough for its
    // background catch-up.
    let engine = open(&args.store).await?;
    let engine = if std::io::stdin().is_terminal() {
        engine
    } else {
        engine.with_index_budget(None)
    };
    let tenant = args.store.tenant.clone();
    let id = match &args.conversation {
        Some(id) => {
            engine
                .get_conversation(ConversationRef::new(&tenant, id))
                .await
                .map_err(engine_err)?;
            id.clone()
        }
        None => {
            let c = engine
                .create_conversation(
                    &tenant,
                    NewConversation {
                        title: Some("chat".into()),
                        system_prompt: args.system.clone(),
                        ..NewConversation::default()
                    },
                )
                .await
                .map_err(engine_err)?;
            eprintln!(
                "New conversation {} (continue it with --conversation {}).",
                c.id, c.id
            );
            c.id
        }
    };
    let mut overrides = args.limits.clone();
    if args.no_history {
        // No earlier turn fits; the newest user message is always sent.
        overrides.max_turns = Some(Count::from(0));
    }
    let summary_model = args
        .summary_model
        .clone()
        .or_else(|| args.llm.model.clone());
    let session = Session {
        engine,
        tenant,
        id,
        backend,
        overrides,
        model: args.llm.model.clone(),
        max_output_tokens: args.max_output_tokens.or(kind.default_max_output_tokens()),
    };
    if std::io::stdin().is_terminal() {
        eprintln!("/help for commands, Ctrl-D to leave.");
        let mut session = session;
        // With --summarize, the chat's backend summarises after the turns that move the
        // window (in the background; /compact runs it at once). A piped one-turn chat exits
        // after its turn, so it leaves compaction to `recall compact`.
        session.engine = session
            .engine
            .clone()
            .with_summarizer(session.backend.clone(), summary_model.clone());
        repl(&mut session, history_file(&args)).await
    } else {
        one_turn(&session).await
    }
}

/// Piped stdin: the whole input is one message.
async fn one_turn(s: &Session) -> anyhow::Result<ExitCode> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .context("cannot read the message from stdin")?;
    if input.trim().is_empty() {
        return Err(bad_input(
            "nothing to send: stdin was empty (type a message or pipe one in)",
        ));
    }
    let outcome = send(s, input.trim_end_matches(['\n', '\r']).to_string()).await?;
    Ok(finish_code(&outcome))
}

fn finish_code(o: &TurnOutcome) -> ExitCode {
    if o.error.is_some() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

async fn repl(s: &mut Session, history: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let mut rl = rustyline::DefaultEditor::new().context("cannot start the line editor")?;
    if let Some(h) = &history {
        // A missing history file is normal on the first run.
        let _ = rl.load_history(h);
    }
    loop {
        let line = tokio::task::block_in_place(|| rl.readline("> "));
        let line = match line {
            Ok(l) => l,
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e).context("cannot read input"),
        };
        let trimmed = line.trim();
        if !trimmed.is_empty() {
            let _ = rl.add_history_entry(trimmed);
        }
        match trimmed {
            "" => {
                eprintln!("Empty message not sent: type something, or /help.");
            }
            "/exit" | "/quit" => break,
            "/help" => eprintln!("{}", REPL_HELP),
            "clear" | "/clear" => {
                // A bare word is easy to type by accident, and clearing cannot be undone.
                let answer = tokio::task::block_in_place(|| {
                    rl.readline("Remove every message (cannot be undone)? Type yes to confirm: ")
                });
                if !matches!(answer.as_deref().map(str::trim), Ok("yes")) {
                    eprintln!("Not cleared.");
                    continue;
                }
                s.engine
                    .clear_conversation(ConversationRef::new(&s.tenant, &s.id))
                    .await
                    .map_err(engine_err)?;
                println!("Conversation cleared");
            }
            "/context" => match preview(s).await {
                Ok(text) => println!("{text}"),
                Err(e) => eprintln!("error: {e:#}"),
            },
            "/stats" => match stats(s).await {
                Ok(text) => println!("{text}"),
                Err(e) => eprintln!("error: {e:#}"),
            },
            "/compact" => match compact(s).await {
                Ok(text) => println!("{text}"),
                Err(e) => eprintln!("error: {e:#}"),
            },
            "/retry" => {
                if let Err(e) = branch(s, None).await {
                    eprintln!("error: {e:#}");
                }
            }
            "/edit" => eprintln!("Type the new message after /edit: /edit what I meant to say"),
            cmd if cmd.starts_with("/edit ") => {
                let text = cmd.trim_start_matches("/edit").trim().to_string();
                if let Err(e) = branch(s, Some(text)).await {
                    eprintln!("error: {e:#}");
                }
            }
            cmd if cmd.starts_with('/') && !cmd.contains(char::is_whitespace) => {
                eprintln!("Unknown command {cmd}: /help lists the commands.");
            }
            _ => {
                if let Err(e) = send(s, line.clone()).await {
                    eprintln!("error: {e:#}");
                }
            }
        }
    }
    if let Some(h) = &history {
        if let Some(dir) = h.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        if let Err(e) = rl.save_history(h) {
            eprintln!(
                "warning: cannot save the input history to {}: {e}",
                h.display()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

const REPL_HELP: &str = "\
clear, /clear   empty the conversation (asks to confirm)
/context        print exactly what the model will be sent next
/stats          messages, turns and tokens of the conversation
/compact        summarise what the window has left behind (contexts carry it with --summarize)
/retry          regenerate the last reply (on a fork: the old reply stays in the original)
/edit TEXT      replace your last message with TEXT and get a new reply (on a fork)
/exit, Ctrl-D   leave (Ctrl-C stops a reply; what arrived is kept as partial)";

/// Runs one turn, printing the reply as it streams. Ctrl-C stops the reply.
async fn send(s: &Session, text: String) -> anyhow::Result<TurnOutcome> {
    let cancel = CancellationToken::new();
    let on_ctrl_c = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        })
    };
    let turn = ChatTurn {
        content: serde_json::Value::String(text),
        model: s.model.clone(),
        max_output_tokens: s.max_output_tokens,
        overrides: s.overrides.clone(),
        ..ChatTurn::default()
    };
    let mut printer = Printer::default();
    let result = s
        .engine
        .chat_turn(
            ConversationRef::new(&s.tenant, &s.id),
            s.backend.as_ref(),
            turn,
            cancel,
            |ev| printer.event(ev),
        )
        .await;
    on_ctrl_c.abort();
    let outcome = result.map_err(engine_err)?;
    printer.end();
    if let Some(e) = &outcome.error {
        if outcome.status == MessageStatus::Partial && outcome.reply_seq.is_some() {
            eprintln!("error: {e} (the reply so far is saved as partial)");
        } else {
            eprintln!("error: {e} (your message is saved; nothing arrived)");
        }
    }
    capped(s, &outcome);
    Ok(outcome)
}

/// Says so when the reply stopped at its output limit (backends normalise it to
/// `max_tokens`): a cut reply otherwise looks finished.
fn capped(s: &Session, o: &TurnOutcome) {
    if o.error.is_none() && o.stop_reason.as_deref() == Some("max_tokens") {
        let limit = s
            .max_output_tokens
            .map_or_else(|| "the backend's".to_string(), |n| n.to_string());
        eprintln!(
            "[the reply stopped at its limit of {limit} output tokens: raise \
             --max-output-tokens for longer replies]"
        );
    }
}

/// `/retry` (no text: regenerate the last reply) and `/edit TEXT` (replace the last user
/// message): each forks the conversation before that message and runs the turn there; the
/// session continues on the fork.
async fn branch(s: &mut Session, edit: Option<String>) -> anyhow::Result<()> {
    let c = s
        .engine
        .get_conversation(ConversationRef::new(&s.tenant, &s.id))
        .await
        .map_err(engine_err)?;
    let recent = s
        .engine
        .store()
        .messages(&s.tenant, &s.id, (c.last_seq - 200).max(0), 200)
        .await
        .map_err(|e| engine_err(e.into()))?;
    let want = if edit.is_some() {
        recall_core::message::Role::User
    } else {
        recall_core::message::Role::Assistant
    };
    let Some(seq) = recent
        .iter()
        .rev()
        .find(|m| m.message.role == want && (edit.is_none() || m.message.has_text()))
        .map(|m| m.seq)
    else {
        return Err(bad_input(match edit {
            Some(_) => "no message of yours to edit yet",
            None => "no reply to retry yet",
        }));
    };
    let cancel = CancellationToken::new();
    let on_ctrl_c = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        })
    };
    let turn = ChatTurn {
        content: serde_json::Value::String(edit.clone().unwrap_or_default()),
        model: s.model.clone(),
        max_output_tokens: s.max_output_tokens,
        overrides: s.overrides.clone(),
        ..ChatTurn::default()
    };
    let mut printer = Printer::default();
    let b = s.backend.as_ref();
    let result = match edit {
        Some(_) => {
            s.engine
                .edit_turn(
                    ConversationRef::new(&s.tenant, &s.id),
                    seq,
                    b,
                    turn,
                    cancel,
                    |ev| printer.event(ev),
                )
                .await
        }
        None => {
            s.engine
                .retry_turn(
                    ConversationRef::new(&s.tenant, &s.id),
                    seq,
                    b,
                    turn,
                    cancel,
                    |ev| printer.event(ev),
                )
                .await
        }
    };
    on_ctrl_c.abort();
    let branched = result.map_err(engine_err)?;
    printer.end();
    if let Some(e) = &branched.outcome.error {
        eprintln!("error: {e}");
    }
    capped(s, &branched.outcome);
    eprintln!(
        "(now on fork {}; the previous version stays in {})",
        branched.conversation.id, s.id
    );
    s.id = branched.conversation.id;
    Ok(())
}

/// Prints a turn's events: the trimming notice, then the reply text as it arrives.
#[derive(Default)]
struct Printer {
    wrote: bool,
    thinking: bool,
}

impl Printer {
    fn event(&mut self, ev: TurnEvent) {
        let mut out = std::io::stdout().lock();
        match ev {
            TurnEvent::UserStored { .. } | TurnEvent::Forked { .. } => {}
            TurnEvent::ContextBuilt { stats } => {
                if let Some(n) = stats.notice {
                    eprintln!("{n}");
                }
            }
            TurnEvent::Backend(BackendEvent::TextDelta(t)) => {
                if self.thinking {
                    let _ = writeln!(out);
                    self.thinking = false;
                }
                let _ = out.write_all(t.as_bytes());
                let _ = out.flush();
                self.wrote = !t.ends_with('\n');
            }
            TurnEvent::Backend(BackendEvent::ThinkingDelta(_)) => {
                if !self.thinking {
                    eprint!("[thinking…]");
                    self.thinking = true;
                }
            }
            TurnEvent::Backend(BackendEvent::ToolUse { name, .. }) => {
                let _ = writeln!(out, "[tool call: {name}]");
                self.wrote = false;
            }
            TurnEvent::Backend(BackendEvent::ToolResult { .. }) => {
                let _ = writeln!(out, "[tool result]");
                self.wrote = false;
            }
            TurnEvent::Backend(_) => {}
        }
    }

    fn end(&mut self) {
        if self.wrote || self.thinking {
            println!();
        }
        let _ = std::io::stdout().flush();
    }
}

/// `/context`: exactly what the backend would be sent if the next message were typed now.
async fn preview(s: &Session) -> anyhow::Result<String> {
    let prepared = s
        .engine
        .chat_request(
            ConversationRef::new(&s.tenant, &s.id),
            s.backend.as_ref(),
            &s.overrides,
            Some("<your next message>".to_string()),
        )
        .await
        .map_err(engine_err)?;
    let mut req = prepared.request;
    req.model = s.model.clone();
    if let Some(n) = s.max_output_tokens {
        req.max_tokens = n;
    }
    let mut text = s.backend.preview(&req)?;
    if let Some(n) = prepared.context.stats.notice {
        text = format!("{n}\n{text}");
    }
    Ok(text)
}

/// `/compact`: brings the summary up to the window start with the chat's backend.
async fn compact(s: &Session) -> anyhow::Result<String> {
    let opts = recall_engine::CompactOptions {
        format: Some(s.backend.context_format()),
        overrides: s.overrides.clone(),
        model: s
            .engine
            .summarizer()
            .and_then(|(_, m)| m)
            .or_else(|| s.model.clone()),
        ..recall_engine::CompactOptions::default()
    };
    let r = s
        .engine
        .compact_conversation(
            ConversationRef::new(&s.tenant, &s.id),
            s.backend.as_ref(),
            &opts,
            CancellationToken::new(),
        )
        .await
        .map_err(engine_err)?;
    Ok(crate::commands::compact::describe(&r))
}

/// `/stats`: the conversation's figures.
async fn stats(s: &Session) -> anyhow::Result<String> {
    let c = s
        .engine
        .get_conversation(ConversationRef::new(&s.tenant, &s.id))
        .await
        .map_err(engine_err)?;
    let prepared = s
        .engine
        .chat_request(
            ConversationRef::new(&s.tenant, &s.id),
            s.backend.as_ref(),
            &s.overrides,
            Some("?".to_string()),
        )
        .await
        .map_err(engine_err)?;
    let st = &prepared.context.stats;
    Ok(format!(
        "conversation {}: {} messages, {} tokens stored; next request: {} messages, {} turns, {} tokens{}",
        c.id,
        c.message_count,
        c.total_tokens,
        st.included,
        st.turns,
        st.tokens,
        if st.dropped > 0 {
            format!(" ({} older messages trimmed)", st.dropped)
        } else {
            String::new()
        }
    ))
}

fn history_file(args: &ChatArgs) -> Option<PathBuf> {
    args.history_file.clone().or_else(|| {
        directories::ProjectDirs::from("", "", "recall").map(|d| d.data_dir().join("chat_history"))
    })
}

/// The backend to use and a phrase saying which and why.
pub(crate) fn pick_backend(
    args: &BackendArgs,
) -> anyhow::Result<(Arc<dyn Backend>, String, BackendKind)> {
    let prompt_format: PromptFormat = args.prompt_format.parse().map_err(bad_input)?;
    let opts = DiscoverOptions {
        claude_path: args.claude_path.clone(),
        model: args.model.clone(),
        timeout: Some(Duration::from_secs(args.timeout.max(1))),
        prompt_format,
        // A neutral working directory: the CLI would otherwise read the CLAUDE.md of
        // wherever recall was started and add it to every prompt.
        working_dir: Some(neutral_dir()),
    };
    let found = match args.backend {
        Some(choice) => {
            let kind = match choice {
                BackendChoice::Anthropic => BackendKind::Anthropic,
                BackendChoice::Openai => BackendKind::OpenAi,
                BackendChoice::ClaudeCli => BackendKind::ClaudeCli,
                BackendChoice::Local => BackendKind::Local,
            };
            configure(kind, &process_env, &opts).map_err(|e| bad_input(e.to_string()))?
        }
        None => discover(&process_env, &opts)
            .into_iter()
            .next()
            .ok_or_else(|| bad_input(format!("{NONE_CONFIGURED}; or pass --backend")))?,
    };
    let backend = build_backend(found.config).map_err(|e| bad_input(e.to_string()))?;
    Ok((
        backend,
        format!("{} ({})", found.kind.name(), found.why),
        found.kind,
    ))
}

/// An empty directory of recall's own for the Claude Code CLI to run in (not a shared temp
/// directory, where anyone could leave a CLAUDE.md).
pub(crate) fn neutral_dir() -> PathBuf {
    let dir = directories::ProjectDirs::from("", "", "recall")
        .map(|d| d.data_dir().join("claude-cwd"))
        .unwrap_or_else(|| std::env::temp_dir().join("recall-claude-cwd"));
    let _ = std::fs::create_dir_all(&dir);
    dir
}
