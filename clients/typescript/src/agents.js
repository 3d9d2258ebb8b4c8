// @ts-check
/**
 * A `Session` of the OpenAI Agents SDK for TypeScript (`@openai/agents`) kept in a recall
 * conversation, as `recall_client.integrations.openai_agents` is for Python.
 *
 * @example
 * import { Agent, run } from "@openai/agents";
 * import { Recall } from "recall-client";
 * import { RecallSession } from "recall-client/agents";
 * const session = new RecallSession({ client: new Recall() });  // a new conversation on first use
 * await run(agent, "My sister's dog is Biscuit.", { session });
 *
 * Every item is one recall message: the item itself, unchanged, in `metadata.agents_item`,
 * and its content in recall's model (text, `tool_use` for a function call,
 * `tool_result` for its result, `thinking` for reasoning), so that recall's context, search
 * and recall read it. `getItems` gives the items back as they were added; with `context`
 * (the policy fields of `POST …/context`) it returns recall's selection instead: the summary
 * (a user message, first), the window's items, and the recalled earlier messages (a user
 * message just before the newest user message), looked up for `session.query` when set, else
 * for the newest stored user message. Both are text derived from stored messages, so never
 * system items; they come from the context answer's `sections`, never from reading the
 * prompt, so a user message that holds their tags stays the user message it is. `popItem` redacts the newest message; `clearSession`
 * clears the conversation. `popItem` and `getItems(limit)` read back from the end of the
 * conversation, not the whole of it.
 *
 * @module
 */

import { Recall } from "./index.js";

/** Where a stored message keeps its item. */
export const ITEM_KEY = "agents_item";

/** @typedef {Record<string, any>} Item an `AgentInputItem` */

/**
 * The recall message that stores an item.
 * @param {Item} item
 * @returns {import("./index.js").MessageInput}
 */
export function itemToMessage(item) {
  /** @type {Array<Record<string, unknown>>} */
  let content = [];
  /** @type {"user" | "assistant" | "system"} */
  let role = "assistant";
  const type = item.type ?? "message";
  if (type === "message" && item.role) {
    role = item.role === "system" ? "system" : item.role === "user" ? "user" : "assistant";
    content = parts(item.content);
  } else if (type === "function_call") {
    content = [{ type: "tool_use", id: item.callId, name: item.name, input: args(item.arguments) }];
  } else if (type === "function_call_result") {
    role = "user";
    content = [{ type: "tool_result", tool_use_id: item.callId, content: outputText(item.output) }];
  } else if (type === "reasoning") {
    const text = (item.content ?? []).map((/** @type {any} */ c) => c?.text ?? "").join("\n");
    if (text.trim()) content = [{ type: "thinking", thinking: text }];
  }
  // recall refuses a message with nothing but thinking in it; any other item keeps its place
  // with a block of its own type, which the text formats leave out.
  if (!content.some((b) => b.type !== "thinking")) content.push({ type: "agents_item", item_type: type });
  return { role, content, metadata: { [ITEM_KEY]: item } };
}

/**
 * The items of a stored message: the item it was stored from, else (a message another
 * interface wrote) its text, tool calls and tool results.
 * @param {Record<string, any>} message
 * @returns {Item[]}
 */
export function messageToItems(message) {
  const meta = message.metadata ?? {};
  if (ITEM_KEY in meta) return [meta[ITEM_KEY]];
  const role = message.role ?? "user";
  if (typeof message.content === "string") return [textItem(role, message.content)];
  /** @type {Item[]} */
  const items = [];
  const blocks = /** @type {any[]} */ (message.content ?? []);
  const text = blocks.filter((b) => b.type === "text").map((b) => b.text).join("\n");
  if (text) items.push(textItem(role, text));
  for (const b of blocks) {
    if (b.type === "tool_use") items.push({ type: "function_call", callId: b.id, name: b.name, arguments: JSON.stringify(b.input ?? {}), status: "completed" });
    if (b.type === "tool_result") {
      const out = typeof b.content === "string" ? b.content : (b.content ?? []).map((/** @type {any} */ x) => x.text ?? "").join("\n");
      items.push({ type: "function_call_result", callId: b.tool_use_id, name: "", status: "completed", output: { type: "text", text: out } });
    }
  }
  return items;
}

/**
 * @param {string} role
 * @param {string} text
 * @returns {Item}
 */
function textItem(role, text) {
  if (role === "assistant") return { type: "message", role, status: "completed", content: [{ type: "output_text", text }] };
  return { type: "message", role, content: text };
}

/**
 * @typedef {object} RecallSessionOptions
 * @property {string} [sessionId] any name of yours for the session (`"user_123"`), or a
 *   recall conversation's id: its conversation is created on first use and found again by
 *   every later session of that name (default: a new conversation, made on first use)
 * @property {Recall} [client] default: `new Recall()` (RECALL_URL, RECALL_API_KEY)
 * @property {import("./index.js").PolicyOverrides} [context] policy fields: `getItems`
 *   returns recall's selection instead of every item
 * @property {string} [title] the title of a conversation this session creates
 */

/** An Agents SDK session stored in a recall conversation. */
export class RecallSession {
  /** The recall conversation's id, once resolved. @type {string} */
  #conversation = "";
  /** @param {RecallSessionOptions} [options] */
  constructor(options = {}) {
    /** @type {string} */
    this.sessionId = options.sessionId ?? "";
    this.client = options.client ?? new Recall();
    this.context = options.context;
    /** What recall looks for when `context` is set (default: the newest stored user message). @type {string | undefined} */
    this.query = undefined;
    this.title = options.title;
  }

