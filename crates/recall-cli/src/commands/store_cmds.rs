//! Commands over stored conversations: `conversations …`, `append`, `context`, `import`,
//! `export`.

use recall_engine::ConversationRef;
use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;

use anyhow::Context as _;
use recall_core::context::ContextRequest;
use recall_core::policy::ConversationPolicy;
use recall_engine::store::{Conversation, NewConversation, StoreError, VectorScope};
use recall_engine::views::{ConversationView, MessageView};
use recall_engine::{Engine, EngineError, ImportTarget, Limits};
use serde_json::{json, Value};

use crate::cli::{
    AppendArgs, ContextArgs, ConversationsCommand, ExportArgs, ImportArgs, StoreArgs,
};
use crate::db;
use crate::exit::bad_input;
use crate::input::{read_text, Source};
use recall_core::time::format_rfc3339 as rfc3339;

/// Maps an engine error to the CLI's exit statuses: the caller's fault (bad input, unknown
/// id) is status 2.
pub fn engine_err(e: EngineError) -> anyhow::Error {
    if let EngineError::Store(recall_engine::store::StoreError::ConversationNotFound(id)) = &e {
        anyhow::Error::new(crate::exit::MissingConversation {
            id: id.clone(),
            message: e.to_string(),
        })
    } else if let EngineError::Context(c) = &e {
        bad_input(crate::commands::render::context_error(c))
    } else if e.is_bad_input() || e.is_not_found() {
        bad_input(e.to_string())
    } else {
        anyhow::Error::new(e)
    }
}

pub(crate) async fn open(store: &StoreArgs) -> anyhow::Result<Engine> {
    db::open(Limits {
        max_message_bytes: store.max_message_bytes,
        ..Limits::default()
    })
    .await
}

/// A conversation as `--json` prints it: the view every interface shares.
pub(crate) fn conversation_json(c: &Conversation) -> ConversationView {
    ConversationView::from(c)
}

