// The client against a real `recall serve`: every route, and the errors a refused request
// throws (with nothing stored).
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";

import * as rc from "../src/index.js";
import { startServer } from "./helpers.mjs";

let s;
let r;
before(async (t) => {
  s = await startServer(t);
  if (s) r = new rc.Recall({ baseUrl: s.url, apiKey: s.apiKey });
});
after(async () => s && (await s.stop()));

test("conversations round trip with every field", async () => {
  const c = await r.createConversation({ title: "Support", system_prompt: "Be brief.", metadata: { team: "web" }, policy: { max_tokens: 4000 } });
  assert.deepEqual([c.title, c.system_prompt, c.metadata, c.message_count, c.policy?.max_tokens], ["Support", "Be brief.", { team: "web" }, 0, 4000]);
  assert.deepEqual(await r.getConversation(c.id), c);
  const u = await r.updateConversation(c.id, { title: "Renamed", policy: null });
  assert.equal(u.title, "Renamed");
  assert.equal(u.policy, null);
  assert.equal(u.system_prompt, "Be brief.");
  const ids = [];
  for await (const x of r.iterConversations({ limit: 1 })) ids.push(x.id);
  assert.ok(ids.includes(c.id));
  await r.deleteConversation(c.id);
  await assert.rejects(r.getConversation(c.id), (e) => e instanceof rc.NotFoundError && e.status === 404 && e.type === "not_found" && e.serverMessage.includes(c.id));
});

test("messages: batches, client ids and times", async () => {
  const c = await r.createConversation();
  const a = await r.appendMessages(c.id, [
    { role: "user", content: "We use FastAPI.", id: "u1", created_at: "2023-05-08T13:56:00Z" },
    { role: "assistant", content: "FastAPI it is.", id: "a1", created_at: "2023-05-08T13:56:04.250+00:00", metadata: { k: 1 } },
  ]);
  assert.deepEqual(a.messages.map((m) => m.seq), [1, 2]);
  const again = await r.appendMessage(c.id, { role: "user", content: "We use FastAPI.", id: "u1" });
  assert.deepEqual(again.messages[0], { seq: 1, duplicate: true });
  const page = await r.listMessages(c.id, { limit: 1 });
  assert.equal(page.next_after, 1);
  const all = [];
  for await (const m of r.iterMessages(c.id, { limit: 1 })) all.push(m);
  assert.deepEqual(all.map((m) => m.created_at), ["2023-05-08T13:56:00Z", "2023-05-08T13:56:04.250Z"]);
  assert.deepEqual(all[1].message.metadata, { k: 1 });
});

test("refused requests throw the documented errors and store nothing", async () => {
  const c = await r.createConversation();
  await r.appendMessage(c.id, { role: "user", content: "first", id: "x", created_at: "2024-01-02T00:00:00Z" });
  await assert.rejects(r.appendMessage(c.id, { role: "user", content: "other", id: "x" }), (e) => e instanceof rc.ConflictError && e.status === 409);
  await assert.rejects(
    r.appendMessages(c.id, [
      { role: "assistant", content: "ok", created_at: "2024-01-03T00:00:00Z" },
      { role: "user", content: "older", created_at: "2023-01-01T00:00:00Z" },
    ]),
    (e) => e instanceof rc.InvalidRequestError && e.status === 422 && e.serverMessage.includes("messages[1]"),
  );
  assert.equal((await r.getConversation(c.id)).message_count, 1);
  await assert.rejects(r.context(c.id, { max_tokenz: 5 }), (e) => e instanceof rc.InvalidRequestError && e.serverMessage.includes("max_tokenz"));
  const bad = new rc.Recall({ baseUrl: s.url, apiKey: "not-a-key" });
  await assert.rejects(bad.createConversation({ title: "never" }), (e) => e instanceof rc.AuthenticationError && e.status === 401);
  const other = new rc.Recall({ baseUrl: s.url, apiKey: s.otherKey });
  await assert.rejects(other.getConversation(c.id), rc.NotFoundError);
  for await (const x of r.iterConversations()) assert.notEqual(x.title, "never");
});

