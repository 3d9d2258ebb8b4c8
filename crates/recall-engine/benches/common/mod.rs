//! The long-conversation memory benchmark's data (`benches/memory.rs`): a deterministic
//! generator of long two-person conversations with planted facts and questions about them.
//!
//! - `convo`: the conversation's shape (sessions, dates, turns), the placement of facts, their
//!   distractors and the filler, and the questions with the turns that hold their evidence;
//! - `deck`: the seeded draws every other part makes;
//! - `plan`: what a fact kind writes (category, statements, question) and the value pools;
//! - `facts`: the kinds of facts, each with its wording, later updates, distractors and the
//!   question that asks for it (one category per kind);
//! - `linked`: the kinds whose answer spans statements, changes, or hangs on a date;
//! - `chatter`: small talk and help requests that fill the sessions between the facts;
//! - `locomo`: LoCoMo's real conversations read from a folder, in the same shape.

pub mod chatter;
pub mod convo;
pub mod deck;
pub mod facts;
pub mod linked;
pub mod locomo;
pub mod plan;
