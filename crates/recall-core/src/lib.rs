//! recall-core: the pure heart of recall. The message model, input parsing and validation,
//! token counting, context selection (sliding and stable windows) and the prompt renderers.
//!
//! No I/O, no clock, no environment, no async runtime: every function here is a deterministic
//! function of its arguments. Storage, backends and interfaces live in other crates.
//!
//! The contract is `docs/FORMATS.md` (the message model, input, selection and every output
//! format); `docs/FORMAT-DECISIONS.md` records what it leaves open and how recall decides it.

pub mod context;
pub mod extract;
pub mod gateway;
pub mod json_chunks;
pub mod json_text;
pub mod message;
pub mod parse;
pub mod policy;
pub mod recall;
pub mod render;
pub mod select;
pub mod stable;
pub mod summary;
pub mod task;
pub mod time;
pub mod tokens;

pub use context::{build_context, ContextError, ContextOutput, ContextRequest};
pub use message::{Block, Content, Message, Role, ToolResultContent};
pub use parse::{parse_conversation, Conversation, ParseError, ParseOptions};
pub use policy::{Format, Policy, PolicyOverrides, TrimMode};
pub use render::{render, Prompt, RenderInput};
pub use select::{select, HistoryMessage, Kept, Selection, Stats};
pub use tokens::{TokenCounter, Tokenizer};
