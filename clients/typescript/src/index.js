// @ts-check
/**
 * A client of recall's HTTP API (`recall serve`): conversations, messages, context, search,
 * forks, summaries, tasks and streamed chat. ESM, `fetch` only (Node 18+ and browsers).
 *
 * The request and response types are generated from the server's OpenAPI document
 * (`src/schema.d.ts`); this file's JSDoc is checked against them by `tsc`, which also
 * writes `src/index.d.ts` (`npm run generate`).
 *
 * @example
 * import { Recall } from "recall-client";
 * const recall = new Recall();  // RECALL_URL and RECALL_API_KEY from the environment
 * const c = await recall.createConversation({ title: "Support" });
 * await recall.appendMessage(c.id, { role: "user", content: "We use FastAPI." });
 * const ctx = await recall.context(c.id, { max_tokens: 4000 });
 * for await (const e of recall.chat(c.id, "What framework do we use?")) process.stdout.write(e.delta);
 *
 * @module
 */

/** @typedef {import("./schema.js").components["schemas"]} Schemas */
/** @typedef {Schemas["ConversationView"]} ConversationView */
/** @typedef {Schemas["ConversationPage"]} ConversationPage */
/** @typedef {Schemas["CreateConversation"]} CreateConversation */
/** @typedef {Schemas["UpdateConversation"]} UpdateConversation */
/** @typedef {Schemas["MessageView"]} MessageView */
/** @typedef {Schemas["MessagePage"]} MessagePage */
/** @typedef {Schemas["AppendResponse"]} AppendResponse */
/** @typedef {Schemas["Cleared"]} Cleared */
/** @typedef {Schemas["ContextBody"]} ContextBody */
/** @typedef {Schemas["ContextResponse"]} ContextResponse */
/** @typedef {Schemas["ForkList"]} ForkList */
/** @typedef {Schemas["AlternativeList"]} AlternativeList */
/** @typedef {Schemas["SearchResults"]} SearchResults */
/** @typedef {Schemas["CompactBody"]} CompactBody */
/** @typedef {Schemas["CompactView"]} CompactView */
/** @typedef {Schemas["CreateTaskArgs"]} CreateTaskArgs */
/** @typedef {Schemas["TaskCreated"]} TaskCreated */
/** @typedef {Schemas["TaskView"]} TaskView */
/** @typedef {Schemas["TurnOptions"]} TurnOptions */
/** @typedef {Schemas["PolicyOverrides"]} PolicyOverrides */

/**
 * A message to append: Anthropic- or OpenAI-shaped, with an optional client `id`,
 * `metadata` and `created_at` (RFC 3339).
 * @typedef {{ role: "user" | "assistant" | "system" | "developer" | "tool", content?: unknown,
 *   id?: string, metadata?: Record<string, unknown>, created_at?: string, [key: string]: unknown }} MessageInput
 */

/**
 * One event of a chat turn: `user_stored`, `forked`, `assistant_chunk` (its text in
 * `delta`), `tool_use`, `tool_result`, then `done` or `error`.
 * @typedef {{ type: string, data: Record<string, any>, delta: string }} ChatEvent
 */

/**
 * @typedef {object} RecallOptions
 * @property {string} [baseUrl] the server (default: `RECALL_URL`, else http://127.0.0.1:8080)
 * @property {string} [apiKey] a key from `recall keys create` (default: `RECALL_API_KEY`)
 * @property {number} [maxRetries] how often a 429 or 503 (or, for a GET, a failed connection)
 *   is sent again, waiting as `Retry-After` says, else with exponential backoff (default 2)
 * @property {number} [timeoutMs] for each request, its whole answer read; for a chat stream, until
 *   its first byte (default 60000)
 * @property {typeof fetch} [fetch] the `fetch` to use (default: the global one)
 */

/** Base of every error this package throws. */
export class RecallError extends Error {}

/** The server could not be reached, or the connection failed before an answer. */
export class ConnectionError extends RecallError {}

