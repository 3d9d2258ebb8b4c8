/** @typedef {Record<string, any>} Item an `AgentInputItem` */
/**
 * The recall message that stores an item.
 * @param {Item} item
 * @returns {import("./index.js").MessageInput}
 */
export function itemToMessage(item: Item): import("./index.js").MessageInput;
/**
 * The items of a stored message: the item it was stored from, else (a message another
 * interface wrote) its text, tool calls and tool results.
 * @param {Record<string, any>} message
 * @returns {Item[]}
 */
export function messageToItems(message: Record<string, any>): Item[];
/** Where a stored message keeps its item. */
export const ITEM_KEY: "agents_item";
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
    /** @param {RecallSessionOptions} [options] */
    constructor(options?: RecallSessionOptions);
    /** @type {string} */
    sessionId: string;
    client: Recall;
    context: {
        assistant_max_chars?: null | import("./schema.js").components["schemas"]["Count"];
        low_water?: number | null;
        max_chars?: null | import("./schema.js").components["schemas"]["Count"];
        max_tokens?: null | import("./schema.js").components["schemas"]["Count"];
        max_turns?: null | import("./schema.js").components["schemas"]["Count"];
        recall_scope?: null | import("./schema.js").components["schemas"]["RecallScope"];
        recall_tokens?: null | import("./schema.js").components["schemas"]["Count"];
        summarize?: boolean | null;
        summary_tokens?: null | import("./schema.js").components["schemas"]["Count"];
        tokenizer?: null | import("./schema.js").components["schemas"]["Tokenizer"];
        tool_result_max_chars?: null | import("./schema.js").components["schemas"]["Count"];
        trim?: null | import("./schema.js").components["schemas"]["TrimMode"];
        user_max_chars?: null | import("./schema.js").components["schemas"]["Count"];
    } | undefined;
    /** What recall looks for when `context` is set (default: the newest stored user message). @type {string | undefined} */
    query: string | undefined;
    title: string | undefined;
    /**
     * The recall conversation's id: the one named `sessionId` (created on first use, found
     * again by every session of that name in any process), or a new one when the session was
     * given none.
     * @returns {Promise<string>}
     */
    conversationId(): Promise<string>;
    /** The session's id: the name it was given, else its new conversation's id. @returns {Promise<string>} */
    getSessionId(): Promise<string>;
    /**
     * Every stored item in order (the newest `limit` when given), or recall's selection.
     * @param {number} [limit]
     * @returns {Promise<any[]>}
     */
    getItems(limit?: number): Promise<any[]>;
    /**
     * Stores the items in order, all or none (one batch).
     * @param {any[]} items
     * @returns {Promise<void>}
     */
    addItems(items: any[]): Promise<void>;
    /** Removes the newest item: its message is redacted. @returns {Promise<any | undefined>} */
    popItem(): Promise<any | undefined>;
    /** Removes every item. @returns {Promise<void>} */
    clearSession(): Promise<void>;
    #private;
}
/**
 * an `AgentInputItem`
 */
export type Item = Record<string, any>;
export type RecallSessionOptions = {
    /**
     * any name of yours for the session (`"user_123"`), or a
     * recall conversation's id: its conversation is created on first use and found again by
     * every later session of that name (default: a new conversation, made on first use)
     */
    sessionId?: string | undefined;
    /**
     * default: `new Recall()` (RECALL_URL, RECALL_API_KEY)
     */
    client?: Recall | undefined;
    /**
     * policy fields: `getItems`
     * returns recall's selection instead of every item
     */
    context?: {
        assistant_max_chars?: null | import("./schema.js").components["schemas"]["Count"];
        low_water?: number | null;
        max_chars?: null | import("./schema.js").components["schemas"]["Count"];
        max_tokens?: null | import("./schema.js").components["schemas"]["Count"];
        max_turns?: null | import("./schema.js").components["schemas"]["Count"];
        recall_scope?: null | import("./schema.js").components["schemas"]["RecallScope"];
        recall_tokens?: null | import("./schema.js").components["schemas"]["Count"];
        summarize?: boolean | null;
        summary_tokens?: null | import("./schema.js").components["schemas"]["Count"];
        tokenizer?: null | import("./schema.js").components["schemas"]["Tokenizer"];
        tool_result_max_chars?: null | import("./schema.js").components["schemas"]["Count"];
        trim?: null | import("./schema.js").components["schemas"]["TrimMode"];
        user_max_chars?: null | import("./schema.js").components["schemas"]["Count"];
    } | undefined;
    /**
     * the title of a conversation this session creates
     */
    title?: string | undefined;
};
import { Recall } from "./index.js";
