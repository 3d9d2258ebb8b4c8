#!/usr/bin/env bash
# Every check and test of recall, as CI runs them: formatting, lints, then all tests.
# Services and tools the tests need are installed or started by scripts/setup.sh first.
set -euo pipefail
# Same reason as in .ci/run: never let fd 0 be closed while cargo runs.
exec </dev/null
cd "$(dirname "$0")/.."
# Each step says when it starts, counted from here: where a slow run spent its time.
step() { echo "== [$((SECONDS / 60))m$((SECONDS % 60))s] $*"; }

step "setup"
bash scripts/setup.sh

# --- recall-store: the PostgreSQL role setup.sh made where password-less logins are refused (begin) ---
if [ -z "${RECALL_TEST_PG_URL:-}" ] && [ -s .tools/pg-test-url ]; then
  RECALL_TEST_PG_URL="$(head -n 1 .tools/pg-test-url)"
  export RECALL_TEST_PG_URL
fi
# --- recall-store (end) ---

# --- recall-llm: the real `claude` installed by setup.sh (begin) ---
if [ -z "${RECALL_CLAUDE_PATH:-}" ] && [ -x .tools/node_modules/.bin/claude ]; then
  export RECALL_CLAUDE_PATH="$PWD/.tools/node_modules/.bin/claude"
fi
# --- recall-llm (end) ---

step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
# The fuzz targets live in their own workspace (fuzz/, nightly flags when fuzzing): check that
# they still compile against the crates, on stable, so that an API change cannot rot them.
step "fuzz targets compile"
cargo check --manifest-path fuzz/Cargo.toml --bins --locked
# In CI the property tests draw from a fixed seed, so that a red run can be replayed exactly;
# local runs draw a new one each time (and record failures in *.proptest-regressions).
if [ "${CI:-}" = true ]; then
  export PROPTEST_RNG_SEED="${PROPTEST_RNG_SEED:-20261122}"
fi
step "cargo test"
# Tests that skip part of their work outside CI (no local model, no `claude`, no PostgreSQL)
# say so in this file (recall_testkit::skipped); the summary below is where a reader sees it,
# since the test harness shows a passing test's output to nobody.
skip_log="$(mktemp "${TMPDIR:-/tmp}/recall-skipped.XXXXXX")"
export RECALL_SKIP_LOG="$skip_log"
status=0
cargo test --workspace --locked --no-fail-fast || status=$?
if [ -s "$skip_log" ]; then
  echo
  echo "== skipped: $(wc -l <"$skip_log") test(s) skipped part of their work (CI=true runs all of them):"
  sort "$skip_log" | uniq -c | sort -rn | sed 's/^ *\([0-9]*\) /  \1x /' | head -n 40
else
  echo "== nothing was skipped"
fi
rm -f "$skip_log"
# --- clients (begin) ---
# The Python and TypeScript clients against the recall binary cargo test built.
step "clients (Python and TypeScript)"
RECALL_BIN="$PWD/target/debug/recall" bash scripts/test-clients.sh || status=$?
# --- clients (end) ---
# --- deployment check (begin) ---
# docs/DEPLOY.md done for real: PostgreSQL with Debian's default authentication, recall.toml
# and keys, the systemd unit's command, nginx with TLS in front (scripts/deploy-check.sh).
# It deploys the binary the tests above built (no second build of recall-cli).
step "deployment check"
RECALL_BIN="$PWD/target/debug/recall" bash scripts/deploy-check.sh
# --- deployment check (end) ---
step "done (exit $status)"
exit "$status"
