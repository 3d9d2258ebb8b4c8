// The generated files are what their generators give now: src/schema.d.ts from
// clients/openapi.json, the declarations from the JSDoc'd sources (tsc also type-checks them).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { declarations, root, schemaSource } from "../scripts/generate.mjs";

test("schema.d.ts is generated from the spec as it is", async () => {
  assert.equal(await schemaSource(), readFileSync(join(root, "src", "schema.d.ts"), "utf8"), "run bash scripts/generate-clients.sh");
});

test("the declarations are tsc's from the sources as they are", () => {
  for (const [name, text] of Object.entries(declarations())) {
    assert.equal(text, readFileSync(join(root, "src", name), "utf8"), `src/${name}: run bash scripts/generate-clients.sh`);
  }
});
