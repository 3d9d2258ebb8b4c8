#!/usr/bin/env bash
# Checks that the demo shares the machine safely (issue 36: the local model server is shared
# by leases, and `models.sh fetch` takes a lock):
#   bash scripts/check-demo.sh twice         two scripts/demo.sh runs at once; both must pass
#   bash scripts/check-demo.sh beside-tests  demos, one after another, for as long as
#                                            scripts/test.sh runs; all must pass
# Each run's output goes to a log under a temporary folder, printed when a run fails. The model
# server must not be left running by either (unless something else held a lease on it).
set -euo pipefail
exec </dev/null
cd "$(dirname "$0")/.."

mode="${1:-}"
case "$mode" in
  twice | beside-tests) ;;
  *)
    echo "usage: scripts/check-demo.sh twice|beside-tests" >&2
    exit 2
    ;;
esac

logs=$(mktemp -d "${TMPDIR:-/tmp}/recall-check-demo.XXXXXX")
echo "== logs in $logs"
# A release build first, so that the runs share a built binary instead of racing to build it.
cargo build --release -p recall-cli

start=$SECONDS
pids=()
names=()
run() { # NAME COMMAND...
  local name=$1
  shift
  "$@" >"$logs/$name.log" 2>&1 &
  pids+=("$!")
  names+=("$name")
  echo "== started $name (pid $!): $*"
}

failed=0
if [ "$mode" = twice ]; then
  run demo-1 bash scripts/demo.sh
  sleep 2
  run demo-2 bash scripts/demo.sh
  for i in "${!pids[@]}"; do
    if wait "${pids[$i]}"; then
      echo "== ${names[$i]} passed after $((SECONDS - start)) s"
    else
      rc=$?
      failed=1
      echo "== ${names[$i]} FAILED (exit $rc) after $((SECONDS - start)) s; the end of its log:"
      tail -n 40 "$logs/${names[$i]}.log"
    fi
  done
else
  run tests bash scripts/test.sh
  tests=${pids[0]}
  # Demos one after another for as long as the tests run, so that some of them overlap the
  # real-model tests, which start and stop the same model server (where they fall in the
  # test run depends on what needs building). Let the tests get under way first.
  sleep "${RECALL_CHECK_DEMO_DELAY:-60}"
  n=0
  while kill -0 "$tests" 2>/dev/null || [ "$n" -eq 0 ]; do
    n=$((n + 1))
    if bash scripts/demo.sh >"$logs/demo-$n.log" 2>&1; then
      echo "== demo-$n passed after $((SECONDS - start)) s"
    else
      rc=$?
      failed=1
      echo "== demo-$n FAILED (exit $rc) after $((SECONDS - start)) s; the end of its log:"
      tail -n 40 "$logs/demo-$n.log"
      break
    fi
  done
  if wait "$tests"; then
    echo "== tests passed after $((SECONDS - start)) s ($n demos beside them)"
  else
    rc=$?
    failed=1
    echo "== tests FAILED (exit $rc) after $((SECONDS - start)) s; the end of their log:"
    tail -n 40 "$logs/tests.log"
  fi
fi

# Every demo must have held its three-turn chat to the end.
for f in "$logs"/demo*.log; do
  if ! grep -q '^== done: ' "$f"; then
    echo "== $(basename "$f" .log) did not reach its last step"
    failed=1
  fi
done

if bash scripts/models.sh status >/dev/null 2>&1; then
  echo "== note: the model server still runs:"
  bash scripts/models.sh status || true
fi
if [ "$failed" -ne 0 ]; then
  echo "== check-demo $mode: FAILED (logs in $logs)"
  exit 1
fi
echo "== check-demo $mode: passed in $((SECONDS - start)) s"
rm -rf "$logs"
