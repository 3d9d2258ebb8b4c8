//! `clients/openapi.json` is the document the server serves: the Python and TypeScript clients
//! are generated from that file (`scripts/generate-clients.sh`), so a route or a field changed
//! here without regenerating them fails this test first.
//!
//! `RECALL_UPDATE_OPENAPI=1 cargo test --test openapi_file` writes the file (the generation
//! script does that first).

use std::path::PathBuf;

#[test]
fn the_clients_spec_is_the_served_document() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../clients/openapi.json");
    let served = recall_server::openapi::document().expect("the OpenAPI document is JSON");
    if std::env::var("RECALL_UPDATE_OPENAPI").is_ok_and(|v| v == "1") {
        std::fs::write(&path, &served).expect("write clients/openapi.json");
        return;
    }
    let kept = std::fs::read_to_string(&path).unwrap_or_default();
    if kept != served {
        let first = kept
            .lines()
            .zip(served.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| kept.lines().count().min(served.lines().count()));
        panic!(
            "clients/openapi.json differs from the server's OpenAPI document (first at line {}); \
             run `bash scripts/generate-clients.sh` and commit what it changes",
            first + 1
        );
    }
}
