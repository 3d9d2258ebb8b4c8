#!/usr/bin/env bash
# The Python and TypeScript clients' tests (clients/), as scripts/test.sh runs them after
# `cargo test`: each against real `recall serve` processes of target/debug/recall (or
# $RECALL_BIN) and, for chat and the frameworks, the local model (scripts/models.sh). The
# toolchains are the ones scripts/setup.sh pins: .tools/py-clients and
# clients/typescript/node_modules.
#
# The Python client is tested as a user installs it (`pip install ./clients/python`, into the
# pinned venv); the TypeScript tests import its sources.
set -euo pipefail
exec </dev/null
cd "$(dirname "$0")/.."
export RECALL_BIN="${RECALL_BIN:-$PWD/target/debug/recall}"
if [ ! -x "$RECALL_BIN" ]; then
  echo "test-clients: $RECALL_BIN is missing: run cargo build --workspace (or set RECALL_BIN)" >&2
  exit 1
fi
py=$PWD/.tools/py-clients/bin/python
if [ ! -x "$py" ] || [ ! -d clients/typescript/node_modules ]; then
  echo "test-clients: the clients' toolchains are missing: run bash scripts/setup.sh" >&2
  exit 1
fi
status=0
echo "test-clients: Python (pip install ./clients/python, then pytest)"
"$py" -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation \
  --force-reinstall ./clients/python
(cd clients/python && "$py" -m pytest -q -p no:cacheprovider -rs) || status=$?
echo "test-clients: TypeScript (tsc, then node --test)"
(cd clients/typescript && node node_modules/typescript/bin/tsc -p tsconfig.json && npm test --silent) \
  || status=$?
exit "$status"