test("context takes the policy fields and reports what it did", async () => {
  const c = await r.createConversation({ system_prompt: "Be brief." });
  await r.appendMessages(c.id, [
    { role: "user", content: "My sister's dog is called Biscuit." },
    { role: "assistant", content: "Nice name." },
    { role: "user", content: "What about basil on a windowsill?" },
    { role: "assistant", content: "Water it little and often." },
    { role: "user", content: "What is the dog called?" },
  ]);
  const ctx = await r.context(c.id, { format: "anthropic", max_turns: 1, recall_tokens: 200, max_tokens: 1000, query: "dog called" });
  assert.equal(ctx.format, "anthropic");
  assert.equal(ctx.window?.last_seq, 5);
  assert.match(JSON.stringify(ctx.prompt), /Biscuit/);
  assert.equal(ctx.stats.recalled?.ranking, "lexical");
});

test("search, forks, alternatives, redaction", async () => {
  const c = await r.createConversation();
  const word = `zebra${Math.random().toString(36).slice(2, 10)}`;
  await r.appendMessages(c.id, [
    { role: "user", content: "The code word is marmalade." },
    { role: "assistant", content: "Noted." },
    { role: "user", content: `And the ${word} plan?` },
  ]);
  const hits = await r.search(word);
  assert.deepEqual(hits.data.map((h) => [h.conversation_id, h.seq]), [[c.id, 3]]);
  const f = await r.fork(c.id, 2, { title: "branch" });
  assert.deepEqual(f.forked_from, { conversation_id: c.id, seq: 2 });
  await r.appendMessage(f.id, { role: "user", content: "A different third message." });
  assert.deepEqual((await r.forks(c.id)).data.map((x) => x.id), [f.id]);
  const alts = await r.alternatives(c.id, 3);
  assert.deepEqual(alts.data.map((a) => a.conversation_id).sort(), [c.id, f.id].sort());
  await assert.rejects(r.clearConversation(c.id), rc.ConflictError);
  await r.redact(f.id, 3);
  const red = (await r.listMessages(f.id, { after: 2 })).data[0];
  assert.equal(red.status, "redacted");
  await r.deleteConversation(c.id, { cascade: true });
  await assert.rejects(r.getConversation(f.id), rc.NotFoundError);
});

test("dot segments are refused before a request (issue 49)", async () => {
  if (!r) return;
  const c = await r.createConversation();
  await r.appendMessage(c.id, { role: "user", content: "keep me" });
  const refused = (e) => e instanceof rc.InvalidRequestError && /path segment/.test(e.serverMessage);
  for (const bad of ["..", ".", ""]) {
    await assert.rejects(r.redact(c.id, bad), refused);
    await assert.rejects(r.getConversation(bad), refused);
    await assert.rejects(r.alternatives(c.id, bad), refused);
    const events = r.chat(bad, "hello");
    await assert.rejects(events.next(), refused);
  }
  assert.equal((await r.getConversation(c.id)).message_count, 1);
  assert.equal((await r.listMessages(c.id)).data[0].status, "complete");
  // Other dots are escaped, not refused: a 404, not another route.
  await assert.rejects(r.getConversation("../x"), rc.NotFoundError);
});

test("clear, compact without a summariser, tasks, operations", async () => {
  const c = await r.createConversation();
  await r.appendMessage(c.id, { role: "user", content: "hello" });
  assert.equal((await r.clearConversation(c.id)).removed, 1);
  const once = new rc.Recall({ baseUrl: s.url, apiKey: s.apiKey, maxRetries: 0 });
  await assert.rejects(once.compact(c.id, { max_turns: 4 }), (e) => e instanceof rc.UnavailableError && e.serverMessage.includes("OPENAI_BASE_URL"));
  const t = await r.createTask({ description: "Fix the login page.", priority: "P1", conversation_history: [{ role: "user", content: "It breaks on Safari." }] });
  const got = await r.getTask(t.task_id);
  assert.equal(got.priority, "P1");
  assert.deepEqual(got.conversation_history.map((h) => h.content), ["It breaks on Safari."]);
  await assert.rejects(r.getTask("no-such-task"), rc.NotFoundError);
  assert.ok(await r.healthz());
  assert.ok(await r.readyz());
  assert.match(await r.metrics(), /recall_http_requests_total/);
});

