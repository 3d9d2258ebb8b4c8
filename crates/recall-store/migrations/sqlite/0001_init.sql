-- recall store, SQLite. Integers are 64-bit everywhere so one Rust type (i64) serves both
-- databases. Timestamps are milliseconds since the Unix epoch.
CREATE TABLE conversations (
    id             TEXT PRIMARY KEY NOT NULL,
    tenant         TEXT NOT NULL,
    title          TEXT,
    system_prompt  TEXT,
    metadata       TEXT NOT NULL DEFAULT '{}',
    policy         TEXT,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    message_count  INTEGER NOT NULL DEFAULT 0,
    last_seq       INTEGER NOT NULL DEFAULT 0,
    -- Running totals of the present messages, so an append is O(1).
    total_o200k    INTEGER NOT NULL DEFAULT 0,
    total_cl100k   INTEGER NOT NULL DEFAULT 0,
    total_chars    INTEGER NOT NULL DEFAULT 0,
    total_chars4   INTEGER NOT NULL DEFAULT 0,
    total_turns    INTEGER NOT NULL DEFAULT 0,
    total_cuts     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX conversations_by_tenant ON conversations (tenant, id);

CREATE TABLE messages (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    seq             INTEGER NOT NULL,
    client_id       TEXT,
    role            TEXT NOT NULL,
    content         TEXT NOT NULL,
    metadata        TEXT,
    status          TEXT NOT NULL DEFAULT 'complete',
    created_at      INTEGER NOT NULL,
    tokens_o200k    INTEGER NOT NULL,
    tokens_cl100k   INTEGER NOT NULL,
    chars           INTEGER NOT NULL,
    -- 1: starts a turn (user with text); 2: cut point (user with text, no tool_result).
    flags           INTEGER NOT NULL,
    -- Running totals up to and including this message; they find the cut point of a budget
    -- with one index probe instead of reading the conversation.
    cum_o200k       INTEGER NOT NULL,
    cum_cl100k      INTEGER NOT NULL,
    cum_chars       INTEGER NOT NULL,
    cum_chars4      INTEGER NOT NULL,
    cum_cuts        INTEGER NOT NULL,
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
    start_seq       INTEGER NOT NULL,
    cost            INTEGER NOT NULL,
    last_seq        INTEGER NOT NULL,
    PRIMARY KEY (conversation_id, policy_key)
);
