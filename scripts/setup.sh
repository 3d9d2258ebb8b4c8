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
# --- recall-store: PostgreSQL for the conformance suite (begin) ---
# The PostgreSQL tests connect to RECALL_TEST_PG_URL (default: the local server, user
# postgres, trust auth). Start the cluster if it is installed but down; install it if absent.
pg_ready() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
if ! pg_ready; then
  if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
    log "installing PostgreSQL"
    apt-get update -qq && apt-get install -y -qq postgresql
  fi
  log "starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start || true
  for _ in $(seq 1 30); do pg_ready && break; sleep 1; done
fi
if pg_ready; then
  log "PostgreSQL is up on 127.0.0.1:5432"
elif [ "${CI:-}" = "true" ]; then
  log "PostgreSQL is not reachable on 127.0.0.1:5432 and CI needs it"; exit 1
else
  log "warning: PostgreSQL is not reachable; its tests will be skipped outside CI"
fi
# --- recall-store (end) ---
# --- recall-cli: tmux drives the `recall chat` REPL test in a real terminal (begin) ---
if ! command -v tmux >/dev/null 2>&1; then
  log "installing tmux"
  apt-get update -qq && apt-get install -y -qq tmux
fi
# --- recall-cli (end) ---
log "ok"