/** The server answered with an error: its status, its `type` and its `message`. */
export class APIError extends RecallError {
  /**
   * @param {number} status
   * @param {string} type
   * @param {string} message
   * @param {unknown} [body]
   */
  constructor(status, type, message, body) {
    super(`${status} ${type}: ${message}`);
    this.name = new.target.name;
    /** The HTTP status. */
    this.status = status;
    /** The server's error type (`not_found`, `conflict`, `invalid_request`…). */
    this.type = type;
    /** The server's message, as it wrote it. */
    this.serverMessage = message;
    /** The decoded error body (`undefined` when it was not JSON). */
    this.body = body;
  }
}
/** 400: the body was not JSON. */
export class InvalidJSONError extends APIError {}
/** 401: no key, or a key the server does not know. */
export class AuthenticationError extends APIError {}
/** 404: no such conversation, message, task or route. */
export class NotFoundError extends APIError {}
/** 409: the request contradicts what is stored. */
export class ConflictError extends APIError {}
/** 413: the body is over the server's limit. */
export class TooLargeError extends APIError {}
/** 422: valid JSON, but not a valid request. */
export class InvalidRequestError extends APIError {}
/** 429: too many requests (retried first). */
export class RateLimitedError extends APIError {}
/** 500: the server failed. */
export class InternalServerError extends APIError {}
/** 502: the model backend failed. */
export class UpstreamError extends APIError {}
/** 503: not ready, shutting down, or no chat backend (retried first). */
export class UnavailableError extends APIError {}

/** @type {Record<number, typeof APIError>} */
const BY_STATUS = {
  400: InvalidJSONError,
  401: AuthenticationError,
  404: NotFoundError,
  409: ConflictError,
  413: TooLargeError,
  422: InvalidRequestError,
  429: RateLimitedError,
  500: InternalServerError,
  502: UpstreamError,
  503: UnavailableError,
};

/**
 * The error for an answer that is not a success.
 * @param {number} status
 * @param {string} text the body
 * @returns {APIError}
 */
export function errorFor(status, text) {
  /** @type {any} */
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const err = body && typeof body.error === "object" && body.error ? body.error : {};
  const Cls = BY_STATUS[status] ?? APIError;
  return new Cls(status, String(err.type ?? "http_error"), String(err.message ?? (text || `HTTP ${status}`)), body);
}

/**
 * Seconds `Retry-After` asks for: a number of seconds or an HTTP date; `undefined` when
 * absent or unreadable.
 * @param {string | null} value
 * @param {number} [now] milliseconds since the epoch
 * @returns {number | undefined}
 */
export function parseRetryAfter(value, now = Date.now()) {
  if (!value) return undefined;
  const v = value.trim();
  if (/^\d+(\.\d+)?$/.test(v)) return Number(v);
  const when = Date.parse(v);
  return Number.isNaN(when) ? undefined : Math.max(0, (when - now) / 1000);
}

/** @param {number} ms */
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * One path segment, escaped; "", "." and ".." are refused, as a URL resolves them to another
 * route (`redact(id, "..")` would otherwise be `DELETE /v1/conversations/{id}`).
 * @param {string | number} v
 */
const seg = (v) => {
  const s = String(v);
  if (s === "" || s === "." || s === "..") {
    throw new InvalidRequestError(422, "invalid_request", `${JSON.stringify(s)} is not a valid path segment (an id or a seq)`);
  }
  return encodeURIComponent(s);
};

/** @param {Record<string, unknown>} params */
function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null) q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : "";
}

/** @param {string} name */
function env(name) {
  const p = /** @type {any} */ (globalThis).process;
  return p && p.env ? p.env[name] : undefined;
}

