// The types of recall's HTTP API, generated from clients/openapi.json by
// clients/typescript/scripts/generate.mjs: do not edit.

export interface paths {
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The process is up. */
        get: operations["healthz"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Prometheus text exposition. */
        get: operations["metrics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The database answers (within 5 seconds). */
        get: operations["readyz"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/conversations": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List conversations, oldest first, a page at a time. */
        get: operations["list_conversations"];
        put?: never;
        /** Create a conversation, or with `key` open the one of that name (creating it on first use). */
        post: operations["create_conversation"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/conversations/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One conversation. */
        get: operations["get_conversation"];
        put?: never;
        post?: never;
        /**
         * Delete a conversation and its messages.
         *     A conversation with forks is refused (409) unless `cascade=true`, which deletes its forks
         *     (and theirs) too.
         */
        delete: operations["delete_conversation"];
        options?: never;
        head?: never;
        /** Change a conversation's title, system prompt, metadata or default policy. */
        patch: operations["update"];
        trace?: never;
    };
    "/v1/conversations/{id}/chat": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Send a message and stream the reply as server-sent events: `user_stored` {"seq"},
         *     `assistant_chunk` {"delta"}, `tool_use`, `tool_result`, then `done` {"message_id",
         *     "usage"} or `error` {"message"}. A client that disconnects mid-stream leaves the reply
         *     stored as `partial`.
         */
        post: operations["chat_sse"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/conversations/{id}/clear": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Remove a conversation's messages, keeping the conversation (seq keeps counting). A
         *     conversation with forks is refused (409): its forks read its history. A cleared fork stops
         *     reading its parent.
         */
        post: operations["clear_conversation"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/conversations/{id}/compact": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Summarise what the window has left behind: the summary in force plus the messages between
         *     its end and the window start become the next version (docs/FORMAT-DECISIONS.md,
         *     "Summaries"). 409 while another summariser works on the conversation; 502 when the
         *     summariser fails or answers with an empty or over-budget summary (the summary in force
         *     stays).
         */
        post: operations["compact"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/conversations/{id}/context": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * The context the conversation would send next: the prompt and stats `recall context`
         *     prints. A prompt over `max_context_bytes` is a 413 naming the limit.
         */
        post: operations["context"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/conversations/{id}/edit": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Edit the user message at `seq`: the conversation is forked just before it, the new
         *     message is stored there and the reply streams as `chat` streams one, after a `forked`
         *     {"conversation_id"} event. The old message and what followed stay on the original.
         */
        post: operations["edit_sse"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/conversations/{id}/fork": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Fork a conversation at a message: a new conversation whose history is this one's up to
         *     `at`, then its own. Nothing is copied (O(1)); the original is unchanged. The fork has the
         *     conversation's system prompt, metadata and policy.
         */
        post: operations["fork"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/conversations/{id}/forks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The direct forks of a conversation, by fork point. */
        get: operations["forks"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/conversations/{id}/messages": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Messages after a seq, oldest first. A page holds at most `limit` messages and at most
         *     `max_page_bytes` of their JSON (always at least one message); `next_after` continues it.
         *     The page is read from the store a few messages at a time and written out as it is read.
         */
        get: operations["list_messages"];
        put?: never;
        /**
         * Append one message, or several in `{"messages": [...]}` (one transaction: all or none).
         *     A message with a client `id` seen before is not stored again: its first `seq` comes back
         *     with `duplicate: true`; the same id with a different message (role, content or metadata) is
         *     a 409 naming the message, the id and its seq, and nothing of the request is stored. A
         *     message may carry `created_at` (RFC 3339), kept as given; without one it gets the server's
         *     clock. Times do not go backwards within a conversation: a `created_at` earlier than the
         *     message before it, or more than 5 minutes in the future, is a 422 naming the message and
         *     both times, and nothing of the request is stored.
         */
        post: operations["append_messages"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/conversations/{id}/messages/{seq}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Redact a message: its content and metadata are removed (it reads as `[redacted]`, status
         *     `redacted`), from search and contexts too, for every conversation whose history holds it
         *     (a fork's shared messages are its parent's); its seq stays.
         */
        delete: operations["redact"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/conversations/{id}/messages/{seq}/alternatives": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The alternatives of a message: the message at the same seq on every path sharing the
         *     history before it (the original, retries, edits, forks made just before it).
         */
        get: operations["alternatives"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/conversations/{id}/retry": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Regenerate the reply at `seq`: the conversation is forked just before it and the reply is
         *     streamed on the fork as `chat` streams one, after a `forked` {"conversation_id"} event.
         *     The old reply stays on the original conversation, an alternative of the new one
         *     (`GET …/messages/{seq}/alternatives`). When `seq` is a user message that ends the
         *     conversation (its reply failed before any text was stored), the reply is streamed on the
         *     conversation itself, with no fork and no `forked` event.
         */
        post: operations["retry_sse"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/conversations/{id}/ws": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A WebSocket for chat: send `{"type":"user_message","content","request_id"}` (optionally
         *     `backend`, `model`, `id`); every event of the turn comes back as a JSON frame with its
         *     `type` and the `request_id`. Closing the socket mid-turn leaves the reply `partial`.
         */
        get: operations["chat_ws"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/search": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Full-text search over the tenant's messages (as MCP's `search_history`). A fork's shared
         *     messages are found once, under the conversation that holds them.
         */
        get: operations["search"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tasks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Hand work to a sub-agent: validate a task and the conversation that led to it, store it,
         *     and return its brief. Invalid history entries are skipped with a warning
         *     (`validation_warnings`); content is capped.
         */
        post: operations["create_task"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tasks/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A stored task and its brief. */
        get: operations["get_task"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        AlternativeList: {
            data: components["schemas"]["AlternativeView"][];
        };
        /** @description One alternative of a message: the message at the same seq on one path of the history. */
        AlternativeView: {
            /** @description The conversation to read or continue to follow this path. */
            conversation_id: string;
            /** @description Whether this is the asked conversation's own path. */
            current: boolean;
            message: components["schemas"]["MessageView"];
        };
        AppendBody: {
            content: string | ({
                text: string;
                /** @enum {string} */
                type: "text";
            } | {
                id: string;
                /** @description The tool's arguments, an object for every provider; any other JSON value (an OpenAI `arguments` string that is not JSON) is kept as it came */
                input?: unknown;
                name: string;
                /** @enum {string} */
                type: "tool_use";
            } | {
                content?: string | Record<string, never>[] | null;
                tool_use_id: string;
                /** @enum {string} */
                type: "tool_result";
            } | {
                type: string;
            })[];
            /**
             * Format: date-time
             * @description When the message was written, RFC 3339 (any offset; kept to the millisecond); absent or null: the server's clock. Not earlier than the message before it in the conversation, nor more than 5 minutes ahead of the server's clock (a 422 naming the message, and nothing of the request is stored)
             */
            created_at?: string | null;
            /** @description Client id: a retry with the same id and message is not stored again */
            id?: string | number | null;
            metadata?: Record<string, never> | null;
            /** @enum {string} */
            role: "user" | "assistant" | "system" | "developer";
        } | {
            messages: {
                content: string | ({
                    text: string;
                    /** @enum {string} */
                    type: "text";
                } | {
                    id: string;
                    /** @description The tool's arguments, an object for every provider; any other JSON value (an OpenAI `arguments` string that is not JSON) is kept as it came */
                    input?: unknown;
                    name: string;
                    /** @enum {string} */
                    type: "tool_use";
                } | {
                    content?: string | Record<string, never>[] | null;
                    tool_use_id: string;
                    /** @enum {string} */
                    type: "tool_result";
                } | {
                    type: string;
                })[];
                /**
                 * Format: date-time
                 * @description When the message was written, RFC 3339 (any offset; kept to the millisecond); absent or null: the server's clock. Not earlier than the message before it in the conversation, nor more than 5 minutes ahead of the server's clock (a 422 naming the message, and nothing of the request is stored)
                 */
                created_at?: string | null;
                /** @description Client id: a retry with the same id and message is not stored again */
                id?: string | number | null;
                metadata?: Record<string, never> | null;
                /** @enum {string} */
                role: "user" | "assistant" | "system" | "developer";
            }[];
        };
        /** @description The result of an append. */
        AppendResponse: {
            messages: components["schemas"]["AppendedView"][];
            warnings: string[];
        };
        /** @description One appended message. */
        AppendedView: {
            /** @description The client id was seen before: nothing was written; `seq` is the first append's. */
            duplicate: boolean;
            /** Format: int64 */
            seq: number;
        };
        /** @description The limits and caps of one selection. `None` means no limit. */
        AppliedPolicy: {
            assistant_max_chars?: number | null;
            /** Format: double */
            low_water: number;
            /** Format: int64 */
            max_chars?: number | null;
            /** Format: int64 */
            max_tokens?: number | null;
            max_turns?: number | null;
            /** @description Where recall looks. */
            recall_scope: components["schemas"]["RecallScope"];
            /**
             * Format: int64
             * @description Tokens reserved for recalled earlier messages (0: recall off). After
             *     `ContextRequest::resolve`, `max_tokens` is the window's share: the budget less this.
             */
            recall_tokens: number;
            /** @description Strip surrounding whitespace from text before capping (the `task` format does). */
            strip_before_cap: boolean;
            /** @description Carry the conversation's committed summary of what the window left behind. */
            summarize: boolean;
            /**
             * Format: int64
             * @description Tokens reserved for the summary when `summarize` is on. After
             *     `ContextRequest::resolve`, `max_tokens` is the window's share: the budget less this (and
             *     less `recall_tokens`).
             */
            summary_tokens: number;
            tokenizer: components["schemas"]["Tokenizer"];
            tool_result_max_chars?: number | null;
            trim: components["schemas"]["TrimMode"];
            user_max_chars?: number | null;
        };
        /** @description `POST …/chat`. */
        ChatBody: components["schemas"]["TurnOptions"] & {
            content: string | Record<string, never>[];
            /** @description Client id of the user message (a repeat is a 409: the turn ran already). */
            id?: string | null;
        };
        /** @description `POST …/clear`. */
        Cleared: {
            /** Format: int64 */
            removed: number;
        };
        /**
         * @description `POST …/compact`: which backend summarises (default: the server's summariser, else its
         *     first chat backend), its model, and the window to summarise up to (the format and limits
         *     over the conversation's policy; `summary_tokens` bounds the summary).
         */
        CompactBody: components["schemas"]["PolicyOverrides"] & {
            /** @description A backend name this server offers. */
            backend?: string | null;
            format?: null | components["schemas"]["Format"];
            /** @description The summariser's model (default: the backend's). */
            model?: string | null;
        };
        /** @description What a compaction did. */
        CompactView: {
            /**
             * Format: int32
             * @description Summariser calls made (one version committed per call).
             */
            calls: number;
            conversation_id: string;
            /**
             * Format: int64
             * @description The summariser's input and output tokens, as it reported them (0 when it reports none).
             */
            input_tokens: number;
            /** Format: int64 */
            output_tokens: number;
            /**
             * @description `compacted` (new versions committed) or `up_to_date`.
             * @example compacted
             */
            status: string;
            summary?: null | components["schemas"]["SummaryView"];
        };
        /**
         * @description `POST …/context`: the format (default: the conversation's, else `transcript`), the
         *     current message, escaping, and limits over the format's and the conversation's defaults.
         *     Counts accept integral floats (`8000.0`): JSON does not tell them apart.
         */
        ContextBody: components["schemas"]["PolicyOverrides"] & {
            /** @description The message the context is built for; not blank. */
            current?: string | null;
            /** @description Turn-label escaping in text formats (default true). */
            escape?: boolean | null;
            format?: null | components["schemas"]["Format"];
            /**
             * @description What recall looks for (with `recall_tokens`); default: the newest user message's
             *     text. Not stored.
             */
            query?: string | null;
        };
        /** @description A built context: what `recall context` prints, as JSON. */
        ContextResponse: {
            format: string;
            /**
             * @description The limits that were applied: the format's defaults, then the conversation's policy,
             *     then the request's (so `max_tokens` is the budget the stats count against).
             */
            policy: components["schemas"]["AppliedPolicy"];
            prompt: string | Record<string, never>;
            /**
             * @description The summary and recalled sections, as placed in `prompt`, as data (a client maps these
             *     instead of reading them out of the prompt).
             */
            sections: components["schemas"]["Sections"];
            /** @description Selection stats (docs/FORMATS.md §4.5). */
            stats: components["schemas"]["Stats"];
            window?: null | components["schemas"]["WindowView"];
        };
        /** @description A page of conversations. */
        ConversationPage: {
            data: components["schemas"]["ConversationView"][];
            /** @description Pass as `after` for the next page; null on the last page. */
            next_after?: string | null;
        };
        /** @description A stored conversation. */
        ConversationView: {
            /** @description RFC 3339, UTC. */
            created_at: string;
            forked_from?: null | components["schemas"]["ForkPointView"];
            id: string;
            /**
             * Format: int64
             * @description The highest seq ever assigned (clearing does not reset it).
             */
            last_seq: number;
            /** Format: int64 */
            message_count: number;
            metadata: Record<string, never>;
            policy?: null | components["schemas"]["Policy"];
            summary?: null | components["schemas"]["SummaryView"];
            /** @description Sent with every context. */
            system_prompt?: string | null;
            title?: string | null;
            /**
             * Format: int64
             * @description Tokens (o200k) of the history.
             */
            tokens: number;
            /** @description RFC 3339, UTC: the last change (a message appended, a setting changed). */
            updated_at: string;
        };
        /** Format: int64 */
        Count: number;
        /** @description `POST /v1/conversations`. */
        CreateConversation: {
            /**
             * @description A name of the client's own for the conversation (1–256 bytes, unique per tenant):
             *     the first request with a key creates the conversation (201), later ones answer the
             *     same conversation (200) and ignore the other fields. A key that is one of the
             *     tenant's conversation ids opens that conversation.
             */
            key?: string | null;
            metadata?: Record<string, never> | null;
            policy?: null | components["schemas"]["Policy"];
            /** @description Sent with every context. */
            system_prompt?: string | null;
            title?: string | null;
        };
        /** @description Arguments of `create_task`. */
        CreateTaskArgs: {
            /** @description Background the sub-agent needs. */
            background_context?: string | null;
            /** @description What the sub-agent must not do. */
            constraints?: string[] | null;
            /**
             * @description The conversation that led to this task, oldest first. Invalid entries are skipped
             *     with a warning in `validation_warnings`.
             */
            conversation_history?: components["schemas"]["HistoryEntry"][] | null;
            /** @description What the sub-agent must do. */
            description: string;
            /** @description What the sub-agent must hand back. */
            expected_deliverables?: string[] | null;
            /** @description P0 (most urgent) to P4. Default P2. */
            priority?: components["schemas"]["Priority"];
            /** @description Files the sub-agent should look at. */
            relevant_files?: string[] | null;
            /** @description How to tell the task is done. */
            success_criteria?: string[] | null;
        };
        /**
         * @description `POST …/edit`: replace the user message at `seq` on a fork made just before it, and
         *     run a chat turn there.
         */
        EditBody: components["schemas"]["TurnOptions"] & {
            content: string | Record<string, never>[];
            /** @description Client id of the new user message. */
            id?: string | null;
            /**
             * Format: int64
             * @description The seq of the user message to replace.
             */
            seq: number;
        };
        /** @description The error shape of every 4xx and 5xx answer. */
        ErrorBody: {
            error: components["schemas"]["ErrorDetail"];
        };
        ErrorDetail: {
            message: string;
            /**
             * @description `invalid_json`, `invalid_request`, `authentication_error`, `not_found`, `conflict`,
             *     `too_large`, `rate_limited`, `internal_error`, `unavailable`.
             */
            type: string;
        };
        /** @description `POST …/fork`. */
        ForkBody: {
            /**
             * Format: int64
             * @description The last message the fork keeps (0 keeps none): its history is the conversation's
             *     messages up to `at`, then its own.
             */
            at: number;
            /** @description The fork's title (default: the conversation's). */
            title?: string | null;
        };
        /** @description A list of conversations. */
        ForkList: {
            data: components["schemas"]["ConversationView"][];
        };
        /** @description Where a fork was made. */
        ForkPointView: {
            conversation_id: string;
            /**
             * Format: int64
             * @description The last message of that conversation the fork's history holds.
             */
            seq: number;
        };
        /** @enum {string} */
        Format: "transcript" | "bracket" | "xml" | "task" | "anthropic" | "openai";
        /**
         * @description One message of the conversation that led to a task (schema only: entries are validated
         *     one by one, and invalid ones are skipped with a warning instead of failing the call).
         */
        HistoryEntry: {
            /** @description The message text. User messages are cut at 150 characters, assistant messages at 8192. */
            content: string;
            role: components["schemas"]["HistoryRole"];
        };
        /**
         * @description Who said a history message.
         * @enum {string}
         */
        HistoryRole: "user" | "assistant" | "system";
        /**
         * @description A page of messages: at most `limit` messages and at most `max_page_bytes` of their JSON
         *     (always at least one message).
         */
        MessagePage: {
            data: components["schemas"]["MessageView"][];
            /**
             * Format: int64
             * @description Pass as `after` for the next page; null on the last page.
             */
            next_after?: number | null;
        };
        /** @description A stored message. */
        MessageView: {
            /** @description RFC 3339, UTC: as given when it was appended, else when it was stored. */
            created_at: string;
            /** @description The message (Anthropic shape, with its client `id` and `metadata`). */
            message: Record<string, never>;
            /** Format: int64 */
            seq: number;
            /** @description `complete`, `partial` for an interrupted streamed reply, or `redacted`. */
            status: string;
            /**
             * Format: int64
             * @description Tokens (o200k).
             */
            tokens: number;
        };
        /**
         * @description A conversation's default policy, as stored with it: an optional format (used when a
         *     request names none) and policy values over that format's defaults.
         *
         *     ```
         *     use recall_core::policy::{ConversationPolicy, Format};
         *     let p: ConversationPolicy = serde_json::from_str(r#"{"format":"xml","max_turns":10}"#).unwrap();
         *     assert_eq!(p.format, Some(Format::Xml));
         *     assert_eq!(serde_json::to_string(&p).unwrap(), r#"{"format":"xml","max_turns":10}"#);
         *     ```
         */
        Policy: components["schemas"]["PolicyOverrides"] & {
            format?: null | components["schemas"]["Format"];
        };
        /**
         * @description Values given by the caller (flags, API fields, a conversation's stored policy); each one
         *     set replaces the format default. This one type is the policy of every interface: clap
         *     flags (feature `clap`), request bodies (serde), the MCP tools' JSON Schema (feature
         *     `schemars`) and the OpenAPI document (feature `utoipa`) all derive from it, and the doc
         *     comments below are their help texts. [`PolicyOverrides::apply`] is the one place its values
         *     are checked.
         *
         *     Adding a field: add it here (with its doc comment and clap attribute), to [`Policy`] and to
         *     `apply`; every interface picks it up.
         */
        PolicyOverrides: {
            assistant_max_chars?: null | components["schemas"]["Count"];
            /**
             * Format: double
             * @description For stable trimming: the fraction of the budget to trim down to, in (0, 1] (default
             *     0.6).
             */
            low_water?: number | null;
            max_chars?: null | components["schemas"]["Count"];
            max_tokens?: null | components["schemas"]["Count"];
            max_turns?: null | components["schemas"]["Count"];
            recall_scope?: null | components["schemas"]["RecallScope"];
            recall_tokens?: null | components["schemas"]["Count"];
            /**
             * @description Summaries: carry the conversation's committed summary of the messages older than the
             *     window (written by `recall compact`, or after chat turns), placed before the history;
             *     summary_tokens of max_tokens are reserved for it. `--summarize` alone means true.
             */
            summarize?: boolean | null;
            summary_tokens?: null | components["schemas"]["Count"];
            tokenizer?: null | components["schemas"]["Tokenizer"];
            tool_result_max_chars?: null | components["schemas"]["Count"];
            trim?: null | components["schemas"]["TrimMode"];
            user_max_chars?: null | components["schemas"]["Count"];
        };
        /**
         * @description A task priority: `P0` (most urgent) to `P4`.
         * @enum {string}
         */
        Priority: "P0" | "P1" | "P2" | "P3" | "P4";
        /**
         * @description Which ranking chose the recalled messages.
         * @enum {string}
         */
        Ranking: "lexical" | "hybrid";
        /** @enum {string} */
        RecallScope: "conversation" | "tenant";
        /** @description What a context reports about recall (`stats.recalled`). */
        RecallStats: {
            /**
             * Format: int64
             * @description `recall_tokens`.
             */
            budget: number;
            /**
             * @description False when the index had not caught up with every message older than the window
             *     (vectors still being computed): what was indexed was used.
             */
            complete: boolean;
            /** @description The messages included, oldest first. */
            messages: components["schemas"]["RecalledRef"][];
            /** @description Which ranking ran: `lexical`, or `hybrid` with an embedder. */
            ranking: components["schemas"]["Ranking"];
            /** @description The query terms the lexical ranking used. */
            terms: string[];
            /**
             * Format: int64
             * @description Tokens of the recalled section (0 when nothing was recalled).
             */
            tokens: number;
        };
        /** @description One recalled message in the stats. */
        RecalledRef: {
            /** @description Set in `tenant` scope. */
            conversation_id?: string | null;
            /** @description True for a hit, false for a message brought with one. */
            hit: boolean;
            /** Format: double */
            score: number;
            /** Format: int64 */
            seq: number;
        };
        /** @description The recalled section of a context. */
        RecalledSectionView: {
            /** @description The messages it holds, oldest first (as `stats.recalled.messages` lists them). */
            messages: components["schemas"]["RecalledRef"][];
            /** @description The section as placed (`<recalled_messages>` … `</recalled_messages>`). */
            text: string;
        };
        /**
         * @description `POST …/retry`: regenerate the reply at `seq` on a fork made just before it, or answer the
         *     unanswered user message at `seq` in place.
         */
        RetryBody: components["schemas"]["TurnOptions"] & {
            /**
             * Format: int64
             * @description The seq of the assistant reply to regenerate, or of the user message that ends the
             *     conversation unanswered (its reply failed before any text).
             */
            seq: number;
        };
        /** @description One message found by full-text search. */
        SearchHitView: {
            conversation_id: string;
            role: string;
            /** Format: int64 */
            seq: number;
            /** @description The matching passage; matched words are wrapped in `**`. */
            snippet: string;
        };
        SearchResults: {
            /** @description Best matches first. */
            data: components["schemas"]["SearchHitView"][];
        };
        /**
         * @description The sections recall wrote into a context (`sections` of a context answer), exactly as
         *     the prompt holds them; each `null` when the context has none.
         */
        Sections: {
            recalled?: null | components["schemas"]["RecalledSectionView"];
            summary?: null | components["schemas"]["SummarySectionView"];
        };
        /** @description What a selection reports (docs/FORMATS.md §4.5). Field order is the JSON order. */
        Stats: {
            /** Format: int64 */
            chars: number;
            dropped: number;
            included: number;
            notice?: string | null;
            recalled?: null | components["schemas"]["RecallStats"];
            skipped: number;
            summary?: null | components["schemas"]["SummaryStats"];
            /** Format: int64 */
            tokens: number;
            trimmed: boolean;
            turns: number;
            warnings: string[];
        };
        /** @description The summary section of a context. */
        SummarySectionView: {
            /**
             * Format: int64
             * @description The first and last seq of the messages it stands for.
             */
            from_seq: number;
            /** @description The section as placed (`<conversation_summary>` … `</conversation_summary>`). */
            text: string;
            /** Format: int64 */
            to_seq: number;
        };
        /**
         * @description What a context reports about its summary (`stats.summary`): the range it stands for and
         *     its tokens.
         */
        SummaryStats: {
            /** Format: int64 */
            from_seq: number;
            /** Format: int64 */
            to_seq: number;
            /** Format: int64 */
            tokens: number;
        };
        /** @description A stored summary version. */
        SummaryView: {
            /** @description The backend and model that wrote it. */
            backend: string;
            /** @description RFC 3339, UTC. */
            created_at: string;
            /**
             * Format: int64
             * @description The messages it stands for: `from_seq` through `to_seq`.
             */
            from_seq: number;
            model: string;
            text: string;
            /** Format: int64 */
            to_seq: number;
            /**
             * Format: int64
             * @description Tokens (o200k) of its section as a context carries it.
             */
            tokens: number;
            /**
             * Format: int64
             * @description 1, 2, …: the order the versions were committed in.
             */
            version: number;
        };
        /** @description Result of `create_task`. */
        TaskCreated: {
            /** @description Valid history messages stored with the task. */
            conversation_messages_count: number;
            /** @description True when the task has context beyond its description. */
            has_enhanced_context: boolean;
            priority: components["schemas"]["Priority"];
            /** @description The sub-agent's brief, with the conversation history section. */
            prompt: string;
            task_id: string;
            /** @description Invalid or empty values that were skipped, one line each. */
            validation_warnings: string[];
        };
        /** @description One stored history message of a task. */
        TaskMessageView: {
            content: string;
            role: components["schemas"]["HistoryRole"];
            /** @description True when the content was cut (it then ends with a `... [truncated…]` marker). */
            truncated: boolean;
        };
        /** @description Result of `get_task`: the stored task and its brief. */
        TaskView: {
            background_context?: string | null;
            constraints: string[];
            conversation_history: components["schemas"]["TaskMessageView"][];
            conversation_messages_count: number;
            /** @description RFC 3339, UTC. */
            created_at: string;
            description: string;
            expected_deliverables: string[];
            has_enhanced_context: boolean;
            priority: components["schemas"]["Priority"];
            /** @description The sub-agent's brief. */
            prompt: string;
            relevant_files: string[];
            success_criteria: string[];
            task_id: string;
            validation_warnings: string[];
        };
        /** @enum {string} */
        Tokenizer: "o200k" | "cl100k" | "chars4";
        /** @enum {string} */
        TrimMode: "sliding" | "stable";
        /**
         * @description What every chat body takes besides its message (`POST …/chat`, `…/retry`, `…/edit` and a
         *     WebSocket `user_message`): the backend, the model, the reply limit and the context policy.
         *     A field added here reaches all four.
         */
        TurnOptions: components["schemas"]["PolicyOverrides"] & {
            /** @description A backend name this server offers (default: its first). */
            backend?: string | null;
            /**
             * Format: int64
             * @description The most tokens the reply may have (default 4096).
             */
            max_output_tokens?: number | null;
            model?: string | null;
        };
        /**
         * @description `PATCH /v1/conversations/{id}`: the fields to change; `null` removes a title, system
         *     prompt or policy; a field left out is kept.
         */
        UpdateConversation: {
            /** @description Replaces the metadata object. */
            metadata?: Record<string, never> | null;
            policy?: null | components["schemas"]["Policy"];
            system_prompt?: string | null;
            title?: string | null;
        };
        /** @description The stored messages a context's window holds: every seq from `first_seq` to `last_seq`. */
        WindowView: {
            /** Format: int64 */
            first_seq: number;
            /** Format: int64 */
            last_seq: number;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    healthz: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The process answers */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    metrics: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Prometheus text format */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": unknown;
                };
            };
        };
    };
    readyz: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Ready */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The database does not answer */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_conversations: {
        parameters: {
            query?: {
                /** @description The `next_after` of the previous page. */
                after?: string;
                /** @description Page size, 1 to 1000 (default 50). */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConversationPage"];
                };
            };
            /** @description The body is not JSON: syntax, encoding, nesting. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No API key, or one that is unknown or revoked. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `--no-auth` only: a Host that is not a loopback name, or an Origin other than the
             *     server's own.
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The request body did not arrive within the body timeout. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description The body is over the size limit, an append carries too many messages, or a context's
             *     prompt is over `max_context_bytes`.
             */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A POST whose body is not declared `Content-Type: application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Well-formed JSON that is not an acceptable request; a bad query string. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The tenant's rate limit is spent (`Retry-After` says for how long). */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    create_conversation: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": null | components["schemas"]["CreateConversation"];
            };
        };
        responses: {
            /** @description The conversation named `key` already existed */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConversationView"];
                };
            };
            /** @description Created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConversationView"];
                };
            };
            /** @description The body is not JSON: syntax, encoding, nesting. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No API key, or one that is unknown or revoked. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `--no-auth` only: a Host that is not a loopback name, or an Origin other than the
             *     server's own.
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The request body did not arrive within the body timeout. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description The body is over the size limit, an append carries too many messages, or a context's
             *     prompt is over `max_context_bytes`.
             */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A POST whose body is not declared `Content-Type: application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Well-formed JSON that is not an acceptable request; a bad query string. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The tenant's rate limit is spent (`Retry-After` says for how long). */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_conversation: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The conversation id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConversationView"];
                };
            };
            /** @description The body is not JSON: syntax, encoding, nesting. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No API key, or one that is unknown or revoked. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `--no-auth` only: a Host that is not a loopback name, or an Origin other than the
             *     server's own.
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The request body did not arrive within the body timeout. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description The body is over the size limit, an append carries too many messages, or a context's
             *     prompt is over `max_context_bytes`.
             */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A POST whose body is not declared `Content-Type: application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Well-formed JSON that is not an acceptable request; a bad query string. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The tenant's rate limit is spent (`Retry-After` says for how long). */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    delete_conversation: {
        parameters: {
            query?: {
                /**
                 * @description Also delete the conversation's forks (and theirs). Default false: a conversation with
                 *     forks is refused.
                 */
                cascade?: boolean;
            };
            header?: never;
            path: {
                /** @description The conversation id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The body is not JSON: syntax, encoding, nesting. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No API key, or one that is unknown or revoked. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `--no-auth` only: a Host that is not a loopback name, or an Origin other than the
             *     server's own.
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The request body did not arrive within the body timeout. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description The body is over the size limit, an append carries too many messages, or a context's
             *     prompt is over `max_context_bytes`.
             */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A POST whose body is not declared `Content-Type: application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Well-formed JSON that is not an acceptable request; a bad query string. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The tenant's rate limit is spent (`Retry-After` says for how long). */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    update: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The conversation id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["UpdateConversation"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConversationView"];
                };
            };
            /** @description The body is not JSON: syntax, encoding, nesting. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No API key, or one that is unknown or revoked. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `--no-auth` only: a Host that is not a loopback name, or an Origin other than the
             *     server's own.
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The request body did not arrive within the body timeout. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description The body is over the size limit, an append carries too many messages, or a context's
             *     prompt is over `max_context_bytes`.
             */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A POST whose body is not declared `Content-Type: application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Well-formed JSON that is not an acceptable request; a bad query string. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The tenant's rate limit is spent (`Retry-After` says for how long). */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    chat_sse: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The conversation id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ChatBody"];
            };
        };
        responses: {
            /** @description text/event-stream of the turn's events */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The body is not JSON: syntax, encoding, nesting. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No API key, or one that is unknown or revoked. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `--no-auth` only: a Host that is not a loopback name, or an Origin other than the
             *     server's own.
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The request body did not arrive within the body timeout. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description The body is over the size limit, an append carries too many messages, or a context's
             *     prompt is over `max_context_bytes`.
             */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A POST whose body is not declared `Content-Type: application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Well-formed JSON that is not an acceptable request; a bad query string. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The tenant's rate limit is spent (`Retry-After` says for how long). */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    clear_conversation: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The conversation id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Cleared"];
                };
            };
            /** @description The body is not JSON: syntax, encoding, nesting. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No API key, or one that is unknown or revoked. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `--no-auth` only: a Host that is not a loopback name, or an Origin other than the
             *     server's own.
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The request body did not arrive within the body timeout. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Forks read its history */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description The body is over the size limit, an append carries too many messages, or a context's
             *     prompt is over `max_context_bytes`.
             */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A POST whose body is not declared `Content-Type: application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Well-formed JSON that is not an acceptable request; a bad query string. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The tenant's rate limit is spent (`Retry-After` says for how long). */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    compact: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The conversation id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": null | components["schemas"]["CompactBody"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CompactView"];
                };
            };
            /** @description The body is not JSON: syntax, encoding, nesting. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No API key, or one that is unknown or revoked. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `--no-auth` only: a Host that is not a loopback name, or an Origin other than the
             *     server's own.
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The request body did not arrive within the body timeout. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description The body is over the size limit, an append carries too many messages, or a context's
             *     prompt is over `max_context_bytes`.
             */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A POST whose body is not declared `Content-Type: application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Well-formed JSON that is not an acceptable request; a bad query string. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The tenant's rate limit is spent (`Retry-After` says for how long). */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    context: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The conversation id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": null | components["schemas"]["ContextBody"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ContextResponse"];
                };
            };
            /** @description The body is not JSON: syntax, encoding, nesting. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No API key, or one that is unknown or revoked. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `--no-auth` only: a Host that is not a loopback name, or an Origin other than the
             *     server's own.
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The request body did not arrive within the body timeout. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description The body is over the size limit, an append carries too many messages, or a context's
             *     prompt is over `max_context_bytes`.
             */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A POST whose body is not declared `Content-Type: application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Well-formed JSON that is not an acceptable request; a bad query string. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The tenant's rate limit is spent (`Retry-After` says for how long). */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    edit_sse: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The conversation id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["EditBody"];
            };
        };
        responses: {
            /** @description text/event-stream: forked, then the turn's events */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The body is not JSON: syntax, encoding, nesting. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No API key, or one that is unknown or revoked. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `--no-auth` only: a Host that is not a loopback name, or an Origin other than the
             *     server's own.
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The request body did not arrive within the body timeout. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description The body is over the size limit, an append carries too many messages, or a context's
             *     prompt is over `max_context_bytes`.
             */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A POST whose body is not declared `Content-Type: application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Well-formed JSON that is not an acceptable request; a bad query string. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The tenant's rate limit is spent (`Retry-After` says for how long). */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    fork: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The conversation id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ForkBody"];
            };
        };
        responses: {
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConversationView"];
                };
            };
            /** @description The body is not JSON: syntax, encoding, nesting. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No API key, or one that is unknown or revoked. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `--no-auth` only: a Host that is not a loopback name, or an Origin other than the
             *     server's own.
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The request body did not arrive within the body timeout. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The message at `at` is a partial reply */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description The body is over the size limit, an append carries too many messages, or a context's
             *     prompt is over `max_context_bytes`.
             */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A POST whose body is not declared `Content-Type: application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Well-formed JSON that is not an acceptable request; a bad query string. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The tenant's rate limit is spent (`Retry-After` says for how long). */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    forks: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The conversation id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForkList"];
                };
            };
            /** @description The body is not JSON: syntax, encoding, nesting. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No API key, or one that is unknown or revoked. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `--no-auth` only: a Host that is not a loopback name, or an Origin other than the
             *     server's own.
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The request body did not arrive within the body timeout. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description The body is over the size limit, an append carries too many messages, or a context's
             *     prompt is over `max_context_bytes`.
             */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A POST whose body is not declared `Content-Type: application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Well-formed JSON that is not an acceptable request; a bad query string. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The tenant's rate limit is spent (`Retry-After` says for how long). */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_messages: {
        parameters: {
            query?: {
                /** @description Messages with a seq above this (default 0: from the start). */
                after?: number;
                /** @description Page size, 1 to 1000 (default 100). */
                limit?: number;
            };
            header?: never;
            path: {
                /** @description The conversation id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MessagePage"];
                };
            };
            /** @description The body is not JSON: syntax, encoding, nesting. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No API key, or one that is unknown or revoked. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `--no-auth` only: a Host that is not a loopback name, or an Origin other than the
             *     server's own.
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The request body did not arrive within the body timeout. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description The body is over the size limit, an append carries too many messages, or a context's
             *     prompt is over `max_context_bytes`.
             */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A POST whose body is not declared `Content-Type: application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Well-formed JSON that is not an acceptable request; a bad query string. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The tenant's rate limit is spent (`Retry-After` says for how long). */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    append_messages: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The conversation id */
                id: string;
            };
            cookie?: never;
        };
        /** @description A message (Anthropic- or OpenAI-shaped, optional client `id`, `metadata` and `created_at`), or `{"messages": [...]}` */
        requestBody: {
            content: {
                "application/json": components["schemas"]["AppendBody"];
            };
        };
        responses: {
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AppendResponse"];
                };
            };
            /** @description The body is not JSON: syntax, encoding, nesting. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No API key, or one that is unknown or revoked. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `--no-auth` only: a Host that is not a loopback name, or an Origin other than the
             *     server's own.
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The request body did not arrive within the body timeout. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description The body is over the size limit, an append carries too many messages, or a context's
             *     prompt is over `max_context_bytes`.
             */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A POST whose body is not declared `Content-Type: application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Well-formed JSON that is not an acceptable request; a bad query string. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The tenant's rate limit is spent (`Retry-After` says for how long). */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    redact: {
        parameters: {
            query?: {
                /**
                 * @description Also compact the database at once (SQLite: checkpoint, vacuum, truncate the WAL, so
                 *     the file's bytes no longer hold the text; PostgreSQL: vacuum). Default false.
                 */
                compact?: boolean;
            };
            header?: never;
            path: {
                /** @description The conversation id */
                id: string;
                /** @description The message's seq */
                seq: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The body is not JSON: syntax, encoding, nesting. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No API key, or one that is unknown or revoked. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `--no-auth` only: a Host that is not a loopback name, or an Origin other than the
             *     server's own.
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The request body did not arrive within the body timeout. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description The body is over the size limit, an append carries too many messages, or a context's
             *     prompt is over `max_context_bytes`.
             */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A POST whose body is not declared `Content-Type: application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Well-formed JSON that is not an acceptable request; a bad query string. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The tenant's rate limit is spent (`Retry-After` says for how long). */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    alternatives: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The conversation id */
                id: string;
                /** @description The message's seq */
                seq: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AlternativeList"];
                };
            };
            /** @description The body is not JSON: syntax, encoding, nesting. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No API key, or one that is unknown or revoked. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `--no-auth` only: a Host that is not a loopback name, or an Origin other than the
             *     server's own.
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The request body did not arrive within the body timeout. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description The body is over the size limit, an append carries too many messages, or a context's
             *     prompt is over `max_context_bytes`.
             */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A POST whose body is not declared `Content-Type: application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Well-formed JSON that is not an acceptable request; a bad query string. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The tenant's rate limit is spent (`Retry-After` says for how long). */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    retry_sse: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The conversation id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RetryBody"];
            };
        };
        responses: {
            /** @description text/event-stream: forked, then the turn's events */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The body is not JSON: syntax, encoding, nesting. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No API key, or one that is unknown or revoked. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `--no-auth` only: a Host that is not a loopback name, or an Origin other than the
             *     server's own.
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The request body did not arrive within the body timeout. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description The body is over the size limit, an append carries too many messages, or a context's
             *     prompt is over `max_context_bytes`.
             */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A POST whose body is not declared `Content-Type: application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Well-formed JSON that is not an acceptable request; a bad query string. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The tenant's rate limit is spent (`Retry-After` says for how long). */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    chat_ws: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The conversation id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description WebSocket upgrade */
            101: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The body is not JSON: syntax, encoding, nesting. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No API key, or one that is unknown or revoked. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `--no-auth` only: a Host that is not a loopback name, or an Origin other than the
             *     server's own.
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The request body did not arrive within the body timeout. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description The body is over the size limit, an append carries too many messages, or a context's
             *     prompt is over `max_context_bytes`.
             */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A POST whose body is not declared `Content-Type: application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Well-formed JSON that is not an acceptable request; a bad query string. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The tenant's rate limit is spent (`Retry-After` says for how long). */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description As many WebSockets are open as the server takes (half of max_connections) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    search: {
        parameters: {
            query: {
                /** @description Words to find: a message matches when it holds every word (case-insensitive). */
                q: string;
                /** @description At most this many hits, 1 to 100 (default 20). */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SearchResults"];
                };
            };
            /** @description The body is not JSON: syntax, encoding, nesting. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No API key, or one that is unknown or revoked. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `--no-auth` only: a Host that is not a loopback name, or an Origin other than the
             *     server's own.
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The request body did not arrive within the body timeout. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description The body is over the size limit, an append carries too many messages, or a context's
             *     prompt is over `max_context_bytes`.
             */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A POST whose body is not declared `Content-Type: application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Well-formed JSON that is not an acceptable request; a bad query string. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The tenant's rate limit is spent (`Retry-After` says for how long). */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    create_task: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateTaskArgs"];
            };
        };
        responses: {
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TaskCreated"];
                };
            };
            /** @description The body is not JSON: syntax, encoding, nesting. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No API key, or one that is unknown or revoked. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `--no-auth` only: a Host that is not a loopback name, or an Origin other than the
             *     server's own.
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The request body did not arrive within the body timeout. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description The body is over the size limit, an append carries too many messages, or a context's
             *     prompt is over `max_context_bytes`.
             */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A POST whose body is not declared `Content-Type: application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Well-formed JSON that is not an acceptable request; a bad query string. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The tenant's rate limit is spent (`Retry-After` says for how long). */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_task: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The id `POST /v1/tasks` returned */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TaskView"];
                };
            };
            /** @description The body is not JSON: syntax, encoding, nesting. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No API key, or one that is unknown or revoked. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `--no-auth` only: a Host that is not a loopback name, or an Origin other than the
             *     server's own.
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The request body did not arrive within the body timeout. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description The body is over the size limit, an append carries too many messages, or a context's
             *     prompt is over `max_context_bytes`.
             */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A POST whose body is not declared `Content-Type: application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Well-formed JSON that is not an acceptable request; a bad query string. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The tenant's rate limit is spent (`Retry-After` says for how long). */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
}
