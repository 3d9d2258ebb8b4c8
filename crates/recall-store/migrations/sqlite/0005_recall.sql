-- Recall's semantic side (issue 21): one vector per message and embedding model, computed off
-- the append path by a catch-up like the search index's (`indexed_seq`, migration 0004), so
-- appends keep their speed. Lexical recall needs nothing new: it uses `message_fts`.

-- A message's embedding: `dim` little-endian f32 values, L2-normalised by the embedder.
-- Deleting a message (clear, delete) deletes its vectors.
CREATE TABLE message_vectors (
    conversation_id TEXT NOT NULL,
    seq             INTEGER NOT NULL,
    model           TEXT NOT NULL,
    dim             INTEGER NOT NULL,
    vector          BLOB NOT NULL,
    PRIMARY KEY (conversation_id, model, seq),
    FOREIGN KEY (conversation_id, seq) REFERENCES messages (conversation_id, seq)
        ON DELETE CASCADE
);
-- The cascade finds a message's vectors by (conversation, seq).
CREATE INDEX message_vectors_by_message ON message_vectors (conversation_id, seq);

-- How far each conversation is embedded under each model: every message with
-- seq <= embedded_seq has a vector (or had no text to embed).
CREATE TABLE vector_progress (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    model           TEXT NOT NULL,
    embedded_seq    INTEGER NOT NULL,
    PRIMARY KEY (conversation_id, model)
);

-- A message whose content changes (a streamed reply saved again) loses its stale vectors and
-- is embedded again by the next catch-up.
CREATE TRIGGER messages_vectors_au AFTER UPDATE OF content ON messages
BEGIN
    DELETE FROM message_vectors WHERE conversation_id = old.conversation_id AND seq = old.seq;
    UPDATE vector_progress SET embedded_seq = old.seq - 1
    WHERE conversation_id = old.conversation_id AND embedded_seq >= old.seq;
END;
