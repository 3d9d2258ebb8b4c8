// The real parts the TypeScript client's tests run against: `recall serve` on a new SQLite
// file with two tenants' keys, the local model (`scripts/models.sh start`) for chat, and a
// scripted server speaking OpenAI's chat-completions wire format for tool calls. The binary
// is $RECALL_BIN, else the checkout's target/debug/recall. Outside CI a missing binary or model
// skips the test that needs it; under CI=true it fails.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { createServer as netServer } from "node:net";
import { tmpdir, homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const CI = process.env.CI === "true";

/** Skips the test (or fails it under CI=true) for a missing part. */
export function missing(t, why) {
  if (CI) throw new Error(`${why}; CI=true, so this test must run`);
  t.skip(why);
}

function freePort() {
  return new Promise((resolve) => {
    const s = netServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = /** @type {any} */ (s.address());
      s.close(() => resolve(port));
    });
  });
}

/** Starts `recall serve`; `null` when the binary is missing (after `missing`). */
export async function startServer(t, env = {}) {
  const bin = process.env.RECALL_BIN || join(ROOT, "target", "debug", "recall");
  if (!existsSync(bin)) {
    missing(t, `${bin} does not exist (cargo build -p recall-cli, or set RECALL_BIN)`);
    return null;
  }
  const dir = mkdtempSync(join(tmpdir(), "recall-ts-"));
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(RECALL_|OPENAI_|ANTHROPIC_)/.test(k)));
  Object.assign(base, { RECALL_DB: join(dir, "recall.db"), RUST_LOG: "warn", RECALL_EMBED: "off", XDG_CACHE_HOME: join(dir, "cache") }, env);
  const key = (tenant) => execFileSync(bin, ["keys", "create", "--tenant", tenant], { env: base, stdio: ["ignore", "pipe", "pipe"] }).toString().trim();
  const [apiKey, otherKey] = [key("a"), key("b")];
  const port = await freePort();
  const log = join(dir, "serve.log");
  const proc = spawn(bin, ["serve", "--addr", `127.0.0.1:${port}`], { env: base, stdio: ["ignore", openSync(log, "w"), openSync(log, "a")] });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30000;
  for (;;) {
    try {
      if ((await fetch(url + "/readyz")).ok) break;
    } catch {}
    if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`recall serve did not start: ${readFileSync(log, "utf8")}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const stop = async () => {
    proc.kill("SIGTERM");
    await new Promise((r) => (proc.exitCode !== null ? r(null) : proc.once("exit", r)));
    rmSync(dir, { recursive: true, force: true });
  };
  return { url, apiKey, otherKey, stop };
}

const MODELS = join(ROOT, "scripts", "models.sh");

/** The local model (`scripts/models.sh start`, a lease for this process); `null` when missing. */
export function startLocalModel(t) {
  const env = { ...process.env, RECALL_MODELS_HOLDER: String(process.pid) };
  let status = "";
  try {
    status = execFileSync("bash", [MODELS, "status"], { env, stdio: ["ignore", "pipe", "pipe"] }).toString();
  } catch (e) {
    status = String(/** @type {any} */ (e).stdout ?? "");
  }
  if (!status.includes("installed: yes")) {
    missing(t, "the local model is not installed (bash scripts/models.sh fetch)");
    return null;
  }
  const out = execFileSync("bash", [MODELS, "start"], { env, stdio: ["ignore", "pipe", "pipe"] }).toString();
  const baseUrl = /OPENAI_BASE_URL=(\S+)/.exec(out)?.[1];
  const stateFile = join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "recall", "run", "llama-server.env");
  const model = existsSync(stateFile) ? /MODEL=(\S+)/.exec(readFileSync(stateFile, "utf8"))?.[1] ?? "local" : "local";
  return { baseUrl, model, stop: () => execFileSync("bash", [MODELS, "stop"], { env, stdio: "ignore" }) };
}

/** A chat-completions server answering with scripted assistant messages; records each body. */
export async function scriptedChat(replies) {
  const requests = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const parsed = JSON.parse(body);
      requests.push(parsed);
      const msg = replies.shift() ?? { role: "assistant", content: "(no more replies)" };
      const out = JSON.stringify({
        id: `chatcmpl-${requests.length}`, object: "chat.completion", created: Math.floor(Date.now() / 1000), model: parsed.model,
        choices: [{ index: 0, message: msg, finish_reason: msg.tool_calls ? "tool_calls" : "stop" }],
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      });
      res.writeHead(200, { "content-type": "application/json" }).end(out);
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", () => r(null)));
  const { port } = /** @type {any} */ (server.address());
  return { baseUrl: `http://127.0.0.1:${port}/v1`, requests, close: () => new Promise((r) => server.close(r)) };
}