/** Each route of the OpenAPI document and the method of {@link Recall} that calls it. */
export const ROUTES = Object.freeze({
  "POST /v1/conversations": "createConversation",
  "GET /v1/conversations": "listConversations",
  "GET /v1/conversations/{id}": "getConversation",
  "PATCH /v1/conversations/{id}": "updateConversation",
  "DELETE /v1/conversations/{id}": "deleteConversation",
  "POST /v1/conversations/{id}/clear": "clearConversation",
  "POST /v1/conversations/{id}/fork": "fork",
  "GET /v1/conversations/{id}/forks": "forks",
  "POST /v1/conversations/{id}/compact": "compact",
  "POST /v1/conversations/{id}/messages": "appendMessages",
  "GET /v1/conversations/{id}/messages": "listMessages",
  "DELETE /v1/conversations/{id}/messages/{seq}": "redact",
  "GET /v1/conversations/{id}/messages/{seq}/alternatives": "alternatives",
  "POST /v1/conversations/{id}/context": "context",
  "GET /v1/search": "search",
  "POST /v1/conversations/{id}/chat": "chat",
  "POST /v1/conversations/{id}/retry": "retry",
  "POST /v1/conversations/{id}/edit": "edit",
  "GET /v1/conversations/{id}/ws": "chatSocket",
  "POST /v1/tasks": "createTask",
  "GET /v1/tasks/{id}": "getTask",
  "GET /healthz": "healthz",
  "GET /readyz": "readyz",
  "GET /metrics": "metrics",
});

