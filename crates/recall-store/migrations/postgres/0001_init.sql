-- recall store, PostgreSQL. Integers are 64-bit everywhere so one Rust type (i64) serves both
-- databases. Timestamps are milliseconds since the Unix epoch.
CREATE TABLE conversations (
    id             TEXT PRIMARY KEY NOT NULL,
    tenant         TEXT NOT NULL,
    title          TEXT,
    system_prompt  TEXT,
    metadata       TEXT NOT NULL DEFAULT '{}',
    policy         TEXT,
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL,
    message_count  BIGINT NOT NULL DEFAULT 0,
    last_seq       BIGINT NOT NULL DEFAULT 0,
    -- Running totals of the present messages, so an append is O(1).
    total_o200k    BIGINT NOT NULL DEFAULT 0,
    total_cl100k   BIGINT NOT NULL DEFAULT 0,
    total_chars    BIGINT NOT NULL DEFAULT 0,
    total_chars4   BIGINT NOT NULL DEFAULT 0,
    total_turns    BIGINT NOT NULL DEFAULT 0,
    total_cuts     BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX conversations_by_tenant ON conversations (tenant, id);

CREATE TABLE messages (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    seq             BIGINT NOT NULL,
    client_id       TEXT,
    role            TEXT NOT NULL,
    content         TEXT NOT NULL,
    metadata        TEXT,
    status          TEXT NOT NULL DEFAULT 'complete',
    created_at      BIGINT NOT NULL,
    tokens_o200k    BIGINT NOT NULL,
    tokens_cl100k   BIGINT NOT NULL,
    chars           BIGINT NOT NULL,
    -- 1: starts a turn (user with text); 2: cut point (user with text, no tool_result).
    flags           BIGINT NOT NULL,
    -- Running totals up to and including this message; they find the cut point of a budget
    -- with one index probe instead of reading the conversation.
    cum_o200k       BIGINT NOT NULL,
    cum_cl100k      BIGINT NOT NULL,
    cum_chars       BIGINT NOT NULL,
    cum_chars4      BIGINT NOT NULL,
    cum_cuts        BIGINT NOT NULL,
    PRIMARY KEY (conversation_id, seq)
);
CREATE UNIQUE INDEX messages_client_id ON messages (conversation_id, client_id) WHERE client_id IS NOT NULL;
CREATE INDEX messages_cum_o200k ON messages (conversation_id, cum_o200k, seq);
CREATE INDEX messages_cum_cl100k ON messages (conversation_id, cum_cl100k, seq);
CREATE INDEX messages_cum_chars ON messages (conversation_id, cum_chars, seq);
CREATE INDEX messages_cum_chars4 ON messages (conversation_id, cum_chars4, seq);
CREATE INDEX messages_cum_cuts ON messages (conversation_id, cum_cuts, seq);
-- System messages join the system prompt however old they are.
CREATE INDEX messages_system ON messages (conversation_id, seq) WHERE role = 'system';

-- Stable (prompt-cache friendly) window state per conversation and policy.
CREATE TABLE stable_windows (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    policy_key      TEXT NOT NULL,
    start_seq       BIGINT NOT NULL,
    cost            BIGINT NOT NULL,
    last_seq        BIGINT NOT NULL,
    PRIMARY KEY (conversation_id, policy_key)
);
