// The README's TypeScript example (examples/typescript/), run as shown (npm ci there, by
// scripts/setup.sh): against `recall serve` and the local model, a three-turn conversation
// whose last answer needs turn 1.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { ROOT, missing, startLocalModel, startServer } from "./helpers.mjs";

test("examples/typescript/agents_session.mjs runs and remembers", async (t) => {
  const dir = join(ROOT, "examples", "typescript");
  if (!existsSync(join(dir, "node_modules"))) return missing(t, "examples/typescript is not installed (bash scripts/setup.sh)");
  const model = startLocalModel(t);
  if (!model) return;
  const s = await startServer(t);
  try {
    const env = { ...process.env, RECALL_URL: s.url, RECALL_API_KEY: s.apiKey, OPENAI_BASE_URL: model.baseUrl, OPENAI_API_KEY: "local", OPENAI_MODEL: model.model };
    const out = execFileSync(process.execPath, [join(dir, "agents_session.mjs")], { env, cwd: dir, timeout: 600000, stdio: ["ignore", "pipe", "pipe"] }).toString();
    const answers = out.split("> What is my sister's dog called?");
    assert.equal(answers.length, 2, out);
    assert.match(answers[1].toLowerCase(), /biscuit/, out);
  } finally {
    await s.stop();
    model.stop();
  }
});