/** A client of a recall server. */
export class Recall {
  /** @param {RecallOptions} [options] */
  constructor(options = {}) {
    /** The server's base URL, without a trailing slash. */
    this.baseUrl = (options.baseUrl ?? env("RECALL_URL") ?? "http://127.0.0.1:8080").replace(/\/+$/, "");
    const key = options.apiKey ?? env("RECALL_API_KEY");
    /** @type {Record<string, string>} */
    this.#headers = { accept: "application/json" };
    if (key) this.#headers.authorization = `Bearer ${key}`;
    this.#maxRetries = options.maxRetries ?? 2;
    this.#timeoutMs = options.timeoutMs ?? 60000;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** @type {Record<string, string>} */ #headers;
  /** @type {number} */ #maxRetries;
  /** @type {number} */ #timeoutMs;
  /** @type {typeof fetch} */ #fetch;

  /** Never the key. */
  toString() {
    return `Recall(${this.baseUrl})`;
  }

  /**
   * Sends a request, retrying 429 and 503 (and, for a GET, a failed connection). With `read`,
   * the timeout covers the whole answer, its body read by `read` included (a body trickling
   * in byte by byte must not outlast it); without, a stream's, it ends with the headers.
   * @template [T=Response]
   * @param {string} method
   * @param {string} path
   * @param {unknown} [body]
   * @param {(res: Response) => Promise<T>} [read]
   * @returns {Promise<T>}
   */
  async #send(method, path, body, read) {
    /** @type {Record<string, string>} */
    const headers = { ...this.#headers };
    const init = /** @type {RequestInit} */ ({ method, headers });
    if (body !== undefined) {
      headers["content-type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    for (let attempt = 0; ; attempt++) {
      const ctrl = new AbortController();
      const timer = setTimeout(() => ctrl.abort(), this.#timeoutMs);
      /** @type {Response} */
      let res;
      try {
        res = await this.#fetch(this.baseUrl + path, { ...init, signal: ctrl.signal });
      } catch (e) {
        clearTimeout(timer);
        if (method === "GET" && attempt < this.#maxRetries) {
          await sleep(backoff(attempt));
          continue;
        }
        throw new ConnectionError(`${method} ${path}: ${e instanceof Error ? e.message : e}`, { cause: e });
      }
      if ((res.status === 429 || res.status === 503) && attempt < this.#maxRetries) {
        clearTimeout(timer);
        const told = parseRetryAfter(res.headers.get("retry-after"));
        await res.body?.cancel();
        await sleep(told !== undefined ? Math.min(told, 30) * 1000 : backoff(attempt));
        continue;
      }
      if (res.status < 400 && !read) {
        clearTimeout(timer);
        return /** @type {any} */ (res);
      }
      try {
        if (res.status >= 400) throw errorFor(res.status, await res.text());
        return await /** @type {(res: Response) => Promise<T>} */ (read)(res);
      } catch (e) {
        if (ctrl.signal.aborted && !(e instanceof APIError)) {
          throw new ConnectionError(`${method} ${path}: no whole answer within ${this.#timeoutMs} ms`, { cause: e });
        }
        throw e;
      } finally {
        clearTimeout(timer);
      }
    }
  }

  /**
   * @param {string} method
   * @param {string} path
   * @param {unknown} [body]
   * @returns {Promise<any>}
   */
  async #json(method, path, body) {
    const text = await this.#send(method, path, body, (res) => res.text());
    return text ? JSON.parse(text) : undefined;
  }

  /**
   * @param {() => string} path the route, built when the stream starts (a bad id then
   *   fails the stream, not the call that made it)
   * @param {unknown} body
   * @returns {AsyncGenerator<ChatEvent, void, undefined>}
   */
  async *#events(path, body) {
    const res = await this.#send("POST", path(), body);
    if (!res.body) return;
    const decoder = new SSEDecoder();
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        yield* decoder.feed(value);
      }
      yield* decoder.end();
    } finally {
      await reader.cancel().catch(() => {});
    }
  }

  // -- conversations ---------------------------------------------------------------------

  /**
   * `POST /v1/conversations`: a new conversation.
   * @param {CreateConversation} [body]
   * @returns {Promise<ConversationView>}
   */
  createConversation(body = {}) {
    return this.#json("POST", "/v1/conversations", body);
  }

  /**
   * `GET /v1/conversations`: one page, newest first; pass `next_after` as `after` for the next.
   * @param {{ after?: string, limit?: number }} [params]
   * @returns {Promise<ConversationPage>}
   */
  listConversations(params = {}) {
    return this.#json("GET", `/v1/conversations${query(params)}`);
  }

  /**
   * Every conversation of the key's tenant, page after page.
   * @param {{ limit?: number }} [params]
   * @returns {AsyncGenerator<ConversationView, void, undefined>}
   */
  async *iterConversations(params = {}) {
    /** @type {string | undefined} */
    let after;
    for (;;) {
      const page = await this.listConversations({ ...params, after });
      yield* page.data;
      if (!page.next_after) return;
      after = page.next_after;
    }
  }

  /**
   * `GET /v1/conversations/{id}`, with its newest summary.
   * @param {string} id
   * @returns {Promise<ConversationView>}
   */
  async getConversation(id) {
    return this.#json("GET", `/v1/conversations/${seg(id)}`);
  }

  /**
   * `PATCH /v1/conversations/{id}`: title, system prompt, metadata, default policy (`null`
   * clears title, system prompt or policy).
   * @param {string} id
   * @param {UpdateConversation} body
   * @returns {Promise<ConversationView>}
   */
  async updateConversation(id, body) {
    return this.#json("PATCH", `/v1/conversations/${seg(id)}`, body);
  }

  /**
   * `DELETE /v1/conversations/{id}` (`cascade: true`: with its forks).
   * @param {string} id
   * @param {{ cascade?: boolean }} [params]
   * @returns {Promise<void>}
   */
  async deleteConversation(id, params = {}) {
    await this.#json("DELETE", `/v1/conversations/${seg(id)}${query(params)}`);
  }

  /**
   * `POST /v1/conversations/{id}/clear`: removes every message.
   * @param {string} id
   * @returns {Promise<Cleared>}
   */
  async clearConversation(id) {
    return this.#json("POST", `/v1/conversations/${seg(id)}/clear`);
  }

  /**
   * `POST /v1/conversations/{id}/fork`: a conversation whose history is this one's up to `at`.
   * @param {string} id
   * @param {number} at
   * @param {{ title?: string }} [options]
   * @returns {Promise<ConversationView>}
   */
  async fork(id, at, options = {}) {
    return this.#json("POST", `/v1/conversations/${seg(id)}/fork`, { at, ...options });
  }

  /**
   * `GET /v1/conversations/{id}/forks`.
   * @param {string} id
   * @returns {Promise<ForkList>}
   */
  async forks(id) {
    return this.#json("GET", `/v1/conversations/${seg(id)}/forks`);
  }

  /**
   * `POST /v1/conversations/{id}/compact`: summarise what the window leaves behind.
   * @param {string} id
   * @param {CompactBody} [body]
   * @returns {Promise<CompactView>}
   */
  async compact(id, body = {}) {
    return this.#json("POST", `/v1/conversations/${seg(id)}/compact`, body);
  }

  // -- messages --------------------------------------------------------------------------

  /**
   * `POST /v1/conversations/{id}/messages` with one message.
   * @param {string} id
   * @param {MessageInput} message
   * @returns {Promise<AppendResponse>}
   */
  async appendMessage(id, message) {
    return this.#json("POST", `/v1/conversations/${seg(id)}/messages`, message);
  }

  /**
   * `POST /v1/conversations/{id}/messages` with a batch: all stored, in order, or none.
   * @param {string} id
   * @param {MessageInput[]} messages
   * @returns {Promise<AppendResponse>}
   */
  async appendMessages(id, messages) {
    return this.#json("POST", `/v1/conversations/${seg(id)}/messages`, { messages });
  }

  /**
   * `GET /v1/conversations/{id}/messages`: one page in seq order after seq `after`.
   * @param {string} id
   * @param {{ after?: number, limit?: number }} [params]
   * @returns {Promise<MessagePage>}
   */
  async listMessages(id, params = {}) {
    return this.#json("GET", `/v1/conversations/${seg(id)}/messages${query(params)}`);
  }

  /**
   * Every message after seq `after`, page after page.
   * @param {string} id
   * @param {{ after?: number, limit?: number }} [params]
   * @returns {AsyncGenerator<MessageView, void, undefined>}
   */
  async *iterMessages(id, params = {}) {
    /** @type {number | null | undefined} */
    let after = params.after ?? 0;
    while (after !== null && after !== undefined) {
      const page = await this.listMessages(id, { limit: params.limit, after });
      yield* page.data;
      after = page.next_after;
    }
  }

  /**
   * `DELETE /v1/conversations/{id}/messages/{seq}`: the content is erased for good (its
   * place and seq stay, marked `redacted`).
   * @param {string} id
   * @param {number} seq
   * @param {{ compact?: boolean }} [params]
   * @returns {Promise<void>}
   */
  async redact(id, seq, params = {}) {
    await this.#json("DELETE", `/v1/conversations/${seg(id)}/messages/${seg(seq)}${query(params)}`);
  }

  /**
   * `GET /v1/conversations/{id}/messages/{seq}/alternatives`.
   * @param {string} id
   * @param {number} seq
   * @returns {Promise<AlternativeList>}
   */
  async alternatives(id, seq) {
    return this.#json("GET", `/v1/conversations/${seg(id)}/messages/${seg(seq)}/alternatives`);
  }

  // -- context and search ----------------------------------------------------------------

  /**
   * `POST /v1/conversations/{id}/context`: the prompt the next request would carry.
   * @param {string} id
   * @param {ContextBody} [body]
   * @returns {Promise<ContextResponse>}
   */
  async context(id, body = {}) {
    return this.#json("POST", `/v1/conversations/${seg(id)}/context`, body);
  }

  /**
   * `GET /v1/search`: full-text search over the tenant's messages.
   * @param {string} q
   * @param {{ limit?: number }} [params]
   * @returns {Promise<SearchResults>}
   */
  search(q, params = {}) {
    return this.#json("GET", `/v1/search${query({ q, ...params })}`);
  }

  // -- chat ------------------------------------------------------------------------------

  /**
   * `POST /v1/conversations/{id}/chat`: sends a user message and streams the turn.
   * `options`: `backend`, `model`, `max_output_tokens` (the reply limit), the policy fields
   * (`max_tokens` is the history budget) and `id` (the user message's client id).
   * @param {string} id
   * @param {string | Array<Record<string, unknown>>} content
   * @param {TurnOptions & { id?: string }} [options]
   * @returns {AsyncGenerator<ChatEvent, void, undefined>}
   */
  chat(id, content, options = {}) {
    return this.#events(() => `/v1/conversations/${seg(id)}/chat`, { ...options, content });
  }

  /**
   * `POST /v1/conversations/{id}/retry`: a new reply for the message at `seq`, on a fork.
   * @param {string} id
   * @param {number} seq
   * @param {TurnOptions} [options]
   * @returns {AsyncGenerator<ChatEvent, void, undefined>}
   */
  retry(id, seq, options = {}) {
    return this.#events(() => `/v1/conversations/${seg(id)}/retry`, { ...options, seq });
  }

  /**
   * `POST /v1/conversations/{id}/edit`: replaces the user message at `seq` on a fork and
   * runs a turn there.
   * @param {string} id
   * @param {number} seq
   * @param {string | Array<Record<string, unknown>>} content
   * @param {TurnOptions & { id?: string }} [options]
   * @returns {AsyncGenerator<ChatEvent, void, undefined>}
   */
  edit(id, seq, content, options = {}) {
    return this.#events(() => `/v1/conversations/${seg(id)}/edit`, { ...options, seq, content });
  }

  /**
   * `GET /v1/conversations/{id}/ws`: a WebSocket for several turns (the global `WebSocket`:
   * browsers, Node 22+; elsewhere pass a constructor such as the `ws` package's). Browsers
   * cannot send an `Authorization` header: the server must run `--no-auth` behind its
   * same-origin checks, or the socket is opened by a server-side client.
   * @param {string} id
   * @param {{ WebSocket?: any }} [options]
   * @returns {Promise<ChatSocket>}
   */
  async chatSocket(id, options = {}) {
    const WS = options.WebSocket ?? /** @type {any} */ (globalThis).WebSocket;
    if (!WS) throw new RecallError("no WebSocket constructor: pass { WebSocket } (e.g. from the ws package)");
    const url = this.baseUrl.replace(/^http/, "ws") + `/v1/conversations/${seg(id)}/ws`;
    const auth = this.#headers.authorization;
    const ws = new WS(url, auth ? { headers: { authorization: auth } } : undefined);
    return await ChatSocket.open(ws);
  }

  // -- tasks -----------------------------------------------------------------------------

  /**
   * `POST /v1/tasks`.
   * @param {CreateTaskArgs} body
   * @returns {Promise<TaskCreated>}
   */
  createTask(body) {
    return this.#json("POST", "/v1/tasks", body);
  }

  /**
   * `GET /v1/tasks/{id}`.
   * @param {string} id
   * @returns {Promise<TaskView>}
   */
  async getTask(id) {
    return this.#json("GET", `/v1/tasks/${seg(id)}`);
  }

  // -- operations ------------------------------------------------------------------------

  /** `GET /healthz`. @returns {Promise<string>} */
  async healthz() {
    return this.#send("GET", "/healthz", undefined, (res) => res.text());
  }

  /** `GET /readyz`: the database answers. @returns {Promise<string>} */
  async readyz() {
    return this.#send("GET", "/readyz", undefined, (res) => res.text());
  }

  /** `GET /metrics`: Prometheus text. @returns {Promise<string>} */
  async metrics() {
    return this.#send("GET", "/metrics", undefined, (res) => res.text());
  }
}

