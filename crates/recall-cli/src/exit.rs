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

/// A conversation the command's tenant does not hold (exit status 2): `main` may add where
/// it is, since the CLI opens the whole database.
#[derive(Debug)]
pub struct MissingConversation {
    pub id: String,
    pub message: String,
}

impl std::fmt::Display for MissingConversation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for MissingConversation {}

/// Prints `error: …` (the whole cause chain on one line) and picks the exit status.
pub fn report(e: &anyhow::Error) -> ExitCode {
    let code = if e.downcast_ref::<MissingConversation>().is_some() {
        USAGE
    } else {
        e.downcast_ref::<Failure>().map_or(1, |f| f.code)
    };
    eprintln!("error: {}", one_line(e));
    ExitCode::from(code)
}

/// The cause chain joined by ": ", each cause once: an error that shows its source in its own
/// message (`summariser failed: HTTP 400 …` over `HTTP 400 …`) would otherwise print it twice.
pub fn one_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if text.is_empty() || line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_already_in_the_message_is_not_repeated() {
        #[derive(Debug)]
        struct Inner;
        impl std::fmt::Display for Inner {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("HTTP 400: context too long")
            }
        }
        impl std::error::Error for Inner {}
        #[derive(Debug)]
        struct Outer(Inner);
        impl std::fmt::Display for Outer {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "the summariser failed: {}", self.0)
            }
        }
        impl std::error::Error for Outer {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let e = anyhow::Error::new(Outer(Inner)).context("recall compact");
        assert_eq!(
            one_line(&e),
            "recall compact: the summariser failed: HTTP 400: context too long"
        );
        let plain = anyhow::anyhow!("disk full").context("cannot write");
        assert_eq!(one_line(&plain), "cannot write: disk full");
    }
}
