// Streamed chat through the client with the local model as the server's backend: SSE as an
// async iterator, the WebSocket (the ws package: Node 20 has no global WebSocket), retry and
// edit on forks.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import WebSocket from "ws";

import * as rc from "../src/index.js";
import { startLocalModel, startServer } from "./helpers.mjs";

const OPTS = { max_output_tokens: 24 };
let model;
let s;
let r;
before(async (t) => {
  model = startLocalModel(t);
  if (!model) return;
  s = await startServer(t, { OPENAI_BASE_URL: model.baseUrl, OPENAI_API_KEY: "local" });
  r = new rc.Recall({ baseUrl: s.url, apiKey: s.apiKey, timeoutMs: 300000 });
});
after(async () => {
  if (s) await s.stop();
  if (model) model.stop();
});

async function turn(events) {
  const kinds = [];
  let text = "";
  let done;
  for await (const e of events) {
    kinds.push(e.type);
    text += e.delta;
    assert.notEqual(e.type, "error", JSON.stringify(e.data));
    if (e.type === "done") done = e.data;
  }
  assert.ok(["user_stored", "forked"].includes(kinds[0]) && kinds.at(-1) === "done", kinds.join(","));
  return { text, done };
}

test("chat streams as an async iterator and stores both messages", async (t) => {
  if (!r) return;
  const c = await r.createConversation();
  const { text, done } = await turn(r.chat(c.id, "Say hello in three words.", { id: "u1", ...OPTS }));
  assert.ok(text.trim());
  assert.deepEqual([done.user_message_id, done.message_id], [1, 2]);
  await assert.rejects(turn(r.chat(c.id, "Say hello in three words.", { id: "u1", ...OPTS })), rc.ConflictError);
  await assert.rejects(turn(r.chat(c.id, "x", { max_tokens: 10, recall_tokens: 20 })), (e) => e instanceof rc.InvalidRequestError && e.serverMessage.includes("recall_tokens"));
  assert.equal((await r.getConversation(c.id)).message_count, 2);
});

test("a WebSocket runs turns; retry and edit run on forks", async (t) => {
  if (!r) return;
  const c = await r.createConversation();
  const ws = await r.chatSocket(c.id, { WebSocket });
  for (const prompt of ["Name a colour.", "Name a fruit."]) await turn(ws.turn(prompt, OPTS));
  ws.close();
  assert.equal((await r.getConversation(c.id)).message_count, 4);
  await assert.rejects(r.chatSocket("no-such-conversation", { WebSocket }), rc.NotFoundError);

  const events = [];
  for await (const e of r.retry(c.id, 4, OPTS)) events.push(e);
  const forked = events.filter((e) => e.type === "forked").map((e) => e.data.conversation_id);
  assert.equal(forked.length, 1);
  assert.equal(events.at(-1).type, "done");
  const f = await r.getConversation(forked[0]);
  assert.equal(f.forked_from?.seq, 3);
  await turn(r.edit(c.id, 1, "Name an animal.", OPTS));
  assert.equal((await r.alternatives(c.id, 1)).data.length, 2);
});