test("the key and the URL come from the environment; the key is never shown", async () => {
  process.env.RECALL_URL = s.url;
  process.env.RECALL_API_KEY = s.apiKey;
  try {
    const e = new rc.Recall();
    assert.equal((await e.createConversation({ title: "from env" })).title, "from env");
    assert.ok(!String(e).includes(s.apiKey));
    assert.ok(!JSON.stringify(e).includes(s.apiKey));
  } finally {
    delete process.env.RECALL_URL;
    delete process.env.RECALL_API_KEY;
  }
});

test("a body trickling in byte by byte does not outlast the timeout (issue 49)", async () => {
  const timers = [];
  const server = createServer((req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.write("{");
    const t = setInterval(() => res.write(" "), 200);
    timers.push(t);
    res.on("close", () => clearInterval(t));
  });
  await new Promise((res) => server.listen(0, "127.0.0.1", res));
  const url = `http://127.0.0.1:${server.address().port}`;
  try {
    const started = Date.now();
    await assert.rejects(
      new rc.Recall({ baseUrl: url, apiKey: "rk_x", timeoutMs: 1000, maxRetries: 0 }).getConversation("c1"),
      (e) => e instanceof rc.ConnectionError && /within 1000 ms/.test(e.message),
    );
    const took = Date.now() - started;
    assert.ok(took < 5000, `gave up after ${took} ms`);
  } finally {
    for (const t of timers) clearInterval(t);
    server.closeAllConnections();
    server.close();
  }
});

test("429 is retried as Retry-After says, then thrown", async () => {
  let hits = 0;
  const server = createServer((req, res) => {
    hits++;
    if (hits <= 2) res.writeHead(429, { "retry-after": "0", "content-type": "application/json" }).end('{"error":{"type":"rate_limited","message":"slow down"}}');
    else res.writeHead(200).end("ok");
  });
  await new Promise((res) => server.listen(0, "127.0.0.1", res));
  const url = `http://127.0.0.1:${server.address().port}`;
  try {
    assert.equal(await new rc.Recall({ baseUrl: url, maxRetries: 2 }).healthz(), "ok");
    assert.equal(hits, 3);
    hits = 0;
    await assert.rejects(new rc.Recall({ baseUrl: url, maxRetries: 1 }).healthz(), (e) => e instanceof rc.RateLimitedError && e.serverMessage === "slow down");
    assert.equal(hits, 2);
  } finally {
    server.close();
  }
  await assert.rejects(new rc.Recall({ baseUrl: "http://127.0.0.1:9", maxRetries: 0 }).healthz(), rc.ConnectionError);
});

test("parseRetryAfter reads seconds and HTTP dates", () => {
  assert.equal(rc.parseRetryAfter("3"), 3);
  assert.equal(rc.parseRetryAfter("Wed, 21 Oct 2015 07:28:10 GMT", Date.parse("Wed, 21 Oct 2015 07:28:00 GMT")), 10);
  assert.equal(rc.parseRetryAfter("soon"), undefined);
  assert.equal(rc.parseRetryAfter(null), undefined);
});

test("the SSE decoder takes events split anywhere", () => {
  const text = 'event: user_stored\ndata: {"seq":1}\n\n: keep-alive\r\n\r\nevent: assistant_chunk\r\ndata: {"delta":"Hi"}\r\n\r\nevent: done\ndata: {"message_id":2}';
  for (let cut = 0; cut <= text.length; cut++) {
    const d = new rc.SSEDecoder();
    const got = [...d.feed(text.slice(0, cut)), ...d.feed(text.slice(cut)), ...d.end()];
    assert.deepEqual(got.map((e) => [e.type, e.delta]), [["user_stored", ""], ["assistant_chunk", "Hi"], ["done", ""]], `cut at ${cut}`);
  }
});