/** @param {number} attempt */
function backoff(attempt) {
  const wait = Math.min(500 * 2 ** attempt, 30000);
  return wait / 2 + Math.random() * (wait / 2);
}

/** A chat WebSocket: turns one after another on one connection. */
export class ChatSocket {
  /** @param {any} ws */
  constructor(ws) {
    /** @type {any} */
    this.ws = ws;
    /** @type {string[]} */
    this.queue = [];
    /** @type {((v: string | null) => void) | null} */
    this.waiting = null;
    /** @type {Error | null} */
    this.failed = null;
    this.next = 0;
  }

  /**
   * Waits for the socket to open; a refused upgrade rejects with the server's error.
   * @param {any} ws
   * @returns {Promise<ChatSocket>}
   */
  static open(ws) {
    const s = new ChatSocket(ws);
    return new Promise((resolve, reject) => {
      ws.addEventListener?.("open", () => resolve(s));
      ws.addEventListener?.("message", (/** @type {any} */ e) => s.push(String(e.data)));
      ws.addEventListener?.("close", () => s.push(null));
      ws.addEventListener?.("error", (/** @type {any} */ e) => {
        const status = e?.error?.status ?? e?.status;
        reject(status ? errorFor(status, e?.error?.body ?? "") : new ConnectionError(String(e?.message ?? "WebSocket failed")));
      });
      // The ws package tells a refused upgrade's status this way.
      ws.on?.("unexpected-response", (/** @type {any} */ _req, /** @type {any} */ res) => {
        let text = "";
        res.on("data", (/** @type {any} */ c) => (text += c));
        res.on("end", () => reject(errorFor(res.statusCode, text)));
      });
    });
  }

