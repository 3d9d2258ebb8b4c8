-- Fewer pages written per append. A commit in WAL mode writes every page it changed; before
-- this migration an append changed the message row, its primary key, five running-total
-- indexes, the conversation row, `message_text` and its key, and an FTS5 segment (with
-- periodic merges): most of an append's time.
--
-- 1. The running-total indexes go. The SQLite store finds a window's start by walking the
--    conversation backwards on its primary key from the newest message, reading each row's
--    running totals, and stops at the start: it reads the window and nothing else, so the
--    indexes bought nothing there (PostgreSQL keeps its own and its probes).
DROP INDEX messages_cum_o200k;
DROP INDEX messages_cum_cl100k;
DROP INDEX messages_cum_chars;
DROP INDEX messages_cum_chars4;
DROP INDEX messages_cum_cuts;

-- 2. The search index catches up at search time instead of at every append: a search first
--    indexes the messages its tenant's conversations hold above `indexed_seq` (one statement,
--    so FTS5 writes one segment for the whole backlog), then answers. Updates and deletes of
--    indexed messages still keep the index right by trigger; a message above `indexed_seq`
--    is not in the index yet and is picked up, as it is then, by the next catch-up.
DROP TRIGGER messages_search_ai;
ALTER TABLE conversations ADD COLUMN indexed_seq INTEGER NOT NULL DEFAULT 0;
-- Everything stored so far was indexed by the trigger.
UPDATE conversations SET indexed_seq = last_seq;

DROP TRIGGER messages_search_au;
CREATE TRIGGER messages_search_au AFTER UPDATE OF content ON messages
WHEN old.seq <= (SELECT indexed_seq FROM conversations WHERE id = old.conversation_id)
BEGIN
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
