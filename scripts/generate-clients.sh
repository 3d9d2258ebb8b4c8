#!/usr/bin/env bash
# Regenerates what the Python and TypeScript clients derive from the server, after a route or
# a view changed (the tests say when: crates/recall-server/tests/openapi_file.rs, and each
# client's generated-files test):
#   1. clients/openapi.json            the server's OpenAPI document (a Rust test writes it)
#   2. clients/python/.../models.py    pydantic models, by datamodel-code-generator
#      clients/python/.../_sync_client.py   the sync client, rewritten from the async one
#   3. clients/typescript/src/schema.d.ts   TypeScript types, by openapi-typescript
# The generators are the versions scripts/setup.sh pins (in .tools/); run it first.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "generate-clients: clients/openapi.json"
RECALL_UPDATE_OPENAPI=1 cargo test -q --workspace --locked --test openapi_file >/dev/null
echo "generate-clients: the Python client"
.tools/py-clients/bin/python clients/python/scripts/generate.py
echo "generate-clients: the TypeScript client"
node clients/typescript/scripts/generate.mjs
git status --short -- clients
