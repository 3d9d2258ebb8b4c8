//! `recall render` (FORMATS.md §6): read a conversation, select, render, print.

use std::io::{Read, Write};
use std::process::ExitCode;

use anyhow::Context;
use recall_core::context::{build_context, ContextError, ContextRequest};
use recall_core::parse::{parse_conversation, ParseOptions};

use crate::cli::RenderArgs;
use crate::exit::bad_input;

pub fn run(args: RenderArgs) -> anyhow::Result<ExitCode> {
    let input = read_input(&args)?;
    let opts = ParseOptions {
        strict: args.strict,
        ..ParseOptions::default()
    };
    let conv = parse_conversation(&input, &opts).map_err(|e| bad_input(e.to_string()))?;
    let req = ContextRequest {
        format: Some(args.format),
        overrides: args.limits.clone(),
        current: args.current.clone(),
        escape: !args.no_escape,
    };
    let out = build_context(&conv, &req).map_err(|e| bad_input(context_error(&e)))?;
    print_output(&out, args.stats)?;
    Ok(ExitCode::SUCCESS)
}

/// A context error as the CLI says it: core names the `current` field, the CLI its flag.
pub fn context_error(e: &ContextError) -> String {
    match e {
        ContextError::NoCurrentMessage => {
            "xml needs a current message: end the input with a user message or pass --current"
                .to_string()
        }
        other => other.to_string(),
    }
}

/// The output contract shared by `render` and `context` (FORMATS.md §6): the prompt on
/// stdout (text formats byte-exact, native formats as indented JSON and a newline), then
/// `warning:` lines and the optional `stats:` line on stderr.
pub fn print_output(out: &recall_core::context::ContextOutput, stats: bool) -> anyhow::Result<()> {
    let format = out.format;
    let mut stdout = std::io::stdout().lock();
    let text = out.prompt.to_text();
    stdout.write_all(text.as_bytes())?;
    if !format.is_text() {
        stdout.write_all(b"\n")?;
    }
    stdout.flush()?;

    let mut stderr = std::io::stderr().lock();
    for w in &out.stats.warnings {
        writeln!(stderr, "warning: {w}")?;
    }
    if stats {
        writeln!(stderr, "stats: {}", serde_json::to_string(&out.stats)?)?;
    }
    Ok(())
}

fn read_input(args: &RenderArgs) -> anyhow::Result<String> {
    let bytes = match &args.input {
        Some(path) => std::fs::read(path)
            .with_context(|| format!("cannot read {}", path.display()))
            .map_err(|e| bad_input(format!("{e:#}")))?,
        None => {
            let mut buf = Vec::new();
            std::io::stdin()
                .read_to_end(&mut buf)
                .context("cannot read stdin")?;
            buf
        }
    };
    String::from_utf8(bytes).map_err(|e| {
        bad_input(format!(
            "input is not valid UTF-8 (first bad byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })
}