pub async fn conversations(cmd: ConversationsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        ConversationsCommand::New(a) => {
            let engine = open(&a.store).await?;
            let policy = match &a.policy {
                None => None,
                Some(p) => Some(
                    serde_json::from_str::<ConversationPolicy>(p)
                        .map_err(|e| bad_input(format!("--policy is not a valid policy: {e}")))?,
                ),
            };
            let new = NewConversation {
                title: a.title,
                system_prompt: a.system,
                policy,
                ..NewConversation::default()
            };
            let c = match a.key.as_deref() {
                Some(key) => engine.open_conversation(&a.store.tenant, key, new).await,
                None => engine
                    .create_conversation(&a.store.tenant, new)
                    .await
                    .map(|c| (c, true)),
            }
            .map_err(engine_err)?
            .0;
            if a.json {
                println!("{}", serde_json::to_string_pretty(&conversation_json(&c))?);
            } else {
                println!("{}", c.id);
            }
        }
        ConversationsCommand::List(a) => {
            let engine = open(&a.store).await?;
            let list = engine
                .list_conversations(&a.store.tenant, a.after.as_deref(), a.limit)
                .await
                .map_err(engine_err)?;
            let mut out = std::io::stdout().lock();
            if a.json {
                for c in &list {
                    writeln!(out, "{}", serde_json::to_string(&conversation_json(c))?)?;
                }
            } else if list.is_empty() {
                eprintln!("No conversations yet. Create one with `recall conversations new` or `recall import FILE`.");
            } else {
                writeln!(
                    out,
                    "{:<36}  {:>8}  {:>9}  {:<20}  TITLE",
                    "ID", "MESSAGES", "TOKENS", "UPDATED"
                )?;
                for c in &list {
                    writeln!(
                        out,
                        "{:<36}  {:>8}  {:>9}  {:<20}  {}",
                        c.id,
                        c.message_count,
                        c.total_tokens,
                        rfc3339(c.updated_at),
                        c.title.as_deref().unwrap_or("")
                    )?;
                }
            }
            // A full page may have more after it: the cursor, under the name HTTP and MCP
            // give it, on stderr so the listing itself stays what it was.
            if list.len() == a.limit as usize {
                if let Some(last) = list.last() {
                    eprintln!(
                        "next_after: {} (the next page: recall conversations list --after {})",
                        last.id, last.id
                    );
                }
            }
        }
        ConversationsCommand::Show(a) => {
            let engine = open(&a.store).await?;
            let c = engine
                .get_conversation(ConversationRef::new(&a.store.tenant, &a.id))
                .await
                .map_err(engine_err)?;
            let after = (c.last_seq - i64::from(a.messages)).max(0);
            let msgs = engine
                .store()
                .messages(&a.store.tenant, &a.id, after, a.messages)
                .await
                .map_err(|e| engine_err(e.into()))?;
            if a.json {
                // The conversation as HTTP's `GET` shows it, then its newest messages.
                let mut shown = serde_json::to_value(
                    engine
                        .conversation_view(ConversationRef::new(&a.store.tenant, &a.id))
                        .await
                        .map_err(engine_err)?,
                )?;
                let messages: Vec<MessageView> = msgs.iter().map(MessageView::from).collect();
                shown["messages"] = serde_json::to_value(messages)?;
                println!("{}", serde_json::to_string_pretty(&shown)?);
            } else {
                println!("id:        {}", c.id);
                if let Some(t) = &c.title {
                    println!("title:     {t}");
                }
                if let Some(s) = &c.system_prompt {
                    println!("system:    {s}");
                }
                if let Some(p) = &c.policy {
                    println!("policy:    {}", serde_json::to_string(p)?);
                }
                println!("messages:  {} (last seq {})", c.message_count, c.last_seq);
                println!("tokens:    {} (o200k)", c.total_tokens);
                // How far its vectors are, under the embedder this process would use (the
                // JSON form is the conversation as GET shows it; `recall index --json` has
                // the figures).
                let model = engine.embedder().map(|e| e.model().to_string());
                let here = VectorScope::Conversation(ConversationRef::new(&a.store.tenant, &a.id));
                let vectors = engine.vector_status(here).await.map_err(engine_err)?;
                match (&model, vectors) {
                    (Some(model), Some(v)) if v.messages_behind == 0 => {
                        println!("vectors:   every message embedded ({model})");
                    }
                    (Some(model), Some(v)) => println!(
                        "vectors:   {} message(s) not embedded yet ({model}; `recall index {}` \
                         embeds them)",
                        v.messages_behind, c.id
                    ),
                    _ => println!("vectors:   no embedder (recall ranks by words only)"),
                }
                println!("created:   {}", rfc3339(c.created_at));
                println!("updated:   {}", rfc3339(c.updated_at));
                for m in &msgs {
                    let text = recall_core::extract::transcript_text(&m.message)
                        .unwrap_or_else(|| recall_core::extract::measured_text(&m.message));
                    let flag = match m.status {
                        recall_engine::store::MessageStatus::Partial => " (partial)",
                        recall_engine::store::MessageStatus::Complete => "",
                        recall_engine::store::MessageStatus::Redacted => " (redacted)",
                    };
                    println!("\n#{} {}{}:", m.seq, m.message.role.as_str(), flag);
                    println!("{}", preview(&text, 500));
                }
            }
        }
        ConversationsCommand::Clear(a) => {
            let engine = open(&a.store).await?;
            let n = engine
                .clear_conversation(ConversationRef::new(&a.store.tenant, &a.id))
                .await
                .map_err(engine_err)?;
            println!("Conversation cleared ({n} messages removed)");
        }
        ConversationsCommand::Delete(a) => {
            let engine = open(&a.store).await?;
            let n = engine
                .delete_conversation(ConversationRef::new(&a.store.tenant, &a.id), a.cascade)
                .await
                .map_err(|e| match e {
                    // The store's message says "cascade"; here it is a flag to name.
                    EngineError::Store(StoreError::HasForks {
                        conversation,
                        forks,
                        ..
                    }) => bad_input(format!(
                        "cannot delete conversation '{conversation}': {forks} fork(s) read its \
                         history; delete them first, or add --cascade to delete them too"
                    )),
                    e => engine_err(e),
                })?;
            match n {
                1 => println!("Conversation {} deleted", a.id),
                n => println!("Conversation {} and {} fork(s) deleted", a.id, n - 1),
            }
        }
        ConversationsCommand::Update(a) => {
            crate::commands::branch::update(a).await?;
        }
        ConversationsCommand::Forks(a) => {
            crate::commands::branch::forks(a).await?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn preview(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!(
            "{}… ({} more characters)",
            &text[..cut],
            text[cut..].chars().count()
        ),
        None => text.to_string(),
    }
}

pub async fn append(a: AppendArgs) -> anyhow::Result<ExitCode> {
    let mut value = match (&a.json, &a.role, &a.content) {
        (Some(j), _, _) => {
            let text = if j == "-" {
                let mut s = String::new();
                std::io::stdin()
                    .read_to_string(&mut s)
                    .context("cannot read the message from stdin")?;
                s
            } else {
                j.clone()
            };
            serde_json::from_str::<Value>(&text)
                .map_err(|e| bad_input(format!("--json is not valid JSON: {e}")))?
        }
        (None, Some(role), Some(content)) => json!({"role": role, "content": content}),
        _ => {
            return Err(bad_input(
                "give the message with --role and --content, or with --json",
            ))
        }
    };
    if let Value::Object(o) = &mut value {
        if let Some(cid) = &a.client_id {
            o.insert("id".into(), Value::String(cid.clone()));
        }
        if let Some(at) = &a.created_at {
            o.insert("created_at".into(), Value::String(at.clone()));
        }
    }
    let engine = open(&a.store).await?;
    let appended = engine
        .append_message(ConversationRef::new(&a.store.tenant, &a.id), value)
        .await
        .map_err(engine_err)?;
    if appended.duplicate {
        println!("{} (duplicate client id: already stored)", appended.seq);
    } else {
        println!("{}", appended.seq);
    }
    Ok(ExitCode::SUCCESS)
}

/// How long a one-shot `recall context` embeds a conversation's backlog before it answers:
/// about 200 messages with the default model on two cores.
pub const CONTEXT_CATCH_UP: std::time::Duration = std::time::Duration::from_secs(2);

pub async fn context(a: ContextArgs) -> anyhow::Result<ExitCode> {
    // One process per command: with recall by meaning, the context first embeds what is not
    // embedded yet of the conversation, for CONTEXT_CATCH_UP at most (a server does it in
    // the background); the rest stays lexical this time and the stats say so.
    // Its recall index, though, is caught up fully first (cheap next to embedding, and no
    // background would finish it).
    let engine = open(&a.store)
        .await?
        .with_context_catch_up(CONTEXT_CATCH_UP)
        .with_index_budget(None);
    let req = ContextRequest {
        format: a.format,
        overrides: a.limits.clone(),
        current: a.current.clone(),
        escape: !a.no_escape,
        query: a.query.clone(),
        summary: None,
    };
    let out = engine
        .context(ConversationRef::new(&a.store.tenant, &a.id), &req)
        .await
        .map_err(engine_err)?;
    crate::commands::render::print_output(&out, a.stats)?;
    Ok(ExitCode::SUCCESS)
}

pub async fn import(a: ImportArgs) -> anyhow::Result<ExitCode> {
    let source = if a.file.as_os_str() == "-" {
        Source::Stdin
    } else {
        Source::File(&a.file)
    };
    let text = read_text(source, a.max_input_bytes)?;
    let engine = open(&a.store).await?;
    let target = match a.conversation {
        Some(id) => ImportTarget::Existing(id),
        None => ImportTarget::New { title: a.title },
    };
    let bar = if std::io::stderr().is_terminal() {
        let b = indicatif::ProgressBar::new(0);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} measuring {pos}/{len} messages [{bar:30}] {per_sec}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        Some(b)
    } else {
        None
    };
    let progress = |done: usize, total: usize| {
        if let Some(b) = &bar {
            b.set_length(total as u64);
            b.set_position(done as u64);
        }
    };
    let report = engine
        .import(&a.store.tenant, target, &text, a.strict, &progress)
        .await
        .map_err(engine_err)?;
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    for w in &report.warnings {
        eprintln!("warning: {w}");
    }
    eprintln!(
        "imported {} messages into {}{}{}",
        report.imported,
        report.conversation_id,
        if report.skipped > 0 {
            format!(" ({} invalid skipped)", report.skipped)
        } else {
            String::new()
        },
        if report.duplicates > 0 {
            format!(" ({} duplicates of stored client ids)", report.duplicates)
        } else {
            String::new()
        }
    );
    println!("{}", report.conversation_id);
    Ok(ExitCode::SUCCESS)
}

