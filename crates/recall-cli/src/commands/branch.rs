//! Branching commands: `fork`, `redact`, `alternatives`, `conversations update` and
//! `conversations forks`. Each parses its arguments, calls one engine use case and prints.

use recall_engine::ConversationRef;
use std::process::ExitCode;

use recall_core::policy::ConversationPolicy;
use recall_engine::store::ConversationUpdate;
use serde_json::Value;

use crate::cli::{AlternativesArgs, ForkArgs, IdArgs, RedactArgs, UpdateArgs};
use crate::commands::store_cmds::{conversation_json, engine_err, open};
use crate::exit::bad_input;

pub async fn fork(a: ForkArgs) -> anyhow::Result<ExitCode> {
    let engine = open(&a.store).await?;
    let f = engine
        .fork_conversation(ConversationRef::new(&a.store.tenant, &a.id), a.at, a.title)
        .await
        .map_err(engine_err)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&conversation_json(&f))?);
    } else {
        println!("{}", f.id);
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn redact(a: RedactArgs) -> anyhow::Result<ExitCode> {
    let engine = open(&a.store).await?;
    engine
        .redact_message(ConversationRef::new(&a.store.tenant, &a.id), a.seq)
        .await
        .map_err(engine_err)?;
    if !a.no_compact {
        engine.vacuum().await.map_err(engine_err)?;
    }
    println!("Message {} of {} redacted", a.seq, a.id);
    Ok(ExitCode::SUCCESS)
}

pub async fn alternatives(a: AlternativesArgs) -> anyhow::Result<ExitCode> {
    let engine = open(&a.store).await?;
    let alts = engine
        .alternatives(ConversationRef::new(&a.store.tenant, &a.id), a.seq)
        .await
        .map_err(engine_err)?;
    for alt in &alts {
        if a.json {
            println!(
                "{}",
                serde_json::to_string(&recall_engine::views::AlternativeView::from(alt))?
            );
        } else {
            let text = recall_core::extract::measured_text(&alt.message.message);
            let mark = if alt.current { '*' } else { ' ' };
            let short: String = text.chars().take(70).collect();
            println!(
                "{mark} {}  {}",
                alt.conversation_id,
                short.replace('\n', " ")
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `Some(None)` for a `--no-X` flag, `Some(Some(v))` for a value, `None` for neither.
fn setting<T>(value: Option<T>, remove: bool) -> Option<Option<T>> {
    if remove {
        Some(None)
    } else {
        value.map(Some)
    }
}

pub async fn update(a: UpdateArgs) -> anyhow::Result<ExitCode> {
    let metadata = match &a.metadata {
        None => None,
        Some(m) => match serde_json::from_str::<Value>(m) {
            Ok(Value::Object(o)) => Some(o),
            _ => {
                return Err(bad_input(
                    "--metadata must be a JSON object, like '{\"team\":\"a\"}'",
                ))
            }
        },
    };
    let policy = match &a.policy {
        None => None,
        Some(p) => Some(
            serde_json::from_str::<ConversationPolicy>(p)
                .map_err(|e| bad_input(format!("--policy is not a valid policy: {e}")))?,
        ),
    };
    let update = ConversationUpdate {
        title: setting(a.title, a.no_title),
        system_prompt: setting(a.system, a.no_system),
        metadata,
        policy: setting(policy, a.no_policy),
    };
    let engine = open(&a.store).await?;
    let c = engine
        .update_conversation(ConversationRef::new(&a.store.tenant, &a.id), update)
        .await
        .map_err(engine_err)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&conversation_json(&c))?);
    } else {
        println!("Conversation {} updated", c.id);
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn forks(a: IdArgs) -> anyhow::Result<ExitCode> {
    let engine = open(&a.store).await?;
    let list = engine
        .forks(ConversationRef::new(&a.store.tenant, &a.id))
        .await
        .map_err(engine_err)?;
    if list.is_empty() {
        eprintln!("No forks. Make one with `recall fork {} --at SEQ`.", a.id);
    }
    for f in &list {
        let at = f.forked_from.as_ref().map_or(0, |p| p.seq);
        println!(
            "{}  at {:>6}  {:>6} messages  {}",
            f.id,
            at,
            f.message_count,
            f.title.as_deref().unwrap_or("")
        );
    }
    Ok(ExitCode::SUCCESS)
}