  /** @param {string | null} frame */
  push(frame) {
    if (this.waiting) {
      const w = this.waiting;
      this.waiting = null;
      w(frame);
    } else if (frame !== null) this.queue.push(frame);
    else this.failed = new ConnectionError("the WebSocket closed");
  }

  /** @returns {Promise<string | null>} */
  recv() {
    if (this.queue.length) return Promise.resolve(/** @type {string} */ (this.queue.shift()));
    if (this.failed) return Promise.resolve(null);
    return new Promise((r) => (this.waiting = r));
  }

  /**
   * Sends a user message; yields the turn's events up to `done` or `error`.
   * @param {string | Array<Record<string, unknown>>} content
   * @param {TurnOptions & { id?: string }} [options]
   * @returns {AsyncGenerator<ChatEvent, void, undefined>}
   */
  async *turn(content, options = {}) {
    const request_id = `r${++this.next}`;
    this.ws.send(JSON.stringify({ ...options, content, type: "user_message", request_id }));
    for (;;) {
      const raw = await this.recv();
      if (raw === null) throw new ConnectionError("the WebSocket closed mid-turn");
      const { type, request_id: _r, ...data } = JSON.parse(raw);
      yield event(type, data);
      if (type === "done" || type === "error") return;
    }
  }

  /** Closes the socket. */
  close() {
    this.ws.close();
  }
}

