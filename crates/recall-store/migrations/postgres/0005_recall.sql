-- Recall's semantic side (issue 21): one vector per message and embedding model, computed off
-- the append path by a catch-up, so appends keep their speed. Lexical recall needs nothing
-- new: it uses the `messages_fts` expression index.

-- A message's embedding: `dim` little-endian f32 values, L2-normalised by the embedder.
-- Deleting a message (clear, delete) deletes its vectors.
CREATE TABLE message_vectors (
    conversation_id TEXT NOT NULL,
    seq             BIGINT NOT NULL,
    model           TEXT NOT NULL,
    dim             INTEGER NOT NULL,
    vector          BYTEA NOT NULL,
    PRIMARY KEY (conversation_id, model, seq),
    FOREIGN KEY (conversation_id, seq) REFERENCES messages (conversation_id, seq)
        ON DELETE CASCADE
);
CREATE INDEX message_vectors_by_message ON message_vectors (conversation_id, seq);

-- How far each conversation is embedded under each model: every message with
-- seq <= embedded_seq has a vector (or had no text to embed).
CREATE TABLE vector_progress (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    model           TEXT NOT NULL,
    embedded_seq    BIGINT NOT NULL,
    PRIMARY KEY (conversation_id, model)
);

-- A message whose content changes (a streamed reply saved again) loses its stale vectors and
-- is embedded again by the next catch-up.
CREATE FUNCTION recall_vectors_on_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM message_vectors WHERE conversation_id = OLD.conversation_id AND seq = OLD.seq;
    UPDATE vector_progress SET embedded_seq = OLD.seq - 1
    WHERE conversation_id = OLD.conversation_id AND embedded_seq >= OLD.seq;
    RETURN NULL;
END;
$$;
CREATE TRIGGER messages_vectors_au AFTER UPDATE OF content ON messages
FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content)
EXECUTE FUNCTION recall_vectors_on_update();
