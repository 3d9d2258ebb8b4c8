//! Exit statuses and the one-line `error:` report.

use std::process::ExitCode;

/// Bad input or usage: the input was rejected and nothing was changed.
pub const USAGE: u8 = 2;

/// An error whose message is shown as is, with an explicit exit status.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

/// A bad-input failure (exit status 2).
pub fn bad_input(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Failure {
        code: USAGE,
        message: message.into(),
    })
}

/// Prints `error: …` (the whole cause chain on one line) and picks the exit status.
pub fn report(e: &anyhow::Error) -> ExitCode {
    let code = e.downcast_ref::<Failure>().map_or(1, |f| f.code);
    let chain: Vec<String> = e.chain().map(|c| c.to_string()).collect();
    eprintln!("error: {}", chain.join(": "));
    ExitCode::from(code)
}
