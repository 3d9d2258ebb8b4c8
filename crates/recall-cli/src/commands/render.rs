//! `recall render` (docs/FORMATS.md §7): read a conversation, select, render, print.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use recall_core::context::{build_context, ContextError, ContextRequest};
use recall_core::parse::{parse_conversation, ParseOptions};

use crate::cli::RenderArgs;
use crate::exit::bad_input;
use crate::input::{read_text, Source};

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
        query: args.query.clone(),
        summary: args.summary.clone(),
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

/// The output contract shared by `render` and `context` (docs/FORMATS.md §7): the prompt on
/// stdout (text formats byte-exact, native formats as indented JSON and a newline), then
/// `warning:` lines and the optional `stats:` line on stderr.
pub fn print_output(out: &recall_core::context::ContextOutput, stats: bool) -> anyhow::Result<()> {
    let format = out.format;
    let mut stdout = std::io::stdout().lock();
    let text = out.prompt.to_text();
    stdout.write_all(text.as_bytes())?;
    if !format.is_text() || ends_line_on_terminal(&text, stdout.is_terminal()) {
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

/// A text prompt is written byte-exact, without a final newline, for whatever reads it. On a
/// terminal nothing reads it: the line is ended there, so the `warning:` and `stats:` lines
/// and the shell's prompt start on lines of their own instead of running into the text.
fn ends_line_on_terminal(text: &str, stdout_is_terminal: bool) -> bool {
    stdout_is_terminal && !text.is_empty() && !text.ends_with('\n')
}

fn read_input(args: &RenderArgs) -> anyhow::Result<String> {
    let source = match &args.input {
        Some(path) => Source::File(path),
        None => Source::Stdin,
    };
    read_text(source, args.max_input_bytes)
}

#[cfg(test)]
mod tests {
    use super::ends_line_on_terminal;

    #[test]
    fn only_a_terminal_gets_the_newline_and_only_when_the_text_lacks_one() {
        assert!(ends_line_on_terminal("Human: hi", true));
        assert!(!ends_line_on_terminal("Human: hi", false));
        assert!(!ends_line_on_terminal("Human: hi\n", true));
        assert!(!ends_line_on_terminal("", true));
    }
}
