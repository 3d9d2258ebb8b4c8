-- Sub-agent tasks (MCP `create_task`) and full-text search over message text.

CREATE TABLE tasks (
    id          TEXT PRIMARY KEY NOT NULL,
    tenant      TEXT NOT NULL,
    priority    TEXT NOT NULL,
    description TEXT NOT NULL,
    -- The validated task (recall_core::task::Task) as JSON: context, capped history, warnings.
    spec        TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE INDEX tasks_by_tenant ON tasks (tenant, id);

-- The searchable text of each message: string content, or its text blocks joined with "\n".
-- Kept by triggers on `messages`, so every write path (append, update, clear, delete) keeps
-- the index right without the store's Rust code knowing about it. Its own integer key (not
-- the messages rowid, which VACUUM may renumber) is the FTS rowid.
CREATE TABLE message_text (
    id              INTEGER PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    seq             INTEGER NOT NULL,
    body            TEXT NOT NULL,
    UNIQUE (conversation_id, seq)
);

-- External-content FTS5 over message_text. No diacritic folding, so that SQLite and
-- PostgreSQL ('simple' configuration) match the same words.
CREATE VIRTUAL TABLE message_fts USING fts5(
    body,
    content = 'message_text',
    content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 0'
);

CREATE TRIGGER message_text_ai AFTER INSERT ON message_text BEGIN
    INSERT INTO message_fts (rowid, body) VALUES (new.id, new.body);
END;
CREATE TRIGGER message_text_ad AFTER DELETE ON message_text BEGIN
    INSERT INTO message_fts (message_fts, rowid, body) VALUES ('delete', old.id, old.body);
END;

CREATE TRIGGER messages_search_ai AFTER INSERT ON messages BEGIN
    INSERT INTO message_text (conversation_id, seq, body) VALUES (
        new.conversation_id,
        new.seq,
        CASE
            WHEN NOT json_valid(new.content) THEN ''
            WHEN json_type(new.content) = 'text' THEN json_extract(new.content, '$')
            WHEN json_type(new.content) = 'array' THEN coalesce((
                SELECT group_concat(json_extract(b.value, '$.text'), char(10))
                FROM json_each(new.content) AS b
                WHERE json_extract(b.value, '$.type') = 'text'), '')
            ELSE ''
        END);
END;
CREATE TRIGGER messages_search_ad AFTER DELETE ON messages BEGIN
    DELETE FROM message_text WHERE conversation_id = old.conversation_id AND seq = old.seq;
END;
CREATE TRIGGER messages_search_au AFTER UPDATE OF content ON messages BEGIN
    DELETE FROM message_text WHERE conversation_id = old.conversation_id AND seq = old.seq;
    INSERT INTO message_text (conversation_id, seq, body) VALUES (
        new.conversation_id,
        new.seq,
        CASE
            WHEN NOT json_valid(new.content) THEN ''
            WHEN json_type(new.content) = 'text' THEN json_extract(new.content, '$')
            WHEN json_type(new.content) = 'array' THEN coalesce((
                SELECT group_concat(json_extract(b.value, '$.text'), char(10))
                FROM json_each(new.content) AS b
                WHERE json_extract(b.value, '$.type') = 'text'), '')
            ELSE ''
        END);
END;

-- Messages stored before this migration.
INSERT INTO message_text (conversation_id, seq, body)
SELECT conversation_id, seq,
    CASE
        WHEN NOT json_valid(content) THEN ''
        WHEN json_type(content) = 'text' THEN json_extract(content, '$')
        WHEN json_type(content) = 'array' THEN coalesce((
            SELECT group_concat(json_extract(b.value, '$.text'), char(10))
            FROM json_each(messages.content) AS b
            WHERE json_extract(b.value, '$.type') = 'text'), '')
        ELSE ''
    END
FROM messages;
