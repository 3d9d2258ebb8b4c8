#!/usr/bin/env bash
# recall's main job on its embedded default: store a conversation in a SQLite file, then print
# the context the next request would carry (with selection stats on stderr).
set -euo pipefail
cd "$(dirname "$0")/.."
db="${RECALL_DB:-${TMPDIR:-/tmp}/recall-demo.db}"
cargo build --release -q -p recall-cli
recall="${CARGO_TARGET_DIR:-target}/release/recall"
id=$("$recall" import --db "$db" examples/conversation.json --title "Demo")
"$recall" append --db "$db" "$id" --role assistant --content "You said you're building a FastAPI app." >/dev/null
"$recall" append --db "$db" "$id" --role user --content "Right. What was the refund window?" >/dev/null
echo "== conversation $id in $db"
"$recall" conversations show --db "$db" "$id" --messages 3
echo
echo "== the context for the next request (xml, last 4 turns)"
"$recall" context --db "$db" "$id" --format xml --max-turns 4 --stats
echo
