//! The `recall` binary: argument parsing and dispatch only. Each command lives in
//! `commands/`; the work itself is done by the library crates.

mod cli;
mod commands;
mod db;
mod exit;
mod input;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    if prints_only(&cli.command) {
        die_of_a_closed_stdout();
    }
    db::set_durability(cli.durability.map(Into::into));
    db::set_db(cli.db);
    use commands::store_cmds;
    let result = match cli.command {
        cli::Command::Render(args) => commands::render::run(args),
        cli::Command::Conversations(c) => block_on(store_cmds::conversations(c)),
        cli::Command::Append(a) => block_on(store_cmds::append(a)),
        cli::Command::Context(a) => block_on(store_cmds::context(a)),
        cli::Command::Import(a) => block_on(store_cmds::import(a)),
        cli::Command::Export(a) => block_on(store_cmds::export(a)),
        cli::Command::Compact(a) => block_on(commands::compact::run(a)),
        cli::Command::Fork(a) => block_on(commands::branch::fork(a)),
        cli::Command::Redact(a) => block_on(commands::branch::redact(a)),
        cli::Command::Alternatives(a) => block_on(commands::branch::alternatives(a)),
        cli::Command::Chat(a) => block_on(commands::chat::run(a)),
        cli::Command::Mcp(a) => block_on(commands::mcp::run(a)),
        cli::Command::Serve(a) => block_on(commands::serve::serve(a)),
        cli::Command::Keys(k) => block_on(commands::serve::keys(k)),
        cli::Command::Embed(a) => block_on(commands::embed::run(a)),
        cli::Command::Index(a) => block_on(commands::index::run(a)),
    };
    match result {
        Ok(code) => code,
        Err(e) => exit::report(&where_else(e)),
    }
}

/// A conversation the command's tenant does not hold may be another tenant's (the CLI
/// opens the whole database; `recall serve` and MCP never say so): name it, and `--tenant`.
fn where_else(e: anyhow::Error) -> anyhow::Error {
    let Some(missing) = e.downcast_ref::<exit::MissingConversation>() else {
        return e;
    };
    let Some(tenant) = store_scope() else {
        return e;
    };
    let id = missing.id.clone();
    let found = block_on(async {
        let engine = db::open(recall_engine::Limits::default()).await?;
        Ok(engine.conversation_tenants(&id).await?)
    });
    let others: Vec<String> = match found {
        Ok(t) => t.into_iter().filter(|t| *t != tenant).collect(),
        Err(_) => return e,
    };
    let Some(first) = others.first() else {
        return e;
    };
    let list = others
        .iter()
        .map(|t| format!("'{t}'"))
        .collect::<Vec<_>>()
        .join(", ");
    let message = format!(
        "conversation '{id}' not found in tenant '{tenant}', but tenant {list} {} one with \
         this id: add --tenant {first} (or set RECALL_TENANT={first})",
        if others.len() == 1 { "holds" } else { "hold" },
    );
    anyhow::Error::new(exit::MissingConversation { id, message })
}

/// The tenant the command line names (`--tenant`/`RECALL_TENANT` with its default), read
/// again from the arguments of a command that has one.
fn store_scope() -> Option<String> {
    use clap::CommandFactory;
    let matches = cli::Cli::command()
        .try_get_matches_from(std::env::args_os())
        .ok()?;
    let mut m = &matches;
    while let Some((_, sub)) = m.subcommand() {
        m = sub;
    }
    m.try_get_one::<String>("tenant").ok().flatten().cloned()
}

/// The commands whose whole job is printing to stdout: when the reader goes away
/// (`recall render … | head`) they end quietly, as `cat` does, instead of printing
/// `error: Broken pipe`. Not the others: `chat` writes to a `claude` child's stdin and the
/// servers write to sockets, where a closed pipe is an error worth reporting.
fn prints_only(command: &cli::Command) -> bool {
    use cli::Command as C;
    matches!(
        command,
        C::Render(_) | C::Conversations(_) | C::Context(_) | C::Export(_) | C::Alternatives(_)
    )
}

/// Restores the default action of SIGPIPE (end the process, silently), which Rust's runtime
/// sets to "ignore" so that writes fail with `EPIPE` instead.
fn die_of_a_closed_stdout() {
    use nix::sys::signal::{signal, SigHandler, Signal};
    // SAFETY: called first thing in `main`, before any thread or runtime exists, and
    // `SigDfl` installs no handler code: nothing can observe a half-changed disposition.
    let _ = unsafe { signal(Signal::SIGPIPE, SigHandler::SigDfl) };
}

/// Runs an async command on a multi-threaded runtime (the store uses both cores for imports).
fn block_on<T, F: std::future::Future<Output = anyhow::Result<T>>>(f: F) -> anyhow::Result<T> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(f)
}
