#!/usr/bin/env bash
# recall's main job on its embedded default: the HTTP server on a SQLite file. Starts
# `recall serve` on 127.0.0.1 with a new API key, then with curl creates a conversation,
# appends messages and prints the context the next LLM request would carry; stops the
# server on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release -q -p recall-cli
recall="${CARGO_TARGET_DIR:-target}/release/recall"

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
stop() {
  if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then
    kill -TERM "$server" && wait "$server" 2>/dev/null || true
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
