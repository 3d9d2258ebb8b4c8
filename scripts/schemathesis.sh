#!/usr/bin/env bash
# Property-based API tests of `recall serve` against its own /openapi.json with Schemathesis
# (every check: no 5xx, status codes, content types, response schemas, negative data
# rejected, auth not ignored, ...). Run on demand, not by scripts/test.sh: a run takes a few
# minutes on a 2-core machine.
#
# Usage: bash scripts/schemathesis.sh [extra `schemathesis run` options, e.g. --max-examples 50]
# Installs Schemathesis (pinned) into the project venv .tools/venv, builds recall (release),
# serves a temporary SQLite database on 127.0.0.1 with a new API key (chat turns go to a
# loopback fake of the OpenAI-compatible streaming API, below), and runs
#   schemathesis --config-file CONFIG run http://127.0.0.1:PORT/openapi.json --checks all
# where CONFIG sends the key as `Authorization: Bearer …` (from the environment, never argv).
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEMATHESIS_VERSION=4.32.5
venv=.tools/venv
log() { printf 'schemathesis.sh: %s\n' "$*" >&2; }

if ! "$venv/bin/schemathesis" --version 2>/dev/null | grep -q " $SCHEMATHESIS_VERSION\$"; then
  if [ ! -x "$venv/bin/python" ]; then
    log "creating $venv"
    python3 -m venv "$venv" || {
      apt-get update -qq && apt-get install -y -qq python3-venv && python3 -m venv "$venv"
    }
  fi
  log "installing schemathesis==$SCHEMATHESIS_VERSION into $venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "schemathesis==$SCHEMATHESIS_VERSION"
fi

# RECALL_BIN: a recall binary to test instead of building the release one.
if [ -n "${RECALL_BIN:-}" ]; then
  recall=$RECALL_BIN
else
  cargo build --release -q -p recall-cli
  recall="${CARGO_TARGET_DIR:-target}/release/recall"
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/recall-schemathesis.XXXXXX")
server=
backend=
stop() {
  if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then
    kill -TERM "$server" && wait "$server" 2>/dev/null || true
  fi
  if [ -n "$backend" ]; then kill "$backend" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap stop EXIT

umask 077
RECALL_SCHEMATHESIS_KEY=$("$recall" keys create --db "$dir/recall.db" --tenant schemathesis 2>/dev/null)
export RECALL_SCHEMATHESIS_KEY
# positive_data_acceptance also takes 422: a few rules that JSON Schema cannot state answer
# it for schema-valid requests (a message whose blocks hold no text at all, an `xml` context
# without a current message, a conversation's stored format asking for one). Every other
# check keeps its default.
cat >"$dir/schemathesis.toml" <<'EOF'
[headers]
Authorization = "Bearer ${RECALL_SCHEMATHESIS_KEY}"

[checks.positive_data_acceptance]
expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"]
EOF

# The chat routes (chat, retry, edit) need a backend: a local server speaking the
# OpenAI-compatible streaming wire format (Python's standard library only) answers every
# completion at once with a short reply, so Schemathesis tests recall's side of those routes.
cat >"$dir/backend.py" <<'EOF'
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Backend(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self.path.endswith("/chat/completions"):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        model = json.loads(body or b"{}").get("model") or "fake"
        chunk = lambda delta, finish: "data: " + json.dumps({
            "id": "c1", "object": "chat.completion.chunk", "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n"
        out = (chunk({"role": "assistant", "content": "ok"}, None) + chunk({}, "stop")
               + "data: [DONE]\n\n").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

server = ThreadingHTTPServer(("127.0.0.1", 0), Backend)
print(server.server_address[1], flush=True)
server.serve_forever()
EOF
python3 "$dir/backend.py" >"$dir/backend.port" &
backend=$!
for _ in $(seq 1 50); do [ -s "$dir/backend.port" ] && break; sleep 0.1; done
[ -s "$dir/backend.port" ] || { log "the fake backend did not start"; exit 1; }

OPENAI_BASE_URL="http://127.0.0.1:$(cat "$dir/backend.port")/v1" ANTHROPIC_API_KEY= \
  RUST_LOG=${RUST_LOG:-warn} "$recall" serve --db "$dir/recall.db" --addr 127.0.0.1:0 \
  2>"$dir/server.log" &
server=$!
base=
for _ in $(seq 1 100); do
  base=$(sed -n 's/^recall listening on \(http:[^ ]*\).*/\1/p' "$dir/server.log")
  [ -n "$base" ] && break
  kill -0 "$server" 2>/dev/null || { cat "$dir/server.log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$base" ] || { log "the server did not start"; cat "$dir/server.log" >&2; exit 1; }
log "recall serve on $base"

# Left out: GET …/ws, a WebSocket upgrade, which Schemathesis does not speak.
status=0
"$venv/bin/schemathesis" --config-file "$dir/schemathesis.toml" run "$base/openapi.json" \
  --checks all --exclude-path-regex '/ws$' \
  --no-color --generation-database none --seed "${SEED:-1}" "$@" || status=$?
if grep -qE ' ERROR ' "$dir/server.log"; then
  log "the server logged errors:"
  grep -E ' ERROR ' "$dir/server.log" | head -20 >&2
  status=1
fi
exit "$status"
