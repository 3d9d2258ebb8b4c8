//! `transcript` escaping: content in, the turns read back out must be the real ones
//! (escape_common.rs, docs/FUZZING.md).

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/recall-core/tests/support/readers.rs"]
mod readers;

#[path = "escape_common.rs"]
mod common;

fuzz_target!(|data: &[u8]| common::check(recall_core::policy::Format::Transcript, data));