/**
 * @param {string} type
 * @param {Record<string, any>} data
 * @returns {ChatEvent}
 */
function event(type, data) {
  return { type, data, delta: type === "assistant_chunk" ? String(data.delta ?? "") : "" };
}

/** Server-sent events, decoded incrementally (`event:` and `data:` lines; a blank line ends one). */
export class SSEDecoder {
  constructor() {
    this.buf = "";
    this.event = "";
    /** @type {string[]} */
    this.data = [];
  }

  /**
   * @param {string} text
   * @returns {ChatEvent[]}
   */
  feed(text) {
    this.buf += text;
    /** @type {ChatEvent[]} */
    const out = [];
    for (;;) {
      const m = /\r\n|\n|\r(?=[^\n])/.exec(this.buf);
      if (!m) return out;
      const line = this.buf.slice(0, m.index);
      this.buf = this.buf.slice(m.index + m[0].length);
      const e = this.line(line);
      if (e) out.push(e);
    }
  }

  /** The stream ended: a last event without its blank line still counts. @returns {ChatEvent[]} */
  end() {
    return this.buf || this.data.length ? this.feed("\n\n") : [];
  }

  /**
   * @param {string} line
   * @returns {ChatEvent | null}
   */
  line(line) {
    if (line === "") {
      if (!this.data.length) {
        this.event = "";
        return null;
      }
      const raw = this.data.join("\n");
      const kind = this.event || "message";
      this.event = "";
      this.data = [];
      /** @type {any} */
      let data;
      try {
        data = JSON.parse(raw);
      } catch {
        data = { raw };
      }
      return event(kind, data && typeof data === "object" && !Array.isArray(data) ? data : { value: data });
    }
    if (line.startsWith(":")) return null;
    const i = line.indexOf(":");
    const name = i < 0 ? line : line.slice(0, i);
    let value = i < 0 ? "" : line.slice(i + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (name === "event") this.event = value;
    else if (name === "data") this.data.push(value);
    return null;
  }
}