pub async fn export(a: ExportArgs) -> anyhow::Result<ExitCode> {
    let engine = open(&a.store).await?;
    let lines = match &a.output {
        Some(path) => {
            let file = std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?;
            let mut w = std::io::BufWriter::new(file);
            let n = engine
                .export(ConversationRef::new(&a.store.tenant, &a.id), &mut w)
                .await
                .map_err(engine_err)?;
            eprintln!("exported {n} lines to {}", path.display());
            n
        }
        None => {
            let mut w = std::io::BufWriter::new(std::io::stdout());
            engine
                .export(ConversationRef::new(&a.store.tenant, &a.id), &mut w)
                .await
                .map_err(engine_err)?
        }
    };
    let _ = lines;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit::Failure;
    use recall_engine::store::StoreError;

    /// The exit status `report` picks for an engine error.
    fn exit_status(e: EngineError) -> u8 {
        engine_err(e)
            .downcast_ref::<Failure>()
            .map_or(1, |f| f.code)
    }

    #[test]
    fn a_conflict_is_exit_2_and_an_internal_failure_is_not() {
        let conflict = EngineError::from(StoreError::Conflict {
            index: 1,
            client_id: "d1".into(),
            seq: 1,
        });
        assert_eq!(exit_status(conflict), 2);
        let internal = EngineError::from(StoreError::Internal(
            "the SQLite writer thread has stopped".into(),
        ));
        assert_eq!(exit_status(internal), 1);
    }
}
