/**
 * The error for an answer that is not a success.
 * @param {number} status
 * @param {string} text the body
 * @returns {APIError}
 */
export function errorFor(status: number, text: string): APIError;
/**
 * Seconds `Retry-After` asks for: a number of seconds or an HTTP date; `undefined` when
 * absent or unreadable.
 * @param {string | null} value
 * @param {number} [now] milliseconds since the epoch
 * @returns {number | undefined}
 */
export function parseRetryAfter(value: string | null, now?: number): number | undefined;
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
export class RecallError extends Error {
}
/** The server could not be reached, or the connection failed before an answer. */
export class ConnectionError extends RecallError {
}
/** The server answered with an error: its status, its `type` and its `message`. */
export class APIError extends RecallError {
    /**
     * @param {number} status
     * @param {string} type
     * @param {string} message
     * @param {unknown} [body]
     */
    constructor(status: number, type: string, message: string, body?: unknown);
    /** The HTTP status. */
    status: number;
    /** The server's error type (`not_found`, `conflict`, `invalid_request`…). */
    type: string;
    /** The server's message, as it wrote it. */
    serverMessage: string;
    /** The decoded error body (`undefined` when it was not JSON). */
    body: unknown;
}
/** 400: the body was not JSON. */
export class InvalidJSONError extends APIError {
}
/** 401: no key, or a key the server does not know. */
export class AuthenticationError extends APIError {
}
/** 404: no such conversation, message, task or route. */
export class NotFoundError extends APIError {
}
/** 409: the request contradicts what is stored. */
export class ConflictError extends APIError {
}
/** 413: the body is over the server's limit. */
export class TooLargeError extends APIError {
}
/** 422: valid JSON, but not a valid request. */
export class InvalidRequestError extends APIError {
}
/** 429: too many requests (retried first). */
export class RateLimitedError extends APIError {
}
/** 500: the server failed. */
export class InternalServerError extends APIError {
}
/** 502: the model backend failed. */
export class UpstreamError extends APIError {
}
/** 503: not ready, shutting down, or no chat backend (retried first). */
export class UnavailableError extends APIError {
}
/** Each route of the OpenAPI document and the method of {@link Recall} that calls it. */
export const ROUTES: Readonly<{
    "POST /v1/conversations": "createConversation";
    "GET /v1/conversations": "listConversations";
    "GET /v1/conversations/{id}": "getConversation";
    "PATCH /v1/conversations/{id}": "updateConversation";
    "DELETE /v1/conversations/{id}": "deleteConversation";
    "POST /v1/conversations/{id}/clear": "clearConversation";
    "POST /v1/conversations/{id}/fork": "fork";
    "GET /v1/conversations/{id}/forks": "forks";
    "POST /v1/conversations/{id}/compact": "compact";
    "POST /v1/conversations/{id}/messages": "appendMessages";
    "GET /v1/conversations/{id}/messages": "listMessages";
    "DELETE /v1/conversations/{id}/messages/{seq}": "redact";
    "GET /v1/conversations/{id}/messages/{seq}/alternatives": "alternatives";
    "POST /v1/conversations/{id}/context": "context";
    "GET /v1/search": "search";
    "POST /v1/conversations/{id}/chat": "chat";
    "POST /v1/conversations/{id}/retry": "retry";
    "POST /v1/conversations/{id}/edit": "edit";
    "GET /v1/conversations/{id}/ws": "chatSocket";
    "POST /v1/tasks": "createTask";
    "GET /v1/tasks/{id}": "getTask";
    "GET /healthz": "healthz";
    "GET /readyz": "readyz";
    "GET /metrics": "metrics";
}>;
/** A client of a recall server. */
export class Recall {
    /** @param {RecallOptions} [options] */
    constructor(options?: RecallOptions);
    /** The server's base URL, without a trailing slash. */
    baseUrl: any;
    /** Never the key. */
    toString(): string;
    /**
     * `POST /v1/conversations`: a new conversation.
     * @param {CreateConversation} [body]
     * @returns {Promise<ConversationView>}
     */
    createConversation(body?: CreateConversation): Promise<ConversationView>;
    /**
     * `GET /v1/conversations`: one page, newest first; pass `next_after` as `after` for the next.
     * @param {{ after?: string, limit?: number }} [params]
     * @returns {Promise<ConversationPage>}
     */
    listConversations(params?: {
        after?: string;
        limit?: number;
    }): Promise<ConversationPage>;
    /**
     * Every conversation of the key's tenant, page after page.
     * @param {{ limit?: number }} [params]
     * @returns {AsyncGenerator<ConversationView, void, undefined>}
     */
    iterConversations(params?: {
        limit?: number;
    }): AsyncGenerator<ConversationView, void, undefined>;
    /**
     * `GET /v1/conversations/{id}`, with its newest summary.
     * @param {string} id
     * @returns {Promise<ConversationView>}
     */
    getConversation(id: string): Promise<ConversationView>;
    /**
     * `PATCH /v1/conversations/{id}`: title, system prompt, metadata, default policy (`null`
     * clears title, system prompt or policy).
     * @param {string} id
     * @param {UpdateConversation} body
     * @returns {Promise<ConversationView>}
     */
    updateConversation(id: string, body: UpdateConversation): Promise<ConversationView>;
    /**
     * `DELETE /v1/conversations/{id}` (`cascade: true`: with its forks).
     * @param {string} id
     * @param {{ cascade?: boolean }} [params]
     * @returns {Promise<void>}
     */
    deleteConversation(id: string, params?: {
        cascade?: boolean;
    }): Promise<void>;
    /**
     * `POST /v1/conversations/{id}/clear`: removes every message.
     * @param {string} id
     * @returns {Promise<Cleared>}
     */
    clearConversation(id: string): Promise<Cleared>;
    /**
     * `POST /v1/conversations/{id}/fork`: a conversation whose history is this one's up to `at`.
     * @param {string} id
     * @param {number} at
     * @param {{ title?: string }} [options]
     * @returns {Promise<ConversationView>}
     */
    fork(id: string, at: number, options?: {
        title?: string;
    }): Promise<ConversationView>;
    /**
     * `GET /v1/conversations/{id}/forks`.
     * @param {string} id
     * @returns {Promise<ForkList>}
     */
    forks(id: string): Promise<ForkList>;
    /**
     * `POST /v1/conversations/{id}/compact`: summarise what the window leaves behind.
     * @param {string} id
     * @param {CompactBody} [body]
     * @returns {Promise<CompactView>}
     */
    compact(id: string, body?: CompactBody): Promise<CompactView>;
    /**
     * `POST /v1/conversations/{id}/messages` with one message.
     * @param {string} id
     * @param {MessageInput} message
     * @returns {Promise<AppendResponse>}
     */
    appendMessage(id: string, message: MessageInput): Promise<AppendResponse>;
    /**
     * `POST /v1/conversations/{id}/messages` with a batch: all stored, in order, or none.
     * @param {string} id
     * @param {MessageInput[]} messages
     * @returns {Promise<AppendResponse>}
     */
    appendMessages(id: string, messages: MessageInput[]): Promise<AppendResponse>;
    /**
     * `GET /v1/conversations/{id}/messages`: one page in seq order after seq `after`.
     * @param {string} id
     * @param {{ after?: number, limit?: number }} [params]
     * @returns {Promise<MessagePage>}
     */
    listMessages(id: string, params?: {
        after?: number;
        limit?: number;
    }): Promise<MessagePage>;
    /**
     * Every message after seq `after`, page after page.
     * @param {string} id
     * @param {{ after?: number, limit?: number }} [params]
     * @returns {AsyncGenerator<MessageView, void, undefined>}
     */
    iterMessages(id: string, params?: {
        after?: number;
        limit?: number;
    }): AsyncGenerator<MessageView, void, undefined>;
    /**
     * `DELETE /v1/conversations/{id}/messages/{seq}`: the content is erased for good (its
     * place and seq stay, marked `redacted`).
     * @param {string} id
     * @param {number} seq
     * @param {{ compact?: boolean }} [params]
     * @returns {Promise<void>}
     */
    redact(id: string, seq: number, params?: {
        compact?: boolean;
    }): Promise<void>;
    /**
     * `GET /v1/conversations/{id}/messages/{seq}/alternatives`.
     * @param {string} id
     * @param {number} seq
     * @returns {Promise<AlternativeList>}
     */
    alternatives(id: string, seq: number): Promise<AlternativeList>;
    /**
     * `POST /v1/conversations/{id}/context`: the prompt the next request would carry.
     * @param {string} id
     * @param {ContextBody} [body]
     * @returns {Promise<ContextResponse>}
     */
    context(id: string, body?: ContextBody): Promise<ContextResponse>;
    /**
     * `GET /v1/search`: full-text search over the tenant's messages.
     * @param {string} q
     * @param {{ limit?: number }} [params]
     * @returns {Promise<SearchResults>}
     */
    search(q: string, params?: {
        limit?: number;
    }): Promise<SearchResults>;
    /**
     * `POST /v1/conversations/{id}/chat`: sends a user message and streams the turn.
     * `options`: `backend`, `model`, `max_output_tokens` (the reply limit), the policy fields
     * (`max_tokens` is the history budget) and `id` (the user message's client id).
     * @param {string} id
     * @param {string | Array<Record<string, unknown>>} content
     * @param {TurnOptions & { id?: string }} [options]
     * @returns {AsyncGenerator<ChatEvent, void, undefined>}
     */
    chat(id: string, content: string | Array<Record<string, unknown>>, options?: TurnOptions & {
        id?: string;
    }): AsyncGenerator<ChatEvent, void, undefined>;
    /**
     * `POST /v1/conversations/{id}/retry`: a new reply for the message at `seq`, on a fork.
     * @param {string} id
     * @param {number} seq
     * @param {TurnOptions} [options]
     * @returns {AsyncGenerator<ChatEvent, void, undefined>}
     */
    retry(id: string, seq: number, options?: TurnOptions): AsyncGenerator<ChatEvent, void, undefined>;
    /**
     * `POST /v1/conversations/{id}/edit`: replaces the user message at `seq` on a fork and
     * runs a turn there.
     * @param {string} id
     * @param {number} seq
     * @param {string | Array<Record<string, unknown>>} content
     * @param {TurnOptions & { id?: string }} [options]
     * @returns {AsyncGenerator<ChatEvent, void, undefined>}
     */
    edit(id: string, seq: number, content: string | Array<Record<string, unknown>>, options?: TurnOptions & {
        id?: string;
    }): AsyncGenerator<ChatEvent, void, undefined>;
    /**
     * `GET /v1/conversations/{id}/ws`: a WebSocket for several turns (the global `WebSocket`:
     * browsers, Node 22+; elsewhere pass a constructor such as the `ws` package's). Browsers
     * cannot send an `Authorization` header: the server must run `--no-auth` behind its
     * same-origin checks, or the socket is opened by a server-side client.
     * @param {string} id
     * @param {{ WebSocket?: any }} [options]
     * @returns {Promise<ChatSocket>}
     */
    chatSocket(id: string, options?: {
        WebSocket?: any;
    }): Promise<ChatSocket>;
    /**
     * `POST /v1/tasks`.
     * @param {CreateTaskArgs} body
     * @returns {Promise<TaskCreated>}
     */
    createTask(body: CreateTaskArgs): Promise<TaskCreated>;
    /**
     * `GET /v1/tasks/{id}`.
     * @param {string} id
     * @returns {Promise<TaskView>}
     */
    getTask(id: string): Promise<TaskView>;
    /** `GET /healthz`. @returns {Promise<string>} */
    healthz(): Promise<string>;
    /** `GET /readyz`: the database answers. @returns {Promise<string>} */
    readyz(): Promise<string>;
    /** `GET /metrics`: Prometheus text. @returns {Promise<string>} */
    metrics(): Promise<string>;
    #private;
}
/** A chat WebSocket: turns one after another on one connection. */
export class ChatSocket {
    /**
     * Waits for the socket to open; a refused upgrade rejects with the server's error.
     * @param {any} ws
     * @returns {Promise<ChatSocket>}
     */
    static open(ws: any): Promise<ChatSocket>;
    /** @param {any} ws */
    constructor(ws: any);
    /** @type {any} */
    ws: any;
    /** @type {string[]} */
    queue: string[];
    /** @type {((v: string | null) => void) | null} */
    waiting: ((v: string | null) => void) | null;
    /** @type {Error | null} */
    failed: Error | null;
    next: number;
    /** @param {string | null} frame */
    push(frame: string | null): void;
    /** @returns {Promise<string | null>} */
    recv(): Promise<string | null>;
    /**
     * Sends a user message; yields the turn's events up to `done` or `error`.
     * @param {string | Array<Record<string, unknown>>} content
     * @param {TurnOptions & { id?: string }} [options]
     * @returns {AsyncGenerator<ChatEvent, void, undefined>}
     */
    turn(content: string | Array<Record<string, unknown>>, options?: TurnOptions & {
        id?: string;
    }): AsyncGenerator<ChatEvent, void, undefined>;
    /** Closes the socket. */
    close(): void;
}
/** Server-sent events, decoded incrementally (`event:` and `data:` lines; a blank line ends one). */
export class SSEDecoder {
    buf: string;
    event: string;
    /** @type {string[]} */
    data: string[];
    /**
     * @param {string} text
     * @returns {ChatEvent[]}
     */
    feed(text: string): ChatEvent[];
    /** The stream ended: a last event without its blank line still counts. @returns {ChatEvent[]} */
    end(): ChatEvent[];
    /**
     * @param {string} line
     * @returns {ChatEvent | null}
     */
    line(line: string): ChatEvent | null;
}
export type Schemas = import("./schema.js").components["schemas"];
export type ConversationView = Schemas["ConversationView"];
export type ConversationPage = Schemas["ConversationPage"];
export type CreateConversation = Schemas["CreateConversation"];
export type UpdateConversation = Schemas["UpdateConversation"];
export type MessageView = Schemas["MessageView"];
export type MessagePage = Schemas["MessagePage"];
export type AppendResponse = Schemas["AppendResponse"];
export type Cleared = Schemas["Cleared"];
export type ContextBody = Schemas["ContextBody"];
export type ContextResponse = Schemas["ContextResponse"];
export type ForkList = Schemas["ForkList"];
export type AlternativeList = Schemas["AlternativeList"];
export type SearchResults = Schemas["SearchResults"];
export type CompactBody = Schemas["CompactBody"];
export type CompactView = Schemas["CompactView"];
export type CreateTaskArgs = Schemas["CreateTaskArgs"];
export type TaskCreated = Schemas["TaskCreated"];
export type TaskView = Schemas["TaskView"];
export type TurnOptions = Schemas["TurnOptions"];
export type PolicyOverrides = Schemas["PolicyOverrides"];
/**
 * A message to append: Anthropic- or OpenAI-shaped, with an optional client `id`,
 * `metadata` and `created_at` (RFC 3339).
 */
export type MessageInput = {
    role: "user" | "assistant" | "system" | "developer" | "tool";
    content?: unknown;
    id?: string;
    metadata?: Record<string, unknown>;
    created_at?: string;
    [key: string]: unknown;
};
/**
 * One event of a chat turn: `user_stored`, `forked`, `assistant_chunk` (its text in
 * `delta`), `tool_use`, `tool_result`, then `done` or `error`.
 */
export type ChatEvent = {
    type: string;
    data: Record<string, any>;
    delta: string;
};
export type RecallOptions = {
    /**
     * the server (default: `RECALL_URL`, else http://127.0.0.1:8080)
     */
    baseUrl?: string | undefined;
    /**
     * a key from `recall keys create` (default: `RECALL_API_KEY`)
     */
    apiKey?: string | undefined;
    /**
     * how often a 429 or 503 (or, for a GET, a failed connection)
     * is sent again, waiting as `Retry-After` says, else with exponential backoff (default 2)
     */
    maxRetries?: number | undefined;
    /**
     * for each request, its whole answer read; for a chat stream, until
     * its first byte (default 60000)
     */
    timeoutMs?: number | undefined;
    /**
     * the `fetch` to use (default: the global one)
     */
    fetch?: typeof fetch | undefined;
};
