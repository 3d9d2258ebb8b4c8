//! Writes the benchmarks' conversation workload (`recall-core/benches/common/workload.rs`, the
//! same generator and seed as `cargo bench -p recall-engine --bench store`) to stdout as JSON
//! Lines, one Anthropic-shaped message a line, ready for `recall import`. `scripts/load.sh`
//! uses it so the HTTP load figures are taken on the very conversation the store benchmarks
//! measure.
//!
//! Run: `cargo run --release -p recall-engine --example workload_jsonl -- 10000 > conv.jsonl`
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufWriter, Write};
use std::process::ExitCode;

#[path = "../../recall-core/benches/common/workload.rs"]
mod workload;

fn main() -> ExitCode {
    let arg = std::env::args().nth(1).unwrap_or_else(|| "10000".into());
    let n = match arg.parse::<usize>() {
        Ok(n) if n >= workload::TAIL && n.is_multiple_of(2) => n,
        _ => {
            eprintln!(
                "usage: workload_jsonl [N]: N messages, an even number of at least {} \
                 (default 10000); got {arg:?}",
                workload::TAIL
            );
            return ExitCode::from(2);
        }
    };
    let mut out = BufWriter::new(std::io::stdout().lock());
    let written = workload::conversation(n)
        .iter()
        .try_for_each(|m| writeln!(out, "{}", m.to_json()))
        .and_then(|()| out.flush());
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("workload_jsonl: cannot write: {e}");
            ExitCode::FAILURE
        }
    }
}