  /**
   * The recall conversation's id: the one named `sessionId` (created on first use, found
   * again by every session of that name in any process), or a new one when the session was
   * given none.
   * @returns {Promise<string>}
   */
  async conversationId() {
    if (!this.#conversation) {
      const title = this.title ?? "openai-agents session";
      if (this.sessionId) {
        this.#conversation = (await this.client.createConversation({ key: this.sessionId, title })).id;
      } else {
        this.#conversation = (await this.client.createConversation({ title })).id;
        this.sessionId = this.#conversation;
      }
    }
    return this.#conversation;
  }

  /** The session's id: the name it was given, else its new conversation's id. @returns {Promise<string>} */
  async getSessionId() {
    await this.conversationId();
    return this.sessionId;
  }

  /**
   * Every stored item in order (the newest `limit` when given), or recall's selection.
   * @param {number} [limit]
   * @returns {Promise<any[]>}
   */
  async getItems(limit) {
    const id = await this.conversationId();
    /** @type {Item[]} */
    let items = [];
    if (this.context) items = await this.#selected(id);
    else if (limit !== undefined) items = (await this.#tail(id, limit)).flatMap(([, its]) => its);
    else for await (const m of this.client.iterMessages(id)) if (m.status !== "redacted") items.push(...messageToItems(m.message));
    if (limit !== undefined) items = limit > 0 ? items.slice(-limit) : [];
    return items;
  }

  /**
   * The newest messages (not redacted) holding at least `want` items, or all of them: read
   * back from the conversation's last seq in doubling spans, so a long conversation is not
   * read whole for its last few items.
   * @param {string} id
   * @param {number} want
   * @returns {Promise<Array<[import("./index.js").MessageView, Item[]]>>}
   */
  async #tail(id, want) {
    const last = (await this.client.getConversation(id)).last_seq;
    for (let span = Math.max(want, 1); ; span *= 2) {
      const after = Math.max(0, last - span);
      /** @type {Array<[import("./index.js").MessageView, Item[]]>} */
      const got = [];
      for await (const m of this.client.iterMessages(id, { after })) {
        if (m.status !== "redacted") got.push([m, messageToItems(/** @type {any} */ (m.message))]);
      }
      if (after === 0 || got.reduce((n, [, its]) => n + its.length, 0) >= want) return got;
    }
  }

  /**
   * Stores the items in order, all or none (one batch).
   * @param {any[]} items
   * @returns {Promise<void>}
   */
  async addItems(items) {
    if (!items.length) return;
    const id = await this.conversationId();
    const batch = items.map((it) => ({ ...itemToMessage(it), id: `agents-${crypto.randomUUID()}` }));
    await this.client.appendMessages(id, batch);
  }

  /** Removes the newest item: its message is redacted. @returns {Promise<any | undefined>} */
  async popItem() {
    const id = await this.conversationId();
    const newest = (await this.#tail(id, 1)).at(-1);
    if (!newest) return undefined;
    await this.client.redact(id, newest[0].seq);
    return newest[1].at(-1);
  }

  /** Removes every item. @returns {Promise<void>} */
  async clearSession() {
    if (this.sessionId) await this.client.clearConversation(await this.conversationId());
  }

  /**
   * @param {string} id
   * @returns {Promise<Item[]>}
   */
  async #selected(id) {
    /** @type {import("./index.js").ContextBody} */
    const body = { ...this.context, format: "openai" };
    if (this.query) body.query = this.query;
    const ctx = await this.client.context(id, body);
    const summary = ctx.sections?.summary?.text ?? "";
    const recalled = ctx.sections?.recalled?.text ?? "";
    /** @type {Item[]} */
    const items = [];
    if (summary) items.push({ type: "message", role: "user", content: summary });
    if (ctx.window) {
      for await (const m of this.client.iterMessages(id, { after: ctx.window.first_seq - 1 })) {
        if (m.seq > ctx.window.last_seq) break;
        if (m.status !== "redacted") items.push(...messageToItems(/** @type {any} */ (m.message)));
      }
    }
    if (recalled) {
      const first = summary ? 1 : 0;
      let at = items.length;
      items.forEach((it, i) => {
        if (i >= first && it.role === "user" && (it.type ?? "message") === "message") at = i;
      });
      items.splice(at, 0, { type: "message", role: "user", content: recalled });
    }
    return items;
  }
}

/**
 * @param {unknown} content
 * @returns {Array<Record<string, unknown>>}
 */
function parts(content) {
  if (typeof content === "string") return content.trim() ? [{ type: "text", text: content }] : [];
  /** @type {Array<Record<string, unknown>>} */
  const out = [];
  for (const p of /** @type {any[]} */ (content ?? [])) {
    if (p?.type === "input_text" || p?.type === "output_text" || p?.type === "text") {
      if (String(p.text ?? "").trim()) out.push({ type: "text", text: p.text });
    } else if (p?.type === "refusal") out.push({ type: "text", text: String(p.refusal ?? "") });
    else if (p && typeof p === "object") out.push({ ...p });
  }
  return out;
}

/** @param {unknown} raw */
function args(raw) {
  if (typeof raw !== "string") return raw ?? {};
  try {
    return raw.trim() ? JSON.parse(raw) : {};
  } catch {
    return raw;
  }
}

/** @param {any} output */
function outputText(output) {
  if (typeof output === "string") return output;
  if (output?.type === "text") return String(output.text ?? "");
  return JSON.stringify(output);
}
