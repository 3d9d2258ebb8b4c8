-- A counter that moves whenever a conversation's stored vectors change other than by a
-- catch-up adding vectors past `embedded_seq` (issue 52): a vector removed (a message's
-- content changed, a message deleted) or rewritten. A process that keeps a conversation's
-- vectors in memory (`vectors.rs`' cache) reads `embedded_seq` and `epoch` and knows whether
-- what it holds is still what is stored, and which vectors are new.
ALTER TABLE vector_progress ADD COLUMN epoch BIGINT NOT NULL DEFAULT 0;

CREATE FUNCTION recall_vector_epoch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE vector_progress SET epoch = epoch + 1
    WHERE conversation_id = OLD.conversation_id AND model = OLD.model;
    RETURN NULL;
END;
$$;
CREATE TRIGGER message_vectors_epoch AFTER DELETE OR UPDATE ON message_vectors
FOR EACH ROW EXECUTE FUNCTION recall_vector_epoch();

-- Embedding moved back (a content update, migration 0005's trigger): also a change.
CREATE FUNCTION recall_vector_epoch_back() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.epoch := OLD.epoch + 1;
    RETURN NEW;
END;
$$;
CREATE TRIGGER vector_progress_epoch_back BEFORE UPDATE OF embedded_seq ON vector_progress
FOR EACH ROW WHEN (NEW.embedded_seq < OLD.embedded_seq)
EXECUTE FUNCTION recall_vector_epoch_back();
