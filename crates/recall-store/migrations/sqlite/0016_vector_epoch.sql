-- A counter that moves whenever a conversation's stored vectors change other than by a
-- catch-up adding vectors past `embedded_seq` (issue 52): a vector removed (a message's
-- content changed, a message deleted) or rewritten. A process that keeps a conversation's
-- vectors in memory (`vectors.rs`' cache) reads `embedded_seq` and `epoch` and knows whether
-- what it holds is still what is stored, and which vectors are new.
ALTER TABLE vector_progress ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;

CREATE TRIGGER message_vectors_epoch_ad AFTER DELETE ON message_vectors
BEGIN
    UPDATE vector_progress SET epoch = epoch + 1
    WHERE conversation_id = old.conversation_id AND model = old.model;
END;

CREATE TRIGGER message_vectors_epoch_au AFTER UPDATE ON message_vectors
BEGIN
    UPDATE vector_progress SET epoch = epoch + 1
    WHERE conversation_id = old.conversation_id AND model = old.model;
END;

-- Embedding moved back (a content update, migration 0005's trigger): also a change.
CREATE TRIGGER vector_progress_epoch_back AFTER UPDATE OF embedded_seq ON vector_progress
WHEN new.embedded_seq < old.embedded_seq
BEGIN
    UPDATE vector_progress SET epoch = epoch + 1
    WHERE conversation_id = new.conversation_id AND model = new.model;
END;
