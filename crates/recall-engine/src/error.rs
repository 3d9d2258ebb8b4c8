//! Engine errors: what went wrong, in words a user can act on.

use recall_core::context::ContextError;
use recall_core::parse::ParseError;
use recall_core::policy::InvalidPolicy;
use recall_store::StoreError;

/// Why a use case failed.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The input was rejected; nothing was changed.
    #[error("{0}")]
    Invalid(String),
    /// The input could not be read.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// A message over the size limit; nothing was changed.
    #[error("{what} is {size} bytes, over the limit of {limit} bytes")]
    TooLarge {
        what: String,
        size: usize,
        limit: usize,
    },
    /// A context whose prompt is over the size limit (`at_least`: the size of the part that
    /// was built before the limit was known to be broken); nothing was changed.
    #[error(
        "the context's prompt is {}{size} bytes, over the limit of {limit} bytes \
         (max_context_bytes); ask for less with max_tokens, max_chars or max_turns",
        if *.at_least { "at least " } else { "" }
    )]
    ContextTooLarge {
        size: usize,
        at_least: bool,
        limit: usize,
    },
    /// The request conflicts with what is stored (a client id sent twice); nothing changed.
    #[error("{0}")]
    Conflict(String),
    #[error(transparent)]
    Context(#[from] ContextError),
    #[error(transparent)]
    Policy(#[from] InvalidPolicy),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl EngineError {
    /// True when the caller's input was at fault (an exit status 2, a 4xx).
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            EngineError::Invalid(_)
                | EngineError::Parse(_)
                | EngineError::TooLarge { .. }
                | EngineError::ContextTooLarge { .. }
                | EngineError::Context(_)
                | EngineError::Policy(_)
                | EngineError::Conflict(_)
        )
    }

    /// True for a conflict with stored state (an HTTP 409).
    pub fn is_conflict(&self) -> bool {
        matches!(self, EngineError::Conflict(_))
    }

    /// True when the conversation or message does not exist for this tenant.
    pub fn is_not_found(&self) -> bool {
        matches!(self, EngineError::Store(e) if e.is_not_found())
    }
}
