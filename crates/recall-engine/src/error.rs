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
    /// Message `index` of the request carries a client id this conversation already holds for
    /// a different message (stored as `seq`); nothing of the request was stored.
    #[error(
        "messages[{index}]: client id '{client_id}' was already used for a different message \
         (seq {seq})"
    )]
    Conflict {
        /// The message's position in the request (its entry in the input).
        index: usize,
        client_id: String,
        seq: i64,
    },
    /// Message `index` of the request carries a `created_at` the conversation cannot take
    /// (earlier than the message before it, or too far in the future); nothing of the request
    /// was stored.
    #[error(transparent)]
    Time(recall_core::time::TimeRefusal),
    /// A chat turn whose client id is already stored (as `seq`): the turn was sent before, and
    /// is not sent again.
    #[error("message id {client_id:?} was already sent in this conversation (seq {seq})")]
    AlreadySent { client_id: String, seq: i64 },
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
    #[error(transparent)]
    Context(#[from] ContextError),
    #[error(transparent)]
    Policy(#[from] InvalidPolicy),
    /// The embedder failed (recall's semantic ranking or the vector catch-up).
    #[error(transparent)]
    Embed(#[from] recall_embed::EmbedError),
    /// The summariser's backend failed; no summary was committed by that call.
    #[error("the summariser failed: {0}")]
    Summarizer(recall_llm::BackendError),
    /// The summariser's answer was refused (empty, or over `summary_tokens`); nothing was
    /// committed by that call.
    #[error("summary refused: {0}")]
    SummaryRefused(#[from] recall_core::summary::SummaryRefusal),
    /// The store failed (a [`StoreError::Conflict`] becomes [`EngineError::Conflict`], a
    /// [`StoreError::Time`] [`EngineError::Time`]).
    #[error(transparent)]
    Store(StoreError),
}

impl From<StoreError> for EngineError {
    fn from(e: StoreError) -> EngineError {
        match e {
            StoreError::Conflict {
                index,
                client_id,
                seq,
            } => EngineError::Conflict {
                index,
                client_id,
                seq,
            },
            StoreError::Time(t) => EngineError::Time(t),
            e => EngineError::Store(e),
        }
    }
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
                | EngineError::Conflict { .. }
                | EngineError::Time(_)
                | EngineError::AlreadySent { .. }
                | EngineError::Store(StoreError::Invalid(_))
                | EngineError::Store(StoreError::HasForks { .. })
                | EngineError::Store(StoreError::PartialForkPoint { .. })
                | EngineError::Store(StoreError::CompactionBusy { .. })
        )
    }

    /// True for a conflict with stored state (an HTTP 409).
    pub fn is_conflict(&self) -> bool {
        matches!(
            self,
            EngineError::Conflict { .. }
                | EngineError::AlreadySent { .. }
                | EngineError::Store(StoreError::HasForks { .. })
                | EngineError::Store(StoreError::PartialForkPoint { .. })
                | EngineError::Store(StoreError::CompactionBusy { .. })
        )
    }

    /// True when the summariser (an upstream model) failed or answered unusably (an HTTP
    /// 502).
    pub fn is_upstream(&self) -> bool {
        matches!(
            self,
            EngineError::Summarizer(_) | EngineError::SummaryRefused(_)
        )
    }

    /// True when the conversation or message does not exist for this tenant.
    pub fn is_not_found(&self) -> bool {
        matches!(self, EngineError::Store(e) if e.is_not_found())
    }
}

/// A store error of a batch, with a conflict's or a refused time's batch position turned into
/// the request's by `position` (inputs merge entries, an import adds its system message
/// first).
pub(crate) fn at_request(e: StoreError, position: impl Fn(usize) -> usize) -> EngineError {
    match EngineError::from(e) {
        EngineError::Conflict {
            index,
            client_id,
            seq,
        } => EngineError::Conflict {
            index: position(index),
            client_id,
            seq,
        },
        EngineError::Time(t) => {
            let index = position(t.index());
            EngineError::Time(t.at(index))
        }
        other => other,
    }
}

/// The error of a batch of one, said of that one message: `the message has invalid role
/// 'bot'` (with the valid roles) instead of `messages[0] has invalid role 'bot' (strict mode:
/// the whole input is rejected)`, which speaks of a batch the caller never sent.
pub(crate) fn one_message(e: EngineError) -> EngineError {
    match e {
        EngineError::Parse(ParseError::Strict(reason)) => {
            let reason = match reason.strip_prefix("messages[0] ") {
                Some(rest) => format!("the message {rest}"),
                None => reason,
            };
            let hint = if reason.contains("invalid role") {
                " (the roles are user, assistant and system; developer is read as system, and \
                 tool as an OpenAI tool result)"
            } else {
                ""
            };
            EngineError::Invalid(format!("{reason}{hint}"))
        }
        EngineError::TooLarge { what, size, limit } if what == "messages[0]" => {
            EngineError::TooLarge {
                what: "the message".into(),
                size,
                limit,
            }
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_of_one_message_names_it_and_lists_the_roles() {
        let e = one_message(EngineError::Parse(ParseError::Strict(
            "messages[0] has invalid role 'bot'".into(),
        )));
        let text = e.to_string();
        assert!(e.is_bad_input());
        assert!(
            text.starts_with("the message has invalid role 'bot'"),
            "{text}"
        );
        assert!(text.contains("user, assistant and system"), "{text}");
        assert!(
            !text.contains("messages[0]") && !text.contains("strict mode"),
            "{text}"
        );
        let e = one_message(EngineError::Parse(ParseError::Strict(
            "messages[0] has empty/invalid content".into(),
        )));
        assert_eq!(e.to_string(), "the message has empty/invalid content");
        let e = one_message(EngineError::TooLarge {
            what: "messages[0]".into(),
            size: 10,
            limit: 5,
        });
        assert_eq!(
            e.to_string(),
            "the message is 10 bytes, over the limit of 5 bytes"
        );
    }
}
