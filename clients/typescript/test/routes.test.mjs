// The client covers every route of the OpenAPI document (the checkout's clients/openapi.json,
// which a Rust test holds equal to the server's, and the one the running server serves).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { Recall, ROUTES } from "../src/index.js";
import { ROOT, startServer } from "./helpers.mjs";

const spec = JSON.parse(readFileSync(join(ROOT, "clients", "openapi.json"), "utf8"));
const routes = (doc) => Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).filter((m) => ["get", "post", "put", "patch", "delete"].includes(m)).map((m) => `${m.toUpperCase()} ${p}`)).sort();

test("every route of the spec has a method, and every declared method exists", () => {
  const have = Object.keys(ROUTES).sort();
  assert.ok(have.length >= 24);
  assert.deepEqual(routes(spec).filter((r) => !have.includes(r)), [], "routes the client lacks");
  assert.deepEqual(have.filter((r) => !routes(spec).includes(r)), [], "routes the spec lacks");
  for (const name of Object.values(ROUTES)) assert.equal(typeof Recall.prototype[name], "function", name);
});

test("the running server serves the spec the client was built on", async (t) => {
  const s = await startServer(t);
  if (!s) return;
  try {
    assert.deepEqual(await (await fetch(s.url + "/openapi.json")).json(), spec);
  } finally {
    await s.stop();
  }
});
