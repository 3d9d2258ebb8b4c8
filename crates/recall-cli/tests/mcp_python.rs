//! `recall mcp` driven by a client no one here wrote: the official MCP Python SDK
//! (`crates/recall-mcp/tests/client/check_recall_mcp.py`) runs the real binary over stdio on a
//! fresh SQLite file, lists the tools, meta-validates their schemas with `jsonschema`, calls
//! every tool and the error cases, and checks tenant isolation.
//!
//! The interpreter is `RECALL_MCP_PYTHON`, else the venv `scripts/setup.sh` creates
//! (`.tools/venv`). Without it the test is skipped with a notice, except when `CI=true`, where
//! it fails.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use recall_testkit::process::{python_with, workspace_root};

/// The Python that has `mcp` and `jsonschema`, or `None` outside CI.
fn python() -> Option<PathBuf> {
    python_with(
        "mcp, jsonschema",
        "RECALL_MCP_PYTHON",
        "the MCP Python client test",
    )
}

#[test]
fn official_python_sdk_drives_recall_mcp() {
    let Some(python) = python() else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("mcp.db");
    let script = workspace_root().join("crates/recall-mcp/tests/client/check_recall_mcp.py");
    let mut child = Command::new(&python)
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_recall"))
        .arg(&db)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the Python client");
    // Drained on threads so a full pipe never blocks the client.
    let drain = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            buf
        })
    };
    let out_thread = drain(Box::new(child.stdout.take().expect("stdout piped")));
    let err_thread = drain(Box::new(child.stderr.take().expect("stderr piped")));
    // Bounded: a hung handshake must fail the test, not the whole run.
    let deadline = Instant::now() + Duration::from_secs(180);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for the client") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the MCP Python client did not finish within 180 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out_bytes = out_thread.join().unwrap_or_default();
    let err_bytes = err_thread.join().unwrap_or_default();
    let stdout = String::from_utf8_lossy(&out_bytes);
    let stderr = String::from_utf8_lossy(&err_bytes);
    println!("{stdout}");
    assert!(
        status.success(),
        "MCP client checks failed:\n{stdout}\nstderr:\n{stderr}"
    );
    let last = stdout.lines().last().unwrap_or_default();
    assert!(
        last.ends_with(" passed, 0 failed") && !last.starts_with("0 passed"),
        "unexpected summary: {last}"
    );
}
